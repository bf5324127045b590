package failover

import (
	"strings"
	"testing"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

// Checkpoint mode never drops a commit it has no checkpoint for: with the
// source answering, the commit is a skip-no-translation row (the group is
// incomplete); with the source down, a group without any checkpoint is
// refused as unknown, --allow-empty or not.
func TestCommitsWithoutCheckpointAreNotDropped(t *testing.T) {
	old := testkit.Name("g-old")
	p, f, topic, _ := seeded(t, old)
	late := testkit.Name("g-late") // commits after the mirror's last pass
	p.Commit(t, "us-east", late, map[string]map[int32]int64{topic: {0: 30}})
	e := p.engine(t, f)
	ctx := testkit.Context(t)
	plan, err := e.PlanFailover(ctx, PlanOptions{Groups: []string{late}, Mode: ModeCheckpoint})
	if err != nil {
		t.Fatal(err)
	}
	plan.Summarize(true)
	gp := groupOf(plan, late)
	if len(gp.Partitions) != 1 || gp.Partitions[0].Action != ActionSkipNoTranslation || i64(gp.Partitions[0].SourceOffset) != "30" || len(gp.Incomplete) == 0 {
		t.Fatalf("source up: %+v", gp)
	}
	p.East.Close()
	plan, err = e.PlanFailover(ctx, PlanOptions{Groups: []string{late, old}})
	if err != nil {
		t.Fatal(err)
	}
	plan.Summarize(true)
	if gp := groupOf(plan, late); len(gp.Refused) != 1 || !strings.Contains(gp.Refused[0], "no checkpoint for group "+late+", and its commits on us-east cannot be read") || len(gp.Incomplete) == 0 {
		t.Fatalf("source down, no checkpoint: %+v", gp)
	}
	if gp := groupOf(plan, old); len(gp.Refused) != 0 || len(gp.Partitions) != 2 {
		t.Fatalf("source down, checkpointed group: %+v", gp)
	}
}
