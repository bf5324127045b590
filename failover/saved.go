package failover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/mirrorctl/mirrorctl/groupstate"
)

// SavedPlanKind is the Kind of a [SavedPlan] document.
const SavedPlanKind = "mirrorctl-failover-plan"

// SavedPlan is a plan as `failover --plan-out` writes it: the plan itself,
// each commit's metadata, and the state every group was planned from, so
// that [Engine.Restore] can apply exactly that plan later and refuse any
// group whose state changed in between (like kafka-consumer-groups
// --export / --reset-offsets --from-file, but checked).
type SavedPlan struct {
	SchemaVersion int       `json:"schema_version"` // 1
	Kind          string    `json:"kind"`           // SavedPlanKind
	CreatedAt     time.Time `json:"created_at"`
	Plan          *Plan     `json:"plan"`
	// Metadata carries the commit metadata of each partition (not part of
	// the plan's JSON).
	Metadata []SavedMetadata `json:"metadata"`
	// State is the state of each group when the plan was made.
	State map[string]GroupSnapshot `json:"state"`
}

// SavedMetadata is one partition's commit metadata in a [SavedPlan].
type SavedMetadata struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Metadata  string `json:"metadata"`
}

// GroupSnapshot is what a saved plan records of a group: its state on the
// cluster committed to (a [groupstate.State.Fingerprint]), its committed
// offsets there, and its committed offsets on the other cluster (the one
// it moves from) unless that cluster did not answer. Offsets are topic ->
// partition -> offset (-1: a null commit).
type GroupSnapshot struct {
	CommitState   string                     `json:"commit_state"`
	CommitOffsets map[string]map[int32]int64 `json:"commit_offsets"`
	FromDown      bool                       `json:"from_down,omitempty"`
	FromOffsets   map[string]map[int32]int64 `json:"from_offsets,omitempty"`
	fromErr       error
	commitErr     error
}

// snapshot reads the state of plan's groups now: an error per group that
// could not be read is kept in the snapshot (never compared as equal).
func (e *Engine) snapshot(ctx context.Context, plan *Plan) (map[string]GroupSnapshot, error) {
	commitAlias, fromAlias := plan.CommitCluster(), plan.Source
	if plan.Direction == Failback {
		fromAlias = plan.Target
	}
	groups := make([]string, 0, len(plan.Groups))
	for _, g := range plan.Groups {
		groups = append(groups, g.Group)
	}
	cadm, err := e.clients.Admin(commitAlias)
	if err != nil {
		return nil, err
	}
	fadm, err := e.clients.Admin(fromAlias)
	if err != nil {
		return nil, err
	}
	states := groupstate.Describe(ctx, cadm, groups)
	commits, cerrs := fetchOffsets(ctx, cadm, commitAlias, groups)
	fctx, cancel := context.WithTimeout(ctx, e.sourceTimeout)
	_, lerr := fadm.ListBrokers(fctx)
	cancel()
	var froms map[string]kadm.OffsetResponses
	var ferrs map[string]error
	if lerr == nil {
		froms, ferrs = fetchOffsets(ctx, fadm, fromAlias, groups)
	}
	out := map[string]GroupSnapshot{}
	for _, g := range groups {
		st := states[g]
		s := GroupSnapshot{CommitState: st.Fingerprint(), commitErr: st.Err}
		if err := cerrs[g]; err != nil {
			s.commitErr = err
		} else if s.CommitOffsets, err = offsetMap(commits[g]); err != nil {
			s.commitErr = err
		}
		switch {
		case lerr != nil:
			s.FromDown = true
		case ferrs[g] != nil:
			s.fromErr = ferrs[g]
		default:
			if s.FromOffsets, err = offsetMap(froms[g]); err != nil {
				s.fromErr = err
			}
		}
		out[g] = s
	}
	return out, nil
}

func offsetMap(r kadm.OffsetResponses) (map[string]map[int32]int64, error) {
	out := map[string]map[int32]int64{}
	var err error
	r.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil {
			err = errors.Join(err, fmt.Errorf("%s[%d]: %w", o.Topic, o.Partition, o.Err))
			return
		}
		if out[o.Topic] == nil {
			out[o.Topic] = map[int32]int64{}
		}
		out[o.Topic][o.Partition] = o.At
	})
	return out, err
}

// Save snapshots the state plan was made from and returns the document to
// write. It fails when a group's state or offsets cannot be read, or when
// they no longer match the plan (the group changed while it was planned):
// run the plan again.
func (e *Engine) Save(ctx context.Context, plan *Plan) (*SavedPlan, error) {
	snap, err := e.snapshot(ctx, plan)
	if err != nil {
		return nil, err
	}
	sp := &SavedPlan{SchemaVersion: 1, Kind: SavedPlanKind, CreatedAt: e.now().UTC(), Plan: plan, Metadata: []SavedMetadata{}, State: snap}
	var errs []error
	for _, g := range plan.Groups {
		s := snap[g.Group]
		if s.commitErr != nil {
			errs = append(errs, fmt.Errorf("group %s on %s: %w", g.Group, plan.CommitCluster(), s.commitErr))
		}
		if s.fromErr != nil {
			errs = append(errs, fmt.Errorf("group %s: %w", g.Group, s.fromErr))
		}
		for _, pp := range g.Partitions {
			planned, got := int64(-1), int64(-1)
			if pp.Current != nil {
				planned = *pp.Current
			}
			if cur, ok := s.CommitOffsets[plan.commitTopic(&pp)][pp.Partition]; ok && cur >= 0 {
				got = cur
			}
			if s.commitErr == nil && planned != got {
				errs = append(errs, fmt.Errorf("group %s %s[%d] changed on %s while it was planned; plan again", g.Group, plan.commitTopic(&pp), pp.Partition, plan.CommitCluster()))
			}
			if pp.Metadata != "" {
				sp.Metadata = append(sp.Metadata, SavedMetadata{Group: g.Group, Topic: plan.commitTopic(&pp), Partition: pp.Partition, Metadata: pp.Metadata})
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("the plan cannot be saved: %w", err)
	}
	return sp, nil
}

// WriteTo writes sp as indented JSON.
func (sp *SavedPlan) WriteTo(w io.Writer) (int64, error) {
	b, err := json.MarshalIndent(sp, "", "  ")
	if err != nil {
		return 0, err
	}
	n, err := w.Write(append(b, '\n'))
	return int64(n), err
}

// ReadSavedPlan decodes a document written by [SavedPlan.WriteTo]. Errors
// name what is wrong (not JSON, another kind, another schema version, no
// plan).
func ReadSavedPlan(r io.Reader) (*SavedPlan, error) {
	var sp SavedPlan
	dec := json.NewDecoder(r)
	if err := dec.Decode(&sp); err != nil {
		return nil, fmt.Errorf("not a saved plan: %w", err)
	}
	switch {
	case sp.Kind != SavedPlanKind:
		return nil, fmt.Errorf("not a saved plan: kind %q, want %q", sp.Kind, SavedPlanKind)
	case sp.SchemaVersion != 1:
		return nil, fmt.Errorf("saved plan schema_version %d is not supported (1)", sp.SchemaVersion)
	case sp.Plan == nil:
		return nil, errors.New("saved plan has no plan")
	}
	return &sp, nil
}

// Restore returns sp's plan ready for [Engine.Apply]: each group whose
// state changed since the plan was saved (its state or commits on the
// cluster committed to, or its commits on the cluster it moves from, when
// that cluster answered both times) is refused with what changed, and so
// is a group whose state cannot be read now. The plan's offsets are checked
// again against the partitions' log start and end. The plan's flow must be
// the engine's.
func (e *Engine) Restore(ctx context.Context, sp *SavedPlan) (*Plan, error) {
	plan := sp.Plan
	if plan.Source != e.flow.Source || plan.Target != e.flow.Target {
		return nil, fmt.Errorf("the saved plan is for %s->%s, not %s->%s", plan.Source, plan.Target, e.flow.Source, e.flow.Target)
	}
	if plan.Applied {
		return nil, errors.New("the saved plan was already applied (it holds outcomes)")
	}
	meta := map[[3]string]string{}
	for _, m := range sp.Metadata {
		meta[[3]string{m.Group, m.Topic, fmt.Sprint(m.Partition)}] = m.Metadata
	}
	for gi := range plan.Groups {
		gp := &plan.Groups[gi]
		for i := range gp.Partitions {
			pp := &gp.Partitions[i]
			pp.Metadata = meta[[3]string{gp.Group, plan.commitTopic(pp), fmt.Sprint(pp.Partition)}]
		}
	}
	now, err := e.snapshot(ctx, plan)
	if err != nil {
		return nil, err
	}
	commitAlias, fromAlias := plan.CommitCluster(), plan.Source
	if plan.Direction == Failback {
		fromAlias = plan.Target
	}
	for gi := range plan.Groups {
		gp := &plan.Groups[gi]
		was, ok := sp.State[gp.Group]
		is := now[gp.Group]
		var why []string
		switch {
		case !ok:
			why = append(why, "the saved plan has no state for it")
		case is.commitErr != nil:
			why = append(why, fmt.Sprintf("its state on %s cannot be read now: %v", commitAlias, is.commitErr))
		default:
			if was.CommitState != is.CommitState {
				why = append(why, fmt.Sprintf("its state on %s changed (%s, now %s)", commitAlias, was.CommitState, is.CommitState))
			}
			if d := diffOffsets(was.CommitOffsets, is.CommitOffsets); d != "" {
				why = append(why, fmt.Sprintf("its commits on %s changed: %s", commitAlias, d))
			}
			switch {
			case was.FromDown:
			case is.FromDown || is.fromErr != nil:
				why = append(why, fmt.Sprintf("its commits on %s cannot be read now to check them", fromAlias))
			default:
				if d := diffOffsets(was.FromOffsets, is.FromOffsets); d != "" {
					why = append(why, fmt.Sprintf("its commits on %s changed: %s", fromAlias, d))
				}
			}
		}
		if len(why) > 0 {
			gp.Refused = append(gp.Refused, fmt.Sprintf("group %s changed since the plan was saved (%s): %s; plan again", gp.Group, sp.CreatedAt.Format(time.RFC3339), joinNotes(why)))
		}
	}
	if err := e.checkRanges(ctx, plan, false); err != nil {
		return nil, err
	}
	return plan, nil
}

// diffOffsets describes the first differences between two offset maps, ""
// when equal.
func diffOffsets(was, is map[string]map[int32]int64) string {
	var out []string
	topics := slices.Sorted(maps.Keys(was))
	for t := range is {
		if _, ok := was[t]; !ok {
			topics = append(topics, t)
		}
	}
	for _, t := range topics {
		parts := map[int32]bool{}
		for p := range was[t] {
			parts[p] = true
		}
		for p := range is[t] {
			parts[p] = true
		}
		for _, p := range slices.Sorted(maps.Keys(parts)) {
			a, okA := was[t][p]
			b, okB := is[t][p]
			if okA == okB && a == b {
				continue
			}
			s := func(v int64, ok bool) string {
				if !ok {
					return "none"
				}
				return fmt.Sprint(v)
			}
			out = append(out, fmt.Sprintf("%s[%d] %s -> %s", t, p, s(a, okA), s(b, okB)))
			if len(out) == 5 {
				return joinNotes(append(out, "..."))
			}
		}
	}
	return joinNotes(out)
}
