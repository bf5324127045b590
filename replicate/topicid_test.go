package replicate

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

// A source topic deleted and created again between runs: its progress names
// the old topic ID, so the partition stops with a "recreated" loss event
// naming both IDs (nothing of the new topic copied, no silent skip of its
// first records), run after run; with CopyRecreatedSource the new topic is
// copied from its start, appended to the remote topic.
func TestSourceTopicRecreated(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("recreated")
	remote := "us-east." + topic
	p.CreateTopic(t, "us-east", topic, 1, nil)
	p.Produce(t, "us-east", numbered(topic, 0, 50)...)
	f := testFlow("us-east", "eu-west")
	f.EmitHeartbeats = false
	runOnce(t, p, f)
	oldID := progressOf(t, p, f, topic).TopicID
	if oldID == "" {
		t.Fatal("progress carries no topic ID")
	}
	adm := p.Admin(t, "us-east")
	if _, err := adm.DeleteTopics(testkit.Context(t), topic); err != nil {
		t.Fatal(err)
	}
	p.CreateTopic(t, "us-east", topic, 1, nil)
	p.Produce(t, "us-east", numbered(topic, 100, 180)...) // 80 records: more than the old position
	var logs syncBuffer
	_, err := runOnceErr(t, p, slog.New(slog.NewTextHandler(&logs, nil)), f)
	evs := lossEvents(err)
	if len(evs) != 1 || evs[0].Kind != LossSourceRecreated || !evs[0].Stopped || !strings.Contains(evs[0].Reason, oldID) ||
		!strings.Contains(evs[0].Reason, "mirrorctl.source.recreated = copy-from-start") {
		t.Fatalf("run error %v, want a stop naming the old ID %s and what to do", err, oldID)
	}
	if n := strings.Count(logs.String(), "level=ERROR"); n != 1 {
		t.Fatalf("%d ERROR lines, want 1:\n%s", n, logs.String())
	}
	assertValues(t, p, "eu-west", remote, span(0, 50))
	if pv := progressOf(t, p, f, topic); pv.TopicID != oldID || pv.Loss == nil || !pv.Loss.Stopped || pv.Loss.Kind != "recreated" {
		t.Fatalf("progress %+v: want the old ID kept and the stop recorded", pv)
	}
	// Again: still stopped.
	if _, err := runOnceErr(t, p, nil, f); len(lossEvents(err)) != 1 {
		t.Fatalf("second run: %v", err)
	}
	// The documented choice: copy the new topic from its start.
	f.CopyRecreatedSource = true
	m, err := runOnceErr(t, p, nil, f)
	if err != nil {
		t.Fatalf("copy-from-start run: %v", err)
	}
	assertValues(t, p, "eu-west", remote, append(span(0, 50), span(100, 180)...))
	st := statsOf(m, topic)
	if len(st.Losses) != 1 || st.Losses[0].Kind != LossSourceRecreated || st.Losses[0].Stopped {
		t.Fatalf("stats %+v: want the recreation reported, not stopped", st)
	}
	if pv := progressOf(t, p, f, topic); pv.TopicID == oldID || pv.Next != 80 {
		t.Fatalf("progress %+v: want the new ID at 80", pv)
	}
}

// The remote topic deleted (and created again, empty) between runs: the
// next run finds the remote partition empty though progress says records
// were copied, reports it (a "target-recreated" event in stats, progress
// and so lag) and refills it from the source log start: never ok silently.
func TestTargetTopicRecreatedRefilled(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("tgtgone")
	remote := "us-east." + topic
	p.CreateTopic(t, "us-east", topic, 1, nil)
	p.Produce(t, "us-east", numbered(topic, 0, 40)...)
	f := testFlow("us-east", "eu-west")
	f.EmitHeartbeats = false
	runOnce(t, p, f)
	if _, err := p.Admin(t, "eu-west").DeleteTopics(testkit.Context(t), remote); err != nil {
		t.Fatal(err)
	}
	p.Produce(t, "us-east", numbered(topic, 40, 60)...)
	var logs syncBuffer
	m, err := runOnceErr(t, p, slog.New(slog.NewTextHandler(&logs, nil)), f)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	assertValues(t, p, "eu-west", remote, span(0, 60))
	st := statsOf(m, topic)
	if len(st.Losses) != 1 || st.Losses[0].Kind != LossTargetRecreated {
		t.Fatalf("stats %+v: want the refill reported", st)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "target-recreated") {
		t.Fatalf("no ERROR line for the refill:\n%s", logs.String())
	}
	if pv := progressOf(t, p, f, topic); pv.Next != 60 || pv.Loss == nil || pv.Loss.Kind != "target-recreated" {
		t.Fatalf("progress %+v", pv)
	}
}

// The remote topic deleted while the mirror runs: the partition is never
// reported as copying fine. The flow leader creates the remote topic again
// within refresh.topics.interval.seconds, and the partition refills it from
// the source log start, reported as a "target-recreated" loss event.
func TestTargetTopicDeletedWhileRunning(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("tgtgonelive")
	remote := "us-east." + topic
	p.CreateTopic(t, "us-east", topic, 1, nil)
	p.Produce(t, "us-east", numbered(topic, 0, 40)...)
	f := testFlow("us-east", "eu-west")
	f.EmitHeartbeats = false
	f.RefreshTopicsInterval = time.Second
	m, stop := runBackground(t, p, f)
	testkit.WaitFor(t, "the first records copied", func() bool { return statsOf(m, topic).Acked == 40 })
	if _, err := p.Admin(t, "eu-west").DeleteTopics(testkit.Context(t), remote); err != nil {
		t.Fatal(err)
	}
	p.Produce(t, "us-east", numbered(topic, 40, 60)...)
	testkit.WaitFor(t, "the refill reported", func() bool {
		return len(statsOf(m, topic).Losses) > 0
	})
	testkit.WaitFor(t, "the remote topic refilled", func() bool {
		n := 0
		for _, rs := range p.ReadAll(t, "eu-west", remote) {
			n += len(rs)
		}
		return n >= 60
	})
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	assertValues(t, p, "eu-west", remote, span(0, 60))
	st := statsOf(m, topic)
	if len(st.Losses) != 1 || st.Losses[0].Kind != LossTargetRecreated || st.Losses[0].Stopped || st.State == TaskStopped || st.Error != "" {
		t.Fatalf("stats %+v: want one target-recreated event, the partition not stopped", st)
	}
	if pv := progressOf(t, p, f, topic); pv.Next != 60 || pv.Loss == nil || pv.Loss.Kind != "target-recreated" {
		t.Fatalf("progress %+v", pv)
	}
}
