package failover

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
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
)

// Outcomes of [Engine.Apply] per partition.
const (
	OutcomeCommitted   = "committed"
	OutcomeUnchanged   = "unchanged"
	OutcomeSkipped     = "skipped"
	OutcomeRefused     = "refused"     // the group turned active, or a precheck failed
	OutcomeFailed      = "failed"      // the commit failed; Error says why
	OutcomeInterrupted = "interrupted" // cancelled before the commit was sent
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
	// ..., or "absent"), and its member count.
	State   string `json:"state"`
	Members int    `json:"members"`
	// Refused lists failed prechecks; a refused group is never committed.
	Refused    []string        `json:"refused,omitempty"`
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
			if pp.Outcome == OutcomeRefused || pp.Outcome == OutcomeFailed || pp.Outcome == OutcomeInterrupted || (pp.Verified != nil && !*pp.Verified) {
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

// groupStates describes groups on adm's cluster, retrying while the group
// coordinator is not ready (a fresh cluster creates __consumer_offsets on
// first use): COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS and
// NOT_COORDINATOR, for up to coordinatorWait.
func groupStates(ctx context.Context, adm *kadm.Client, alias string, groups []string) (map[string]kadm.DescribedGroup, error) {
	var described kadm.DescribedGroups
	err := retryCoordinator(ctx, func() error {
		var err error
		described, err = adm.DescribeGroups(ctx, groups...)
		if err != nil && len(described) == 0 {
			return err
		}
		for _, d := range described {
			if coordinatorErr(d.Err) {
				return d.Err
			}
		}
		return nil
	})
	if err != nil && len(described) == 0 {
		return nil, fmt.Errorf("describe groups on %s: %w", alias, err)
	}
	return described, nil
}

// coordinatorWait bounds retries while a group coordinator is not ready.
const coordinatorWait = 30 * time.Second

func coordinatorErr(err error) bool {
	return errors.Is(err, kerr.CoordinatorNotAvailable) || errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.NotCoordinator)
}

// retryCoordinator calls fn until it returns an error that is not a
// coordinator-not-ready error, coordinatorWait passes, or ctx ends.
func retryCoordinator(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(coordinatorWait)
	for {
		err := fn()
		if err == nil || !coordinatorErr(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func stateOf(d kadm.DescribedGroup, ok bool) (string, int, error) {
	if !ok || errors.Is(d.Err, kerr.GroupIDNotFound) || d.State == "Dead" || d.State == "" {
		return "absent", 0, nil
	}
	if d.Err != nil {
		return "", 0, d.Err
	}
	return d.State, len(d.Members), nil
}

func idle(state string, members int) bool {
	return (state == "absent" || state == "Empty") && members == 0
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
	tr, err := e.Translate(ctx, opts.Groups, mode)
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
	states, err := groupStates(ctx, tgt, e.flow.Target, groups)
	if err != nil {
		return nil, err
	}
	current, err := fetchOffsets(ctx, tgt, e.flow.Target, groups)
	if err != nil {
		return nil, err
	}
	maxAge := opts.CheckpointMaxAge
	if maxAge <= 0 {
		maxAge = 3 * e.flow.CheckpointsInterval
	}
	var lags map[tpKey]time.Duration
	var lagErr error
	if opts.MaxLag > 0 {
		lags, lagErr = e.lags(ctx, tr)
	}
	for _, gt := range tr.Groups {
		gp := GroupPlan{Group: gt.Group}
		d, ok := states[gt.Group]
		state, members, serr := stateOf(d, ok)
		if serr != nil {
			return nil, fmt.Errorf("describe group %s on %s: %w", gt.Group, e.flow.Target, serr)
		}
		gp.State, gp.Members = state, members
		if !idle(state, members) {
			gp.Refused = append(gp.Refused, fmt.Sprintf("group %s is %s on %s (%d members); stop its consumers first", gt.Group, state, e.flow.Target, members))
		}
		seen := map[tpKey]bool{}
		for _, t := range gt.Partitions {
			seen[tpKey{t.Topic, t.Partition}] = true
			pp := PartitionPlan{Translation: t, Current: currentOf(current[gt.Group], t.Topic, t.Partition)}
			pp.Action = decide(pp.SourceOffset, pp.TargetOffset, pp.Current, t.NotReplicated, idle(state, members), opts.AllowRewind)
			if t.Mode == ModeCheckpoint && !t.CheckpointTime.IsZero() {
				if age := e.now().Sub(t.CheckpointTime); age >= maxAge {
					gp.Refused = append(gp.Refused, fmt.Sprintf("checkpoint for %s[%d] is %s old, not under %s", t.Topic, t.Partition, age.Round(time.Second), maxAge))
				}
			}
			if opts.MaxLag > 0 && t.SourceTopic != "" {
				if lagErr != nil {
					gp.Refused = append(gp.Refused, fmt.Sprintf("replication lag of %s[%d] unknown: %v", t.SourceTopic, t.Partition, lagErr))
				} else if l := lags[tpKey{t.SourceTopic, t.Partition}]; l >= opts.MaxLag {
					gp.Refused = append(gp.Refused, fmt.Sprintf("replication lag of %s[%d] is %s, not under --max-lag %s", t.SourceTopic, t.Partition, l.Round(time.Millisecond), opts.MaxLag))
				}
			}
			gp.Partitions = append(gp.Partitions, pp)
		}
		// Target commits on the flow's remote topics with no translation.
		current[gt.Group].Each(func(o kadm.OffsetResponse) {
			st, ok := e.sourceTopic(o.Topic)
			if !ok || seen[tpKey{o.Topic, o.Partition}] || o.Err != nil {
				return
			}
			pp := PartitionPlan{Translation: Translation{SourceTopic: st, Topic: o.Topic, Partition: o.Partition, Mode: mode,
				Reason: "no translation: no commit or checkpoint for this partition"}, Current: currentOf(current[gt.Group], o.Topic, o.Partition)}
			pp.Action = ActionSkipNoTranslation
			if !idle(state, members) {
				pp.Action = ActionSkipActive
			}
			gp.Partitions = append(gp.Partitions, pp)
		})
		sortPlans(gp.Partitions)
		if gp.Partitions == nil {
			gp.Partitions = []PartitionPlan{}
		}
		plan.Groups = append(plan.Groups, gp)
	}
	return plan, nil
}

func sortPlans(ps []PartitionPlan) {
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].Topic != ps[j].Topic {
			return ps[i].Topic < ps[j].Topic
		}
		return ps[i].Partition < ps[j].Partition
	})
}

func currentOf(r kadm.OffsetResponses, topic string, partition int32) *int64 {
	o, ok := r.Lookup(topic, partition)
	if !ok || o.Err != nil || o.At < 0 {
		return nil
	}
	return ptr(o.At)
}

// decide picks the action for one partition.
func decide(from, to, current *int64, notReplicated, idle, allowRewind bool) Action {
	switch {
	case !idle:
		return ActionSkipActive
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
	out := map[tpKey]time.Duration{}
	if len(topics) == 0 {
		return out, nil
	}
	adm, err := e.clients.Admin(e.flow.Source)
	if err != nil {
		return nil, err
	}
	starts, ends, err := listOffsets(ctx, adm, e.flow.Source, keys(topics))
	if err != nil {
		return nil, err
	}
	progress := e.readProgress(ctx)
	store, err := e.readSyncs(ctx)
	if err != nil {
		return nil, err
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
		return nil, err
	}
	return out, nil
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
				pp.Outcome = OutcomeRefused
				if pp.Action != ActionCommit && pp.Action != ActionSkipActive {
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
	states, err := groupStates(ctx, adm, alias, []string{gp.Group})
	if err != nil {
		setAll(OutcomeFailed, err.Error())
		return
	}
	d, ok := states[gp.Group]
	state, members, err := stateOf(d, ok)
	if err != nil {
		setAll(OutcomeFailed, fmt.Sprintf("describe group %s on %s: %v", gp.Group, alias, err))
		return
	}
	gp.State, gp.Members = state, members
	if !idle(state, members) {
		msg := fmt.Sprintf("group %s became %s on %s (%d members) before the commit; stop its consumers first", gp.Group, state, alias, members)
		gp.Refused = append(gp.Refused, msg)
		setAll(OutcomeRefused, msg)
		return
	}
	current, err := fetchOffsets(ctx, adm, alias, []string{gp.Group})
	if err != nil {
		setAll(OutcomeFailed, err.Error())
		return
	}
	commit := kadm.Offsets{}
	for i := range gp.Partitions {
		pp := &gp.Partitions[i]
		topic := plan.commitTopic(pp)
		if pp.Action == ActionCommit || pp.Action == ActionUnchanged || pp.Action == ActionSkipRewind {
			pp.Current = currentOf(current[gp.Group], topic, pp.Partition)
			pp.Action = decide(ptr(0), plan.commitAt(pp), pp.Current, false, true, plan.AllowRewind)
		}
		switch pp.Action {
		case ActionCommit:
			commit.Add(kadm.Offset{Topic: topic, Partition: pp.Partition, At: *plan.commitAt(pp), LeaderEpoch: -1, Metadata: pp.Metadata})
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
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
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
		setAll(OutcomeFailed, fmt.Sprintf("commit group %s on %s: %v", gp.Group, alias, err))
		return
	}
	active := false
	for i := range gp.Partitions {
		pp := &gp.Partitions[i]
		if pp.Action != ActionCommit {
			continue
		}
		o, ok := resp.Lookup(plan.commitTopic(pp), pp.Partition)
		switch {
		case !ok:
			pp.Outcome, pp.Error = OutcomeFailed, "no response for the partition"
		case o.Err == nil:
			pp.Outcome = OutcomeCommitted
		case activeErr(o.Err):
			// The group gained members between the describe and the
			// commit: the broker rejected the admin commit.
			pp.Action, pp.Outcome, pp.Error = ActionSkipActive, OutcomeRefused, activeMsg(gp.Group, alias, o.Err)
			active = true
		default:
			pp.Outcome, pp.Error = OutcomeFailed, fmt.Sprintf("commit %s[%d] on %s: %v", plan.commitTopic(pp), pp.Partition, alias, o.Err)
		}
	}
	if active {
		gp.Refused = append(gp.Refused, activeMsg(gp.Group, alias, nil))
	}
}

// activeMsg says a commit was rejected because the group is active.
func activeMsg(group, alias string, err error) string {
	msg := fmt.Sprintf("group active: %s has members on %s; stop its consumers first", group, alias)
	if err != nil {
		msg += " (" + err.Error() + ")"
	}
	return msg
}

// commitTimeout bounds one group's commit once sent.
const commitTimeout = 30 * time.Second

// activeErr reports commit errors that mean the group has members.
func activeErr(err error) bool {
	return errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.IllegalGeneration) ||
		errors.Is(err, kerr.RebalanceInProgress) || errors.Is(err, kerr.FencedInstanceID)
}
