//go:build kafka

package itest

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// mirrorProc is one `mirrorctl replicate -v` subprocess of a crash test;
// done is closed when it has exited.
type mirrorProc struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan struct{}
}

// replicateStarter builds mirrorctl once and returns start(name), which
// starts `mirrorctl replicate -v -c cfg`. Every process is killed when t
// ends, and if t failed the stderr of each (named) is logged.
func replicateStarter(t *testing.T, cfg string) (start func(name string) *mirrorProc) {
	t.Helper()
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
		p := &mirrorProc{cmd: exec.Command(bin, "replicate", "-v", "-c", cfg), stderr: &bytes.Buffer{}, done: make(chan struct{})}
		p.cmd.Stderr = p.stderr
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { _ = p.cmd.Wait(); close(p.done) }()
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
