package replicate

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate/progress"
)

// wantSequences fails unless a read_committed read of remote holds, on
// each of its partitions, the n records produceSeq wrote there, once each
// and in order.
func wantSequences(t *testing.T, p *clusterPair, remote string, partitions int32, n int) {
	t.Helper()
	got := p.ReadAllCommitted(t, testkit.West, remote)
	for part := int32(0); part < partitions; part++ {
		vs := values(got[part])
		if len(vs) != n {
			t.Fatalf("%s[%d] holds %d committed records, want %d", remote, part, len(vs), n)
		}
		for i, v := range vs {
			if want := fmt.Sprintf("p%d-%06d", part, i); v != want {
				t.Fatalf("%s[%d] at %d holds %q, want %q", remote, part, i, v, want)
			}
		}
	}
}

// waitAcked waits until each of the flow's partitions (there are n)
// has its first want records committed (PartitionStats.Acked), 30 s at most.
func waitAcked(t *testing.T, m *Mirror, n int, want int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		done := 0
		for _, s := range m.Stats() {
			if s.Acked >= want {
				done++
			}
		}
		if done == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d partitions have %d records committed after 30 s: %+v", done, n, want, m.Stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestExactlyOnceProducersTakeTurns: twelve partitions through a pool of
// three transactional producers (mirrorctl.transaction.producers.max = 3):
// never more than three open at once, the others take turns, and every
// record is on the target once, in order, read_committed.
func TestExactlyOnceProducersTakeTurns(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("turns")
	p.CreateTopic(t, testkit.East, topic, 12, nil)
	produceSeq(t, p, topic, 12, 300)
	f := eosFlow()
	f.TransactionProducersMax = 3
	m := runOnce(t, p, f)
	for _, s := range m.Stats() {
		if s.Error != "" {
			t.Fatalf("%s[%d]: %s", s.Topic, s.Partition, s.Error)
		}
	}
	wantSequences(t, p, "us-east."+topic, 12, 300)
	st := m.Status()[0].Producers
	if st == nil || st.Max != 3 || st.Peak > 3 || st.Peak < 1 || st.Reopens < 9 {
		t.Fatalf("producers %+v: want max 3, peak 1-3 and at least 9 reopened (12 partitions, 3 slots)", st)
	}
	t.Logf("producers %+v", *st)
}

// TestExactlyOnceProducersTakeTurnsWhileStreaming: a continuous mirror of six
// partitions over two producers while records keep arriving in waves: the
// tasks with records take the producers from the idle ones, and the target
// holds every record once, in order.
func TestExactlyOnceProducersTakeTurnsWhileStreaming(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("stream")
	p.CreateTopic(t, testkit.East, topic, 6, nil)
	f := eosFlow()
	f.TransactionProducersMax = 2
	m, stop := runBackground(t, p, f)
	produceSeq(t, p, topic, 6, 400)
	remote := "us-east." + topic
	waitAcked(t, m, 6, 400)
	st := m.Status()[0].Producers
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	wantSequences(t, p, remote, 6, 400)
	if st == nil || st.Peak > 2 || st.Reopens == 0 {
		t.Fatalf("producers %+v: want at most 2 open at once, and turns taken", st)
	}
}

// TestParkedProducerFindsAnotherOwner: a task whose producer was parked
// reopens it (fencing the id) and then finds the partition's committed
// progress moved by another member while it was parked: it is fenced and
// copies nothing more, rather than copying on from its stale position.
// Here a stand-in for that member fences both partitions' transactional ids
// and commits a progress record for each; with one producer slot one of the
// two tasks is parked at that moment.
func TestParkedProducerFindsAnotherOwner(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("parked")
	p.CreateTopic(t, testkit.East, topic, 2, nil)
	f := eosFlow()
	f.TransactionProducersMax = 1
	m, stop := runBackground(t, p, f)
	produceSeq(t, p, topic, 2, 50)
	remote := "us-east." + topic
	waitAcked(t, m, 2, 50)
	ctx := testkit.Context(t)
	for part := int32(0); part < 2; part++ {
		other := p.Client(t, testkit.West, kgo.TransactionalID(TransactionalID(f.GroupID, topic, part)), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err := other.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		rec := encodeProgressValue(tp{topic, part}, progress.Value{Next: 13, Time: time.Now(), SourceEnd: 50, Downstream: 7})
		rec.Topic = ProgressTopic(f.Policy, "us-east")
		if err := other.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := other.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
	}
	produceSeq(t, p, topic, 2, 10) // more to copy: both tasks want a producer
	deadline := time.Now().Add(30 * time.Second)
	var errs []string
	for {
		errs = errs[:0]
		for _, s := range m.Stats() {
			if s.Error != "" {
				errs = append(errs, s.Error)
			}
		}
		if len(errs) == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(errs) != 2 {
		t.Fatalf("after the other member's commits %d of 2 partitions stopped: %q", len(errs), errs)
	}
	all := strings.Join(errs, "\n")
	t.Logf("stopped:\n%s", all)
	if !strings.Contains(all, "fenced") || !strings.Contains(all, "while the producer was parked: another member copies it") {
		t.Fatalf("want both fenced, one found on reopening its parked producer:\n%s", all)
	}
	got := p.ReadAllCommitted(t, testkit.West, remote)
	if len(got[0]) != 50 || len(got[1]) != 50 {
		t.Fatalf("target holds %d and %d committed records, want 50 each: a fenced task committed copies", len(got[0]), len(got[1]))
	}
	_ = stop()
}

// TestEndsListerShares: callers of the progress view's catch-up share its
// listings: a hundred at once cost at most two, and a caller that arrives
// while a listing is in flight gets one that started after it.
func TestEndsListerShares(t *testing.T) {
	var l endsLister
	var calls atomic.Int64
	release := make(chan struct{})
	do := func(context.Context) (int64, int64, error) {
		n := calls.Add(1)
		if n == 1 {
			<-release // in flight while the others arrive
		}
		return 0, n, nil
	}
	first := make(chan int64)
	go func() {
		_, end, _ := l.list(context.Background(), do)
		first <- end
	}()
	for calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	var wg sync.WaitGroup
	var arrived atomic.Int64
	ends := make(chan int64, 100)
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			arrived.Add(1)
			_, end, _ := l.list(context.Background(), do)
			ends <- end
		}()
	}
	for arrived.Load() < 100 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // from arrived to waiting in list: microseconds
	close(release)
	wg.Wait()
	close(ends)
	if got := <-first; got != 1 {
		t.Fatalf("first caller got listing %d, want 1", got)
	}
	for e := range ends {
		if e < 2 {
			t.Fatalf("a caller that arrived during listing 1 got listing %d, want a later one", e)
		}
	}
	// 2; a third only if a caller was descheduled for 50 ms between
	// arriving and joining.
	if n := calls.Load(); n > 3 {
		t.Fatalf("%d listings for 101 callers, want 2", n)
	}
}
