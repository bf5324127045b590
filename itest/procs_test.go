//go:build kafka

package itest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// mirrorProc is one `mirrorctl replicate -v` subprocess of a crash test;
// done is closed when it has exited.
type mirrorProc struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{}
	code   int // the exit code, once done is closed
}

// syncBuffer is a bytes.Buffer that a process writes while a test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// replicateStarter builds mirrorctl once and returns start(name), which
// starts `mirrorctl replicate -v -c cfg`. Every process is killed when t
// ends, and if t failed the stderr of each (named) is logged.
func replicateStarter(t *testing.T, cfg string) (start func(name string) *mirrorProc) {
	t.Helper()
	return replicateStarterArgs(t, cfg)
}

// replicateStarterArgs is replicateStarter with extra replicate arguments.
// Its processes share a state directory of their own (instance slots), so
// a process restarted after SIGKILL takes its instance id back.
func replicateStarterArgs(t *testing.T, cfg string, args ...string) (start func(name string) *mirrorProc) {
	t.Helper()
	state := t.TempDir()
	bin := filepath.Join(t.TempDir(), "mirrorctl")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/mirrorctl").CombinedOutput(); err != nil {
		t.Fatalf("build mirrorctl: %v\n%s", err, out)
	}
	var (
		mu   sync.Mutex
		logs []string
	)
	t.Cleanup(func() {
		if t.Failed() {
			mu.Lock()
			defer mu.Unlock()
			for _, l := range logs {
				t.Log(l)
			}
		}
	})
	return func(name string) *mirrorProc {
		p := &mirrorProc{cmd: exec.Command(bin, append([]string{"replicate", "-v", "-c", cfg}, args...)...), stderr: &syncBuffer{}, done: make(chan struct{})}
		p.cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state)
		p.cmd.Stderr = p.stderr
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			_ = p.cmd.Wait()
			p.code = p.cmd.ProcessState.ExitCode()
			close(p.done)
		}()
		t.Cleanup(func() {
			_ = p.cmd.Process.Kill()
			<-p.done
			mu.Lock()
			logs = append(logs, name+":\n"+p.stderr.String())
			mu.Unlock()
		})
		return p
	}
}
