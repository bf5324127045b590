//go:build unix

package proc

import (
	"os"
	"syscall"
)

// minorFaults returns the finished process's ru_minflt.
func minorFaults(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return int64(ru.Minflt)
	}
	return 0
}
