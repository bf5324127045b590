package failover

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

func actions(p *Plan, group string) map[int32]PartitionPlan {
	out := map[int32]PartitionPlan{}
	for _, g := range p.Groups {
		if g.Group == group {
			for _, pp := range g.Partitions {
				out[pp.Partition] = pp
			}
		}
	}
	return out
}

func groupOf(p *Plan, group string) GroupPlan {
	for _, g := range p.Groups {
		if g.Group == group {
			return g
		}
	}
	return GroupPlan{}
}

func TestFailoverPlanApplyVerify(t *testing.T) {
	p := newPair(t)
	topic := testkit.Name("orders")
	remote := "us-east." + topic
	p.CreateTopic(t, "us-east", topic, 2, nil)
	p.Produce(t, "us-east", records(topic, 0, 0, 300)...)
	p.Produce(t, "us-east", records(topic, 1, 0, 100)...)
	gMain, gZero, gNeg, gAhead, gActive, gLate := testkit.Name("g-main"), testkit.Name("g-zero"), testkit.Name("g-neg"), testkit.Name("g-ahead"), testkit.Name("g-active"), testkit.Name("g-late")
	for _, g := range []string{gMain, gNeg, gAhead, gActive} {
		p.Commit(t, "us-east", g, map[string]map[int32]int64{topic: {0: 150}})
	}
	p.Commit(t, "us-east", gZero, map[string]map[int32]int64{topic: {0: 0, 1: 0}})
	f := testFlow(t, topic)
	p.mirrorOnce(t, f)
	p.Produce(t, "us-east", records(topic, 1, 100, 10)...) // not mirrored
	p.Commit(t, "us-east", gLate, map[string]map[int32]int64{topic: {0: 300, 1: 105}})
	p.Commit(t, "eu-west", gNeg, map[string]map[int32]int64{remote: {0: -1}})
	p.Commit(t, "eu-west", gAhead, map[string]map[int32]int64{remote: {0: 200}})
	// An active consumer of gActive on the target.
	cons, err := p.Clients.Client("eu-west", "consumer", kgo.ConsumerGroup(gActive), kgo.ConsumeTopics(remote))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	if _, err := p.West.WaitGroupStable(testkit.Context(t), gActive, 1); err != nil {
		cons.PollFetches(testkit.Context(t))
		if _, err := p.West.WaitGroupStable(testkit.Context(t), gActive, 1); err != nil {
			t.Fatal(err)
		}
	}

	e := p.engine(t, f)
	ctx := testkit.Context(t)
	groups := []string{gMain, gZero, gNeg, gAhead, gActive, gLate}
	plan, err := e.PlanFailover(ctx, PlanOptions{Groups: groups, Mode: ModeExact})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		group     string
		partition int32
		action    Action
		target    string
	}{
		{gMain, 0, ActionCommit, "150"},
		{gMain, 1, ActionSkipNoSourceCommit, "nil"},
		{gZero, 0, ActionCommit, "0"},
		{gZero, 1, ActionCommit, "0"},
		{gNeg, 0, ActionCommit, "150"},
		{gAhead, 0, ActionSkipRewind, "150"},
		{gActive, 0, ActionSkipActive, "150"},
		{gLate, 0, ActionCommit, "300"},
		{gLate, 1, ActionSkipNotReplicated, "nil"},
	}
	for _, tt := range tests {
		pp := actions(plan, tt.group)[tt.partition]
		if pp.Action != tt.action || i64(pp.TargetOffset) != tt.target {
			t.Errorf("%s[%d]: action %s target %s (%s), want %s %s", tt.group, tt.partition, pp.Action, i64(pp.TargetOffset), pp.Reason, tt.action, tt.target)
		}
	}
	if g := groupOf(plan, gActive); len(g.Refused) != 1 || g.State != "Stable" || g.Members != 1 ||
		!strings.HasPrefix(g.Refused[0], "group "+gActive+" is Stable on eu-west (1 members); stop its consumers first: kgo@") ||
		len(g.Blocking) != 1 || g.Blocking[0].Protocol != "classic" || g.Type != "classic" {
		t.Errorf("active group: %+v", g)
	}
	if !plan.PrecheckFailed() {
		t.Error("PrecheckFailed = false with an active group")
	}

	if err := e.Apply(ctx, plan); err != nil {
		t.Fatal(err)
	}
	if err := e.Verify(ctx, plan); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		pp := actions(plan, tt.group)[tt.partition]
		want := map[Action]string{ActionCommit: OutcomeCommitted, ActionSkipActive: OutcomeRefused}[tt.action]
		if want == "" {
			want = OutcomeSkipped
		}
		if pp.Outcome != want {
			t.Errorf("%s[%d]: outcome %s (%s), want %s", tt.group, tt.partition, pp.Outcome, pp.Error, want)
		}
		if want == OutcomeCommitted && (pp.Verified == nil || !*pp.Verified) {
			t.Errorf("%s[%d]: verified %v (%s)", tt.group, tt.partition, pp.Verified, pp.VerifyNote)
		}
	}
	// Committed on the target without a leader epoch.
	off, err := p.Admin(t, "eu-west").FetchOffsets(ctx, gMain)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := off.Lookup(remote, 0); o.At != 150 || o.LeaderEpoch != -1 || o.Metadata != "meta-"+gMain {
		t.Errorf("target commit %+v", o)
	}

	// A re-run is a no-op; --allow-rewind lowers gAhead.
	again, err := e.PlanFailover(ctx, PlanOptions{Groups: []string{gMain, gAhead}, Mode: ModeExact, AllowRewind: true})
	if err != nil {
		t.Fatal(err)
	}
	if a := actions(again, gMain)[0].Action; a != ActionUnchanged {
		t.Errorf("re-run: %s, want unchanged", a)
	}
	if a := actions(again, gAhead)[0].Action; a != ActionCommit {
		t.Errorf("allow-rewind: %s, want commit", a)
	}

	// Failback after consumers progressed on the target.
	p.Commit(t, "eu-west", gMain, map[string]map[int32]int64{remote: {0: 250}})
	back, err := e.PlanFailback(ctx, PlanOptions{Groups: []string{gMain}})
	if err != nil {
		t.Fatal(err)
	}
	pp := actions(back, gMain)[0]
	if pp.Action != ActionCommit || i64(pp.SourceOffset) != "250" || i64(pp.TargetOffset) != "250" || i64(pp.Current) != "150" || pp.Mode != ModeExact {
		t.Fatalf("failback row %+v source %s current %s", pp, i64(pp.SourceOffset), i64(pp.Current))
	}
	if err := e.Apply(ctx, back); err != nil {
		t.Fatal(err)
	}
	if err := e.Verify(ctx, back); err != nil {
		t.Fatal(err)
	}
	pp = actions(back, gMain)[0]
	if pp.Outcome != OutcomeCommitted || pp.Verified == nil || !*pp.Verified {
		t.Fatalf("failback apply: %+v", pp)
	}
	if back.Unverified() != 0 || back.Problems() != 0 {
		t.Fatalf("failback: unverified %d problems %d", back.Unverified(), back.Problems())
	}

	// Failback modes: exact answers like auto while the source is up.
	exact, err := e.PlanFailback(ctx, PlanOptions{Groups: []string{gMain}, Mode: ModeExact})
	if err != nil {
		t.Fatal(err)
	}
	if pp := actions(exact, gMain)[0]; exact.Mode != ModeExact || pp.Action != ActionUnchanged || i64(pp.SourceOffset) != "250" {
		t.Fatalf("failback exact: mode %s row %+v", exact.Mode, pp)
	}
	// Checkpoint mode reads reverse checkpoints, which this flow does not
	// write: the group's commits on the target have no translation.
	ckp, err := e.PlanFailback(ctx, PlanOptions{Groups: []string{gMain}, Mode: ModeCheckpoint})
	if err != nil {
		t.Fatal(err)
	}
	if pp := actions(ckp, gMain); ckp.Mode != ModeCheckpoint || len(pp) == 0 || pp[0].Action != ActionSkipNoTranslation || !strings.Contains(pp[0].Reason, "no reverse checkpoint") {
		t.Fatalf("failback checkpoint mode without reverse checkpoints: %+v", pp)
	}
}

func TestApplyInterrupted(t *testing.T) {
	p := newPair(t)
	topic := testkit.Name("orders")
	p.CreateTopic(t, "us-east", topic, 1, nil)
	p.Produce(t, "us-east", records(topic, 0, 0, 50)...)
	g1, g2 := testkit.Name("g1"), testkit.Name("g2")
	p.Commit(t, "us-east", g1, map[string]map[int32]int64{topic: {0: 10}})
	p.Commit(t, "us-east", g2, map[string]map[int32]int64{topic: {0: 20}})
	f := testFlow(t, topic)
	p.mirrorOnce(t, f)
	e, err := New(Options{Flow: f, Clients: p.Clients, ApplyParallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := e.PlanFailover(testkit.Context(t), PlanOptions{Groups: []string{g1, g2}, Mode: ModeExact})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testkit.Context(t))
	var commits atomic.Int32
	p.West.ControlKey(int16(kmsg.OffsetCommit), func(kmsg.Request) (kmsg.Response, error, bool) {
		if commits.Add(1) == 1 {
			cancel() // Ctrl-C while the first group's commit is in flight
		}
		return nil, nil, false
	})
	err = e.Apply(ctx, plan)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Apply = %v, want context.Canceled", err)
	}
	outcomes := map[string]int{}
	for _, g := range plan.Groups {
		outcomes[g.Partitions[0].Outcome]++
	}
	if outcomes[OutcomeCommitted] != 1 || outcomes[OutcomeInterrupted] != 1 || plan.Problems() != 1 || commits.Load() != 1 {
		t.Fatalf("outcomes %v", outcomes)
	}
	// The re-run finishes the job.
	again, err := e.PlanFailover(testkit.Context(t), PlanOptions{Groups: []string{g1, g2}, Mode: ModeExact})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Apply(testkit.Context(t), again); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, g := range again.Groups {
		got[g.Partitions[0].Outcome]++
	}
	if got[OutcomeCommitted] != 1 || got[OutcomeUnchanged] != 1 {
		t.Fatalf("re-run outcomes %v", got)
	}
}
