// Package proc measures a benchmark contender running as a child process:
// wall time, CPU seconds and peak resident memory, on Linux.
//
// Peak RSS is the child's own VmHWM from /proc/<pid>/status, polled while it
// runs. wait4's ru_maxrss cannot be used: Linux keeps the high-water mark
// across exec, and Go starts children on the parent's address space, so every
// child would report the parent's RSS (for our benchmarks, the embedded
// clusters and their data).
package proc

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Usage is what a finished child used.
type Usage struct {
	Wall       time.Duration // from Start to the end of Wait
	CPU        time.Duration // user + system (wait4 on unix)
	User       time.Duration // user alone
	PeakRSSKiB int64         // the highest VmHWM seen, in KiB
	// MinorFaults is ru_minflt from wait4: pages the kernel mapped without
	// I/O, most of them fresh memory it had to zero (a process growing its
	// heap and buffers pays one per 4 KiB page).
	MinorFaults int64
}

// Run starts cmd, waits for it and returns its usage. A failed command's
// error carries its stderr, unless the caller set cmd.Stderr.
func Run(cmd *exec.Cmd) (Usage, error) {
	wait, err := Start(cmd)
	if err != nil {
		return Usage{}, err
	}
	return wait()
}

// Start starts cmd and polls its peak RSS; the returned func waits for it and
// returns its usage, as Run does. Between the two, cmd.Process.Pid is the
// child's, for a caller that samples it while it runs.
func Start(cmd *exec.Cmd) (wait func() (Usage, error), err error) {
	var stderr strings.Builder
	if cmd.Stderr == nil {
		cmd.Stderr = &stderr
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop := PollPeakRSS(cmd.Process.Pid)
	return func() (Usage, error) {
		err := cmd.Wait()
		wall := time.Since(start)
		peak := stop()
		if err != nil {
			return Usage{}, fmt.Errorf("%v: %s", err, stderr.String())
		}
		cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		return Usage{Wall: wall, CPU: cpu, User: cmd.ProcessState.UserTime(), PeakRSSKiB: peak, MinorFaults: minorFaults(cmd.ProcessState)}, nil
	}, nil
}

// PollPeakRSS polls pid's VmHWM every 2ms until the returned func is called;
// that func stops polling and returns the peak in KiB. VmHWM only grows, so
// the last read is the peak up to then.
func PollPeakRSS(pid int) func() int64 {
	var peak int64
	done, polled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(polled)
		for {
			if kb := PeakRSS(pid); kb > peak {
				peak = kb
			}
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return func() int64 { close(done); <-polled; return peak }
}

// PeakRSS returns pid's VmHWM in KiB, or 0 when it cannot be read (the
// process is gone, or this is not Linux).
func PeakRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(rest), "%d", &kb)
			return kb
		}
	}
	return 0
}
