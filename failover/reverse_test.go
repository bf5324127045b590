package failover

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// reverseSeeded mirrors topic (two partitions: 300 and 50 records) with
// reverse checkpoints on, lets the groups consume the remote topic on
// eu-west at positions, and mirrors once more so the leader checkpoints
// them back to us-east.
func reverseSeeded(t *testing.T, positions map[string]map[int32]int64) (*pair, replicate.FlowConfig, string, string) {
	t.Helper()
	p := newPair(t)
	topic := testkit.Name("orders")
	remote := "us-east." + topic
	p.CreateTopic(t, "us-east", topic, 2, nil)
	p.Produce(t, "us-east", records(topic, 0, 0, 300)...)
	p.Produce(t, "us-east", records(topic, 1, 0, 50)...)
	f := testFlow(t, topic)
	f.ReverseCheckpoints = true
	p.mirrorOnce(t, f)
	for g, pos := range positions {
		p.Commit(t, "eu-west", g, map[string]map[int32]int64{remote: pos})
	}
	p.mirrorOnce(t, f)
	return p, f, topic, remote
}

func sourceCommitted(t *testing.T, p *pair, group, topic string, partition int32) int64 {
	t.Helper()
	resp, err := p.Admin(t, "us-east").FetchOffsets(testkit.Context(t), group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return -2
	}
	if err != nil {
		t.Fatal(err)
	}
	o, ok := resp.Lookup(topic, partition)
	if !ok {
		return -2
	}
	return o.At
}

// Failback in checkpoint mode with eu-west stopped: the groups' positions
// come from the reverse checkpoints on us-east and are committed there; a
// group with none is refused; checkpoints the mirror has not confirmed
// within --checkpoint-max-age are refused; auto mode falls back to them
// when eu-west does not answer.
func TestFailbackCheckpointModeTargetDown(t *testing.T) {
	gEnd, gMid, gNone, gStale := testkit.Name("g-end"), testkit.Name("g-mid"), testkit.Name("g-none"), testkit.Name("g-stale")
	gPin := testkit.Name("g-pin")
	p, f, topic, remote := reverseSeeded(t, map[string]map[int32]int64{
		gEnd:   {0: 300, 1: 50}, // at the ends: the offset syncs 299->299 and 49->49 make them exact
		gMid:   {0: 202},        // exactly at a sync
		gPin:   {0: 150},        // between the syncs 0->0 and 202->202: pinned by content
		gStale: {0: 300},
	})
	// gMid committed on us-east before the failover; it moved on eu-west.
	p.Commit(t, "us-east", gMid, map[string]map[int32]int64{topic: {0: 100}})
	ctx := testkit.Context(t)

	// With eu-west up, checkpoint mode judges each reverse checkpoint by
	// the group's commit there: current while they match.
	plan, err := p.engine(t, f).PlanFailback(ctx, PlanOptions{Groups: []string{gEnd}, Mode: ModeCheckpoint})
	if err != nil {
		t.Fatal(err)
	}
	if gp := groupOf(plan, gEnd); len(gp.Refused) != 0 || len(gp.Partitions) != 2 || !strings.Contains(gp.Partitions[0].Reason, "matches the group's commit 300 on eu-west") {
		t.Fatalf("target up: %+v", gp)
	}

	p.West.Close()
	e := p.engine(t, f)
	plan, err = e.PlanFailback(ctx, PlanOptions{Groups: []string{gEnd, gMid, gPin, gNone}, Mode: ModeCheckpoint})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[int32]int64{gEnd: {0: 300, 1: 50}, gMid: {0: 202}, gPin: {0: 150}}
	exact := map[string]string{gEnd: "exact: at the offset sync", gMid: "exact: at the offset sync 202->202",
		gPin: "exact: pinned by content when the mirror wrote it (between the offset sync 0->0 and the group's 150 on eu-west)"}
	for g, parts := range want {
		gp := groupOf(plan, g)
		if len(gp.Refused) != 0 || len(gp.Partitions) != len(parts) {
			t.Fatalf("%s: %+v", g, gp)
		}
		for _, pp := range gp.Partitions {
			if pp.SourceTopic != topic || pp.Topic != remote || pp.Mode != ModeCheckpoint || pp.Action != ActionCommit ||
				pp.SourceOffset == nil || *pp.SourceOffset != parts[pp.Partition] || pp.TargetOffset == nil || *pp.TargetOffset != parts[pp.Partition] {
				t.Fatalf("%s %s[%d]: %+v (source %s, target %s)", g, pp.SourceTopic, pp.Partition, pp, i64(pp.SourceOffset), i64(pp.TargetOffset))
			}
			if !strings.Contains(pp.Reason, "eu-west does not answer; the mirror last confirmed this reverse checkpoint") ||
				!strings.Contains(pp.Reason, exact[g]) || i64(pp.Rereads) != "0" {
				t.Fatalf("%s: reason %q, rereads %s; want %q, 0", g, pp.Reason, i64(pp.Rereads), exact[g])
			}
		}
	}
	if gp := groupOf(plan, gNone); len(gp.Refused) != 1 || !strings.Contains(gp.Refused[0], "no reverse checkpoint for group "+gNone+" in eu-west.checkpoints.internal on us-east, and eu-west does not answer") {
		t.Fatalf("a group with no reverse checkpoint: %+v", gp)
	}
	plan.Summarize(true) // even --allow-empty does not accept an unknown position
	if gp := groupOf(plan, gNone); len(gp.Incomplete) == 0 {
		t.Fatalf("no reverse checkpoint and the target down: complete %+v", gp)
	}
	if err := e.Apply(ctx, plan); err != nil {
		t.Fatal(err)
	}
	for g, parts := range want {
		for part, at := range parts {
			if got := sourceCommitted(t, p, g, topic, part); got != at {
				t.Errorf("%s %s[%d] committed at %d on us-east, want %d (the reverse checkpoint)", g, topic, part, got, at)
			}
		}
	}
	if got := sourceCommitted(t, p, gNone, topic, 0); got != -2 {
		t.Errorf("%s committed at %d on us-east, want nothing", gNone, got)
	}

	// An hour later the mirror has not confirmed them: refused, unless
	// --checkpoint-max-age says an hour-old one is acceptable.
	later, err := New(Options{Flow: f, Clients: p.Clients, SourceTimeout: 2 * time.Second, Now: func() time.Time { return time.Now().Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	plan, err = later.PlanFailback(ctx, PlanOptions{Groups: []string{gStale}, Mode: ModeCheckpoint})
	if err != nil {
		t.Fatal(err)
	}
	if gp := groupOf(plan, gStale); len(gp.Refused) != 1 || !strings.Contains(gp.Refused[0], "is not current: eu-west does not answer and the mirror last confirmed this reverse checkpoint 1h0m0s ago, not under 3m0s") {
		t.Fatalf("stale reverse checkpoint: %+v", gp.Refused)
	}
	if err := later.Apply(ctx, plan); err != nil {
		t.Fatal(err)
	}
	if got := sourceCommitted(t, p, gStale, topic, 0); got != -2 {
		t.Fatalf("a stale reverse checkpoint was committed at %d", got)
	}
	plan, err = later.PlanFailback(ctx, PlanOptions{Groups: []string{gStale}, Mode: ModeCheckpoint, CheckpointMaxAge: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if gp := groupOf(plan, gStale); len(gp.Refused) != 0 || gp.Partitions[0].Action != ActionCommit {
		t.Fatalf("--checkpoint-max-age 2h: %+v", gp)
	}

	// Auto mode with the target down uses the reverse checkpoints.
	plan, err = e.PlanFailback(ctx, PlanOptions{Groups: []string{gStale}})
	if err != nil {
		t.Fatal(err)
	}
	if gp := groupOf(plan, gStale); plan.Mode != ModeCheckpoint || len(gp.Refused) != 0 || len(gp.Partitions) != 1 || *gp.Partitions[0].SourceOffset != 300 {
		t.Fatalf("auto, target down: mode %s %+v", plan.Mode, gp)
	}
}

// A partition the group commits on us-east with no reverse checkpoint is
// not guessed (the group may have moved on eu-west): skip-no-translation,
// and the group is incomplete.
func TestFailbackCheckpointModeMissingPartition(t *testing.T) {
	g := testkit.Name("g-part")
	p, f, topic, _ := reverseSeeded(t, map[string]map[int32]int64{g: {0: 300}})
	p.Commit(t, "us-east", g, map[string]map[int32]int64{topic: {0: 10, 1: 10}})
	p.West.Close()
	plan, err := p.engine(t, f).PlanFailback(testkit.Context(t), PlanOptions{Groups: []string{g}, Mode: ModeCheckpoint})
	if err != nil {
		t.Fatal(err)
	}
	plan.Summarize(false)
	gp := groupOf(plan, g)
	if len(gp.Partitions) != 2 || gp.Partitions[0].Action != ActionCommit || gp.Partitions[1].Action != ActionSkipNoTranslation ||
		!strings.Contains(gp.Partitions[1].Reason, "no reverse checkpoint") || len(gp.Incomplete) == 0 {
		t.Fatalf("%+v", gp)
	}
}
