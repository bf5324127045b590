//go:build kafka

package itest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate/progress"
)

// The partition task's lifecycle on the real brokers: a bounded stop after
// a crash loop (also with the target cluster down), a restart that takes
// its partitions back at once (static membership), and an exactly-once
// restart after a kill in the middle of a large open transaction.

// lifecycleFlow creates topic (parts partitions) on us-east and writes the
// mm2.properties of a flow copying it, in its own group, with extra.
func lifecycleFlow(ctx context.Context, t *testing.T, prefix string, parts int32, extra string) (topic, cfg string, east *kgo.Client) {
	t.Helper()
	u := uniq(t)
	topic = prefix + "-" + u
	east = newClient(t, mustEnv(t, "MIRRORCTL_KAFKA_US_EAST"), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	if _, err := kadm.NewClient(east).CreateTopic(ctx, parts, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	cfg = plainConfig(t, fmt.Sprintf(`us-east->eu-west.topics = %s
us-east->eu-west.mirrorctl.group.id = mirrorctl-%s-%s
emit.checkpoints.enabled = false
`, topic, prefix, u)+extra)
	return topic, cfg, east
}

// produceSeq writes records from..to-1 ("p<partition>-<index>") to every
// partition of topic.
func produceSeq(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, parts int32, from, to int) {
	t.Helper()
	var recs []*kgo.Record
	for p := int32(0); p < parts; p++ {
		for i := from; i < to; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("p%d-%07d", p, i))})
		}
	}
	produceAll(ctx, t, cl, recs)
}

// checkSeq asserts that a read of remote (committed only, with committed)
// holds records 0..n-1 of every partition in order, and returns the repeats.
func checkSeq(ctx context.Context, t *testing.T, remote string, parts int32, n int, committed bool) int {
	t.Helper()
	var opts []kgo.Opt
	if committed {
		opts = append(opts, committedRead)
	}
	recs, err := readAll(ctx, mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST"), remote, opts...)
	if err != nil {
		t.Fatal(err)
	}
	by := byPartition(recs)
	dups := 0
	for p := int32(0); p < parts; p++ {
		idx := make([]int, 0, len(by[p]))
		for _, r := range by[p] {
			v := string(r.Value)
			i, err := strconv.Atoi(v[strings.IndexByte(v, '-')+1:])
			if err != nil || !strings.HasPrefix(v, fmt.Sprintf("p%d-", p)) {
				t.Fatalf("%s[%d] holds %q", remote, p, v)
			}
			idx = append(idx, i)
		}
		d, err := testkit.CheckCopy(idx, n)
		if err != nil {
			t.Fatalf("%s[%d]: %v", remote, p, err)
		}
		dups += d
	}
	return dups
}

// awaitSeq waits until a read of remote holds record n-1 of every partition.
func awaitSeq(ctx context.Context, t *testing.T, remote string, parts int32, n int, committed bool) {
	t.Helper()
	west := mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST")
	pollUntil(ctx, t, 2*time.Minute, fmt.Sprintf("%s to hold record %d of each partition", remote, n-1), func(ctx context.Context) (bool, string) {
		var opts []kgo.Opt
		if committed {
			opts = append(opts, committedRead)
		}
		recs, err := readAll(ctx, west, remote, opts...)
		if err != nil {
			return false, err.Error()
		}
		by := byPartition(recs)
		for p := int32(0); p < parts; p++ {
			want, found := fmt.Sprintf("p%d-%07d", p, n-1), false
			for i := len(by[p]) - 1; i >= 0 && !found; i-- {
				found = string(by[p][i].Value) == want
			}
			if !found {
				return false, fmt.Sprintf("partition %d has %d records, not yet %s", p, len(by[p]), want)
			}
		}
		return true, ""
	})
}

// TestStopAfterCrashLoopOnRealKafka: four replicate processes killed with
// SIGKILL 0.3-1.2 s apart while records arrive, then one more, which copies
// everything; SIGINT ends it within its stop budget (4 s) and a second,
// exit 130, in both delivery modes, also with the target cluster (or, at
// least once, the source) stopped before the signal. Nothing is lost.
func TestStopAfterCrashLoopOnRealKafka(t *testing.T) {
	const eos = "eu-west.exactly.once.source.support = enabled\n"
	for _, tc := range []struct{ name, props, down string }{
		{"at-least-once", "", ""},
		{"at-least-once/target-down", "", euWest},
		{"at-least-once/source-down", "", usEast},
		{"exactly-once", eos, ""},
		{"exactly-once/target-down", eos, euWest},
	} {
		mode, down := tc, tc.down
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			const parts = 4
			topic, cfg, east := lifecycleFlow(ctx, t, "stop", parts, mode.props+`tasks.max = 8
mirrorctl.stop.budget.ms = 4000
us-east.consumer.session.timeout.ms = 6000
eu-west.consumer.session.timeout.ms = 6000
`)
			start := replicateStarter(t, cfg)
			n := 0
			var crashed []*mirrorProc
			for i := range 4 {
				crashed = append(crashed, start(fmt.Sprintf("crashed-%d", i)))
			}
			for k := 0; k < 8; k++ { // copying while they run
				produceSeq(ctx, t, east, topic, parts, n, n+500)
				n += 500
				time.Sleep(200 * time.Millisecond)
			}
			for _, p := range crashed {
				if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				<-p.done
				time.Sleep(300*time.Millisecond + rand.N(900*time.Millisecond))
			}
			survivor := start("survivor")
			produceSeq(ctx, t, east, topic, parts, n, n+2000)
			n += 2000
			awaitSeq(ctx, t, "us-east."+topic, parts, n, mode.props != "")
			if down != "" {
				runScript(ctx, t, "stop", down)
				t.Cleanup(func() { _, _ = tryScript(context.Background(), "start", down) })
			}
			began := time.Now()
			if err := survivor.cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			select {
			case <-survivor.done:
			case <-time.After(30 * time.Second):
				t.Fatal("still running 30 s after SIGINT (stop budget 4 s)")
			}
			took := time.Since(began)
			t.Logf("stopped in %s, exit %d", took.Round(time.Millisecond), survivor.code)
			if lines := strings.Split(strings.TrimSpace(survivor.stderr.String()), "\n"); len(lines) > 0 {
				t.Logf("its last lines:\n%s", strings.Join(lines[max(0, len(lines)-5):], "\n"))
			}
			if took > 5*time.Second {
				t.Errorf("stopped in %s: over the 4 s stop budget and a second", took)
			}
			if survivor.code != 130 {
				t.Errorf("exit %d, want 130", survivor.code)
			}
			if down != "" {
				runScript(ctx, t, "start", down)
			}
			dups := checkSeq(ctx, t, "us-east."+topic, parts, n, mode.props != "")
			t.Logf("every record on the target, %d repeats", dups)
			if mode.props != "" && dups > 0 {
				t.Errorf("exactly-once: %d repeats in a read_committed read", dups)
			}
		})
	}
}

// TestRestartAfterKill9OnRealKafka: a replicate process killed with SIGKILL
// and started again on the same host (its instance slot, so its
// group.instance.id) copies a record produced after its restart well
// within the session timeout (10 s, the default): it takes its partitions
// and the leadership back at once. The time is printed.
func TestRestartAfterKill9OnRealKafka(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const parts = 4
	topic, cfg, east := lifecycleFlow(ctx, t, "restart", parts, "")
	start := replicateStarter(t, cfg)
	first := start("first")
	produceSeq(ctx, t, east, topic, parts, 0, 1000)
	awaitSeq(ctx, t, "us-east."+topic, parts, 1000, false)
	// Its progress is written within a progress interval (1 s) of the copy.
	progressTopic := "mirrorctl-progress.us-east.internal"
	pollUntil(ctx, t, time.Minute, "progress of every partition at 1000", func(ctx context.Context) (bool, string) {
		at, err := readProgressOf(ctx, t, progressTopic, topic)
		if err != nil {
			return false, err.Error()
		}
		for p := int32(0); p < parts; p++ {
			if at[p] < 1000 {
				return false, fmt.Sprintf("partition %d at %d", p, at[p])
			}
		}
		return true, ""
	})
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.done
	restarted := time.Now()
	again := start("restarted")
	produceSeq(ctx, t, east, topic, parts, 1000, 1001)
	awaitSeq(ctx, t, "us-east."+topic, parts, 1001, false)
	took := time.Since(restarted)
	t.Logf("copying again %s after the restart (session timeout 10 s)", took.Round(time.Millisecond))
	if took > 6*time.Second {
		t.Errorf("copying again %s after the restart: it waited for its dead self", took)
	}
	if !strings.Contains(again.stderr.String(), "instance_id=") {
		t.Errorf("the restarted process does not say its instance id")
	}
	checkSeq(ctx, t, "us-east."+topic, parts, 1001, false)
}

// TestExactlyOnceKillMidTransactionOnRealKafka: ten times, an exactly-once
// process copies into a transaction that stays open (it commits every 60 s)
// and is killed with SIGKILL once the transaction holds thousands of
// copies; the next process fences it, finds the remote partition holding
// only records of aborted transactions and no committed progress, and
// resumes from the log start instead of refusing to start. A last process
// commits every 200 ms: a read_committed read of the target holds every
// source record once, in order.
func TestExactlyOnceKillMidTransactionOnRealKafka(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	const parts, n, rounds = 2, 20_000, 10
	topic, cfg, east := lifecycleFlow(ctx, t, "eoskill", parts, "eu-west.exactly.once.source.support = enabled\nmirrorctl.transaction.interval.ms = 60000\n")
	produceSeq(ctx, t, east, topic, parts, 0, n)
	remote := "us-east." + topic
	start := replicateStarter(t, cfg)
	westAdm := kadm.NewClient(newClient(t, mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST")))
	endOf := func(ctx context.Context) (int64, error) {
		ends, err := westAdm.ListEndOffsets(ctx, remote)
		if err != nil {
			return 0, err
		}
		var s int64
		ends.Each(func(o kadm.ListedOffset) { s += o.Offset })
		return s, nil
	}
	for round := 1; round <= rounds; round++ {
		before, err := endOf(ctx)
		if err != nil {
			before = 0 // created by the first process's leader
		}
		p := start(fmt.Sprintf("round-%d", round))
		pollUntil(ctx, t, time.Minute, fmt.Sprintf("round %d: a large open transaction", round), func(ctx context.Context) (bool, string) {
			select {
			case <-p.done:
				t.Fatalf("round %d: the process exited %d before it copied: %s", round, p.code, p.stderr.String())
			default:
			}
			end, err := endOf(ctx)
			if err != nil {
				return false, err.Error()
			}
			return end-before >= 4000, fmt.Sprintf("%d copies in the open transaction", end-before)
		})
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.done
		if out := p.stderr.String(); round > 1 && !strings.Contains(out, "only records of open or aborted transactions") {
			t.Errorf("round %d: the restart did not say it judged the remote by its committed records", round)
		}
	}
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	final := filepath.Join(t.TempDir(), "final.properties")
	writeFile(t, final, strings.Replace(string(b), "mirrorctl.transaction.interval.ms = 60000", "mirrorctl.transaction.interval.ms = 200", 1))
	last := replicateStarter(t, final)("final")
	awaitSeq(ctx, t, remote, parts, n, true)
	_ = last.cmd.Process.Signal(syscall.SIGTERM)
	<-last.done
	if dups := checkSeq(ctx, t, remote, parts, n, true); dups != 0 {
		t.Fatalf("read_committed: %d repeats, want 0", dups)
	}
	total, _ := endOf(ctx)
	t.Logf("%d rounds killed mid-transaction; every record committed once (%d records on the target, aborted ones included)", rounds, total)
}

// readProgressOf returns the newest at-least-once position per partition of
// source topic in mirrorctl's progress topic on the target. It reads
// uncommitted and keeps the records written outside transactions: a
// read_committed read would wait for any transaction left open on the
// topic by another test's killed exactly-once process.
func readProgressOf(ctx context.Context, t *testing.T, progressTopic, topic string) (map[int32]int64, error) {
	recs, err := readAll(ctx, mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST"), progressTopic)
	if err != nil {
		return nil, err
	}
	at := map[int32]int64{}
	for _, r := range recs {
		if r.Attrs.IsTransactional() {
			continue
		}
		if k, v, err := progress.DecodeValue(r.Key, r.Value); err == nil && k.Topic == topic {
			at[k.Partition] = v.Next
		}
	}
	return at, nil
}

// TestProgressBehindOpenTransactionOnRealKafka: a transaction left open on
// the progress topic (as by an exactly-once process killed in it, for a
// partition nobody copies any more) hides nothing written after it: two
// at-least-once `replicate --once` runs, the second resuming where the
// first ended, each end within their budget and copy every record once.
// Reading the progress topic read_committed stopped at the open
// transaction: the first run's tasks waited for it to end, a restart found
// no progress and refused to start.
func TestProgressBehindOpenTransactionOnRealKafka(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const parts = 2
	topic, cfg, east := lifecycleFlow(ctx, t, "hang", parts, "")
	west := mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST")
	open := newClient(t, west, kgo.TransactionalID("hang-"+uniq(t)), kgo.TransactionTimeout(5*time.Minute))
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	defer func() { // leave no open transaction to the tests after this one
		if err := open.EndTransaction(context.Background(), kgo.TryAbort); err != nil {
			t.Errorf("abort the open transaction: %v", err)
		}
	}()
	k, v := progress.Encode(progress.Key{Topic: "gone-" + uniq(t), Partition: 0}, 7, time.Now())
	progressTopic := "mirrorctl-progress.us-east.internal"
	if _, err := kadm.NewClient(open).CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, progressTopic); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatal(err)
	}
	if err := open.ProduceSync(ctx, &kgo.Record{Topic: progressTopic, Key: k, Value: v}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for i, to := range []int{500, 1000} {
		produceSeq(ctx, t, east, topic, parts, to-500, to)
		began := time.Now()
		code, _, stderr := runCLI(ctx, "replicate", "--once", "--timeout", "60s", "-c", cfg)
		if code != 0 {
			t.Fatalf("run %d: exit %d after %s: %s", i+1, code, time.Since(began).Round(time.Millisecond), stderr)
		}
		t.Logf("run %d: %s", i+1, time.Since(began).Round(time.Millisecond))
	}
	if dups := checkSeq(ctx, t, "us-east."+topic, parts, 1000, false); dups != 0 {
		t.Errorf("%d records copied twice: the second run did not resume from the first run's progress", dups)
	}
}
