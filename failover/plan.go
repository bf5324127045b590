package failover

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/freshness"
	"github.com/mirrorctl/mirrorctl/groupstate"
)

// Action is what applying a plan does with one partition.
type Action string

// Actions of a [PartitionPlan].
const (
	ActionCommit             Action = "commit"                // commit the translated offset
	ActionUnchanged          Action = "unchanged"             // already committed there: nothing to do
	ActionSkipRewind         Action = "skip-rewind"           // the current commit is ahead; --allow-rewind to lower it
	ActionSkipActive         Action = "skip-active"           // the group has members on the cluster committed to
	ActionSkipNotReplicated  Action = "skip-not-replicated"   // the next record has no copy yet
	ActionSkipNoSourceCommit Action = "skip-no-source-commit" // the group has no commit to translate
	ActionSkipNoTranslation  Action = "skip-no-translation"   // no safe translated offset
	ActionSkipUnknown        Action = "skip-unknown"          // an offset or the group's state could not be read
	ActionSkipUnsupported    Action = "skip-unsupported"      // a share, streams or other group not moved with OffsetCommit
	ActionSkipOutOfRange     Action = "skip-out-of-range"     // below the log start or past the end of the partition committed to
)

// Outcomes of [Engine.Apply] per partition.
const (
	OutcomeCommitted   = "committed"
	OutcomeUnchanged   = "unchanged"
	OutcomeSkipped     = "skipped"
	OutcomeRefused     = "refused"     // the group turned active, or a precheck failed
	OutcomeFailed      = "failed"      // the commit failed; Error says why
	OutcomeInterrupted = "interrupted" // cancelled before the commit was sent
	// OutcomeUnknown: the commit's answer was lost (timeout, connection
	// cut) and re-reading the group's offsets did not tell whether it
	// landed; Error says what was seen.
	OutcomeUnknown = "unknown"
)

// Direction of a plan.
type Direction string

const (
	// Failover commits on the target, translated from the source.
	Failover Direction = "failover"
	// Failback commits on the source, translated from the target's remote
	// topics.
	Failback Direction = "failback"
)

// PlanOptions selects groups and safety settings for a plan.
type PlanOptions struct {
	Groups []string
	// Mode of translation (failover only; failback is exact where the
	// source answers, else the inverse offset-sync rule).
	Mode Mode
	// AllowRewind lets a commit lower an existing committed offset.
	AllowRewind bool
	// MaxLag, when positive, refuses groups whose topics' replication lag
	// (age of the oldest source record not yet copied) is not under it.
	MaxLag time.Duration
	// CheckpointMaxAge refuses groups with checkpoint-mode rows older than
	// it; 0 means 3 × emit.checkpoints.interval.seconds.
	CheckpointMaxAge time.Duration
	// ClampOffsets commits a translated offset below the log start of the
	// partition committed to at the log start, and one past its end at the
	// end, instead of refusing the group.
	ClampOffsets bool
	// TargetOnly (checkpoint mode, an unplanned failover) never asks the
	// source: the plan comes from what the target holds.
	TargetOnly bool
}

// PartitionPlan is one partition of a group's plan. In a failover plan
// the offset committed is TargetOffset on Topic (target cluster); in a
// failback plan it is SourceOffset on SourceTopic (source cluster), and
// TargetOffset is the group's position on the target.
type PartitionPlan struct {
	Translation
	// Current is the group's committed offset on the cluster committed to;
	// nil when none (or -1).
	Current *int64 `json:"current"`
	Action  Action `json:"action"`
	// Outcome and Error are set by Apply.
	Outcome string `json:"outcome,omitempty"`
	Error   string `json:"error,omitempty"`
	// Verified and VerifyNote are set by Verify: nil when not verified.
	Verified   *bool  `json:"verified"`
	VerifyNote string `json:"verify_note,omitempty"`
}

// GroupPlan is one group's plan.
type GroupPlan struct {
	Group string `json:"group"`
	// State of the group on the cluster committed to ("Empty", "Stable",
	// ..., "absent", or "unknown" when it could not be read), and its
	// member count.
	State   string `json:"state"`
	Members int    `json:"members"`
	// Type is the group's type there: classic, consumer (KIP-848), share,
	// streams; "" when absent or unknown.
	Type string `json:"type,omitempty"`
	// Blocking lists the members that keep the group from being
	// committed (the group is skip-active).
	Blocking []groupstate.Member `json:"blocking_members,omitempty"`
	// Refused lists failed prechecks; a refused group is never committed.
	Refused []string `json:"refused,omitempty"`
	// Summary and Incomplete are set by [Plan.Summarize].
	Summary    string          `json:"summary,omitempty"`
	Incomplete []string        `json:"incomplete"`
	Partitions []PartitionPlan `json:"partitions"`
}

// Plan is a failover or failback plan, and after Apply and Verify, its
// outcome.
type Plan struct {
	Direction   Direction   `json:"direction"`
	Source      string      `json:"source"`
	Target      string      `json:"target"`
	Mode        Mode        `json:"mode"`
	AllowRewind bool        `json:"allow_rewind"`
	Applied     bool        `json:"applied"`
	Groups      []GroupPlan `json:"groups"`
}

// CommitCluster is the alias of the cluster the plan commits to.
func (p *Plan) CommitCluster() string {
	if p.Direction == Failback {
		return p.Source
	}
	return p.Target
}

func (p *Plan) commitTopic(pp *PartitionPlan) string {
	if p.Direction == Failback {
		return pp.SourceTopic
	}
	return pp.Topic
}

func (p *Plan) commitAt(pp *PartitionPlan) *int64 {
	if p.Direction == Failback {
		return pp.SourceOffset
	}
	return pp.TargetOffset
}

func (p *Plan) setCommitAt(pp *PartitionPlan, at int64) {
	if p.Direction == Failback {
		pp.SourceOffset = ptr(at)
	} else {
		pp.TargetOffset = ptr(at)
	}
}

// PrecheckFailed reports whether any group was refused by a precheck.
func (p *Plan) PrecheckFailed() bool {
	for _, g := range p.Groups {
		if len(g.Refused) > 0 {
			return true
		}
	}
	return false
}

// Problems counts partitions refused or failed by Apply and partitions
// whose verification failed.
func (p *Plan) Problems() int {
	n := 0
	for _, g := range p.Groups {
		for _, pp := range g.Partitions {
			if pp.Outcome == OutcomeRefused || pp.Outcome == OutcomeFailed || pp.Outcome == OutcomeInterrupted || pp.Outcome == OutcomeUnknown || (pp.Verified != nil && !*pp.Verified) {
				n++
			}
		}
	}
	return n
}

// Unverified counts partitions [Engine.Verify] checked but could not
// verify because a cluster could not be read (Verified nil, VerifyNote
// set). They are not counted by [Plan.Problems]: the commit itself stands.
func (p *Plan) Unverified() int {
	n := 0
	for _, g := range p.Groups {
		for _, pp := range g.Partitions {
			if pp.Verified == nil && pp.VerifyNote != "" {
				n++
			}
		}
	}
	return n
}

// Committed counts partitions committed by Apply.
func (p *Plan) Committed() int {
	n := 0
	for _, g := range p.Groups {
		for _, pp := range g.Partitions {
			if pp.Outcome == OutcomeCommitted {
				n++
			}
		}
	}
	return n
}

// RefusedError is a precheck or safety refusal for one group (and, when
// Partition >= 0, one partition), in franz-go's typed-error style.
type RefusedError struct {
	Group     string
	Topic     string
	Partition int32
	Reason    string
}

func (e *RefusedError) Error() string {
	if e.Topic != "" {
		return fmt.Sprintf("group %s %s[%d]: %s", e.Group, e.Topic, e.Partition, e.Reason)
	}
	return fmt.Sprintf("group %s: %s", e.Group, e.Reason)
}

// blockAction is the action every partition of a group gets when its state
// forbids a commit; "" when the group is idle.
func blockAction(st groupstate.State) Action {
	switch {
	case st.Idle():
		return ""
	case !st.Known():
		return ActionSkipUnknown
	case !st.Supported():
		return ActionSkipUnsupported
	}
	return ActionSkipActive
}

// setState records st on gp and, when it forbids a commit, the refusal.
func setState(gp *GroupPlan, st groupstate.State, alias string) {
	gp.State, gp.Type, gp.Members, gp.Blocking = st.State, st.Type, len(st.Members), nil
	if !st.Idle() {
		gp.Refused = append(gp.Refused, st.Refusal(alias))
		gp.Blocking = st.Members
	}
}

// PlanFailover translates the groups (see [Engine.Translate]) and decides
// an [Action] per partition against the target's current commits, then
// runs the prechecks: the group must be absent or Empty on the target; with
// MaxLag, replication lag must be under it; checkpoint-mode rows must be
// fresh. It changes nothing.
func (e *Engine) PlanFailover(ctx context.Context, opts PlanOptions) (*Plan, error) {
	mode := opts.Mode
	if mode == "" {
		mode = ModeAuto
	}
	tr, err := e.translate(ctx, opts.Groups, mode, opts.TargetOnly && mode == ModeCheckpoint)
	if err != nil {
		return nil, err
	}
	plan := &Plan{Direction: Failover, Source: e.flow.Source, Target: e.flow.Target, Mode: mode, AllowRewind: opts.AllowRewind}
	groups := make([]string, len(tr.Groups))
	for i, g := range tr.Groups {
		groups[i] = g.Group
	}
	tgt, err := e.clients.Admin(e.flow.Target)
	if err != nil {
		return nil, err
	}
	states := groupstate.Describe(ctx, tgt, groups)
	current, curErrs := fetchOffsets(ctx, tgt, e.flow.Target, groups)
	maxAge := opts.CheckpointMaxAge
	if maxAge <= 0 {
		maxAge = 3 * e.flow.CheckpointsInterval
	}
	in := planInputs{tr: tr, states: states, current: current, curErrs: curErrs}
	if opts.MaxLag > 0 {
		in.lags, in.lagErr = e.lags(ctx, tr)
	}
	plan.Groups = make([]GroupPlan, 0, len(tr.Groups))
	for i := range tr.Groups {
		plan.Groups = append(plan.Groups, e.planGroup(&tr.Groups[i], &in, opts, mode, maxAge))
	}
	if err := e.checkRanges(ctx, plan, opts.ClampOffsets); err != nil {
		return nil, err
	}
	return plan, nil
}

// planInputs is what PlanFailover reads from the clusters before it
// decides: the translation, the groups' states and current commits on the
// target (with the groups whose commits could not be read), and with
// MaxLag the replication lag per source partition.
type planInputs struct {
	tr      *TranslateResult
	states  map[string]groupstate.State
	current map[string]kadm.OffsetResponses
	curErrs map[string]error
	lags    map[tpKey]time.Duration
	lagErr  error
	// down is the verdict on every checkpoint row whose source did not
	// answer: it depends only on the mirror's liveness, now and the
	// maximum age, so it is judged once (set by judge).
	down *freshness.Verdict
}

// judge is freshness.Judge of checkpoint row t.
func (in *planInputs) judge(e *Engine, t *Translation, maxAge time.Duration) freshness.Verdict {
	ck := freshness.Checkpoint{Upstream: *t.SourceOffset, Written: t.CheckpointTime}
	src := freshness.Source{Up: t.SourceUp, Commit: t.SourceCommit, Alias: e.flow.Source}
	if t.SourceUp {
		return freshness.Judge(ck, src, in.tr.MirrorLive, e.now(), maxAge)
	}
	if in.down == nil {
		v := freshness.Judge(ck, src, in.tr.MirrorLive, e.now(), maxAge)
		in.down = &v
	}
	return *in.down
}

// planGroup decides one translated group's plan from in: an action per
// partition, the prechecks' refusals, and a skip row for each target
// commit on the flow's remote topics with no translation. It reads no
// cluster.
func (e *Engine) planGroup(gt *GroupTranslation, in *planInputs, opts PlanOptions, mode Mode, maxAge time.Duration) GroupPlan {
	gp := GroupPlan{Group: gt.Group}
	st := in.states[gt.Group]
	setState(&gp, st, e.flow.Target)
	block := blockAction(st)
	if gt.Error != "" {
		gp.Refused = append(gp.Refused, fmt.Sprintf("commits of group %s on %s unknown: %s; nothing is committed to it", gt.Group, e.flow.Source, gt.Error))
	}
	if err := in.curErrs[gt.Group]; err != nil {
		gp.Refused = append(gp.Refused, fmt.Sprintf("commits of group %s on %s unknown: %v; nothing is committed to it", gt.Group, e.flow.Target, err))
		block = ActionSkipUnknown
	}
	current := in.current[gt.Group]
	gp.Partitions = make([]PartitionPlan, 0, len(gt.Partitions)+len(current))
	// seen is needed only to find target commits with no translation.
	var seen map[tpKey]bool
	if len(current) > 0 {
		seen = make(map[tpKey]bool, len(gt.Partitions))
	}
	for _, t := range gt.Partitions {
		if seen != nil {
			seen[tpKey{t.Topic, t.Partition}] = true
		}
		cur, cerr := currentOf(current, t.Topic, t.Partition)
		pp := PartitionPlan{Translation: t, Current: cur}
		pp.Action = decide(pp.SourceOffset, pp.TargetOffset, pp.Current, t.NotReplicated, block, opts.AllowRewind)
		if t.Error != "" || cerr != nil {
			pp.Action = ActionSkipUnknown
			why := t.Error
			if cerr != nil {
				why = fmt.Sprintf("fetch the group's offset of %s[%d] on %s: %v", t.Topic, t.Partition, e.flow.Target, cerr)
				pp.Reason = strings.TrimPrefix(pp.Reason+"; "+why, "; ")
			}
			gp.Refused = append(gp.Refused, fmt.Sprintf("%s; nothing is committed to group %s", why, gt.Group))
		}
		if t.Mode == ModeCheckpoint && !t.CheckpointTime.IsZero() {
			v := in.judge(e, &t, maxAge)
			if !v.Current {
				gp.Refused = append(gp.Refused, fmt.Sprintf("checkpoint for %s[%d] is not current: %s", t.Topic, t.Partition, v.Reason))
			}
		}
		if opts.MaxLag > 0 && t.SourceTopic != "" {
			if in.lagErr != nil {
				gp.Refused = append(gp.Refused, fmt.Sprintf("replication lag of %s[%d] unknown: %v", t.SourceTopic, t.Partition, in.lagErr))
			} else if l := in.lags[tpKey{t.SourceTopic, t.Partition}]; l >= opts.MaxLag {
				gp.Refused = append(gp.Refused, fmt.Sprintf("replication lag of %s[%d] is %s, not under --max-lag %s", t.SourceTopic, t.Partition, l.Round(time.Millisecond), opts.MaxLag))
			}
		}
		gp.Partitions = append(gp.Partitions, pp)
	}
	// Target commits on the flow's remote topics with no translation.
	current.Each(func(o kadm.OffsetResponse) {
		st, ok := e.sourceTopic(o.Topic)
		if !ok || seen[tpKey{o.Topic, o.Partition}] || o.Err != nil {
			return
		}
		cur, _ := currentOf(current, o.Topic, o.Partition)
		pp := PartitionPlan{Translation: Translation{SourceTopic: st, Topic: o.Topic, Partition: o.Partition, Mode: mode,
			Reason: "no translation: no commit or checkpoint for this partition"}, Current: cur}
		pp.Action = ActionSkipNoTranslation
		if block != "" {
			pp.Action = block
		}
		gp.Partitions = append(gp.Partitions, pp)
	})
	sortPlans(gp.Partitions)
	if gp.Partitions == nil {
		gp.Partitions = []PartitionPlan{}
	}
	return gp
}

func sortPlans(ps []PartitionPlan) {
	slices.SortFunc(ps, func(a, b PartitionPlan) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.Partition, b.Partition)
	})
}

// currentOf is the group's committed offset of topic[partition] in r: nil
// when there is none (or -1), and the partition's fetch error, which is
// never read as "no commit".
func currentOf(r kadm.OffsetResponses, topic string, partition int32) (*int64, error) {
	o, ok := r.Lookup(topic, partition)
	if !ok {
		return nil, nil
	}
	if o.Err != nil {
		return nil, o.Err
	}
	if o.At < 0 {
		return nil, nil
	}
	return ptr(o.At), nil
}

// decide picks the action for one partition; block is the group's
// blocking action ("" when the group is idle).
func decide(from, to, current *int64, notReplicated bool, block Action, allowRewind bool) Action {
	switch {
	case block != "":
		return block
	case from == nil:
		return ActionSkipNoSourceCommit
	case to == nil && notReplicated:
		return ActionSkipNotReplicated
	case to == nil:
		return ActionSkipNoTranslation
	case current != nil && *current == *to:
		return ActionUnchanged
	case current != nil && *current > *to && !allowRewind:
		return ActionSkipRewind
	}
	return ActionCommit
}

// checkRanges refuses (or with clamp, clamps) every commit row whose offset
// is below the log start or past the end (high watermark) of its partition
// on the cluster committed to: a bad checkpoint (-9, 2^50) is never
// committed. Offsets that cannot be listed make the row skip-unknown and
// refuse its group. It returns an error only when the commit cluster's
// admin client cannot be had.
func (e *Engine) checkRanges(ctx context.Context, plan *Plan, clamp bool) error {
	alias := plan.CommitCluster()
	topics := map[string]bool{}
	for _, g := range plan.Groups {
		for i := range g.Partitions {
			if pp := &g.Partitions[i]; pp.Action == ActionCommit {
				topics[plan.commitTopic(pp)] = true
			}
		}
	}
	if len(topics) == 0 {
		return nil
	}
	adm, err := e.clients.Admin(alias)
	if err != nil {
		return err
	}
	starts, ends, lerr := listOffsets(ctx, adm, alias, keys(topics))
	for gi := range plan.Groups {
		gp := &plan.Groups[gi]
		for i := range gp.Partitions {
			pp := &gp.Partitions[i]
			if pp.Action != ActionCommit {
				continue
			}
			topic := plan.commitTopic(pp)
			at := *plan.commitAt(pp)
			var s, en kadm.ListedOffset
			var ok1, ok2 bool
			if lerr == nil {
				s, ok1 = starts.Lookup(topic, pp.Partition)
				en, ok2 = ends.Lookup(topic, pp.Partition)
			}
			switch {
			case lerr != nil || !ok1 || !ok2 || s.Err != nil || en.Err != nil:
				why := lerr
				switch {
				case why != nil:
				case !ok1 || !ok2:
					why = errors.New("no answer for the partition")
				case s.Err != nil:
					why = s.Err
				default:
					why = en.Err
				}
				msg := fmt.Sprintf("log start and end of %s[%d] on %s unknown: %v; nothing is committed to group %s", topic, pp.Partition, alias, why, gp.Group)
				pp.Action, pp.Reason = ActionSkipUnknown, strings.TrimPrefix(pp.Reason+"; "+msg, "; ")
				gp.Refused = append(gp.Refused, msg)
			case at < s.Offset || at > en.Offset:
				where, bound := fmt.Sprintf("below the log start %d", s.Offset), s.Offset
				if at > en.Offset {
					where, bound = fmt.Sprintf("past the end %d", en.Offset), en.Offset
				}
				if clamp {
					pp.Reason = strings.TrimPrefix(fmt.Sprintf("%s; clamped from %d (%s of %s[%d] on %s)", pp.Reason, at, where, topic, pp.Partition, alias), "; ")
					plan.setCommitAt(pp, bound)
					pp.Rereads = nil
					if pp.Current != nil && *pp.Current == bound {
						pp.Action = ActionUnchanged
					} else if pp.Current != nil && *pp.Current > bound && !plan.AllowRewind {
						pp.Action = ActionSkipRewind
					}
					continue
				}
				msg := fmt.Sprintf("offset %d for %s[%d] is %s on %s: not a position there (a bad checkpoint?); group %s is not committed (--clamp-offsets commits %d)", at, topic, pp.Partition, where, alias, gp.Group, bound)
				if at < s.Offset && at >= 0 {
					msg = fmt.Sprintf("offset %d for %s[%d] is below the log start %d on %s: records %d to %d (%d) were deleted (retention) before group %s read them; "+
						"it is not committed (--clamp-offsets commits %d: the group never reads those %d records)", at, topic, pp.Partition, s.Offset, alias, at, s.Offset-1, s.Offset-at, gp.Group, s.Offset, s.Offset-at)
				}
				pp.Action, pp.Reason = ActionSkipOutOfRange, strings.TrimPrefix(pp.Reason+"; "+msg, "; ")
				gp.Refused = append(gp.Refused, msg)
			}
		}
	}
	return nil
}

// lags measures, per source partition of the translated groups, the age of
// the oldest source record not yet copied (0 when all is copied). The copy
// position is mirrorctl's progress topic, or for MM2 the newest offset sync
// plus one (an over-estimate of the lag, never an under-estimate).
func (e *Engine) lags(ctx context.Context, tr *TranslateResult) (map[tpKey]time.Duration, error) {
	topics := map[string]bool{}
	for _, g := range tr.Groups {
		for _, t := range g.Partitions {
			topics[t.SourceTopic] = true
		}
	}
	out, _, err := e.lagOf(ctx, topics)
	return out, err
}

// lagOf measures, per partition of the source topics, the age of the
// oldest record not yet copied (0 when all is copied) and how many source
// offsets are not copied yet (records, transaction markers included).
func (e *Engine) lagOf(ctx context.Context, topics map[string]bool) (map[tpKey]time.Duration, map[tpKey]int64, error) {
	out := map[tpKey]time.Duration{}
	behind := map[tpKey]int64{}
	if len(topics) == 0 {
		return out, behind, nil
	}
	adm, err := e.clients.Admin(e.flow.Source)
	if err != nil {
		return nil, nil, err
	}
	starts, ends, err := listOffsets(ctx, adm, e.flow.Source, keys(topics))
	if err != nil {
		return nil, nil, err
	}
	progress := e.readProgress(ctx)
	store, err := e.readSyncs(ctx)
	if err != nil {
		return nil, nil, err
	}
	now := e.now()
	var jobs []*scanJob
	var mu sync.Mutex
	ends.Each(func(en kadm.ListedOffset) {
		if en.Err != nil {
			return
		}
		k := tpKey{en.Topic, en.Partition}
		st, _ := starts.Lookup(en.Topic, en.Partition)
		next, ok := progress[k]
		if !ok {
			next = st.Offset
			if ss := store.Syncs(en.Topic, en.Partition); len(ss) > 0 {
				next = ss[0].UpstreamOffset + 1
			}
		}
		next = max(next, st.Offset)
		out[k] = 0
		behind[k] = max(en.Offset-next, 0)
		if next >= en.Offset {
			return
		}
		jobs = append(jobs, &scanJob{topic: en.Topic, partition: en.Partition, from: next, end: en.Offset, visit: func(r *kgo.Record) bool {
			if r.Attrs.IsControl() {
				return true
			}
			mu.Lock()
			out[k] = max(now.Sub(r.Timestamp), 0)
			mu.Unlock()
			return false
		}})
	})
	if err := scan(ctx, e.clients, e.flow.Source, jobs); err != nil {
		return nil, nil, err
	}
	return out, behind, nil
}

// Apply commits plan with kadm on its commit cluster: per group not
// refused, it describes the group again right before committing (absent or
// Empty only), re-fetches its commits and recomputes each partition's
// action (so nothing is lowered without AllowRewind), and commits the
// ActionCommit partitions with no leader epoch (epochs belong to the other
// cluster) and the source commit's metadata. Groups run concurrently
// (Options.ApplyParallel at a time). A commit once sent completes even if
// ctx is cancelled meanwhile; groups not started are "interrupted". Every partition gets an Outcome; Apply returns ctx's
// error when it was interrupted, else nil: failures are per partition.
func (e *Engine) Apply(ctx context.Context, plan *Plan) error {
	alias := plan.CommitCluster()
	adm, err := e.clients.Admin(alias)
	if err != nil {
		return err
	}
	plan.Applied = true
	sem := make(chan struct{}, e.parallel)
	var wg sync.WaitGroup
	for gi := range plan.Groups {
		gp := &plan.Groups[gi]
		if len(gp.Refused) > 0 {
			for i := range gp.Partitions {
				pp := &gp.Partitions[i]
				switch pp.Action {
				case ActionCommit, ActionSkipActive, ActionSkipUnknown, ActionSkipUnsupported, ActionSkipOutOfRange:
					pp.Outcome = OutcomeRefused
				default:
					pp.Outcome = OutcomeSkipped
				}
			}
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			e.applyGroup(ctx, adm, alias, plan, gp)
		}()
	}
	wg.Wait()
	return ctx.Err()
}

func (e *Engine) applyGroup(ctx context.Context, adm *kadm.Client, alias string, plan *Plan, gp *GroupPlan) {
	setAll := func(outcome, msg string) {
		for i := range gp.Partitions {
			pp := &gp.Partitions[i]
			switch pp.Action {
			case ActionCommit:
				pp.Outcome, pp.Error = outcome, msg
			case ActionUnchanged:
				pp.Outcome = OutcomeUnchanged
			default:
				pp.Outcome = OutcomeSkipped
			}
		}
	}
	if ctx.Err() != nil {
		setAll(OutcomeInterrupted, "interrupted before the commit")
		return
	}
	st := groupstate.Describe(ctx, adm, []string{gp.Group})[gp.Group]
	gp.State, gp.Type, gp.Members = st.State, st.Type, len(st.Members)
	if !st.Idle() {
		msg := st.Refusal(alias)
		if st.Known() && st.Supported() {
			msg = fmt.Sprintf("group %s became %s on %s (%d members) before the commit; stop its consumers first", gp.Group, st.State, alias, len(st.Members))
			if len(st.Members) > 0 {
				msg += ": " + st.MemberList()
			}
			gp.Blocking = st.Members
		}
		gp.Refused = append(gp.Refused, msg)
		setAll(OutcomeRefused, msg)
		return
	}
	current, errs := fetchOffsets(ctx, adm, alias, []string{gp.Group})
	if err := errs[gp.Group]; err != nil {
		setAll(OutcomeFailed, fmt.Sprintf("%v; nothing was committed to the group", err))
		return
	}
	commit := kadm.Offsets{}
	before := map[tpKey]*int64{}
	for i := range gp.Partitions {
		pp := &gp.Partitions[i]
		topic := plan.commitTopic(pp)
		if pp.Action == ActionCommit || pp.Action == ActionUnchanged || pp.Action == ActionSkipRewind {
			cur, cerr := currentOf(current[gp.Group], topic, pp.Partition)
			if cerr != nil {
				setAll(OutcomeFailed, fmt.Sprintf("fetch the group's offset of %s[%d] on %s: %v; nothing was committed to the group", topic, pp.Partition, alias, cerr))
				return
			}
			pp.Current = cur
			pp.Action = decide(ptr(0), plan.commitAt(pp), pp.Current, false, "", plan.AllowRewind)
		}
		switch pp.Action {
		case ActionCommit:
			commit.Add(kadm.Offset{Topic: topic, Partition: pp.Partition, At: *plan.commitAt(pp), LeaderEpoch: -1, Metadata: pp.Metadata})
			before[tpKey{topic, pp.Partition}] = pp.Current
		case ActionUnchanged:
			pp.Outcome = OutcomeUnchanged
		default:
			pp.Outcome = OutcomeSkipped
		}
	}
	if len(commit) == 0 {
		return
	}
	if ctx.Err() != nil {
		setAll(OutcomeInterrupted, "interrupted before the commit")
		return
	}
	// A commit once sent is seen through even if ctx is cancelled meanwhile,
	// so the outcome (and the audit entry) says exactly what was committed.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.commitTimeout)
	defer cancel()
	resp, err := adm.CommitOffsets(cctx, gp.Group, commit)
	if err != nil {
		if activeErr(err) {
			msg := activeMsg(gp.Group, alias, err)
			gp.Refused = append(gp.Refused, msg)
			for i := range gp.Partitions {
				if pp := &gp.Partitions[i]; pp.Action == ActionCommit {
					pp.Action = ActionSkipActive
				}
			}
			setAll(OutcomeRefused, msg)
			return
		}
		// The answer is lost or the request failed part way: the commit
		// may have landed. Re-read to say which.
		var lost []*PartitionPlan
		for i := range gp.Partitions {
			if pp := &gp.Partitions[i]; pp.Action == ActionCommit {
				lost = append(lost, pp)
			}
		}
		e.settle(ctx, adm, alias, plan, gp.Group, lost, before, fmt.Errorf("commit group %s on %s: %w", gp.Group, alias, err))
		return
	}
	active := false
	var lost []*PartitionPlan
	var lostErr error
	for i := range gp.Partitions {
		pp := &gp.Partitions[i]
		if pp.Action != ActionCommit {
			continue
		}
		o, ok := resp.Lookup(plan.commitTopic(pp), pp.Partition)
		switch {
		case !ok:
			lost, lostErr = append(lost, pp), errors.New("no response for the partition")
		case o.Err == nil:
			pp.Outcome = OutcomeCommitted
		case activeErr(o.Err):
			// The group gained members between the describe and the
			// commit: the broker rejected the admin commit.
			pp.Action, pp.Outcome, pp.Error = ActionSkipActive, OutcomeRefused, activeMsg(gp.Group, alias, o.Err)
			active = true
		case ambiguousErr(o.Err):
			lost, lostErr = append(lost, pp), o.Err
		default:
			pp.Outcome, pp.Error = OutcomeFailed, fmt.Sprintf("commit %s[%d] on %s: %v", plan.commitTopic(pp), pp.Partition, alias, o.Err)
		}
	}
	if len(lost) > 0 {
		e.settle(ctx, adm, alias, plan, gp.Group, lost, before, fmt.Errorf("commit group %s on %s: %w", gp.Group, alias, lostErr))
	}
	if active {
		gp.Refused = append(gp.Refused, activeMsg(gp.Group, alias, nil))
	}
}

// ambiguousErr reports per-partition commit errors after which the commit
// may still have been applied (Kafka answers REQUEST_TIMED_OUT when the
// write to __consumer_offsets did not complete in time).
func ambiguousErr(err error) bool {
	var ke *kerr.Error
	return errors.Is(err, kerr.RequestTimedOut) || !errors.As(err, &ke)
}

// settle re-reads the group's offsets after a commit whose answer was lost
// (cause) and sets each of pps's outcome to what is true: committed (the
// offset is there), failed (the offset before the commit is still there)
// or unknown (the re-read failed, or shows a third value). It re-reads for
// up to about two seconds while the offsets do not show the commit (a
// request that timed out may still be queued on the broker), within
// max(CommitTimeout, 5s). before holds the offsets read right before the
// commit (nil: none).
func (e *Engine) settle(ctx context.Context, adm *kadm.Client, alias string, plan *Plan, group string, pps []*PartitionPlan, before map[tpKey]*int64, cause error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(e.commitTimeout, 5*time.Second))
	defer cancel()
	var (
		current map[string]kadm.OffsetResponses
		rerr    error
	)
	// The cluster that lost an answer may need a moment, and a commit whose
	// request timed out may still be queued there: re-read until every
	// partition shows the committed offset, or a few times over about two
	// seconds (within the commit timeout).
	landed := func() bool {
		for _, pp := range pps {
			got, err := currentOf(current[group], plan.commitTopic(pp), pp.Partition)
			if err != nil || got == nil || *got != *plan.commitAt(pp) {
				return false
			}
		}
		return true
	}
	for try := 0; try < 6; try++ {
		var errs map[string]error
		current, errs = fetchOffsets(rctx, adm, alias, []string{group})
		rerr = errs[group]
		if (rerr == nil && landed()) || rctx.Err() != nil {
			break
		}
		select {
		case <-rctx.Done():
		case <-time.After(time.Duration(try+1) * 150 * time.Millisecond):
		}
	}
	for _, pp := range pps {
		topic := plan.commitTopic(pp)
		want := *plan.commitAt(pp)
		if rerr != nil {
			pp.Outcome, pp.Error = OutcomeUnknown, fmt.Sprintf("%v; re-reading the group's offsets failed too (%v): the commit may or may not have landed", cause, rerr)
			continue
		}
		got, gerr := currentOf(current[group], topic, pp.Partition)
		prev := before[tpKey{topic, pp.Partition}]
		switch {
		case gerr != nil:
			pp.Outcome, pp.Error = OutcomeUnknown, fmt.Sprintf("%v; re-reading %s[%d] failed (%v): the commit may or may not have landed", cause, topic, pp.Partition, gerr)
		case got != nil && *got == want:
			pp.Outcome, pp.Error = OutcomeCommitted, fmt.Sprintf("the commit's answer was lost (%v); re-read: %d is committed", cause, want)
		case (got == nil && prev == nil) || (got != nil && prev != nil && *got == *prev):
			pp.Outcome, pp.Error = OutcomeFailed, fmt.Sprintf("%v; re-read: not committed (the group's offset is still %s at %s)", cause, optStr(prev), time.Now().UTC().Format(time.RFC3339))
		default:
			pp.Outcome, pp.Error = OutcomeUnknown, fmt.Sprintf("%v; re-read shows %s, neither the previous %s nor the committed %d (another writer?)", cause, optStr(got), optStr(prev), want)
		}
	}
}

func optStr(p *int64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

// activeMsg says a commit was rejected because the group is active.
func activeMsg(group, alias string, err error) string {
	msg := fmt.Sprintf("group active: %s has members on %s; stop its consumers first", group, alias)
	if err != nil {
		msg += " (" + err.Error() + ")"
	}
	return msg
}

// defaultCommitTimeout bounds one group's commit once sent, and the re-read
// after an answer was lost.
const defaultCommitTimeout = 30 * time.Second

// activeErr reports commit errors that mean the group has members.
func activeErr(err error) bool {
	return errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.IllegalGeneration) ||
		errors.Is(err, kerr.RebalanceInProgress) || errors.Is(err, kerr.FencedInstanceID) || errors.Is(err, kerr.StaleMemberEpoch)
}
