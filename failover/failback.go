package failover

import (
	"context"
	"fmt"
	"strings"

	"github.com/mirrorctl/mirrorctl/groupstate"
)

// PlanFailback plans the way back: the groups' committed positions on the
// target's remote topics (us-east.orders on eu-west) are translated to the
// source topics (orders on us-east) and committed there. Translation is
// exact (content match, the mirror image of exact mode) where the source
// answers; otherwise it is the conservative inverse of the forward flow's
// offset syncs: the newest sync whose downstream offset is at or below the
// group's target offset D gives its upstream offset, plus 1 when D is past
// it (rows with mode "sync"). Actions and prechecks are those of
// PlanFailover, against the group on the source cluster, except MaxLag
// (see below). opts.Mode is auto ("" too: the inverse offset-sync rule
// when the source does not answer), exact (an error when it does not) or
// checkpoint (below). MaxLag is ignored: the records the forward
// flow has not copied yet are on the source, where the group resumes, so
// its replication lag cannot make failback skip any.
//
// Checkpoint mode (and auto mode when the target answers for none of the
// groups) reads the reverse checkpoints that a mirrorctl flow with
// mirrorctl.reverse.checkpoints.enabled writes to the source (see
// planFailbackCheckpoint); it works with the target unreachable, and
// refuses a group whose reverse checkpoints are missing or not current
// (CheckpointMaxAge, default 3 × emit.checkpoints.interval.seconds). The
// first request to the target is bounded by Options.SourceTimeout.
func (e *Engine) PlanFailback(ctx context.Context, opts PlanOptions) (*Plan, error) {
	mode := opts.Mode
	switch mode {
	case "":
		mode = ModeAuto
	case ModeAuto, ModeExact:
	case ModeCheckpoint:
		return e.planFailbackCheckpoint(ctx, opts, dedupe(opts.Groups))
	default:
		return nil, fmt.Errorf("failback: mode %q is not supported (auto, exact or checkpoint)", mode)
	}
	groups := dedupe(opts.Groups)
	plan := &Plan{Direction: Failback, Source: e.flow.Source, Target: e.flow.Target, Mode: mode, AllowRewind: opts.AllowRewind}
	tgt, err := e.clients.Admin(e.flow.Target)
	if err != nil {
		return nil, err
	}
	src, err := e.clients.Admin(e.flow.Source)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, e.sourceTimeout)
	positions, posErrs := fetchOffsets(pctx, tgt, e.flow.Target, groups)
	cancel()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if mode == ModeAuto && len(groups) > 0 && len(posErrs) == len(groups) {
		// The target does not answer for any group: the reverse
		// checkpoints on the source are the only record of where the
		// groups are (reverse.go).
		e.log.Warn("the target does not answer; failback uses the reverse checkpoints", "target", e.flow.Target, "err", posErrs[groups[0]])
		return e.planFailbackCheckpoint(ctx, opts, groups)
	}
	store, err := e.readSyncs(ctx)
	if err != nil {
		return nil, err
	}
	type row struct {
		group string
		t     Translation
		q     *locReq
	}
	var rows []row
	reqs := map[exactKey]*locReq{}
	var list []*locReq
	for _, g := range groups {
		for _, o := range positions[g].Sorted() {
			up, ok := e.sourceTopic(o.Topic)
			if !ok || !e.mirrors(up) {
				continue
			}
			t := Translation{SourceTopic: up, Topic: o.Topic, Partition: o.Partition, Mode: ModeExact, Metadata: o.Metadata}
			if o.Err != nil {
				t.Error = fmt.Sprintf("fetch the group's offset of %s[%d] on %s: %v", o.Topic, o.Partition, e.flow.Target, o.Err)
				t.Reason = t.Error
				rows = append(rows, row{group: g, t: t})
				continue
			}
			if o.At < 0 {
				t.Reason = "no committed offset on " + e.flow.Target
				rows = append(rows, row{group: g, t: t})
				continue
			}
			t.TargetOffset = ptr(o.At)
			k := exactKey{o.Topic, o.Partition, o.At}
			q := reqs[k]
			if q == nil {
				q = &locReq{xTopic: o.Topic, yTopic: up, partition: o.Partition, pos: o.At}
				for _, s := range store.Syncs(up, o.Partition) { // newest first
					if s.DownstreamOffset <= o.At {
						q.hasAnchor, q.ax, q.ay = true, s.DownstreamOffset, s.UpstreamOffset
						break
					}
				}
				if u, ok := store.TranslateUpstream(up, o.Partition, o.At); ok {
					q.fallback = ptr(u)
					q.fallbackReason = fmt.Sprintf("using the inverse offset-sync translation %d (may re-read, never skips)", u)
				} else {
					q.fallbackReason = fmt.Sprintf("no offset sync at or below %d for %s[%d]", o.At, up, o.Partition)
				}
				reqs[k] = q
				list = append(list, q)
			}
			rows = append(rows, row{group: g, t: t, q: q})
		}
	}
	sourceUp := true
	if err := e.locate(ctx, e.flow.Target, e.flow.Source, list); err != nil {
		if mode == ModeExact {
			return nil, fmt.Errorf("failback in exact mode: %w", err)
		}
		sourceUp = false
		e.log.Warn("exact failback translation failed; using the inverse offset syncs", "err", err)
		for _, q := range list {
			q.offset, q.exact, q.reason = q.fallback, false, "the source did not answer ("+err.Error()+"); "+q.fallbackReason
		}
	}
	states := groupstate.Describe(ctx, src, groups)
	current, curErrs := fetchOffsets(ctx, src, e.flow.Source, groups)
	byGroup := map[string][]Translation{}
	for _, r := range rows {
		t := r.t
		if q := r.q; q != nil {
			t.SourceOffset, t.NotReplicated = q.offset, q.notReplicated
			t.Reason = q.reason
			if q.exact {
				t.Rereads = ptr(0)
			} else {
				t.Mode = modeSync
			}
			if q.hasAnchor {
				t.Sync = &SyncRef{Upstream: q.ay, Downstream: q.ax}
			}
			if q.notReplicated && sourceUp {
				// The target holds nothing after the group's position that
				// the source lacks: failback cannot find the original.
				t.Mode = ModeExact
			}
		}
		byGroup[r.group] = append(byGroup[r.group], t)
	}
	for _, g := range groups {
		gp := GroupPlan{Group: g, Partitions: []PartitionPlan{}}
		st := states[g]
		setState(&gp, st, e.flow.Source)
		block := blockAction(st)
		if err := posErrs[g]; err != nil {
			gp.Refused = append(gp.Refused, fmt.Sprintf("commits of group %s on %s unknown: %v; nothing is committed to it", g, e.flow.Target, err))
		}
		if err := curErrs[g]; err != nil {
			gp.Refused = append(gp.Refused, fmt.Sprintf("commits of group %s on %s unknown: %v; nothing is committed to it", g, e.flow.Source, err))
			block = ActionSkipUnknown
		}
		for _, t := range byGroup[g] {
			cur, cerr := currentOf(current[g], t.SourceTopic, t.Partition)
			pp := PartitionPlan{Translation: t, Current: cur}
			pp.Action = decide(t.TargetOffset, t.SourceOffset, pp.Current, t.NotReplicated, block, opts.AllowRewind)
			if t.Error != "" || cerr != nil {
				pp.Action = ActionSkipUnknown
				why := t.Error
				if cerr != nil {
					why = fmt.Sprintf("fetch the group's offset of %s[%d] on %s: %v", t.SourceTopic, t.Partition, e.flow.Source, cerr)
					pp.Reason = strings.TrimPrefix(pp.Reason+"; "+why, "; ")
				}
				gp.Refused = append(gp.Refused, fmt.Sprintf("%s; nothing is committed to group %s", why, g))
			}
			gp.Partitions = append(gp.Partitions, pp)
		}
		sortPlans(gp.Partitions)
		plan.Groups = append(plan.Groups, gp)
	}
	if err := e.checkRanges(ctx, plan, opts.ClampOffsets); err != nil {
		return nil, err
	}
	return plan, nil
}
