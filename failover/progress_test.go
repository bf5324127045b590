package failover

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

// TestTranslateReportsProgress translates a group over eight partitions
// exactly with Options.Progress set: each phase of reads starts at 0,
// counts every partition once, in order, and ends; the source side is
// read before the target side. A context cancelled mid-phase still ends it.
func TestTranslateReportsProgress(t *testing.T) {
	p := newPair(t)
	topic := testkit.Name("orders")
	const parts = 8
	p.CreateTopic(t, "us-east", topic, parts, nil)
	commits := map[int32]int64{}
	for i := int32(0); i < parts; i++ {
		p.Produce(t, "us-east", records(topic, i, 0, 40)...)
		commits[i] = 20
	}
	g := testkit.Name("g")
	p.Commit(t, "us-east", g, map[string]map[int32]int64{topic: commits})
	f := testFlow(t, topic)
	p.mirrorOnce(t, f)
	var got []ScanProgress
	e, err := New(Options{Flow: f, Clients: p.Clients, SourceTimeout: 2 * time.Second, Progress: func(s ScanProgress) { got = append(got, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Translate(testkit.Context(t), []string{g}, ModeExact); err != nil {
		t.Fatal(err)
	}
	var phases []string
	for i, s := range got {
		switch {
		case s.End:
			if s.Done != s.Total {
				t.Errorf("step %d: phase on %s ended at %d of %d", i, s.Cluster, s.Done, s.Total)
			}
			phases = append(phases, s.Cluster)
		case i == 0 || got[i-1].End:
			if s.Done != 0 || s.Total != parts {
				t.Errorf("step %d: phase starts at %d of %d, want 0 of %d", i, s.Done, s.Total, parts)
			}
		default:
			if prev := got[i-1]; s.Done != prev.Done+1 || s.Cluster != prev.Cluster || s.Total != prev.Total {
				t.Errorf("step %d: %+v after %+v", i, s, prev)
			}
		}
	}
	if fmt.Sprint(phases) != "[us-east eu-west]" {
		t.Fatalf("phases %v, want [us-east eu-west]: %+v", phases, got)
	}

	// Cancelled once the first partition is read: the phase still ends,
	// short of its total.
	got = nil
	ctx, cancel := context.WithCancel(testkit.Context(t))
	defer cancel()
	e.progress = func(s ScanProgress) {
		got = append(got, s)
		if s.Done == 1 {
			cancel()
		}
	}
	if _, err := e.Translate(ctx, []string{g}, ModeExact); err == nil {
		t.Fatal("a cancelled translation returned no error")
	}
	if len(got) < 2 || !got[len(got)-1].End || got[len(got)-1].Done >= parts {
		t.Fatalf("the cancelled phase did not end short of its total: %+v", got)
	}
}
