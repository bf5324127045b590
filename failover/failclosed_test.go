package failover

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/mirrorctl/mirrorctl/groupstate"
	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// seeded is one topic of 2 partitions × 100 records on us-east, mirrored to
// eu-west, with the groups committed at 50 on both partitions there.
func seeded(t *testing.T, groups ...string) (*pair, replicate.FlowConfig, string, string) {
	t.Helper()
	p := newPair(t)
	topic := testkit.Name("orders")
	p.CreateTopic(t, "us-east", topic, 2, nil)
	p.Produce(t, "us-east", records(topic, 0, 0, 100)...)
	p.Produce(t, "us-east", records(topic, 1, 0, 100)...)
	for _, g := range groups {
		p.Commit(t, "us-east", g, map[string]map[int32]int64{topic: {0: 50, 1: 50}})
	}
	f := testFlow(t, topic)
	p.mirrorOnce(t, f)
	return p, f, topic, "us-east." + topic
}

func committedAt(t *testing.T, p *pair, group, topic string, partition int32) int64 {
	t.Helper()
	resp, err := p.Admin(t, "eu-west").FetchOffsets(testkit.Context(t), group)
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

// A KIP-848 consumer (group.protocol=consumer) active on the target is
// refused at plan and apply, with its members named, both when the classic
// DescribeGroups shows the group (kfake) and when it answers
// GROUP_ID_NOT_FOUND ("is not a classic group", as Kafka 4 does).
func TestConsumerProtocolGroupIsRefused(t *testing.T) {
	g := testkit.Name("g-848")
	p, f, _, remote := seeded(t, g)
	cons, err := p.Clients.Client("eu-west", "consumer", kgo.ConsumerGroup(g), kgo.ConsumeTopics(remote),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()), kgo.ClientID("billing-7"))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ctx := testkit.Context(t)
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for pctx.Err() == nil {
			cons.PollFetches(pctx)
		}
	}()
	adm := p.Admin(t, "eu-west")
	testkit.WaitFor(t, "the consumer-protocol group to have a member", func() bool {
		st := groupstate.Describe(ctx, adm, []string{g})[g]
		return st.Type == groupstate.TypeConsumer && len(st.Members) == 1
	})
	e := p.engine(t, f)
	check := func(name string) {
		t.Helper()
		plan, err := e.PlanFailover(ctx, PlanOptions{Groups: []string{g}, Mode: ModeExact})
		if err != nil {
			t.Fatal(err)
		}
		gp := groupOf(plan, g)
		if gp.Type != "consumer" || len(gp.Blocking) != 1 || gp.Blocking[0].Protocol != "consumer" || gp.Blocking[0].ClientID != "billing-7" ||
			len(gp.Refused) == 0 || !strings.Contains(gp.Refused[0], "billing-7@") || !strings.Contains(gp.Refused[0], "(consumer)") {
			t.Fatalf("%s: group %+v, want refused with its consumer-protocol member named", name, gp)
		}
		for _, pp := range gp.Partitions {
			if pp.Action != ActionSkipActive {
				t.Fatalf("%s: %s[%d] action %s, want skip-active", name, pp.Topic, pp.Partition, pp.Action)
			}
		}
		if err := e.Apply(ctx, plan); err != nil {
			t.Fatal(err)
		}
		if plan.Committed() != 0 || committedAt(t, p, g, remote, 0) == 50 {
			t.Fatalf("%s: an active consumer-protocol group was committed to", name)
		}
	}
	check("kfake")
	// Kafka 4's answer to DescribeGroups for a consumer-protocol group.
	p.West.ControlKey(int16(kmsg.DescribeGroups), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		p.West.KeepControl()
		req := kreq.(*kmsg.DescribeGroupsRequest)
		resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
		resp.SetVersion(req.GetVersion())
		for _, name := range req.Groups {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.State, rg.ErrorCode = name, "Dead", kerr.GroupIDNotFound.Code
			msg := "Group " + name + " is not a classic group."
			rg.ErrorMessage = &msg
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil, true
	})
	check("kafka 4 describe")
}

// sync.group.offsets leaves an active consumer-protocol group alone.
func TestSyncGroupOffsetsLeavesConsumerProtocolGroupAlone(t *testing.T) {
	g := testkit.Name("g-848-sync")
	p, f, _, remote := seeded(t, g)
	cons, err := p.Clients.Client("eu-west", "consumer", kgo.ConsumerGroup(g), kgo.ConsumeTopics(remote), kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ctx := testkit.Context(t)
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for pctx.Err() == nil {
			cons.PollFetches(pctx)
		}
	}()
	adm := p.Admin(t, "eu-west")
	testkit.WaitFor(t, "the consumer-protocol group to have a member", func() bool {
		st := groupstate.Describe(ctx, adm, []string{g})[g]
		return len(st.Members) == 1
	})
	f.SyncGroupOffsets = true
	m, err := replicate.New(replicate.Options{Flows: []replicate.FlowConfig{f}, Clients: p.Clients, Once: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range m.GroupStats() {
		if s.Group == g && s.Sync != replicate.SyncActive {
			t.Fatalf("group stats %+v, want active", s)
		}
	}
	if at := committedAt(t, p, g, remote, 0); at == 50 {
		t.Fatal("sync.group.offsets committed to an active consumer-protocol group")
	}
}

// A share group of the same name on the target is refused by name.
func TestShareGroupIsRefusedByName(t *testing.T) {
	g := testkit.Name("g-share")
	p, f, _, remote := seeded(t, g)
	var listFails atomic.Bool
	p.West.ControlKey(int16(kmsg.ListGroups), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		p.West.KeepControl()
		req := kreq.(*kmsg.ListGroupsRequest)
		resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
		resp.SetVersion(req.GetVersion())
		if listFails.Load() {
			resp.ErrorCode = kerr.UnknownServerError.Code
			return resp, nil, true
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.GroupType, lg.GroupState = g, "share", "Stable"
		resp.Groups = append(resp.Groups, lg)
		return resp, nil, true
	})
	e := p.engine(t, f)
	ctx := testkit.Context(t)
	plan, err := e.PlanFailover(ctx, PlanOptions{Groups: []string{g}, Mode: ModeExact})
	if err != nil {
		t.Fatal(err)
	}
	gp := groupOf(plan, g)
	if len(gp.Refused) != 1 || !strings.Contains(gp.Refused[0], "is a share group on eu-west") || gp.Partitions[0].Action != ActionSkipUnsupported {
		t.Fatalf("group %+v, want refused as a share group", gp)
	}
	if err := e.Apply(ctx, plan); err != nil {
		t.Fatal(err)
	}
	if plan.Committed() != 0 || committedAt(t, p, g, remote, 0) != -2 {
		t.Fatal("a share group was committed to")
	}
	// ListGroups failing leaves the state unknown: refused too.
	listFails.Store(true)
	plan, err = e.PlanFailover(ctx, PlanOptions{Groups: []string{g}, Mode: ModeExact})
	if err != nil {
		t.Fatal(err)
	}
	gp = groupOf(plan, g)
	if gp.State != "unknown" || len(gp.Refused) != 1 || !strings.Contains(gp.Refused[0], "unknown") || gp.Partitions[0].Action != ActionSkipUnknown {
		t.Fatalf("group %+v, want refused as unknown", gp)
	}
}

// An error reading one partition's target offset is not "no commit": the
// group is refused and nothing is committed to it, so a target offset of
// 200 is never lowered to the translated 150.
func TestOffsetFetchErrorCommitsNothing(t *testing.T) {
	g := testkit.Name("g-fetch")
	p := newPair(t)
	topic := testkit.Name("orders")
	remote := "us-east." + topic
	p.CreateTopic(t, "us-east", topic, 2, nil)
	p.Produce(t, "us-east", records(topic, 0, 0, 300)...)
	p.Produce(t, "us-east", records(topic, 1, 0, 300)...)
	p.Commit(t, "us-east", g, map[string]map[int32]int64{topic: {0: 150, 1: 150}})
	f := testFlow(t, topic)
	p.mirrorOnce(t, f)
	p.Commit(t, "eu-west", g, map[string]map[int32]int64{remote: {0: 200}})
	td, err := p.Admin(t, "eu-west").ListTopics(testkit.Context(t), remote)
	if err != nil {
		t.Fatal(err)
	}
	remoteID := td[remote].ID
	// The target answers the group's offset fetch with an error on
	// partition 0 (and the truth on partition 1).
	var inject atomic.Bool
	inject.Store(true)
	p.West.ControlKey(int16(kmsg.OffsetFetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req := kreq.(*kmsg.OffsetFetchRequest)
		if !inject.Load() || len(req.Groups) != 1 || req.Groups[0].Group != g {
			p.West.KeepControl()
			return nil, nil, false
		}
		p.West.KeepControl()
		resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
		resp.SetVersion(req.GetVersion())
		rg := kmsg.NewOffsetFetchResponseGroup()
		rg.Group = g
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic, rt.TopicID = remote, remoteID
		p0 := kmsg.NewOffsetFetchResponseGroupTopicPartition()
		p0.Partition, p0.Offset, p0.ErrorCode = 0, -1, kerr.UnknownServerError.Code
		rt.Partitions = append(rt.Partitions, p0)
		rg.Topics = append(rg.Topics, rt)
		resp.Groups = append(resp.Groups, rg)
		return resp, nil, true
	})
	e := p.engine(t, f)
	ctx := testkit.Context(t)
	plan, err := e.PlanFailover(ctx, PlanOptions{Groups: []string{g}, Mode: ModeExact})
	if err != nil {
		t.Fatal(err)
	}
	gp := groupOf(plan, g)
	rows := actions(plan, g)
	if len(gp.Refused) != 1 || !strings.Contains(gp.Refused[0], remote+"[0] on eu-west") || rows[0].Action != ActionSkipUnknown {
		t.Fatalf("group %+v, want refused for the unknown offset of partition 0", gp)
	}
	if err := e.Apply(ctx, plan); err != nil {
		t.Fatal(err)
	}
	inject.Store(false)
	if plan.Committed() != 0 || committedAt(t, p, g, remote, 0) != 200 || committedAt(t, p, g, remote, 1) != -2 {
		t.Fatalf("committed %d partitions; target at %d/%d", plan.Committed(), committedAt(t, p, g, remote, 0), committedAt(t, p, g, remote, 1))
	}
}

// Checkpoints with offsets -9 and 2^50 are refused at plan and never
// committed; --clamp-offsets commits the log start and end instead.
func TestImpossibleCheckpointOffsetsAreRefused(t *testing.T) {
	g := testkit.Name("g-bad-ck")
	p, f, topic, remote := seeded(t, g)
	var recs []*kgo.Record
	for part, down := range map[int32]int64{0: -9, 1: 1 << 50} {
		ck := mm2.Checkpoint{Group: g, Topic: remote, Partition: part, UpstreamOffset: 50, DownstreamOffset: down}
		k, _ := ck.MarshalKey()
		v, _ := ck.MarshalValue()
		recs = append(recs, &kgo.Record{Topic: "us-east.checkpoints.internal", Key: k, Value: v, Timestamp: time.Now()})
	}
	p.Produce(t, "eu-west", recs...)
	_ = topic
	e := p.engine(t, f)
	ctx := testkit.Context(t)
	plan, err := e.PlanFailover(ctx, PlanOptions{Groups: []string{g}, Mode: ModeCheckpoint})
	if err != nil {
		t.Fatal(err)
	}
	rows := actions(plan, g)
	gp := groupOf(plan, g)
	if rows[0].Action != ActionSkipOutOfRange || rows[1].Action != ActionSkipOutOfRange || len(gp.Refused) != 2 ||
		!strings.Contains(gp.Refused[0], "offset -9 for "+remote+"[0] is below the log start 0 on eu-west") ||
		!strings.Contains(gp.Refused[1], "offset 1125899906842624 for "+remote+"[1] is past the end 100 on eu-west") {
		t.Fatalf("group %+v", gp)
	}
	if err := e.Apply(ctx, plan); err != nil {
		t.Fatal(err)
	}
	if plan.Committed() != 0 || committedAt(t, p, g, remote, 0) != -2 || committedAt(t, p, g, remote, 1) != -2 {
		t.Fatal("an impossible offset was committed")
	}
	plan, err = e.PlanFailover(ctx, PlanOptions{Groups: []string{g}, Mode: ModeCheckpoint, ClampOffsets: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Apply(ctx, plan); err != nil {
		t.Fatal(err)
	}
	rows = actions(plan, g)
	if plan.Committed() != 2 || committedAt(t, p, g, remote, 0) != 0 || committedAt(t, p, g, remote, 1) != 100 || !strings.Contains(rows[1].Reason, "clamped from 1125899906842624") {
		t.Fatalf("clamped: %+v", rows)
	}
}

// A commit whose answer is lost is re-read: landed is "committed", not
// landed is "failed" with "not committed", and either says the answer was
// lost.
func TestLostCommitAnswerIsReRead(t *testing.T) {
	landed, dropped := testkit.Name("g-landed"), testkit.Name("g-dropped")
	p, f, _, remote := seeded(t, landed, dropped)
	// REQUEST_TIMED_OUT after the commit is applied (kfake applies the
	// commit, then answers the error, as a broker whose write to
	// __consumer_offsets outlived the request timeout).
	p.West.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: landed, Err: kerr.RequestTimedOut, Count: -1})
	// For the other group, the answer is the same but nothing is stored.
	p.West.ControlKey(int16(kmsg.OffsetCommit), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		p.West.KeepControl()
		req := kreq.(*kmsg.OffsetCommitRequest)
		if req.Group != dropped {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		resp.SetVersion(req.GetVersion())
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.RequestTimedOut.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	e := p.engine(t, f)
	ctx := testkit.Context(t)
	plan, err := e.PlanFailover(ctx, PlanOptions{Groups: []string{landed, dropped}, Mode: ModeExact})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Apply(ctx, plan); err != nil {
		t.Fatal(err)
	}
	for part, pp := range actions(plan, landed) {
		if pp.Outcome != OutcomeCommitted || !strings.Contains(pp.Error, "answer was lost") || committedAt(t, p, landed, remote, part) != 50 {
			t.Errorf("landed %d: %s %q", part, pp.Outcome, pp.Error)
		}
	}
	for part, pp := range actions(plan, dropped) {
		if pp.Outcome != OutcomeFailed || !strings.Contains(pp.Error, "re-read: not committed") || committedAt(t, p, dropped, remote, part) != -2 {
			t.Errorf("dropped %d: %s %q", part, pp.Outcome, pp.Error)
		}
	}
	if plan.Committed() != 2 || plan.Problems() != 2 {
		t.Fatalf("committed %d, problems %d", plan.Committed(), plan.Problems())
	}
}

// An idle group's old checkpoint is current while it matches the group's
// source commit; it is not once the group has moved past it; with the
// source down it is judged by the mirror's liveness (here the newest
// checkpoint of any group), never by its own age alone.
func TestCheckpointFreshnessOfIdleGroups(t *testing.T) {
	idle, other := testkit.Name("g-idle"), testkit.Name("g-other")
	p, f, topic, _ := seeded(t, idle, other)
	later := time.Now().Add(time.Hour)
	engineAt := func(now time.Time) *Engine {
		e, err := New(Options{Flow: f, Clients: p.Clients, SourceTimeout: 2 * time.Second, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	ctx := testkit.Context(t)
	plan, err := engineAt(later).PlanFailover(ctx, PlanOptions{Groups: []string{idle}, Mode: ModeCheckpoint})
	if err != nil {
		t.Fatal(err)
	}
	if gp := groupOf(plan, idle); len(gp.Refused) != 0 || len(gp.Partitions) != 2 {
		t.Fatalf("an idle group with hour-old checkpoints was refused: %+v", gp)
	}
	p.Commit(t, "us-east", other, map[string]map[int32]int64{topic: {0: 60, 1: 50}})
	plan, err = engineAt(later).PlanFailover(ctx, PlanOptions{Groups: []string{other}, Mode: ModeCheckpoint})
	if err != nil {
		t.Fatal(err)
	}
	if gp := groupOf(plan, other); len(gp.Refused) != 1 || !strings.Contains(gp.Refused[0], "[0] is not current: the group moved to 60 on us-east; the checkpoint at 50 is 1h0m0s old") {
		t.Fatalf("a group that moved past its checkpoint: %+v", gp.Refused)
	}
	p.East.Close()
	plan, err = engineAt(time.Now()).PlanFailover(ctx, PlanOptions{Groups: []string{idle}, Mode: ModeAuto})
	if err != nil {
		t.Fatal(err)
	}
	if gp := groupOf(plan, idle); len(gp.Refused) != 0 || len(gp.Partitions) != 2 || gp.Partitions[0].Mode != ModeCheckpoint {
		t.Fatalf("source down, mirror live: %+v", gp)
	}
	plan, err = engineAt(later).PlanFailover(ctx, PlanOptions{Groups: []string{idle}, Mode: ModeAuto})
	if err != nil {
		t.Fatal(err)
	}
	if gp := groupOf(plan, idle); len(gp.Refused) != 2 || !strings.Contains(gp.Refused[0], "the source does not answer and the mirror's newest heartbeat or checkpoint is 1h0m0s old") {
		t.Fatalf("source down, mirror silent for an hour: %+v", gp.Refused)
	}
}

// --wait-caught-up: a group whose position is not replicated yet is
// refused when the time is up, naming the partition; once the mirror copies
// it, the wait ends with an exact commit.
func TestWaitCaughtUp(t *testing.T) {
	g := testkit.Name("g-drain")
	p, f, topic, remote := seeded(t)
	p.Produce(t, "us-east", records(topic, 0, 100, 20)...)
	p.Commit(t, "us-east", g, map[string]map[int32]int64{topic: {0: 120}})
	e := p.engine(t, f)
	ctx := testkit.Context(t)
	plan, err := e.WaitCaughtUp(ctx, PlanOptions{Groups: []string{g}}, 300*time.Millisecond, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	gp := groupOf(plan, g)
	if len(gp.Refused) != 1 || !strings.Contains(gp.Refused[0], "group "+g+" is not caught up after waiting 300ms: "+remote+"[0]: ") || !strings.Contains(gp.Refused[0], "not yet replicated") {
		t.Fatalf("refused %q", gp.Refused)
	}
	done := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		m, err := replicate.New(replicate.Options{Flows: []replicate.FlowConfig{f}, Clients: p.Clients, Once: true})
		if err == nil {
			err = m.Run(ctx)
		}
		done <- err
	}()
	plan, err = e.WaitCaughtUp(ctx, PlanOptions{Groups: []string{g}}, 20*time.Second, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	gp = groupOf(plan, g)
	rows := actions(plan, g)
	if len(gp.Refused) != 0 || rows[0].Action != ActionCommit || i64(rows[0].TargetOffset) != "120" || i64(rows[0].Rereads) != "0" {
		t.Fatalf("after the mirror caught up: refused %q rows %+v", gp.Refused, rows)
	}
}

// A drill commits the translated offsets to shadow groups only, verifies
// them record by record, reports the RPO (records not yet mirrored, counted
// on both sides) and RTO, and deletes the shadows; the real group on the
// target is never touched.
func TestDrillUsesShadowGroupsOnly(t *testing.T) {
	g := testkit.Name("g-drill")
	p, f, topic, remote := seeded(t, g)
	p.Produce(t, "us-east", records(topic, 0, 100, 5)...) // not mirrored
	e := p.engine(t, f)
	ctx := testkit.Context(t)
	rep, err := e.Drill(ctx, DrillOptions{PlanOptions: PlanOptions{Groups: []string{g}, Mode: ModeExact}})
	if err != nil {
		t.Fatal(err)
	}
	shadow := g + DefaultDrillSuffix
	if !rep.Passed() || rep.Verified != 2 || rep.Shadow[g] != shadow || !rep.ShadowsDeleted || rep.RTOMs <= 0 {
		t.Fatalf("report %+v", rep)
	}
	// RPO: the source holds 105 records on partition 0 and 100 on 1; the
	// target 100 and 100.
	srcEnd, tgtEnd := len(p.ReadAll(t, "us-east", topic)[0]), len(p.ReadAll(t, "eu-west", remote)[0])
	if rep.RPORecords != int64(srcEnd-tgtEnd) || rep.RPORecords != 5 || rep.RPOMs <= 0 {
		t.Fatalf("RPO %d records / %d ms, want %d", rep.RPORecords, rep.RPOMs, srcEnd-tgtEnd)
	}
	if at := committedAt(t, p, g, remote, 0); at != -2 {
		t.Fatalf("the real group was committed to on the target: %d", at)
	}
	if at := committedAt(t, p, shadow, remote, 0); at != -2 {
		t.Fatalf("the shadow group was not deleted: %d", at)
	}
	var md strings.Builder
	if err := rep.WriteMarkdown(&md); err != nil || !strings.Contains(md.String(), ": PASSED") || !strings.Contains(md.String(), "| "+g+" | "+shadow+" | "+remote+" | 0 | 50 | 50 | committed | pass |") {
		t.Fatalf("markdown: %v\n%s", err, md.String())
	}
	// A leftover shadow group stops the next drill.
	p.Commit(t, "eu-west", shadow, map[string]map[int32]int64{remote: {0: 1}})
	if _, err := e.Drill(ctx, DrillOptions{PlanOptions: PlanOptions{Groups: []string{g}}}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("drill over a leftover shadow group: %v", err)
	}
}

// A commit whose request times out on the client while the target is
// paused, and that the target applies afterwards, is re-read and reported
// as committed, with the lost answer named.
func TestCommitAnsweredAfterTheClientGaveUp(t *testing.T) {
	g := testkit.Name("g-paused")
	p, f, _, remote := seeded(t, g)
	var paused atomic.Bool
	p.West.ControlKey(int16(kmsg.OffsetCommit), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		if kreq.(*kmsg.OffsetCommitRequest).Group == g && paused.CompareAndSwap(false, true) {
			p.West.SleepControl(func() { time.Sleep(1500 * time.Millisecond) })
		}
		p.West.KeepControl()
		return nil, nil, false
	})
	e, err := New(Options{Flow: f, Clients: p.Clients, SourceTimeout: 2 * time.Second, CommitTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testkit.Context(t)
	plan, err := e.PlanFailover(ctx, PlanOptions{Groups: []string{g}, Mode: ModeExact})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Apply(ctx, plan); err != nil {
		t.Fatal(err)
	}
	for part, pp := range actions(plan, g) {
		if pp.Outcome != OutcomeCommitted || !strings.Contains(pp.Error, "answer was lost") || committedAt(t, p, g, remote, part) != 50 {
			t.Errorf("partition %d: %s %q", part, pp.Outcome, pp.Error)
		}
	}
}
