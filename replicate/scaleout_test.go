package replicate

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// member is one engine of a scale-out test: its own Mirror, its own
// clients, its own context.
type member struct {
	m    *Mirror
	stop func() error
}

func startMember(t *testing.T, p *clusterPair, f FlowConfig) *member {
	t.Helper()
	m, stop := runBackground(t, p, f)
	return &member{m: m, stop: stop}
}

func (mb *member) status(t *testing.T) FlowStatus {
	t.Helper()
	st := mb.m.Status()
	if len(st) != 1 {
		return FlowStatus{}
	}
	return st[0]
}

// produceSeq writes n records per partition, "p<partition>-<index>", in
// batches, while the members copy.
func produceSeq(t *testing.T, p *clusterPair, topic string, partitions int32, n int) {
	t.Helper()
	cl := p.Client(t, "us-east", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := 0; i < n; i += 50 {
		var recs []*kgo.Record
		for part := int32(0); part < partitions; part++ {
			for j := i; j < min(i+50, n); j++ {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: part, Value: []byte(fmt.Sprintf("p%d-%06d", part, j))})
			}
		}
		if err := cl.ProduceSync(testkit.Context(t), recs...).FirstErr(); err != nil {
			t.Error(err)
			return
		}
		time.Sleep(5 * time.Millisecond) // a stream, not one burst
	}
}

// checkSequences asserts every partition of remote holds the n records of
// its source partition, no record lost, runs in order, and returns the
// repeats per partition.
func checkSequences(t *testing.T, p *clusterPair, remote string, partitions int32, n int) int {
	t.Helper()
	got := p.ReadAll(t, "eu-west", remote)
	total := 0
	for part := int32(0); part < partitions; part++ {
		idx := make([]int, 0, len(got[part]))
		for _, r := range got[part] {
			pre, num, ok := strings.Cut(string(r.Value), "-")
			i, err := strconv.Atoi(num)
			if !ok || err != nil || pre != fmt.Sprintf("p%d", part) {
				t.Fatalf("%s[%d] holds %q: not a record of source partition %d", remote, part, r.Value, part)
			}
			idx = append(idx, i)
		}
		dups, err := testkit.CheckCopy(idx, n)
		if err != nil {
			t.Fatalf("%s[%d]: %v", remote, part, err)
		}
		total += dups
	}
	return total
}

// awaitCopied waits until the remote topic holds at least n records per
// partition.
func awaitCopied(t *testing.T, p *clusterPair, remote string, partitions int32, n int) {
	t.Helper()
	adm := p.Admin(t, "eu-west")
	deadline := time.Now().Add(60 * time.Second)
	for {
		ends, err := adm.ListEndOffsets(context.Background(), remote)
		ok := err == nil
		for part := int32(0); ok && part < partitions; part++ {
			o, found := ends.Lookup(remote, part)
			ok = found && o.Err == nil && o.Offset >= int64(n)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not reach %d records per partition in 60s", remote, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func tasksOf(t *testing.T, members ...*member) []int {
	out := make([]int, len(members))
	for i, mb := range members {
		out[i] = mb.status(t).Tasks
	}
	return out
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// Three engines share twelve partitions while records keep arriving, a
// fourth joins, one leaves: every record is on the target in per-partition
// order, and a graceful handover (revoke: in-flight copies awaited, progress
// written, then release) copies nothing twice. Exactly one engine leads.
func TestMembersSharePartitions(t *testing.T) {
	p := &clusterPair{testkit.NewPairWith(t, kfake.GroupMinSessionTimeout(100*time.Millisecond))}
	topic := testkit.Name("shared")
	const parts, n = 12, 1500
	p.CreateTopic(t, "us-east", topic, parts, nil)
	f := testFlow("us-east", "eu-west")
	f.GroupID = testkit.Name("mirrorctl-shared")
	f.TasksMax = 0
	f.SessionTimeout = 2 * time.Second

	a, b, c := startMember(t, p, f), startMember(t, p, f), startMember(t, p, f)
	testkit.WaitFor(t, "12 partitions spread over 3 members", func() bool {
		ts := tasksOf(t, a, b, c)
		return sum(ts) == parts && ts[0] > 0 && ts[1] > 0 && ts[2] > 0
	})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); produceSeq(t, p, topic, parts, n) }()

	d := startMember(t, p, f)
	testkit.WaitFor(t, "the 4th member takes partitions", func() bool {
		ts := tasksOf(t, a, b, c, d)
		return ts[3] > 0 && sum(ts) == parts
	})
	if err := b.stop(); err != nil {
		t.Fatalf("stop member b: %v", err)
	}
	testkit.WaitFor(t, "b's partitions taken over", func() bool { return sum(tasksOf(t, a, c, d)) == parts })
	wg.Wait()
	awaitCopied(t, p, "us-east."+topic, parts, n)

	// b may have led: its leadership moves to one of the others.
	testkit.WaitFor(t, "exactly one leader among a, c, d", func() bool {
		leaders := 0
		for _, mb := range []*member{a, c, d} {
			if mb.status(t).Leader {
				leaders++
			}
		}
		return leaders == 1
	})
	for _, mb := range []*member{a, c, d} {
		if err := mb.stop(); err != nil {
			t.Fatalf("stop: %v", err)
		}
	}
	dups := checkSequences(t, p, "us-east."+topic, parts, n)
	t.Logf("%d records per partition over %d partitions; %d repeats", n, parts, dups)
	if dups != 0 {
		t.Errorf("graceful handovers repeated %d records, want 0", dups)
	}
	// The whole run wrote one heartbeat per interval, not one per member.
	hbs := p.ReadAll(t, "eu-west", "heartbeats")[0]
	if len(hbs) == 0 {
		t.Fatal("no heartbeats")
	}
	overlap := 0
	for i := 1; i < len(hbs); i++ {
		if hbs[i].Timestamp.Sub(hbs[i-1].Timestamp) < f.HeartbeatsInterval/2 {
			overlap++
		}
	}
	t.Logf("%d heartbeats, %d closer than half an interval", len(hbs), overlap)
	if overlap > len(hbs)/10+2 {
		t.Errorf("%d of %d heartbeats came closer than half an interval: more than one member emits them", overlap, len(hbs))
	}
}

// With tasks.max members copying, another process waits as a standby, takes
// over when a member leaves, and leaves nothing behind.
func TestTasksMaxStandby(t *testing.T) {
	p := &clusterPair{testkit.NewPairWith(t, kfake.GroupMinSessionTimeout(100*time.Millisecond))}
	topic := testkit.Name("standby")
	p.CreateTopic(t, "us-east", topic, 4, nil)
	f := testFlow("us-east", "eu-west")
	f.GroupID = testkit.Name("mirrorctl-standby")
	f.SessionTimeout = 2 * time.Second // tasks.max stays at its default, 1

	a := startMember(t, p, f)
	testkit.WaitFor(t, "a runs every partition", func() bool { return a.status(t).Tasks == 4 })
	b := startMember(t, p, f)
	testkit.WaitFor(t, "b waits as a standby", func() bool { return b.status(t).Membership == MemberStandby })
	p.Produce(t, "us-east", sampleRecords(topic, 4, 50)...)
	time.Sleep(3 * standbyPoll) // b must stay a standby while a runs
	if st := b.status(t); st.Membership != MemberStandby || st.Tasks != 0 {
		t.Fatalf("b: %+v, want a standby without tasks", st)
	}
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "b takes over", func() bool { return b.status(t).Tasks == 4 })
	p.Produce(t, "us-east", sampleRange(topic, 4, 50, 80)...)
	awaitCopied(t, p, "us-east."+topic, 4, 80)
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	if n := assertCopied(t, p, "us-east", topic, "eu-west", "us-east."+topic); n != 320 {
		t.Fatalf("copied %d, want 320 (each record once)", n)
	}
}

// Two --once runs started at the same moment on one flow share it (tasks.max
// 2): together they copy everything once.
func TestTwoOnceRunsShareAFlow(t *testing.T) {
	p := &clusterPair{testkit.NewPairWith(t, kfake.GroupMinSessionTimeout(100*time.Millisecond))}
	topic := testkit.Name("once2")
	p.CreateTopic(t, "us-east", topic, 6, nil)
	p.Produce(t, "us-east", sampleRecords(topic, 6, 200)...)
	f := testFlow("us-east", "eu-west")
	f.GroupID = testkit.Name("mirrorctl-once2")
	f.TasksMax = 2
	f.SessionTimeout = 2 * time.Second
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			m, err := New(Options{Flows: []FlowConfig{f}, Clients: p.Clients, Once: true})
			if err == nil {
				err = m.Run(testkit.Context(t))
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("run once: %v", err)
		}
	}
	if n := assertCopied(t, p, "us-east", topic, "eu-west", "us-east."+topic); n != 1200 {
		t.Fatalf("copied %d, want 1200", n)
	}
	syncs := p.ReadAll(t, "us-east", "mm2-offset-syncs.eu-west.internal")[0]
	if len(syncs) == 0 {
		t.Fatal("no offset syncs")
	}
	if _, err := mm2.DecodeOffsetSync(syncs[0].Key, syncs[0].Value); err != nil {
		t.Fatal(err)
	}
}

// Two --once runs sharing a flow whose copy takes long enough that one
// member lists the remote ends while the other is still copying the
// partitions it keeps: both end, within a bound, with every record copied.
// (The later member took the other's progress, written after its listing,
// for a remote partition that had lost records, and waited for ever.)
func TestTwoOnceRunsEndWhileTheOtherCopies(t *testing.T) {
	p := &clusterPair{testkit.NewPairWith(t, kfake.GroupMinSessionTimeout(100*time.Millisecond))}
	topic := testkit.Name("once2busy")
	const parts, per = 16, 8000
	p.CreateTopic(t, "us-east", topic, parts, nil)
	cl := p.Client(t, "us-east", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	val := make([]byte, 50)
	for i := 0; i < parts*per; i++ {
		cl.Produce(testkit.Context(t), &kgo.Record{Topic: topic, Partition: int32(i % parts), Value: val}, nil)
	}
	if err := cl.Flush(testkit.Context(t)); err != nil {
		t.Fatal(err)
	}
	f := testFlow("us-east", "eu-west")
	f.GroupID = testkit.Name("mirrorctl-once2busy")
	f.TasksMax = 2
	f.SessionTimeout = 2 * time.Second
	ctx, cancel := context.WithTimeout(testkit.Context(t), time.Minute)
	defer cancel()
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			m, err := New(Options{Flows: []FlowConfig{f}, Clients: p.Clients, Once: true})
			if err == nil {
				err = m.Run(ctx)
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("run once: %v (a minute was the bound)", err)
		}
	}
	if ctx.Err() != nil {
		t.Fatal("the two --once runs did not end within a minute: one waits for a partition it does not own")
	}
	ends := p.Admin(t, "eu-west")
	listed, err := ends.ListEndOffsets(testkit.Context(t), "us-east."+topic)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	listed.Each(func(o kadm.ListedOffset) { sum += o.Offset })
	if sum < parts*per {
		t.Fatalf("the remote topic holds %d records, want at least %d", sum, parts*per)
	}
}
