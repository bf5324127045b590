package failover

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/replicate"
	"github.com/mirrorctl/mirrorctl/replicate/progress"
)

// Type names the situation a failover runs in; each has its own procedure
// and its own proof of what it lost or will read again.
type Type string

const (
	// TypePlanned: the source is up. Its writes are stopped first (a
	// write fence, or the operator's word that the producers stopped),
	// the source end offsets are proven quiet for a settle time and the
	// mirror proven to hold every record below them, and only then are the
	// groups' exact positions committed: RPO 0, by proof.
	TypePlanned Type = "planned"
	// TypeUnplanned: the source is unreachable. Only what the target holds
	// is used (the checkpoints, mirrorctl's progress), the source is never
	// waited on, and every partition gets an error bound: records the
	// group may read again, records known not to be mirrored.
	TypeUnplanned Type = "unplanned"
	// TypeRestore: the way back (failback). The groups' positions on the
	// target go back to the source by the reverse mapping; positions on
	// topics written on the target go along the reverse flow, and a group
	// whose records the reverse flow has not copied back yet is refused
	// unless AllowBehind (then they are counted as records read again).
	TypeRestore Type = "restore"
)

// Types lists the values of Type.
func Types() []string {
	return []string{string(TypePlanned), string(TypeUnplanned), string(TypeRestore)}
}

// ProcedureOptions configure [Engine.Quiesce] and [Engine.Prepare].
type ProcedureOptions struct {
	PlanOptions
	Type Type
	// FencePrincipals (planned) are denied WRITE on the groups' source
	// topics first (DENY bindings; the source needs an authorizer).
	FencePrincipals []string
	// ProducersStopped (planned, no fence) is the operator's statement
	// that no producer writes to the source topics any more; it is
	// recorded in the evidence and checked by the quiet end offsets.
	ProducersStopped bool
	// Settle is how long the source end offsets must stay unchanged to
	// count as quiet (planned); default 5s.
	Settle time.Duration
	// Drain bounds the wait for the quiet end offsets to be mirrored and
	// for the exact translations (planned); default 2m.
	Drain time.Duration
	// AllowSourceUp runs an unplanned failover although the source
	// answers (a planned one would prove RPO 0).
	AllowSourceUp bool
	// Reverse is the engine of the reverse flow (target->source), for
	// restore; nil when the configuration has none.
	Reverse *Engine
	// AllowBehind (restore) moves a group although the reverse flow has
	// not copied back all it consumed on the target: it resumes at the
	// reverse flow's checkpoint and reads those records again.
	AllowBehind bool
}

// Procedure is one failover of a type: its plans (one; with restore also the
// reverse flow's), and what establishes its recovery point.
type Procedure struct {
	Type      Type      `json:"type"`
	StartedAt time.Time `json:"started_at"`
	// Plans commit on the target (planned, unplanned) or on the source
	// (restore: the failback of the flow, and the reverse flow's failover).
	Plans []*Plan `json:"-"`
	// Quiescence (planned) is how the source was proven quiet and
	// mirrored.
	Quiescence *Quiescence `json:"quiescence,omitempty"`
	// Bounds (unplanned) is the error bound of each group partition.
	Bounds []Bound `json:"bounds,omitempty"`
	// RPO is what the target may lack of the source at the plan's instant.
	RPO RPO `json:"rpo"`
	// Duplicates (restore) counts records the groups will read again on
	// the source: their rereads, and what they consumed on the target that
	// the reverse flow had not copied back (AllowBehind).
	Duplicates int64 `json:"duplicates"`
}

// RPO is a recovery point: source records the target lacks (Records, and
// the age of the oldest in Ms), whether that figure is proven or a bound
// (Proven), and how it was established (How, a sentence).
type RPO struct {
	Records int64  `json:"records"`
	Ms      int64  `json:"ms"`
	Proven  bool   `json:"proven"`
	How     string `json:"how"`
}

// Quiescence is how a planned failover stopped the source's writes and
// proved the mirror caught up.
type Quiescence struct {
	// Method is "fence" (DENY WRITE bindings, Fence set) or
	// "producers-stopped" (the operator's statement).
	Method string   `json:"method"`
	Fence  *Fence   `json:"fence,omitempty"`
	Topics []string `json:"topics"`
	// StartedAt is when the writes began to be stopped: the procedure's
	// start, from which its RTO counts.
	StartedAt time.Time `json:"started_at"`
	// SettleMs is how long the end offsets had to stay unchanged;
	// QuietSince when they last moved; Ends the quiet end offsets.
	SettleMs   int64                      `json:"settle_ms"`
	QuietSince time.Time                  `json:"quiet_since"`
	Ends       map[string]map[int32]int64 `json:"end_offsets"`
	// MirroredAt is when the mirror was seen to hold every record below
	// Ends (its progress, or offset syncs, at the ends); zero when it did
	// not within the drain time.
	MirroredAt time.Time `json:"mirrored_at"`
}

// Bound is one group partition's error bound in an unplanned failover,
// from what the target holds: the checkpoint (the group's source position
// the mirror last translated, Checkpoint, and the target offset it
// translates to, Committed), the remote partition's end on the target
// (TargetEnd), the mirror's copy position (Copied: the next source offset
// to copy) and the source end offset the mirror last saw (SourceEnd), as of
// SeenAt. -1 is unknown. Offsets are in records.
type Bound struct {
	Group       string    `json:"group"`
	SourceTopic string    `json:"source_topic"`
	Partition   int32     `json:"partition"`
	Checkpoint  int64     `json:"checkpoint"`
	Committed   int64     `json:"committed"`
	TargetEnd   int64     `json:"target_end"`
	Copied      int64     `json:"copied"`
	SourceEnd   int64     `json:"source_end"`
	SeenAt      time.Time `json:"seen_at"`
	// RereadMax is at most how many records the group reads again: every
	// record on the target from Committed to TargetEnd (it may have read
	// them all on the source before the outage). NotMirroredMin is at
	// least how many records the source held that never reached the target
	// (SourceEnd - Copied at SeenAt; the source may have taken more after).
	RereadMax      int64 `json:"reread_max"`
	NotMirroredMin int64 `json:"not_mirrored_min"`
}

// PrepareSaved is [Engine.Prepare] for a plan saved earlier and restored
// ([Engine.Restore]): its procedure of opts.Type (planned or unplanned;
// restore plans are applied as failbacks) with the recovery point and
// bounds established now, after the quiescence q of a planned one.
func (e *Engine) PrepareSaved(ctx context.Context, opts ProcedureOptions, q *Quiescence, plan *Plan) (*Procedure, error) {
	p := &Procedure{Type: opts.Type, StartedAt: e.now().UTC(), Quiescence: q}
	if q != nil && !q.StartedAt.IsZero() {
		p.StartedAt = q.StartedAt
	}
	switch {
	case plan.Direction == Failback || opts.Type == TypeRestore:
		p.Type, p.Plans = TypeRestore, []*Plan{plan}
		p.RPO = RPO{Proven: true, How: failbackHow}
		return p, nil
	case opts.Type == TypeUnplanned:
		return p, e.unplannedBounds(ctx, p, plan)
	}
	return p, e.plannedRPO(ctx, p, plan)
}

const failbackHow = "failback loses nothing: the records the flow has not copied are on the source, where the groups resume"

// ErrSourceUp is returned (wrapped) by an unplanned failover whose source
// answers: a planned failover would prove what it loses.
var ErrSourceUp = errors.New("the source cluster answers")

// Prepare plans a failover of opts.Type without acting on anything but
// reads: planned translates exactly (after [Engine.Quiesce] when q is set;
// without it the RPO says what is not mirrored now, unproven), unplanned
// plans from the checkpoints on the target and bounds every partition
// (refusing with ErrSourceUp when the source answers, unless
// AllowSourceUp), restore plans the failback and, with a reverse flow, the
// groups' target topics along it.
func (e *Engine) Prepare(ctx context.Context, opts ProcedureOptions, q *Quiescence) (*Procedure, error) {
	p := &Procedure{Type: opts.Type, StartedAt: e.now().UTC(), Quiescence: q}
	if q != nil && !q.StartedAt.IsZero() {
		p.StartedAt = q.StartedAt
	}
	switch opts.Type {
	case TypePlanned:
		return p, e.preparePlanned(ctx, opts, p)
	case TypeUnplanned:
		return p, e.prepareUnplanned(ctx, opts, p)
	case TypeRestore:
		return p, e.prepareRestore(ctx, opts, p)
	}
	return nil, fmt.Errorf("failover type %q: want planned, unplanned or restore", opts.Type)
}

func (e *Engine) preparePlanned(ctx context.Context, opts ProcedureOptions, p *Procedure) error {
	popts := opts.PlanOptions
	popts.Mode = ModeExact
	var plan *Plan
	var err error
	if p.Quiescence != nil {
		plan, err = e.WaitCaughtUp(ctx, popts, drainOf(opts), time.Second)
	} else {
		plan, err = e.PlanFailover(ctx, popts)
	}
	if err != nil {
		return err
	}
	return e.plannedRPO(ctx, p, plan)
}

// plannedRPO sets plan as p's and its recovery point: what the target
// lacks of the plan's source topics now, proven 0 after a quiescence.
func (e *Engine) plannedRPO(ctx context.Context, p *Procedure, plan *Plan) error {
	p.Plans = []*Plan{plan}
	ages, behind, err := e.lagOf(ctx, setOf(FenceTopics(plan)))
	if err != nil {
		return fmt.Errorf("measure what the target lacks: %w", err)
	}
	for k, n := range behind {
		p.RPO.Records += n
		p.RPO.Ms = max(p.RPO.Ms, ages[k].Milliseconds())
	}
	q := p.Quiescence
	switch {
	case q == nil:
		p.RPO.How = fmt.Sprintf("not proven: the plan only reads; %d source records are not on %s now, and the source may take more until its writes stop (apply stops them)", p.RPO.Records, e.flow.Target)
	case !q.MirroredAt.IsZero() && p.RPO.Records == 0:
		p.RPO.Proven = true
		p.RPO.How = fmt.Sprintf("%s; the source end offsets stayed unchanged for %d ms, and the mirror held every record below them at %s",
			quietHow(q), q.SettleMs, q.MirroredAt.Format(time.RFC3339Nano))
	default:
		p.RPO.How = fmt.Sprintf("not proven: %s, but %d source records below the quiet end offsets are not on %s", quietHow(q), p.RPO.Records, e.flow.Target)
	}
	return nil
}

func quietHow(q *Quiescence) string {
	if q.Method == "fence" && q.Fence != nil {
		return fmt.Sprintf("writes fenced (DENY WRITE for %v on %s)", q.Fence.Principals, plural(len(q.Topics), "topic"))
	}
	return "the operator stated the producers stopped (--producers-stopped)"
}

func drainOf(opts ProcedureOptions) time.Duration {
	if opts.Drain > 0 {
		return opts.Drain
	}
	return 2 * time.Minute
}

func setOf(xs []string) map[string]bool {
	out := map[string]bool{}
	for _, x := range xs {
		out[x] = true
	}
	return out
}

// Quiesce stops and proves quiet the source topics of opts' groups, for a
// planned failover: with FencePrincipals it puts a write fence in place
// (see [Engine.Fence]); with ProducersStopped it takes the operator's word.
// Either way the source end offsets must then stay unchanged for Settle,
// and the mirror must hold every record below them within Drain. A fence
// created stays in place, also on error (the Quiescence is returned with
// it); neither option is an error.
func (e *Engine) Quiesce(ctx context.Context, opts ProcedureOptions) (*Quiescence, error) {
	if len(opts.FencePrincipals) == 0 && !opts.ProducersStopped {
		return nil, errors.New("a planned failover stops the source's writes first: name the producers' principals to fence (--fence-principal, an authorizer on the source), or state that they stopped (--producers-stopped)")
	}
	began := e.now().UTC()
	popts := opts.PlanOptions
	popts.Mode = ModeExact
	plan, err := e.PlanFailover(ctx, popts)
	if err != nil {
		return nil, err
	}
	topics := FenceTopics(plan)
	if len(topics) == 0 {
		return nil, errors.New("the groups read no source topic of the flow: nothing to stop")
	}
	settle := opts.Settle
	if settle <= 0 {
		settle = 5 * time.Second
	}
	q := &Quiescence{Method: "producers-stopped", Topics: topics, SettleMs: settle.Milliseconds(), StartedAt: began}
	if len(opts.FencePrincipals) > 0 {
		q.Method = "fence"
		f, err := e.Fence(ctx, topics, FenceOptions{Principals: opts.FencePrincipals, Settle: settle, Timeout: drainOf(opts)})
		q.Fence = f
		if err != nil {
			return q, err
		}
		q.QuietSince, q.Ends = f.SettledAt, f.Ends
	} else {
		adm, err := e.clients.Admin(e.flow.Source)
		if err != nil {
			return q, err
		}
		if q.QuietSince, q.Ends, err = awaitQuiet(ctx, adm, e.flow.Source, topics, settle, drainOf(opts)); err != nil {
			return q, fmt.Errorf("%w: a producer still writes, though --producers-stopped says none does", err)
		}
	}
	return q, e.awaitMirrored(ctx, q, drainOf(opts))
}

// awaitMirrored waits until the mirror holds every source record below the
// quiet end offsets q.Ends (its progress, or newest offset sync, at the
// end of each partition), and sets q.MirroredAt; an error names what is
// still missing when timeout passes.
func (e *Engine) awaitMirrored(ctx context.Context, q *Quiescence, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		_, behind, err := e.lagOf(ctx, setOf(q.Topics))
		if err != nil {
			return fmt.Errorf("read what the mirror copied: %w", err)
		}
		var missing []string
		for k, n := range behind {
			if n > 0 {
				missing = append(missing, fmt.Sprintf("%s[%d] %d records", k.topic, k.partition, n))
			}
		}
		if len(missing) == 0 {
			q.MirroredAt = e.now().UTC()
			return nil
		}
		sort.Strings(missing)
		if !time.Now().Before(deadline) {
			return fmt.Errorf("the mirror has not copied up to the quiet end offsets after %s: %v", timeout, missing)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// awaitQuiet lists the end offsets of topics on adm's cluster until they
// stay unchanged for settle, and returns when they last moved and what
// they are; an error when they still move at timeout.
func awaitQuiet(ctx context.Context, adm *kadm.Client, alias string, topics []string, settle, timeout time.Duration) (time.Time, map[string]map[int32]int64, error) {
	start := time.Now()
	var last map[string]map[int32]int64
	lastChange := start
	for {
		ends, err := adm.ListEndOffsets(ctx, topics...)
		if err != nil {
			return time.Time{}, nil, fmt.Errorf("list end offsets on %s: %w", alias, err)
		}
		now := map[string]map[int32]int64{}
		var lerr error
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err != nil {
				lerr = fmt.Errorf("%s[%d]: %w", o.Topic, o.Partition, o.Err)
				return
			}
			if now[o.Topic] == nil {
				now[o.Topic] = map[int32]int64{}
			}
			now[o.Topic][o.Partition] = o.Offset
		})
		if lerr != nil {
			return time.Time{}, nil, fmt.Errorf("list end offsets on %s: %w", alias, lerr)
		}
		if d := diffOffsets(last, now); last == nil || d != "" {
			if last != nil {
				lastChange = time.Now()
			}
			last = now
			if time.Since(start) > timeout {
				return time.Time{}, nil, fmt.Errorf("the end offsets on %s still move after %s (%s)", alias, timeout, d)
			}
		} else if time.Since(lastChange) >= settle {
			return lastChange.UTC(), now, nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, nil, ctx.Err()
		case <-time.After(min(250*time.Millisecond, settle/4)):
		}
	}
}

func (e *Engine) prepareUnplanned(ctx context.Context, opts ProcedureOptions, p *Procedure) error {
	if !opts.AllowSourceUp {
		if err := e.sourceAnswers(ctx); err == nil {
			return fmt.Errorf("%w (%s): a planned failover (--type planned) stops its writes and proves RPO 0; --allow-source-up runs an unplanned one anyway", ErrSourceUp, e.flow.Source)
		}
	}
	popts := opts.PlanOptions
	popts.Mode, popts.TargetOnly, popts.MaxLag = ModeCheckpoint, true, 0
	plan, err := e.PlanFailover(ctx, popts)
	if err != nil {
		return err
	}
	return e.unplannedBounds(ctx, p, plan)
}

// unplannedBounds sets plan as p's and bounds each of its partitions.
func (e *Engine) unplannedBounds(ctx context.Context, p *Procedure, plan *Plan) error {
	p.Plans = []*Plan{plan}
	ends, err := e.targetEnds(ctx, plan)
	if err != nil {
		return err
	}
	addBounds(p, plan, ends, e.readProgressValues(ctx))
	p.RPO.How = fmt.Sprintf("a bound, from what %s holds: at least %d source records were not mirrored when the mirror last wrote its progress (each partition's seen_at), "+
		"and the source may have taken more before it went away; each group reads again at most reread_max records per partition", e.flow.Target, p.RPO.Records)
	return nil
}

// addBounds appends to p a Bound per row of plan with a source offset,
// from the remote partitions' end offsets on the target and the progress
// values the mirror last wrote, and adds the records not mirrored to p's
// RPO. It reads no cluster.
func addBounds(p *Procedure, plan *Plan, ends map[tpKey]int64, vals map[tpKey]progress.Value) {
	n := 0
	for gi := range plan.Groups {
		n += len(plan.Groups[gi].Partitions)
	}
	p.Bounds = slices.Grow(p.Bounds, n)
	for gi := range plan.Groups {
		g := &plan.Groups[gi]
		for i := range g.Partitions {
			pp := &g.Partitions[i]
			if pp.SourceOffset == nil || pp.SourceTopic == "" {
				continue
			}
			b := Bound{Group: g.Group, SourceTopic: pp.SourceTopic, Partition: pp.Partition, Checkpoint: *pp.SourceOffset,
				Committed: -1, TargetEnd: -1, Copied: -1, SourceEnd: -1, RereadMax: -1, NotMirroredMin: -1}
			if end, ok := ends[tpKey{pp.Topic, pp.Partition}]; ok {
				b.TargetEnd = end
			}
			if pp.TargetOffset != nil {
				b.Committed = *pp.TargetOffset
				if b.TargetEnd >= 0 {
					b.RereadMax = max(b.TargetEnd-b.Committed, 0)
				}
			}
			if v, ok := vals[tpKey{pp.SourceTopic, pp.Partition}]; ok {
				b.Copied, b.SeenAt = v.Next, v.Time.UTC()
				if v.SourceEnd > 0 {
					b.SourceEnd = v.SourceEnd
					b.NotMirroredMin = max(v.SourceEnd-v.Next, 0)
					p.RPO.Records += b.NotMirroredMin
				}
			}
			p.Bounds = append(p.Bounds, b)
		}
	}
}

// targetEnds lists the end offsets of plan's remote topics on the target.
func (e *Engine) targetEnds(ctx context.Context, plan *Plan) (map[tpKey]int64, error) {
	// Each topic once: a plan names it in every group's rows, and kadm
	// puts every name it is given in the Metadata request.
	topics := map[string]bool{}
	for _, g := range plan.Groups {
		for _, pp := range g.Partitions {
			if pp.Topic != "" {
				topics[pp.Topic] = true
			}
		}
	}
	out := map[tpKey]int64{}
	if len(topics) == 0 {
		return out, nil
	}
	adm, err := e.clients.Admin(e.flow.Target)
	if err != nil {
		return nil, err
	}
	listed, err := adm.ListEndOffsets(ctx, keys(topics)...)
	if err != nil {
		return nil, fmt.Errorf("list end offsets on %s: %w", e.flow.Target, err)
	}
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			out[tpKey{o.Topic, o.Partition}] = o.Offset
		}
	})
	return out, nil
}

// sourceAnswers asks the source for its brokers, bounded by the engine's
// source timeout.
func (e *Engine) sourceAnswers(ctx context.Context) error {
	adm, err := e.clients.Admin(e.flow.Source)
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, min(e.sourceTimeout, 3*time.Second))
	defer cancel()
	_, err = adm.ListBrokers(pctx)
	return err
}

// readProgressValues is readProgress with the whole values.
func (e *Engine) readProgressValues(ctx context.Context) map[tpKey]progress.Value {
	topic := replicate.ProgressTopic(e.flow.Policy, e.flow.Source)
	out := map[tpKey]progress.Value{}
	_ = replicate.ReadProgressTopic(ctx, e.clients, e.flow.Target, topic, func(r *kgo.Record) {
		if k, v, err := progress.DecodeValue(r.Key, r.Value); err == nil {
			out[tpKey{k.Topic, k.Partition}] = v
		}
	})
	return out
}

func (e *Engine) prepareRestore(ctx context.Context, opts ProcedureOptions, p *Procedure) error {
	plan, err := e.PlanFailback(ctx, opts.PlanOptions)
	if err != nil {
		return err
	}
	p.Plans = []*Plan{plan}
	for _, g := range plan.Groups {
		for _, pp := range g.Partitions {
			if pp.Action == ActionCommit && pp.Rereads != nil {
				p.Duplicates += *pp.Rereads
			}
		}
	}
	p.RPO = RPO{Proven: true, How: failbackHow}
	if opts.Reverse == nil {
		return nil
	}
	ropts := opts.PlanOptions
	ropts.Mode = ModeExact
	if opts.AllowBehind {
		ropts.Mode = ModeAuto
	}
	rev, err := opts.Reverse.PlanFailover(ctx, ropts)
	if err != nil {
		return fmt.Errorf("the reverse flow %s->%s: %w", opts.Reverse.flow.Source, opts.Reverse.flow.Target, err)
	}
	behind := map[string][]string{}
	for _, g := range rev.Groups {
		for _, pp := range g.Partitions {
			switch {
			case pp.Action == ActionSkipNotReplicated:
				behind[g.Group] = append(behind[g.Group], fmt.Sprintf("%s[%d]", pp.SourceTopic, pp.Partition))
			case pp.Action == ActionCommit && pp.Rereads != nil:
				p.Duplicates += *pp.Rereads
			}
		}
	}
	for _, pl := range []*Plan{plan, rev} {
		for gi := range pl.Groups {
			gp := &pl.Groups[gi]
			if parts := behind[gp.Group]; len(parts) > 0 && !opts.AllowBehind {
				gp.Refused = append(gp.Refused, fmt.Sprintf("the reverse flow %s->%s has not copied back what group %s consumed on %s (%v): wait for it, or --allow-behind to resume at what it copied and read the rest again",
					opts.Reverse.flow.Source, opts.Reverse.flow.Target, gp.Group, opts.Reverse.flow.Source, parts))
			}
		}
	}
	p.Plans = append(p.Plans, rev)
	return nil
}

// Flow returns the source and target aliases of the engine's flow.
func (e *Engine) Flow() (source, target string) { return e.flow.Source, e.flow.Target }
