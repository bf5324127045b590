package replicate_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// eosEnv is scaleEnv with exactly-once on for flows into eu-west.
func eosEnv(t *testing.T, extra string) *env {
	return scaleEnv(t, "eu-west.exactly.once.source.support = enabled\nmirrorctl.transaction.interval.ms = 100\n"+extra)
}

// checkExactlyOnce asserts that a read_committed read of the remote topic
// holds every source record of each partition exactly once, in order, and
// that every offset sync names a committed copy of its source record.
func checkExactlyOnce(t *testing.T, e *env, remote string, parts int32, n int) {
	t.Helper()
	got := e.ReadAllCommitted(t, "eu-west", remote)
	for p := int32(0); p < parts; p++ {
		idx := make([]int, 0, len(got[p]))
		for _, r := range got[p] {
			_, num, _ := strings.Cut(string(r.Value), "-")
			i, err := strconv.Atoi(num)
			if err != nil || !strings.HasPrefix(string(r.Value), fmt.Sprintf("p%d-", p)) {
				t.Fatalf("%s[%d] holds %q", remote, p, r.Value)
			}
			idx = append(idx, i)
		}
		dups, err := testkit.CheckCopy(idx, n)
		if err != nil {
			t.Fatalf("%s[%d] read committed: %v", remote, p, err)
		}
		if dups != 0 || len(idx) != n {
			t.Fatalf("%s[%d] read committed: %d records, %d repeated; want each of the %d source records once", remote, p, len(idx), dups, n)
		}
	}
	src := e.ReadAllCommitted(t, "us-east", "orders")
	byOffset := func(recs []*kgo.Record, off int64) *kgo.Record {
		for _, r := range recs {
			if r.Offset == off {
				return r
			}
		}
		return nil
	}
	syncs := e.ReadAll(t, "us-east", "mm2-offset-syncs.eu-west.internal")[0]
	for _, r := range syncs {
		s, err := mm2.DecodeOffsetSync(r.Key, r.Value)
		if err != nil {
			t.Fatalf("offset sync at %d: %v", r.Offset, err)
		}
		u, d := byOffset(src[s.Partition], s.UpstreamOffset), byOffset(got[s.Partition], s.DownstreamOffset)
		if u == nil || d == nil || !bytes.Equal(u.Value, d.Value) {
			t.Fatalf("offset sync %s[%d] %d->%d does not name a committed copy of its source record", s.Topic, s.Partition, s.UpstreamOffset, s.DownstreamOffset)
		}
	}
	t.Logf("%d offset syncs, each naming a committed copy", len(syncs))
}

// Exactly-once: two processes, each killed with SIGKILL at random moments
// and restarted, while records keep arriving. A read_committed read of the
// target holds every source record exactly once, in order. The real-broker
// version runs in make test-kafka.
func TestExactlyOnceSurvivesSIGKILLs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts subprocesses")
	}
	e := eosEnv(t, "tasks.max = 2\n")
	const parts, kills = 6, 4
	createTopics(t, e.Client(t, "us-east"), parts, "orders")
	procs := []*proc{startProc(t, e, "a0"), startProc(t, e, "b0")}
	waitFor(t, 30*time.Second, "6 partitions over 2 processes", spread(procs, parts))
	stop := streamUntil(t, e, "orders", parts, 100*time.Millisecond)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	for k := 0; k < kills; k++ {
		time.Sleep(time.Duration(200+rng.IntN(600)) * time.Millisecond)
		i := rng.IntN(len(procs))
		procs[i].kill(t)
		procs[i] = startProc(t, e, fmt.Sprintf("%c%d", 'a'+i, k+1))
		waitFor(t, 30*time.Second, fmt.Sprintf("kill %d: both processes copying again", k+1), spread(procs, parts))
	}
	n := stop()
	awaitEnd(t, e, "us-east.orders", parts, n)
	waitFor(t, 30*time.Second, "every record committed on the target", func() bool {
		got := e.ReadAllCommitted(t, "eu-west", "us-east.orders")
		for p := int32(0); p < parts; p++ {
			if len(got[p]) < n {
				return false
			}
		}
		return true
	})
	for _, p := range procs {
		if code := p.term(t); code != 130 {
			t.Errorf("%s: exit %d after SIGTERM, want 130", p.name, code)
		}
	}
	checkExactlyOnce(t, e, "us-east.orders", parts, n)
	uncommitted := e.ReadAll(t, "eu-west", "us-east.orders")
	extra := 0
	for p := int32(0); p < parts; p++ {
		extra += len(uncommitted[p]) - n
	}
	t.Logf("%d kills: every record once for read_committed; %d records of aborted transactions on the target (read_uncommitted sees them)", kills, extra)
}

// Exactly-once zombie: a member is stopped (SIGSTOP) past its session
// timeout with a transaction open; its partitions move to the other member,
// whose InitProducerID fences it. Resumed (SIGCONT), it commits nothing: its
// open transaction, if it had one, is refused as fenced; the target holds
// every record once.
func TestExactlyOnceZombieIsFenced(t *testing.T) {
	if testing.Short() {
		t.Skip("starts subprocesses")
	}
	e := eosEnv(t, "tasks.max = 2\n")
	const parts, n = 4, 6000
	createTopics(t, e.Client(t, "us-east"), parts, "orders")
	a, b := startProc(t, e, "a"), startProc(t, e, "b")
	procs := []*proc{a, b}
	waitFor(t, 30*time.Second, "4 partitions over 2 processes", spread(procs, parts))
	done := stream(t, e, "orders", parts, n, 40*time.Millisecond)
	awaitEnd(t, e, "us-east.orders", parts, n/5)
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	defer func() {
		if stopped {
			_ = a.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	waitFor(t, 30*time.Second, "b to own every partition", spread([]*proc{b}, parts))
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	// Resumed, the zombie learns it lost its partitions. A transaction it
	// had open (or queued records it copies on release) is refused as
	// fenced when it tries to commit; when it had none open at the
	// SIGSTOP (it had just committed; seen under -race), there is nothing
	// to fence, and it releases the partitions without writing progress.
	// It learns it either from the group (partitions lost) or, first,
	// from its freeze guard (it did not run past its session timeout).
	waitFor(t, 30*time.Second, "the resumed member to lose its partitions", func() bool {
		out := a.stderr.String()
		return (strings.Contains(out, "partitions lost") || strings.Contains(out, "did not run for longer than the session timeout")) &&
			(strings.Contains(out, "transaction fenced") || strings.Contains(out, "progress_written=false"))
	})
	<-done
	awaitEnd(t, e, "us-east.orders", parts, n)
	waitFor(t, 30*time.Second, "both processes copying again", spread(procs, parts))
	waitFor(t, 30*time.Second, "every record committed on the target", func() bool {
		got := e.ReadAllCommitted(t, "eu-west", "us-east.orders")
		for p := int32(0); p < parts; p++ {
			if len(got[p]) < n {
				return false
			}
		}
		return true
	})
	for _, p := range procs {
		p.term(t)
	}
	fenced := false
	for _, line := range strings.Split(a.stderr.String(), "\n") {
		if strings.Contains(line, "transaction fenced") {
			t.Logf("zombie: %s", line)
			fenced = true
			break
		}
	}
	if !fenced {
		t.Logf("zombie: no transaction open when it was stopped; it released its partitions without writing progress")
	}
	checkExactlyOnce(t, e, "us-east.orders", parts, n)
}

// The operator's view: --dry-run and --once -o json say which flows run
// exactly-once; what cannot be honoured is a usage error (exit 2) naming
// the key.
func TestExactlyOnceOperatorView(t *testing.T) {
	e := newEnv(t, "eu-west.exactly.once.source.support = enabled\n")
	createTopics(t, e.Client(t, "us-east"), 2, "orders")
	e.produceN(t, "us-east", "orders", 2, 100)
	code, stdout, stderr := run(t, "replicate", "--dry-run", "-c", e.config, "-o", "json")
	if code != 0 || !strings.Contains(stdout, `"delivery": "exactly-once"`) || !strings.Contains(stdout, `"transactional_ids": "mirrorctl-us-east-eu-west-<topic>-<partition>"`) {
		t.Fatalf("--dry-run -o json: exit %d, stdout %s, stderr %q; want the flow's delivery and transactional ids", code, stdout, stderr)
	}
	code, _, stderr = run(t, "replicate", "--dry-run", "-c", e.config)
	if code != 0 || !strings.Contains(stderr, "flow us-east->eu-west: exactly-once") || !strings.Contains(stderr, "mirrorctl-us-east-eu-west-<topic>-<partition>") {
		t.Fatalf("--dry-run: exit %d, stderr %q; want the flow named exactly-once with its transactional ids", code, stderr)
	}
	code, stdout, stderr = run(t, "replicate", "--once", "-c", e.config, "-o", "json")
	if code != 0 || !strings.Contains(stdout, `"delivery": "exactly-once"`) || !strings.Contains(stdout, `"source_isolation": "read_committed"`) {
		t.Fatalf("--once -o json: exit %d, stdout %s, stderr %s; want delivery exactly-once", code, stdout, stderr)
	}
	if !strings.Contains(stdout, `"transactions_committed": `) || strings.Contains(stdout, `"transactions_committed": 0`) {
		t.Fatalf("--once -o json: %s; want committed transactions counted", stdout)
	}
	for _, tt := range []struct{ extra, key string }{
		{"eu-west.exactly.once.source.support = preparing\n", "eu-west.exactly.once.source.support"},
		{"eu-west.producer.transactional.id = mine\n", "eu-west.producer.transactional.id"},
		{"eu-west.exactly.once.source.support = enabled\nus-east.consumer.isolation.level = read_uncommitted\n", "us-east.consumer.isolation.level"},
	} {
		cfg := e.WriteConfig(t, tt.extra)
		code, _, stderr := run(t, "replicate", "--once", "-c", cfg)
		if code != 2 || !strings.Contains(stderr, tt.key) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 naming %s", tt.extra, code, stderr, tt.key)
		}
	}
}
