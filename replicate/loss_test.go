package replicate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate/progress"
)

// syncBuffer is a goroutine-safe log sink.
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

// numbered returns records from..to-1 of one partition, valued "v<i>".
func numbered(topic string, from, to int) []*kgo.Record {
	var out []*kgo.Record
	for i := from; i < to; i++ {
		out = append(out, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("v%d", i))})
	}
	return out
}

// assertValues checks that topic's partition 0 on alias holds exactly want,
// in order (so neither a duplicate nor a missing record).
func assertValues(t *testing.T, p *clusterPair, alias, topic string, want []int) {
	t.Helper()
	got := p.ReadAll(t, alias, topic)[0]
	if len(got) != len(want) {
		t.Fatalf("%s holds %d records, want %d", topic, len(got), len(want))
	}
	for i, r := range got {
		if string(r.Value) != fmt.Sprintf("v%d", want[i]) {
			t.Fatalf("%s #%d = %q, want v%d", topic, i, r.Value, want[i])
		}
	}
}

func span(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// progressOf reads the newest progress value of topic[0] from the flow's
// progress topic.
func progressOf(t *testing.T, p *clusterPair, f FlowConfig, topic string) progress.Value {
	t.Helper()
	var v progress.Value
	found := false
	for _, r := range p.ReadAll(t, f.Target, ProgressTopic(f.Policy, f.Source))[0] {
		k, val, err := progress.DecodeValue(r.Key, r.Value)
		if err == nil && k.Topic == topic && k.Partition == 0 {
			v, found = val, true
		}
	}
	if !found {
		t.Fatalf("no progress for %s[0]", topic)
	}
	return v
}

func lossEvents(err error) []*LossEvent {
	var out []*LossEvent
	for _, e := range unjoinErr(err) {
		var le *LossEvent
		if errors.As(e, &le) {
			out = append(out, le)
		}
	}
	return out
}

func unjoinErr(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func runOnceErr(t *testing.T, p *clusterPair, log *slog.Logger, flows ...FlowConfig) (*Mirror, error) {
	t.Helper()
	m, err := New(Options{Flows: flows, Clients: p.Clients, Once: true, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	return m, m.Run(testkit.Context(t))
}

func statsOf(m *Mirror, topic string) PartitionStats {
	for _, s := range m.Stats() {
		if s.Topic == topic && s.Partition == 0 {
			return s
		}
	}
	return PartitionStats{}
}

// Records deleted on the source between two runs, before they were copied:
// the next run reports the exact range as a gap (error log line, stats,
// progress, Run's error), and copies on from the log start; with
// auto.offset.reset=none (StopOnGap) the partition stops instead, run
// after run, with nothing after the gap copied.
func TestGapAtStart(t *testing.T) {
	for _, stop := range []bool{false, true} {
		t.Run(fmt.Sprintf("stop=%v", stop), func(t *testing.T) {
			p := newClusterPair(t)
			topic := testkit.Name("gapstart")
			p.CreateTopic(t, "us-east", topic, 1, nil)
			p.Produce(t, "us-east", numbered(topic, 0, 100)...)
			f := testFlow("us-east", "eu-west")
			f.EmitHeartbeats = false
			f.StopOnGap = stop
			runOnce(t, p, f)
			p.Produce(t, "us-east", numbered(topic, 100, 200)...)
			if err := p.East.DeleteRecords(topic, 0, 150); err != nil {
				t.Fatal(err)
			}
			var logs syncBuffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			m, err := runOnceErr(t, p, log, f)
			evs := lossEvents(err)
			if len(evs) != 1 || len(unjoinErr(err)) != 1 {
				t.Fatalf("run error %v, want one loss event", err)
			}
			ev := evs[0]
			if ev.Kind != LossGap || ev.From != 100 || ev.To != 150 || ev.Count != 50 || ev.Stopped != stop || ev.Topic != topic {
				t.Fatalf("event %+v", ev)
			}
			if !strings.Contains(ev.Error(), "source offsets 100 to 149 (50 records) not copied") {
				t.Fatalf("error %q does not name the offsets", ev.Error())
			}
			if n := strings.Count(logs.String(), "level=ERROR"); n != 1 || !strings.Contains(logs.String(), "kind=gap") {
				t.Fatalf("want one ERROR line for the gap, log:\n%s", logs.String())
			}
			remote := "us-east." + topic
			pv := progressOf(t, p, f, topic)
			if pv.Skipped != 50 || pv.Loss == nil || pv.Loss.Kind != "gap" || pv.Loss.From != 100 || pv.Loss.To != 150 || pv.Loss.Stopped != stop {
				t.Fatalf("progress %+v loss %+v", pv, pv.Loss)
			}
			st := statsOf(m, topic)
			if st.Skipped != 50 || len(st.Losses) != 1 {
				t.Fatalf("stats %+v", st)
			}
			if !stop {
				assertValues(t, p, "eu-west", remote, append(span(0, 100), span(150, 200)...))
				if pv.Next != 200 || st.State == TaskStopped {
					t.Fatalf("progress next %d, state %s; want 200, copying", pv.Next, st.State)
				}
				return
			}
			assertValues(t, p, "eu-west", remote, span(0, 100))
			if pv.Next != 100 || !strings.Contains(st.Error, "auto.offset.reset is none") {
				t.Fatalf("progress next %d, stats %+v; want stopped at 100", pv.Next, st)
			}
			// The next run stops again: the gap is still there.
			_, err = runOnceErr(t, p, nil, f)
			if evs := lossEvents(err); len(evs) != 1 || !evs[0].Stopped || evs[0].From != 100 {
				t.Fatalf("second run: %v", err)
			}
			assertValues(t, p, "eu-west", remote, span(0, 100))
		})
	}
}

// holdFetches makes the next fetch of topic from the East cluster wait
// until the returned release func is called, and returns once that fetch is
// held.
func holdFetches(t *testing.T, p *clusterPair, topic string, nudge func()) (release func()) {
	t.Helper()
	c := p.East
	md, err := p.Admin(t, "us-east").Metadata(testkit.Context(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	id := md.Topics[topic].ID
	var used atomic.Bool
	held, free := make(chan struct{}), make(chan struct{})
	c.ControlKey(kmsg.Fetch.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		ours := false
		for _, rt := range req.(*kmsg.FetchRequest).Topics {
			ours = ours || rt.Topic == topic || rt.TopicID == id
		}
		if ours && used.CompareAndSwap(false, true) {
			close(held)
			c.SleepControl(func() { <-free })
		}
		return nil, nil, false
	})
	// The consumer's fetch in progress is answered by new records; its
	// next one is held.
	nudge()
	select {
	case <-held:
	case <-time.After(20 * time.Second):
		t.Fatal("no fetch held within 20s")
	}
	var once sync.Once
	release = func() { once.Do(func() { close(free) }) }
	t.Cleanup(release)
	return release
}

// Records deleted on the source while the mirror runs, before it copied
// them: the exact range is reported (error line, stats, progress, Run's
// error) and copying goes on from the log start, nothing duplicated; with
// StopOnGap the partition stops at the gap, everything before it copied.
func TestGapWhileRunning(t *testing.T) {
	for _, stop := range []bool{false, true} {
		t.Run(fmt.Sprintf("stop=%v", stop), func(t *testing.T) {
			p := newClusterPair(t)
			topic := testkit.Name("gaprun")
			remote := "us-east." + topic
			p.CreateTopic(t, "us-east", topic, 1, nil)
			p.Produce(t, "us-east", numbered(topic, 0, 100)...)
			f := testFlow("us-east", "eu-west")
			f.EmitHeartbeats = false
			f.StopOnGap = stop
			var logs syncBuffer
			m, err := New(Options{Flows: []FlowConfig{f}, Clients: p.Clients, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(testkit.Context(t))
			done := make(chan error, 1)
			go func() { done <- m.Run(ctx) }()
			defer func() { cancel(); <-done }()
			testkit.WaitFor(t, "the first 100 records copied", func() bool { return statsOf(m, topic).Acked == 100 })
			release := holdFetches(t, p, topic, func() { p.Produce(t, "us-east", numbered(topic, 100, 101)...) })
			p.Produce(t, "us-east", numbered(topic, 101, 200)...)
			if err := p.East.DeleteRecords(topic, 0, 150); err != nil {
				t.Fatal(err)
			}
			release()
			if stop {
				testkit.WaitFor(t, "the partition to stop", func() bool { return statsOf(m, topic).State == TaskStopped })
			} else {
				testkit.WaitFor(t, "the rest copied", func() bool { return statsOf(m, topic).Acked == 200 })
			}
			cancel()
			err = <-done
			done <- nil
			// The held fetch is the one after the nudge record, or the one
			// that would have fetched it: the gap starts at 101 or 100.
			evs := lossEvents(err)
			if len(evs) != 1 || len(unjoinErr(err)) != 1 {
				t.Fatalf("run error %v, want one loss event; log:\n%s", err, logs.String())
			}
			ev := evs[0]
			from := int(ev.From)
			if ev.Kind != LossGap || (from != 100 && from != 101) || ev.To != 150 || ev.Count != int64(150-from) || ev.Stopped != stop {
				t.Fatalf("event %+v, want a gap from 100 or 101 to 150", ev)
			}
			if n := strings.Count(logs.String(), "level=ERROR"); n != 1 {
				t.Fatalf("%d ERROR lines, want 1:\n%s", n, logs.String())
			}
			pv := progressOf(t, p, f, topic)
			if pv.Skipped != ev.Count || pv.Loss == nil || pv.Loss.From != ev.From || pv.Loss.Stopped != stop {
				t.Fatalf("progress %+v loss %+v", pv, pv.Loss)
			}
			if stop {
				assertValues(t, p, "eu-west", remote, span(0, from))
				if pv.Next != ev.From {
					t.Fatalf("progress next %d, want %d", pv.Next, ev.From)
				}
				return
			}
			assertValues(t, p, "eu-west", remote, append(span(0, from), span(150, 200)...))
			if pv.Next != 200 {
				t.Fatalf("progress next %d, want 200", pv.Next)
			}
		})
	}
}

// The loss log is rate-limited: past the burst, lines are held back and
// the next line allowed says how many.
func TestLossLogLimited(t *testing.T) {
	var l lossLimiter
	now := time.Unix(1_700_000_000, 0)
	for i := 0; i < lossLogBurst; i++ {
		if ok, _ := l.allow(now); !ok {
			t.Fatalf("line %d held back within the burst", i)
		}
	}
	for i := 0; i < 5; i++ {
		if ok, _ := l.allow(now.Add(time.Second)); ok {
			t.Fatal("line past the burst allowed")
		}
	}
	if ok, held := l.allow(now.Add(time.Minute)); !ok || held != 5 {
		t.Fatalf("after a minute: allowed %v, held %d; want true, 5", ok, held)
	}
}

// The progress topic lost (deleted): the next run resumes after the newest
// offset sync, says so, and copies again only what the target took after
// that sync (at most offset.lag.max records), never the whole topic.
func TestProgressLostResumesFromOffsetSync(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("lostprog")
	remote := "us-east." + topic
	p.CreateTopic(t, "us-east", topic, 1, nil)
	p.Produce(t, "us-east", numbered(topic, 0, 100)...)
	f := testFlow("us-east", "eu-west")
	f.EmitHeartbeats = false
	f.OffsetLagMax = 10
	runOnce(t, p, f)
	if _, err := p.Admin(t, "eu-west").DeleteTopics(testkit.Context(t), ProgressTopic(f.Policy, f.Source)); err != nil {
		t.Fatal(err)
	}
	p.Produce(t, "us-east", numbered(topic, 100, 150)...)
	var logs syncBuffer
	m, err := runOnceErr(t, p, slog.New(slog.NewTextHandler(&logs, nil)), f)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	st := statsOf(m, topic)
	if st.ResumedFrom != ResumeOffsetSync || st.Start < 90 || st.Start > 100 {
		t.Fatalf("stats %+v: want a resume after the newest offset sync, at 90..100", st)
	}
	if !strings.Contains(logs.String(), "or the progress topic was lost): resuming after the newest offset sync") {
		t.Fatalf("the resume is not explained:\n%s", logs.String())
	}
	got := p.ReadAll(t, "eu-west", remote)[0]
	idx := make([]int, len(got))
	for i, r := range got {
		if _, err := fmt.Sscanf(string(r.Value), "v%d", &idx[i]); err != nil {
			t.Fatal(err)
		}
	}
	dups, err := testkit.CheckCopy(idx, 150)
	if err != nil {
		t.Fatal(err)
	}
	if want := 100 - int(st.Start); dups != want || dups > int(f.OffsetLagMax) {
		t.Fatalf("%d records copied again, want %d (<= offset.lag.max %d)", dups, want, f.OffsetLagMax)
	}
	t.Logf("progress lost: resumed at %d, %d records copied again (without the offset syncs all 100 would be)", st.Start, dups)
}

// targetLoss tells a remote partition that lost mirrored records from one
// that holds them, counts the records gone and those lost, and refills only
// an empty remote partition.
func TestTargetLoss(t *testing.T) {
	tests := []struct {
		name                                  string
		downstream, remoteEnd, next, logStart int64
		want                                  bool
		gone, count, from                     int64
		refill                                bool
	}{
		{"holds what was mirrored", 100, 100, 100, 0, false, 0, 0, 0, false},
		{"holds more (another writer)", 100, 120, 100, 0, false, 0, 0, 0, false},
		{"nothing mirrored yet", 0, 0, 50, 50, false, 0, 0, 0, false},
		{"emptied, source holds all", 100, 0, 100, 0, true, 100, 0, 0, true},
		{"emptied, source holds the last 30", 100, 0, 100, 70, true, 100, 70, 70, true},
		{"emptied, source holds none", 100, 0, 100, 100, true, 100, 100, 100, true},
		{"truncated: last 10 gone", 100, 90, 100, 0, true, 10, 10, 100, false},
		{"old progress, emptied", 0, 0, 100, 40, true, 0, 0, 40, true},
		{"old progress, source holds none", 0, 0, 100, 100, false, 0, 0, 0, false},
	}
	for _, tt := range tests {
		ev, refill := targetLoss("us-east.t", 0, tt.downstream, tt.remoteEnd, tt.next, tt.logStart)
		if (ev != nil) != tt.want {
			t.Errorf("%s: event %+v, want one: %v", tt.name, ev, tt.want)
			continue
		}
		if ev == nil {
			continue
		}
		if ev.Kind != LossTargetRecreated || ev.Gone != tt.gone || ev.Count != tt.count || ev.From != tt.from || ev.To != tt.from || refill != tt.refill || ev.Reason == "" {
			t.Errorf("%s: event %+v refill %v; want gone %d, count %d, from %d, refill %v", tt.name, ev, refill, tt.gone, tt.count, tt.from, tt.refill)
		}
	}
}
