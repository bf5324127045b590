package failover

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/freshness"
	"github.com/mirrorctl/mirrorctl/groupstate"
	"github.com/mirrorctl/mirrorctl/replicate"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
	"github.com/mirrorctl/mirrorctl/replicate/syncstore"
)

// readReverseCheckpoints reads the flow's reverse checkpoints
// ([replicate.FlowConfig.ReverseCheckpointsTopic]: <target>.checkpoints.internal
// on the source, written by a mirrorctl flow with
// mirrorctl.reverse.checkpoints.enabled): the last record per (group,
// topic, partition) wins, as RemoteClusterUtils.translateOffsets reads a
// checkpoints topic. Only records on the flow's own source topics are kept
// (a real target->source flow's checkpoints share the topic and name its
// remote topics); undecodable records are skipped. A missing topic reads
// as no checkpoints.
func (e *Engine) readReverseCheckpoints(ctx context.Context, groups map[string]bool) (map[string][]checkpointRec, error) {
	alias, topic := e.flow.ReverseCheckpointsTopic()
	type key struct {
		g, t string
		p    int32
	}
	last := map[key]checkpointRec{}
	err := replicate.ReadInternalTopic(ctx, e.clients, alias, topic, func(r *kgo.Record) {
		ck, err := mm2.DecodeCheckpoint(r.Key, r.Value)
		if err != nil {
			e.log.Debug("skipping undecodable checkpoint", "topic", topic, "offset", r.Offset, "err", err)
			return
		}
		if !groups[ck.Group] {
			return
		}
		if up, ok := e.flow.ReverseSourceTopic(e.remoteTopic(ck.Topic)); !ok || up != ck.Topic {
			return
		}
		last[key{ck.Group, ck.Topic, ck.Partition}] = checkpointRec{ck, r.Timestamp}
	})
	if err != nil {
		return nil, fmt.Errorf("read reverse checkpoints %s on %s: %w", topic, alias, err)
	}
	out := map[string][]checkpointRec{}
	for k, c := range last {
		out[k.g] = append(out[k.g], c)
	}
	return out, nil
}

// judgeReverse decides whether a reverse checkpoint is current. With the
// target answering it is judged like a forward checkpoint against the
// group's commit on the target now (package freshness). With the target
// down, its own record time is used: the mirror writes every reverse
// checkpoint again at every pass, so a record younger than maxAge means the
// mirror saw the group at that position less than maxAge ago, and an older
// one that it stopped checkpointing the group (or the mirror stopped).
func (e *Engine) judgeReverse(ck checkpointRec, targetUp bool, commit *int64, maxAge time.Duration) freshness.Verdict {
	if targetUp {
		return freshness.Judge(freshness.Checkpoint{Upstream: ck.UpstreamOffset, Written: ck.at},
			freshness.Source{Up: true, Commit: commit, Alias: e.flow.Target}, time.Time{}, e.now(), maxAge)
	}
	age := e.now().Sub(ck.at)
	if age < maxAge {
		return freshness.Verdict{Current: true, Reason: fmt.Sprintf("%s does not answer; the mirror last confirmed this reverse checkpoint %s ago, under %s",
			e.flow.Target, age.Round(time.Second), maxAge)}
	}
	return freshness.Verdict{Current: false, Reason: fmt.Sprintf("%s does not answer and the mirror last confirmed this reverse checkpoint %s ago, not under %s: "+
		"it stopped checkpointing the group (or the mirror stopped), so the group may have moved since; --checkpoint-max-age accepts an older one",
		e.flow.Target, age.Round(time.Second), maxAge)}
}

// planFailbackCheckpoint is PlanFailback in checkpoint mode: each group's
// position on the target's remote topics, and its translation to the
// source topics, come from the reverse checkpoints on the source, so it
// works with the target unreachable. The target is asked once (bounded by
// Options.SourceTimeout): when it answers, every checkpoint is judged
// against the group's commit there and commits without a reverse checkpoint
// are listed as skip-no-translation; when it does not, every checkpoint must
// have been confirmed by the mirror within maxAge, and a named group with
// no reverse checkpoint at all is refused (its position on the target is
// unknown). Rows have mode checkpoint; TargetOffset is the checkpoint's
// upstream offset (the group's position on the target), SourceOffset its
// downstream offset (committed on the source).
func (e *Engine) planFailbackCheckpoint(ctx context.Context, opts PlanOptions, groups []string) (*Plan, error) {
	plan := &Plan{Direction: Failback, Source: e.flow.Source, Target: e.flow.Target, Mode: ModeCheckpoint, AllowRewind: opts.AllowRewind}
	src, err := e.clients.Admin(e.flow.Source)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, g := range groups {
		want[g] = true
	}
	cks, err := e.readReverseCheckpoints(ctx, want)
	if err != nil {
		return nil, err
	}
	maxAge := opts.CheckpointMaxAge
	if maxAge <= 0 {
		maxAge = 3 * e.flow.CheckpointsInterval
	}
	// The target, once and bounded: it is expected to be down.
	var (
		tgtPos  map[string]kadm.OffsetResponses
		tgtErrs map[string]error
		tgtDown string
	)
	if tgt, err := e.clients.Admin(e.flow.Target); err != nil {
		tgtDown = err.Error()
	} else {
		pctx, cancel := context.WithTimeout(ctx, e.sourceTimeout)
		tgtPos, tgtErrs = fetchOffsets(pctx, tgt, e.flow.Target, groups)
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	states := groupstate.Describe(ctx, src, groups)
	current, curErrs := fetchOffsets(ctx, src, e.flow.Source, groups)
	alias, topic := e.flow.ReverseCheckpointsTopic()
	var syncs reverseSyncs
	for _, g := range groups {
		gp := GroupPlan{Group: g, Partitions: []PartitionPlan{}}
		st := states[g]
		setState(&gp, st, e.flow.Source)
		block := blockAction(st)
		if err := curErrs[g]; err != nil {
			gp.Refused = append(gp.Refused, fmt.Sprintf("commits of group %s on %s unknown: %v; nothing is committed to it", g, e.flow.Source, err))
			block = ActionSkipUnknown
		}
		targetUp := tgtDown == "" && tgtErrs[g] == nil
		why := tgtDown
		if why == "" && tgtErrs[g] != nil {
			why = tgtErrs[g].Error()
		}
		if !targetUp && len(cks[g]) == 0 {
			gp.Refused = append(gp.Refused, fmt.Sprintf("no reverse checkpoint for group %s in %s on %s, and %s does not answer (%s): its position there is unknown "+
				"(is %s->%s.mirrorctl.reverse.checkpoints.enabled on?)", g, topic, alias, e.flow.Target, why, e.flow.Source, e.flow.Target))
		}
		seen := map[tpKey]bool{}
		for _, ck := range cks[g] {
			remote := e.remoteTopic(ck.Topic)
			seen[tpKey{ck.Topic, ck.Partition}] = true
			t := Translation{SourceTopic: ck.Topic, Topic: remote, Partition: ck.Partition, Mode: ModeCheckpoint,
				TargetOffset: ptr(ck.UpstreamOffset), SourceOffset: ptr(ck.DownstreamOffset), Metadata: ck.Metadata,
				CheckpointTime: ck.at, SourceUp: targetUp}
			var commit *int64
			if targetUp {
				c, cerr := currentOf(tgtPos[g], remote, ck.Partition)
				if cerr != nil {
					t.Error = fmt.Sprintf("fetch the group's offset of %s[%d] on %s: %v", remote, ck.Partition, e.flow.Target, cerr)
				}
				commit, t.SourceCommit = c, c
			}
			cur, cerr := currentOf(current[g], ck.Topic, ck.Partition)
			pp := PartitionPlan{Translation: t, Current: cur}
			pp.Action = decide(t.TargetOffset, t.SourceOffset, cur, false, block, opts.AllowRewind)
			if t.Error != "" || cerr != nil {
				pp.Action = ActionSkipUnknown
				w := t.Error
				if cerr != nil {
					w = fmt.Sprintf("fetch the group's offset of %s[%d] on %s: %v", ck.Topic, ck.Partition, e.flow.Source, cerr)
					pp.Reason = strings.TrimPrefix(pp.Reason+"; "+w, "; ")
				}
				gp.Refused = append(gp.Refused, fmt.Sprintf("%s; nothing is committed to group %s", w, g))
			} else if v := e.judgeReverse(ck, targetUp, commit, maxAge); !v.Current {
				gp.Refused = append(gp.Refused, fmt.Sprintf("reverse checkpoint for %s[%d] is not current: %s", remote, ck.Partition, v.Reason))
				pp.Reason = v.Reason
			} else {
				pp.Reason = v.Reason
			}
			if !targetUp {
				var exact bool
				exact, pp.Reason = e.reverseExactness(ctx, &syncs, ck.Topic, ck.Partition, ck.UpstreamOffset, ck.DownstreamOffset, pp.Reason)
				if exact && pp.Action == ActionCommit {
					pp.Rereads = ptr(0)
				}
			}
			gp.Partitions = append(gp.Partitions, pp)
		}
		// Commits with no reverse checkpoint: on the target when it
		// answers (where the group is), and on the source (where a
		// missing checkpoint means the group's move there is unknown).
		missing := func(srcTopic string, partition int32, where string) {
			if seen[tpKey{srcTopic, partition}] {
				return
			}
			seen[tpKey{srcTopic, partition}] = true
			cur, _ := currentOf(current[g], srcTopic, partition)
			pp := PartitionPlan{Translation: Translation{SourceTopic: srcTopic, Topic: e.remoteTopic(srcTopic), Partition: partition, Mode: ModeCheckpoint,
				Reason: fmt.Sprintf("no reverse checkpoint in %s on %s for this partition (the group commits it on %s)", topic, alias, where)}, Current: cur}
			pp.Action = ActionSkipNoTranslation
			if block != "" {
				pp.Action = block
			}
			gp.Partitions = append(gp.Partitions, pp)
		}
		if targetUp {
			tgtPos[g].Each(func(o kadm.OffsetResponse) {
				if up, ok := e.flow.ReverseSourceTopic(o.Topic); ok && o.Err == nil && o.At >= 0 {
					missing(up, o.Partition, e.flow.Target)
				}
			})
		} else {
			current[g].Each(func(o kadm.OffsetResponse) {
				if e.mirrors(o.Topic) && o.Err == nil && o.At >= 0 {
					missing(o.Topic, o.Partition, e.flow.Source)
				}
			})
		}
		sortPlans(gp.Partitions)
		plan.Groups = append(plan.Groups, gp)
	}
	if err := e.checkRanges(ctx, plan, opts.ClampOffsets); err != nil {
		return nil, err
	}
	return plan, nil
}

// reverseSyncs are the flow's offset syncs, read once by reverseExactness
// (store nil and err set when they cannot be read).
type reverseSyncs struct {
	read  bool
	store *syncstore.Store
	err   error
}

// reverseExactness says, for a reverse checkpoint up->down (the group's
// commit on the target's remote partition, the source offset) used with
// the target down, whether down is the exact position, and appends why to
// reason: at an offset sync, or one record past one, it is; a source
// offset past the inverse rule's answer (the sync's upstream offset plus
// one) was pinned by content when the mirror wrote it (reversepin.go in
// package replicate), exact too; else the group may read again up to the
// records it read on the target after the sync.
func (e *Engine) reverseExactness(ctx context.Context, rs *reverseSyncs, topic string, partition int32, up, down int64, reason string) (bool, string) {
	if !rs.read {
		rs.read = true
		rs.store, rs.err = e.readSyncs(ctx)
	}
	add := func(s string) string { return strings.TrimPrefix(reason+"; "+s, "; ") }
	if rs.err != nil {
		return false, add(fmt.Sprintf("whether %d is exact is unknown: the offset syncs cannot be read (%v); the group may read some records again", down, rs.err))
	}
	var sync *mm2.OffsetSync
	for _, s := range rs.store.Syncs(topic, partition) {
		if s.DownstreamOffset <= up {
			sync = &s
			break
		}
	}
	switch {
	case sync == nil:
		return false, add(fmt.Sprintf("whether %d is exact is unknown: no offset sync at or below the group's %d on %s", down, up, e.flow.Target))
	case up-sync.DownstreamOffset <= 1:
		return true, add(fmt.Sprintf("exact: at the offset sync %d->%d", sync.UpstreamOffset, sync.DownstreamOffset))
	case down > sync.UpstreamOffset+1:
		return true, add(fmt.Sprintf("exact: pinned by content when the mirror wrote it (between the offset sync %d->%d and the group's %d on %s)", sync.UpstreamOffset, sync.DownstreamOffset, up, e.flow.Target))
	}
	return false, add(fmt.Sprintf("not exact: %s does not answer and the mirror could not pin this position when it wrote it; resuming one past the offset sync %d->%d, the group reads again up to the %d records it read on %s after it",
		e.flow.Target, sync.UpstreamOffset, sync.DownstreamOffset, up-sync.DownstreamOffset-1, e.flow.Target))
}
