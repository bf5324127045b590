package replicate

import (
	"os"
	"syscall"
)

// openFilesFree returns how many more files this process may open: its
// open-file limit (RLIMIT_NOFILE, soft) less the descriptors open now
// (/proc/self/fd). ok is false when either cannot be read.
func openFilesFree() (free int, limit uint64, ok bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, false
	}
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, 0, false
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return 0, 0, false
	}
	return int(min(rl.Cur, 1<<31-1)) - len(names), rl.Cur, true
}
