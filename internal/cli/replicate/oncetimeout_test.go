package replicate_test

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

// TestOnceTimeout: a --once run whose copies the target never acknowledges
// (every Produce to eu-west held) stops at --timeout, within the stop
// budget, and exits 1 naming each partition short of its end with its
// position; without --once the flag is refused.
func TestOnceTimeout(t *testing.T) {
	e := newEnv(t, "mirrorctl.stop.budget.ms = 2000\n")
	topic := testkit.Name("slow")
	e.CreateTopic(t, testkit.East, topic, 2, nil)
	e.produceN(t, testkit.East, topic, 2, 50)
	held := make(chan struct{})
	t.Cleanup(func() { close(held) })
	e.West.ControlKey(kmsg.Produce.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		e.West.KeepControl()
		e.West.SleepControl(func() { <-held })
		return nil, nil, false
	})
	start := time.Now()
	code, _, stderr := run(t, "replicate", "-c", e.config, "--once", "--timeout", "1s")
	took := time.Since(start)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr)
	}
	if took > 1*time.Second+2*time.Second+2*time.Second {
		t.Errorf("took %s: over the 1 s timeout, the 2 s stop budget and 2 s of slack", took)
	}
	for _, want := range []string{"--once did not finish within --timeout 1s", "2 partitions short of their end",
		topic + "[0] at 0 of 50", topic + "[1] at 0 of 50", "the position was saved"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "copied") && strings.Contains(stderr, "✓") {
		t.Errorf("a timed-out run printed a success mark:\n%s", stderr)
	}
	if code, _, stderr := run(t, "replicate", "-c", e.config, "--timeout", "1s"); code != 2 || !strings.Contains(stderr, "--timeout needs --once") {
		t.Errorf("--timeout without --once: exit %d, stderr %q; want 2 and a refusal", code, stderr)
	}
}

// TestExactlyOnceFileLimit: exactly-once keeps a producer per partition; a
// process whose open-file limit cannot hold them says so at once, naming the
// limit to raise and the way to share the flow (before: a bare "too many
// open files" dial error after some 15 s of retries), and its --once run
// ends at its --timeout with exit 1.
func TestExactlyOnceFileLimit(t *testing.T) {
	e := newEnv(t, "eu-west.exactly.once.source.support = enabled\n")
	topic := testkit.Name("fds")
	e.CreateTopic(t, testkit.East, topic, 48, nil)
	e.produceN(t, testkit.East, topic, 48, 1)
	t.Setenv("MIRRORCTL_TEST_NOFILE", "64")
	p := startProc(t, e, "low-limit", "--once", "--timeout", "2s")
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatal("still running 20 s after a start with --timeout 2s")
	}
	if p.code != 1 {
		t.Errorf("exit %d, want 1", p.code)
	}
	for _, want := range []string{"48 partitions to start need at least 96 more open files",
		"raise the open-file limit, ulimit -n, or share the flow over more processes, tasks.max",
		"--once did not finish within --timeout 2s"} {
		if !strings.Contains(p.stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, p.stderr.String())
		}
	}
}
