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

// TestExactlyOnceFileLimit: exactly-once keeps a producer per partition
// copying, at most mirrorctl.transaction.producers.max at once. A process
// whose open-file limit (64 here) cannot hold the configured 1,000 says so
// at start, naming the limit, and copies its 48 partitions anyway, a few
// producers at a time (before: every dial failed with "too many open
// files" after some 15 s of retries, and nothing was copied).
func TestExactlyOnceFileLimit(t *testing.T) {
	e := newEnv(t, "eu-west.exactly.once.source.support = enabled\nmirrorctl.transaction.interval.ms = 20\n")
	topic := testkit.Name("fds")
	e.CreateTopic(t, testkit.East, topic, 48, nil)
	e.produceN(t, testkit.East, topic, 48, 3)
	t.Setenv("MIRRORCTL_TEST_NOFILE", "64")
	p := startProc(t, e, "low-limit", "--once", "--timeout", "60s", "-o", "json")
	select {
	case <-p.done:
	case <-time.After(90 * time.Second):
		t.Fatal("still running 90 s after a start with --timeout 60s")
	}
	if p.code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", p.code, p.stderr.String())
	}
	for _, want := range []string{"fewer transactional producers at once than configured",
		"mirrorctl.transaction.producers.max 1000 needs about", "raise the open-file limit, ulimit -n, or lower mirrorctl.transaction.producers.max"} {
		if !strings.Contains(p.stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, p.stderr.String())
		}
	}
	got := e.ReadAllCommitted(t, testkit.West, testkit.East+"."+topic)
	for part := int32(0); part < 48; part++ {
		if len(got[part]) != 3 {
			t.Errorf("%s[%d] holds %d committed copies, want 3", topic, part, len(got[part]))
		}
	}
}
