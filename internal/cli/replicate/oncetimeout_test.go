package replicate_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
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

// TestOnceTimeoutCopiesNothingTwice: --once runs stopped by their --timeout
// in the middle of a copy of 600,000 records save positions that cover
// exactly what reached the target, so the next runs copy each record once
// (at-least-once, graceful stops). Before, the copies kgo had already sent
// when the run's context ended were failed as "canceled": the saved
// position stayed behind them and the next run copied tens of thousands of
// records again, with no warning.
func TestOnceTimeoutCopiesNothingTwice(t *testing.T) {
	e := newEnv(t, "mirrorctl.stop.budget.ms = 5000\n")
	topic := testkit.Name("twice")
	e.CreateTopic(t, testkit.East, topic, 4, nil)
	cl := e.Client(t, testkit.East, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const perPartition = 150000
	pad := strings.Repeat("x", 70)
	for i := 0; i < perPartition; i += 1000 {
		var recs []*kgo.Record
		for p := int32(0); p < 4; p++ {
			for j := i; j < i+1000; j++ {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("p%d-%07d-%s", p, j, pad))})
			}
		}
		if err := cl.ProduceSync(testkit.Context(t), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	stopped := 0
	for _, to := range []string{"300ms", "500ms"} {
		if code, _, _ := run(t, "replicate", "-c", e.config, "--once", "--timeout", to); code == 1 {
			stopped++
		}
	}
	if code, _, stderr := run(t, "replicate", "-c", e.config, "--once"); code != 0 {
		t.Fatalf("the last run: exit %d\n%s", code, stderr)
	}
	t.Logf("%d of 2 runs stopped by their timeout", stopped)
	got := e.ReadAll(t, testkit.West, testkit.East+"."+topic)
	for p := int32(0); p < 4; p++ {
		if len(got[p]) != perPartition {
			t.Errorf("%s[%d] holds %d copies, want %d", topic, p, len(got[p]), perPartition)
			continue
		}
		for i, r := range got[p] {
			if want := fmt.Sprintf("p%d-%07d-%s", p, i, pad); string(r.Value) != want {
				t.Errorf("%s[%d] at %d holds %.12s, want %.12s", topic, p, i, r.Value, want)
				break
			}
		}
	}
}
