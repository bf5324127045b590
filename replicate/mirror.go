package replicate

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/mirrorctl/mirrorctl/replicate/filter"
)

// Options configures a [Mirror].
type Options struct {
	// Flows to run. Enabled flows copy data; every flow with
	// EmitHeartbeats emits heartbeats, enabled or not, as MM2 does.
	Flows   []FlowConfig
	Clients Clients
	Logger  *slog.Logger     // nil discards
	Now     func() time.Time // nil is time.Now
	// Once copies what the source holds when Run starts (up to each
	// partition's end offset at that moment), emits one heartbeat per flow,
	// writes offset syncs and progress, and returns.
	Once bool
	// Observer receives measurements for metrics; nil discards them.
	Observer Observer
	// StopBudget bounds a flow's stop once ctx is cancelled, every step
	// of it (stop fetching, drain or abort what is in flight, write
	// progress and offset syncs, leave the groups, close the clients),
	// whatever the brokers do; what did not finish in it is logged by
	// name (stop.go). It also bounds each wait of a rebalance's
	// release. Default [DefaultStopBudget].
	StopBudget time.Duration
	// InstanceID is this process's group.instance.id in the flows' groups
	// (KIP-345 static membership, membership.go): a process restarted
	// under the same id takes its partitions back at once. It must be
	// unique among the processes running a flow; "" is dynamic
	// membership.
	InstanceID string
	// IgnoreLiveMM2 starts flows that MirrorMaker 2 still seems to run
	// (see [DetectMM2]); by default such a flow refuses to start.
	IgnoreLiveMM2 bool
}

// Mirror copies topics along its flows. Create it with [New], then call Run
// once.
type Mirror struct {
	opts    Options
	log     *slog.Logger
	mu      sync.Mutex // guards runners
	runners []*flowRunner
}

// New checks opts and returns a Mirror. It connects to nothing.
func New(opts Options) (*Mirror, error) {
	if opts.Clients == nil {
		return nil, errors.New("replicate: Options.Clients is nil")
	}
	var errs []error
	for _, f := range opts.Flows {
		if err := f.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = discard
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Observer == nil {
		opts.Observer = nopObserver{}
	}
	if opts.StopBudget <= 0 {
		opts.StopBudget = DefaultStopBudget
	}
	return &Mirror{opts: opts, log: opts.Logger}, nil
}

// Run runs every flow until ctx is cancelled (or, with Options.Once, until
// each enabled flow has copied what its source held at start). On
// cancellation it flushes what the target already has in flight, then writes
// offset syncs and progress and leaves the groups, within Options.StopBudget,
// and returns nil. It returns an error when a flow cannot start (the other flows are then
// stopped too), and, after all flows stopped, the [RecordError]s of partitions
// that stopped because the target refused a record and the [LossEvent]s of
// records that did not reach the target (loss.go), joined.
func (m *Mirror) Run(ctx context.Context) error {
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg   sync.WaitGroup
		errs runErrors
	)
	fail := func(err error) {
		errs.add(parent, err)
		cancel()
	}
	// Aliases of one cluster, or flows that would write one remote topic,
	// are refused before anything is written.
	if err := CheckIdentities(ctx, m.opts.Clients, m.opts.Flows); err != nil {
		return err
	}
	beats, err := prepareHeartbeats(ctx, m.opts.Flows, m.opts.Clients, m.opts.Now, m.opts.Once, fail)
	if err != nil {
		return err
	}
	observing := func() bool {
		_, nop := m.opts.Observer.(nopObserver)
		return !nop
	}()
	reach := newReachability(m.log, m.opts.Observer)
	for _, f := range m.opts.Flows {
		if !f.Enabled && !f.EmitHeartbeats {
			continue
		}
		r := newFlowRunner(f, m.opts, m.log, observing, reach)
		r.beats = beats
		m.mu.Lock()
		m.runners = append(m.runners, r)
		m.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.run(ctx); err != nil {
				fail(err)
			}
		}()
	}
	wg.Wait()
	<-beats.done // its error is in errs
	m.mu.Lock()
	for _, r := range m.runners {
		errs.errs = append(errs.errs, r.recordErrors()...)
	}
	m.mu.Unlock()
	return errors.Join(errs.errs...)
}

// runErrors collects the errors of a Mirror's goroutines. The first error
// stops the others by cancelling their context; the cancellations that
// follow are its echo, not errors of their own, and are dropped, so the
// caller sees (and reports, and exits on) the cause, not "interrupted".
// When the caller's context ends, cancellations are kept: they are the
// caller's interrupt.
type runErrors struct {
	mu   sync.Mutex // guards errs
	errs []error
}

func (e *runErrors) add(parent context.Context, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.errs) > 0 && parent.Err() == nil && errors.Is(err, context.Canceled) {
		return
	}
	e.errs = append(e.errs, err)
}

// GroupStats returns, per flow and consumer group, the checkpoints kept and
// the last group-offset sync outcome, sorted by flow and group.
func (m *Mirror) GroupStats() []GroupStats {
	m.mu.Lock()
	runners := append([]*flowRunner(nil), m.runners...)
	m.mu.Unlock()
	var out []GroupStats
	for _, r := range runners {
		if c := r.checkpointer(); c != nil {
			out = append(out, c.stats()...)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Flow < out[j].Flow })
	return out
}

// ACLSyncs returns, per flow whose topic ACL sync ran in this process (the
// flow leader's work), the outcome of its last sync, sorted by flow; nil
// when none ran.
func (m *Mirror) ACLSyncs() []FlowACLSync {
	m.mu.Lock()
	runners := append([]*flowRunner(nil), m.runners...)
	m.mu.Unlock()
	var out []FlowACLSync
	for _, r := range runners {
		if a := r.aclSaid.last.Load(); a != nil {
			out = append(out, *a)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Flow < out[j].Flow })
	return out
}

// PartitionStats describes one source partition of a running flow.
type PartitionStats struct {
	Flow        string `json:"flow"`
	Topic       string `json:"topic"`        // source topic
	RemoteTopic string `json:"remote_topic"` // target topic
	Partition   int32  `json:"partition"`
	// Position is the next source offset the engine will hand to the
	// producer.
	Position int64 `json:"position"`
	// Acked is the next source offset after the last record the target
	// acknowledged (what progress stores); -1 before the first.
	Acked   int64  `json:"acked"`
	Records int64  `json:"records"` // records acknowledged by the target in this run
	Bytes   int64  `json:"bytes"`   // value bytes of those records, as MM2 counts byte-count
	Error   string `json:"error,omitempty"`
	// State is the partition task's state ([TaskRunning], ...),
	// [TaskReleased] once the group moved the partition to another member,
	// or [TaskElsewhere] for a partition of a once run that never ran here.
	State TaskState `json:"state"`
	// ResumedFrom says where the task's resume point came from
	// ([ResumeProgress], [ResumeLogStart], [ResumeLogEnd]).
	ResumedFrom string `json:"resumed_from,omitempty"`
	// Owner is this process ([Identity]) while it runs the task.
	Owner string `json:"owner,omitempty"`
	// Start is the source offset this process's first task of the
	// partition resumed from, End (with once) the partition's end offset
	// when the run started; -1 when unknown. End-Start is what this
	// process had to copy of it.
	Start int64 `json:"start"`
	End   int64 `json:"end"`
	// Skipped is the partition's source offsets that were never copied,
	// in total (the progress topic keeps the count across runs); Losses
	// the loss events found by this process in this run, oldest first
	// (at most 16 per assignment).
	Skipped int64       `json:"skipped,omitempty"`
	Losses  []LossEvent `json:"losses,omitempty"`
}

// Stats returns a snapshot of every partition of every running flow, sorted
// by flow, topic and partition.
func (m *Mirror) Stats() []PartitionStats {
	m.mu.Lock()
	runners := append([]*flowRunner(nil), m.runners...)
	m.mu.Unlock()
	var out []PartitionStats
	for _, r := range runners {
		if r.worker != nil {
			out = append(out, r.worker.stats(r.identity().String())...)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Flow != b.Flow {
			return a.Flow < b.Flow
		}
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	return out
}

// FlowStatus is one flow's membership in this process: who this process is,
// whether it copies partitions of the flow (or waits as a standby), whether
// it leads the flow, and how often ownership changed.
type FlowStatus struct {
	Flow string `json:"flow"`
	// Enabled is false for a pair that only emits heartbeats (its
	// <source>-><target>.enabled is false, emit.heartbeats.enabled true, as
	// MM2 keeps a disabled pair's heartbeats): it copies nothing, has no
	// source group (Group and Membership are ""), and never leads (Leader
	// false); Heartbeats says whether this process emits them.
	Enabled bool `json:"enabled"`
	// Group is the flow's consumer group on the source ([FlowConfig].GroupID);
	// LeaderGroup the leader group on the target.
	Group       string   `json:"group"`
	LeaderGroup string   `json:"leader_group"`
	Member      Identity `json:"member"`
	// MemberID is the id the source group's coordinator gave this process,
	// "" while it is not a member.
	MemberID string `json:"member_id,omitempty"`
	// InstanceID is the process's group.instance.id ([Options].InstanceID),
	// "" for dynamic membership.
	InstanceID string `json:"instance_id,omitempty"`
	Membership string `json:"membership"` // MemberJoining, MemberActive or MemberStandby
	// Leader: this process is the flow leader (topic, config and ACL
	// sync, checkpoints, heartbeats); always false for a pair that only
	// emits heartbeats.
	Leader bool `json:"leader"`
	// Heartbeats: this process emits the pair's heartbeats now (it holds
	// the leader group's lease and the pair emits heartbeats).
	Heartbeats bool `json:"heartbeats"`
	TasksMax   int  `json:"tasks_max"`
	Tasks      int  `json:"tasks"` // partition tasks this process runs now
	// Rebalances counts assignment changes seen by this process;
	// LeaderChanges how often it became the flow leader.
	Rebalances    int64 `json:"rebalances"`
	LeaderChanges int64 `json:"leader_changes"`
	Assigned      int64 `json:"partitions_assigned"`
	Revoked       int64 `json:"partitions_revoked"`
	Lost          int64 `json:"partitions_lost"`
	// Delivery is DeliveryExactlyOnce or DeliveryAtLeastOnce
	// ([FlowConfig].ExactlyOnce); SourceIsolation the data path's
	// isolation level on the source, "read_committed" or
	// "read_uncommitted".
	Delivery        string `json:"delivery"`
	SourceIsolation string `json:"source_isolation"`
	// TransactionsCommitted and TransactionsAborted count, in exactly-once
	// mode, the target transactions this process's tasks ended (aborted
	// includes fenced ones).
	TransactionsCommitted int64 `json:"transactions_committed"`
	TransactionsAborted   int64 `json:"transactions_aborted"`
	// Producers is, in exactly-once mode, this process's transactional
	// producers of the flow (mirrorctl.transaction.producers.max).
	Producers *TxProducers `json:"transaction_producers,omitempty"`
	// LateCopies counts copies acknowledged after this process found it
	// had been frozen past its session timeout (freeze.go): the group had
	// given their partitions to others, which may hold them twice.
	LateCopies int64 `json:"late_copies"`
}

// TxProducers describes an exactly-once flow's transactional producers in
// one process: one per partition task copying, at most Max open at once;
// tasks beyond it take turns, each reopening its producer (and fencing its
// transactional id again) when its turn comes.
type TxProducers struct {
	// Max is the most open at once: mirrorctl.transaction.producers.max,
	// or fewer where the open-file limit cannot hold that many.
	Max     int   `json:"max"`
	Open    int   `json:"open"`    // open now
	Peak    int   `json:"peak"`    // the most open at once in this run
	Reopens int64 `json:"reopens"` // producers opened again after a turn was given up
}

// Delivery guarantees ([FlowStatus].Delivery).
const (
	DeliveryExactlyOnce = "exactly-once"
	DeliveryAtLeastOnce = "at-least-once"
)

// Delivery returns the flow's delivery guarantee: DeliveryExactlyOnce or
// DeliveryAtLeastOnce.
func (f FlowConfig) Delivery() string {
	if f.ExactlyOnce {
		return DeliveryExactlyOnce
	}
	return DeliveryAtLeastOnce
}

// SourceIsolation returns the data path's isolation level on the source:
// "read_committed" (default) or "read_uncommitted".
func (f FlowConfig) SourceIsolation() string {
	if f.ReadUncommitted {
		return "read_uncommitted"
	}
	return "read_committed"
}

// Status returns every flow's [FlowStatus], sorted by flow.
func (m *Mirror) Status() []FlowStatus {
	m.mu.Lock()
	runners := append([]*flowRunner(nil), m.runners...)
	m.mu.Unlock()
	out := make([]FlowStatus, 0, len(runners))
	for _, r := range runners {
		out = append(out, r.status())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Flow < out[j].Flow })
	return out
}

// unmatchedNames returns the items of the flow's topics list written as
// plain names (see [filter.Pattern.Names]) that match no topic the source
// lists. Kafka's Metadata leaves out topics the caller may not DESCRIBE, so
// such an item is a missing topic or a missing ACL, which would otherwise
// copy nothing without a word.
func unmatchedNames(cfg FlowConfig, plan *Plan) []string {
	var out []string
	for _, name := range cfg.Topics.Include.Names() {
		p, err := filter.CompileList("topics", name)
		if err != nil {
			continue
		}
		found := false
		for _, t := range plan.Topics {
			if p.Match(t.Topic) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, name)
		}
	}
	return out
}

// concurrently runs steps at once and waits for all of them. The first error
// cancels the others' context; the steps' errors are returned, joined,
// without the cancellations that first error caused in the others (they are
// its echo: kept, a caller would report "interrupted" instead of the cause).
func concurrently(ctx context.Context, steps ...func(context.Context) error) error {
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(steps))
	var wg sync.WaitGroup
	for i, step := range steps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = step(ctx); errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	cause := false
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			cause = true
		}
	}
	var out []error
	for _, err := range errs {
		if err == nil || (cause && parent.Err() == nil && errors.Is(err, context.Canceled)) {
			continue
		}
		out = append(out, err)
	}
	return errors.Join(out...)
}
