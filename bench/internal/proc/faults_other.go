//go:build !unix

package proc

import "os"

// minorFaults is 0 where wait4's rusage does not exist.
func minorFaults(*os.ProcessState) int64 { return 0 }
