package failover

import (
	"strings"
	"testing"
	"time"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

func TestPrechecksAndNoTranslation(t *testing.T) {
	p := newPair(t)
	topic := testkit.Name("orders")
	remote := "us-east." + topic
	p.CreateTopic(t, "us-east", topic, 2, nil)
	p.Produce(t, "us-east", records(topic, 0, 0, 100)...)
	p.Produce(t, "us-east", records(topic, 1, 0, 100)...)
	g := testkit.Name("g")
	p.Commit(t, "us-east", g, map[string]map[int32]int64{topic: {0: 50}})
	f := testFlow(t, topic)
	p.mirrorOnce(t, f)
	p.Commit(t, "eu-west", g, map[string]map[int32]int64{remote: {1: 10}})
	e := p.engine(t, f)
	ctx := testkit.Context(t)

	plan, err := e.PlanFailover(ctx, PlanOptions{Groups: []string{g}, Mode: ModeCheckpoint})
	if err != nil {
		t.Fatal(err)
	}
	rows := actions(plan, g)
	if rows[0].Action != ActionCommit || rows[0].Mode != ModeCheckpoint || rows[1].Action != ActionSkipNoTranslation || i64(rows[1].Current) != "10" {
		t.Fatalf("rows %+v", rows)
	}
	if plan.PrecheckFailed() {
		t.Fatalf("fresh checkpoints refused: %v", groupOf(plan, g).Refused)
	}

	tests := []struct {
		name string
		opts PlanOptions
		want string
	}{
		{"stale checkpoint", PlanOptions{Groups: []string{g}, Mode: ModeCheckpoint, CheckpointMaxAge: time.Nanosecond}, "checkpoint for " + remote + "[0] is not current: the group moved to 55 on us-east"},
		{"lag over --max-lag", PlanOptions{Groups: []string{g}, Mode: ModeExact, MaxLag: time.Minute}, "replication lag of " + topic + "[0] is 1h"},
	}
	p.Produce(t, "us-east", records(topic, 0, 100, 5)...)                 // not mirrored; an hour old
	p.Commit(t, "us-east", g, map[string]map[int32]int64{topic: {0: 55}}) // past the checkpoint
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := e.PlanFailover(ctx, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			ref := groupOf(plan, g).Refused
			if len(ref) == 0 || !strings.HasPrefix(ref[0], tt.want) {
				t.Fatalf("refused %q, want a reason starting %q", ref, tt.want)
			}
			if err := e.Apply(ctx, plan); err != nil {
				t.Fatal(err)
			}
			if plan.Committed() != 0 || actions(plan, g)[0].Outcome != OutcomeRefused {
				t.Fatalf("a refused group was committed: %+v", actions(plan, g))
			}
		})
	}
	// Under the bound, the lag check passes.
	plan, err = e.PlanFailover(ctx, PlanOptions{Groups: []string{g}, Mode: ModeExact, MaxLag: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if plan.PrecheckFailed() {
		t.Fatalf("lag under 2h refused: %v", groupOf(plan, g).Refused)
	}
}
