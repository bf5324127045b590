package replicate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// flowRunner runs one flow in this process: its membership in the flow's
// source group and the partition tasks that brings (worker, enabled flows
// only), and its membership in the leader group and the flow-level work
// while it leads.
type flowRunner struct {
	flowEnv
	worker *worker // nil for a pair that only emits heartbeats

	// dataDone is closed when, with once, the data side is done and its
	// offset syncs and progress are flushed (the leader's checkpoint pass
	// waits for it).
	dataDone chan struct{}

	// beats are the once heartbeats written while the flows start
	// (prepareHeartbeats): the end offsets of a once run are listed after
	// them, and the leader writes none for a pair written there.
	beats *onceBeats

	leading       atomic.Bool
	leaderChanges atomic.Int64
	rebalances    atomic.Int64
	aclSaid       aclSaid

	mu         sync.Mutex // guards self, ckpt, member, lease, membership and subscribed
	self       Identity
	ckpt       *checkpointer // the leader's, once it leads
	member     *groupMember
	lease      *groupMember
	membership string
	subscribed map[string]bool
}

// aclSaid is what the ACL sync already logged (syncACLs): that the source
// has no authorizer, and the skipped bindings last listed; and the last
// sync's outcome in this process (Mirror.ACLSyncs).
type aclSaid struct {
	noAuthorizer atomic.Bool
	skips        atomic.Pointer[string]
	last         atomic.Pointer[FlowACLSync]
}

// flowEnv is what the parts of one flow in this process share: its
// settings and the engine's options.
type flowEnv struct {
	cfg     FlowConfig
	clients Clients
	log     *slog.Logger // with the flow's name
	now     func() time.Time
	once    bool
	obs     Observer
	// observing is false with the no-op observer: the hot path then skips
	// the clock reads that only metrics need.
	observing bool
	stop      *stopBudget // the flow's stop budget (stop.go)
	// instanceID is this process's group.instance.id in the flow's
	// groups, "" for dynamic membership (Options.InstanceID).
	instanceID string
	ignoreMM2  bool // Options.IgnoreLiveMM2
	// reach is the process's view of its clusters' reachability, which
	// the worker's probes feed (health.go, reach.go); shared by the flows.
	reach *reachability
}

func newFlowRunner(f FlowConfig, opts Options, log *slog.Logger, observing bool, reach *reachability) *flowRunner {
	flog := log.With("flow", f.Name())
	stop := newStopBudget(opts.StopBudget, flog)
	env := flowEnv{cfg: f, clients: stopClients{opts.Clients, stop}, log: flog, now: opts.Now, once: opts.Once, obs: opts.Observer, observing: observing,
		stop: stop, instanceID: opts.InstanceID, ignoreMM2: opts.IgnoreLiveMM2, reach: reach}
	fr := &flowRunner{flowEnv: env, dataDone: make(chan struct{}), membership: MemberJoining, subscribed: map[string]bool{}}
	if f.Enabled {
		fr.worker = newWorker(env)
	}
	return fr
}

func (fr *flowRunner) identity() Identity {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	return fr.self
}

func (fr *flowRunner) checkpointer() *checkpointer {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	return fr.ckpt
}

func (fr *flowRunner) setSelf(id Identity) {
	fr.mu.Lock()
	fr.self = id
	fr.mu.Unlock()
}

func (fr *flowRunner) setMembership(s string) {
	fr.mu.Lock()
	fr.membership = s
	fr.mu.Unlock()
}

func (fr *flowRunner) recordErrors() []error {
	if fr.worker == nil {
		return nil
	}
	return append(fr.worker.tasks.recordErrors(), fr.worker.tasks.lossErrors()...)
}

func (fr *flowRunner) status() FlowStatus {
	fr.mu.Lock()
	st := FlowStatus{
		Flow: fr.cfg.Name(), Group: fr.cfg.GroupID, LeaderGroup: fr.cfg.GroupID + "-leader", Member: fr.self,
		InstanceID: fr.instanceID, Membership: fr.membership, Leader: fr.leading.Load(), TasksMax: fr.cfg.TasksMax,
		Rebalances: fr.rebalances.Load(), LeaderChanges: fr.leaderChanges.Load(),
		Delivery: fr.cfg.Delivery(), SourceIsolation: fr.cfg.SourceIsolation(),
	}
	member := fr.member
	fr.mu.Unlock()
	st.Enabled = fr.cfg.Enabled
	st.Heartbeats = st.Leader && fr.cfg.EmitHeartbeats
	if !fr.cfg.Enabled {
		// A pair that only emits heartbeats holds the lease for them,
		// not a flow's leadership: it copies nothing.
		st.Group, st.Membership, st.Leader = "", "", false
	}
	if member != nil {
		st.MemberID = member.memberID()
	}
	if w := fr.worker; w != nil {
		st.Tasks = w.tasks.count()
		st.Assigned, st.Revoked, st.Lost = w.counts.assigned.Load(), w.counts.revoked.Load(), w.counts.lost.Load()
		st.TransactionsCommitted, st.TransactionsAborted = w.counts.txCommitted.Load(), w.counts.txAborted.Load()
		st.LateCopies = w.freeze.lateCopies.Load()
		if eos, ok := w.mode.(exactlyOnce); ok {
			p := eos.pool
			st.Producers = &TxProducers{Max: p.size(), Open: int(p.held.Load()), Peak: int(p.peak.Load()), Reopens: p.reopens.Load()}
		}
	}
	return st
}

// run runs the flow until ctx ends or, with once, until it is done. The first
// error of any of its parts (membership, the leader's work) stops the rest
// and is returned. Once the stop began (ctx ended, the once-run is done, a
// part failed) everything left is bounded by the stop budget (stop.go).
func (fr *flowRunner) run(ctx context.Context) (err error) {
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopWatch := context.AfterFunc(ctx, fr.stop.begin)
	defer stopWatch()
	defer fr.stop.report()
	var (
		errMu    sync.Mutex
		firstErr error
	)
	fail := func(err error) {
		errMu.Lock()
		if firstErr == nil && parent.Err() == nil {
			firstErr = err
		}
		errMu.Unlock()
		cancel()
	}
	if fr.worker == nil {
		return fr.runHeartbeatsOnly(ctx)
	}
	dataErr := fr.runData(ctx, fail)
	errMu.Lock()
	defer errMu.Unlock()
	if firstErr != nil {
		return firstErr
	}
	return dataErr
}

// runHeartbeatsOnly runs a pair that only emits heartbeats: the leader
// group's topic is the heartbeats topic, which must exist to be subscribed
// to.
func (fr *flowRunner) runHeartbeatsOnly(ctx context.Context) error {
	adm, err := fr.clients.Admin(fr.cfg.Target)
	if err != nil {
		return err
	}
	if err := ensureInternalTopic(ctx, adm, fr.cfg.Policy.HeartbeatsTopic(), fr.cfg.HeartbeatsReplicationFactor); err != nil {
		return fmt.Errorf("heartbeats %s: %w", fr.cfg.Name(), err)
	}
	probe, err := fr.clients.Client(fr.cfg.Target, RoleConsumer)
	if err != nil {
		return err
	}
	fr.setSelf(selfIdentity(probe))
	probe.Close()
	close(fr.dataDone)
	return fr.runLease(ctx)
}

// runData runs an enabled flow: the start-up steps, the background loops,
// the leader group, the source group and the poll loop; then the stop in
// order: leave the source group (releasing every task writes its final
// progress), flush what is left, tell the leader the data side is done.
func (fr *flowRunner) runData(ctx context.Context, fail func(error)) error {
	w := fr.worker
	w.fatal = fail
	w.run.ctx, w.run.sendCtx = ctx, context.WithoutCancel(ctx)
	bgCtx, stopBg := context.WithCancel(ctx)
	var bg sync.WaitGroup
	defer func() { stopBg(); bg.Wait(); w.progress.close() }()
	// The progress view starts following the progress topic in the
	// start-up reads (progressView.readAtStart), else once the topic is
	// created.
	w.run.followProgress = sync.OnceFunc(func() {
		bg.Add(1)
		go func() {
			defer bg.Done()
			if err := w.progress.follow(bgCtx); err != nil && bgCtx.Err() == nil {
				fail(fmt.Errorf("flow %s: follow progress: %w", fr.cfg.Name(), err))
			}
		}()
	})
	topics, closeClients, err := fr.setUpRetrying(ctx)
	if err != nil {
		return err
	}
	defer closeClients()
	fr.setSelf(selfIdentity(w.io.consumer))
	fr.obs.FlowState(fr.cfg.Source, fr.cfg.Target, true)
	defer fr.obs.FlowState(fr.cfg.Source, fr.cfg.Target, false)
	fr.log.Info("flow started", "topics", len(topics), "member", fr.identity(), "group", fr.cfg.GroupID, "tasks_max", fr.cfg.TasksMax,
		"instance_id", fr.instanceID, "delivery", fr.cfg.Delivery())
	if fr.cfg.ReadUncommitted {
		fr.log.Warn("the source is read read_uncommitted (isolation.level of the source consumer): records of open and aborted source transactions are copied to the target as committed records",
			"cluster", fr.cfg.Source, "key", fr.cfg.Source+".consumer.isolation.level")
	}
	w.warmProducers(ctx)
	w.runBackground(bgCtx, &bg)
	w.run.followProgress()

	leaseDone := make(chan struct{})
	go func() {
		defer close(leaseDone)
		if err := fr.runLease(ctx); err != nil {
			fail(fmt.Errorf("flow %s: leader: %w", fr.cfg.Name(), err))
		}
	}()
	memberCtx, stopMember := context.WithCancel(ctx)
	defer stopMember()
	memberDone := make(chan struct{})
	if len(topics) > 0 {
		go func() {
			defer close(memberDone)
			if err := fr.runMembership(memberCtx, topics); err != nil {
				fail(fmt.Errorf("flow %s: %w", fr.cfg.Name(), err))
			}
		}()
	} else {
		close(memberDone)
		fr.log.Warn("no topic of the source is replicated by this flow; check the topics filter")
	}

	w.pollLoop(ctx)

	// With once the membership still runs (ctx is not done): its stop
	// releases every task, writing its final progress, and leaves.
	stopMember()
	<-memberDone
	stopBg()
	bg.Wait()
	shutdownErr := w.shutdown(ctx)
	close(fr.dataDone)
	<-leaseDone
	fr.log.Info("flow stopped")
	return shutdownErr
}

// startWait bounds how long a flow's start is retried while a cluster
// answers with retriable errors (a broker just restarted, a leader election
// under way): a process started then waits for the cluster instead of
// exiting. A cluster that cannot be reached fails the start at once.
const startWait = time.Minute

// setUpRetrying runs setUp until it succeeds, fails with an error that is
// not [transient], startWait passes, or ctx ends.
func (fr *flowRunner) setUpRetrying(ctx context.Context) ([]string, func(), error) {
	deadline := time.Now().Add(startWait)
	backoff := 500 * time.Millisecond
	for {
		topics, closeAll, err := fr.setUp(ctx)
		if err == nil || !transient(err) || time.Now().After(deadline) || ctx.Err() != nil {
			return topics, closeAll, err
		}
		fr.log.Warn("flow start failed; retrying", "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return nil, nil, err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// setUp builds the flow's clients and runs the start-up steps that every
// member needs, at once: the reads (never beside a running MM2, where MM2
// stopped, the progress, the topic plan), then the internal topics the flow
// writes beside the offsets the resume points are chosen from (and, with
// once, the end offsets to copy up to), then the preflight of the resume
// points. Nothing is written before the reads all passed. It returns the
// replicated source topics and a func that closes the clients.
func (fr *flowRunner) setUp(ctx context.Context) (topics []string, _ func(), err error) {
	w := fr.worker
	closeAll, err := fr.openClients()
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	var snap resumeSnapshot
	plan, err := fr.readAtStart(ctx, &snap)
	if err != nil {
		return nil, nil, err
	}
	// Before the remote ends are listed (prepareTopics): see setOnceEnds.
	downAtStart := w.progress.downstreams()
	onceEnds, remoteEnds, err := fr.prepareTopics(ctx, plan, &snap)
	if err != nil {
		return nil, nil, err
	}
	if err := w.preflightResume(ctx, plan, &snap); err != nil {
		if err = w.preflightAgain(ctx, plan, &snap, err); err != nil {
			return nil, nil, err
		}
	}
	for _, name := range unmatchedNames(fr.cfg, plan) {
		fr.log.Warn("topics names a topic the source does not list: it does not exist, or the principal may not DESCRIBE it; nothing is copied from it",
			"item", name, "cluster", fr.cfg.Source)
	}
	fr.mu.Lock()
	for _, t := range plan.Replicated() {
		if t.Note != "" {
			fr.log.Warn(t.Note, "topic", t.Topic)
		}
		topics = append(topics, t.Topic)
		fr.subscribed[t.Topic] = true
	}
	fr.mu.Unlock()
	if fr.once && len(topics) > 0 {
		ends, err := onceEndsOf(fr.cfg, plan, onceEnds)
		if err != nil {
			return nil, nil, err
		}
		w.tasks.setOnceEnds(ends, remoteEndsOf(plan, remoteEnds), downAtStart)
	}
	return topics, closeAll, nil
}

// openClients builds the flow's clients (every one ends its requests when
// the stop budget runs out: stopClients) and the fetch gate; the func
// closes them.
func (fr *flowRunner) openClients() (func(), error) {
	w, cfg := fr.worker, fr.cfg
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	var err error
	if w.io.src, err = fr.clients.Admin(cfg.Source); err != nil {
		return nil, err
	}
	if w.io.tgt, err = fr.clients.Admin(cfg.Target); err != nil {
		return nil, err
	}
	client := func(alias string, role ClientRole, opts ...kgo.Opt) (*kgo.Client, error) {
		cl, err := fr.clients.Client(alias, role, opts...)
		if err == nil {
			closers = append(closers, cl.Close)
		}
		return cl, err
	}
	if w.io.data, err = w.dataProducer(""); err != nil {
		return nil, err
	}
	closers = append(closers, w.io.data.Close)
	if w.io.control, err = client(cfg.Target, RoleProducer, kgo.RecordPartitioner(kgo.ManualPartitioner())); err != nil {
		closeAll()
		return nil, err
	}
	syncAlias, syncTopic := cfg.offsetSyncsCluster()
	w.io.syncs = w.io.control
	if cfg.EmitOffsetSyncs && syncAlias == cfg.Source {
		if w.io.syncs, err = client(cfg.Source, RoleProducer, kgo.RecordPartitioner(kgo.ManualPartitioner())); err != nil {
			closeAll()
			return nil, err
		}
	}
	w.syncs.prod, w.syncs.topic = w.io.syncs, syncTopic
	w.writer.prod = w.io.control
	// The source is read committed unless the user's source consumer says
	// read_uncommitted (FlowConfig.ReadUncommitted): the engine's choice
	// comes after the user's properties, so it is stated both ways. The
	// reset is always the log start, whatever the user's auto.offset.reset:
	// the data path finds a gap from the fetch's log start and reports it,
	// and StopOnGap (auto.offset.reset=none) stops the partition there
	// (loss.go).
	if w.io.consumer, err = client(cfg.Source, RoleConsumer, kgo.KeepControlRecords(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(sourceIsolation(cfg))); err != nil {
		closeAll()
		return nil, err
	}
	w.gate = newFetchGate(w.io.consumer)
	return closeAll, nil
}

// readAtStart runs the start-up reads at once: never beside a running MM2,
// where MM2 stopped (mm2resume.go), the progress, the topic plan, and with
// exactly-once whether the target supports transactions.
func (fr *flowRunner) readAtStart(ctx context.Context, snap *resumeSnapshot) (*Plan, error) {
	w, cfg := fr.worker, fr.cfg
	var plan *Plan
	w.starter.takeover = newTakeover(cfg)
	steps := []func(context.Context) error{
		func(ctx context.Context) error { return w.starter.takeover.readOffsets(ctx, cfg, fr.clients) },
		func(ctx context.Context) (err error) {
			snap.progress, err = w.progress.readAtStart(ctx, w.run.followProgress)
			return err
		},
		func(ctx context.Context) (err error) {
			plan, err = PlanFlow(ctx, cfg, w.io.src, w.io.tgt)
			return err
		},
		func(ctx context.Context) (err error) {
			w.ring, err = readRingGuard(ctx, cfg, w.io.src, w.io.tgt)
			return err
		},
	}
	if !fr.ignoreMM2 {
		steps = append(steps, func(ctx context.Context) error { return refuseBesideMM2(ctx, cfg, fr.clients, fr.now) })
	}
	if cfg.ExactlyOnce {
		steps = append(steps, func(ctx context.Context) error { return CheckTransactions(ctx, cfg, w.io.tgt) })
	}
	if err := concurrently(ctx, steps...); err != nil {
		return nil, err
	}
	return plan, nil
}

// prepareTopics creates the internal topics the flow writes, beside the
// offsets the resume points are chosen from, and the offset syncs when they
// can change a resume point (needSyncs: the topic is read back from its end
// until those partitions have one, readSyncs); with once it also lists the
// end offsets to copy up to, once the run's heartbeats are written, and the
// remote partitions' end offsets (onceDone: a partition whose remote
// partition lost mirrored records is not done by its progress alone).
func (fr *flowRunner) prepareTopics(ctx context.Context, plan *Plan, snap *resumeSnapshot) (onceEnds, remoteEnds kadm.ListedOffsets, _ error) {
	w, cfg := fr.worker, fr.cfg
	steps := []func(context.Context) error{
		func(ctx context.Context) error {
			if err := ensureProgressTopic(ctx, cfg, w.io.tgt); err != nil {
				return fmt.Errorf("flow %s: %w", cfg.Name(), err)
			}
			return nil
		},
		func(ctx context.Context) error {
			if len(plan.Replicated()) == 0 {
				return nil
			}
			if err := snap.listOffsets(ctx, cfg, fr.clients, w.io.src, plan); err != nil {
				return fmt.Errorf("flow %s: %w", cfg.Name(), err)
			}
			if want := snap.needSyncs(cfg, plan); len(want) > 0 {
				return w.starter.takeover.readSyncs(ctx, cfg, fr.clients, want)
			}
			return nil
		},
	}
	if cfg.EmitOffsetSyncs {
		syncAlias, syncTopic := cfg.offsetSyncsCluster()
		adm := w.io.src
		if syncAlias == cfg.Target {
			adm = w.io.tgt
		}
		steps = append(steps, func(ctx context.Context) error {
			if err := ensureInternalTopic(ctx, adm, syncTopic, cfg.OffsetSyncsReplicationFactor); err != nil {
				return fmt.Errorf("flow %s: %w", cfg.Name(), err)
			}
			return nil
		})
	}
	if fr.once && len(plan.Replicated()) > 0 {
		steps = append(steps, func(ctx context.Context) (err error) {
			if err := fr.beats.wait(ctx); err != nil {
				return err
			}
			names := make([]string, 0, len(plan.Replicated()))
			for _, t := range plan.Replicated() {
				names = append(names, t.Topic)
			}
			if onceEnds, err = listSourceEnds(ctx, cfg, w.io.src, names...); err != nil {
				return fmt.Errorf("flow %s: list end offsets on %s: %w", cfg.Name(), cfg.Source, err)
			}
			return nil
		}, func(ctx context.Context) (err error) {
			remotes := make([]string, 0, len(plan.Replicated()))
			for _, t := range plan.Replicated() {
				remotes = append(remotes, t.RemoteTopic)
			}
			if remoteEnds, err = w.io.tgt.ListEndOffsets(ctx, remotes...); err != nil {
				return fmt.Errorf("flow %s: list end offsets on %s: %w", cfg.Name(), cfg.Target, err)
			}
			return nil
		})
	}
	if err := concurrently(ctx, steps...); err != nil {
		return nil, nil, err
	}
	return onceEnds, remoteEnds, nil
}

// remoteEndsOf is the end offset of each remote partition of the plan's
// replicated topics, keyed by source partition: 0 for a remote topic or
// partition the target does not have (deleted), left out when it could
// not be read otherwise.
func remoteEndsOf(plan *Plan, listed kadm.ListedOffsets) map[tp]int64 {
	out := map[tp]int64{}
	for _, t := range plan.Replicated() {
		for p := int32(0); p < t.Partitions; p++ {
			e, ok := listed.Lookup(t.RemoteTopic, p)
			switch {
			case !ok || errors.Is(e.Err, kerr.UnknownTopicOrPartition):
				out[tp{t.Topic, p}] = 0
			case e.Err == nil:
				out[tp{t.Topic, p}] = e.Offset
			}
		}
	}
	return out
}

// onceEndsOf is the end offset of every partition of the plan's replicated
// topics: what a once run copies up to.
func onceEndsOf(cfg FlowConfig, plan *Plan, listed kadm.ListedOffsets) (map[tp]int64, error) {
	out := map[tp]int64{}
	for _, t := range plan.Replicated() {
		for p := int32(0); p < t.Partitions; p++ {
			e, ok := listed.Lookup(t.Topic, p)
			if !ok || e.Err != nil {
				return nil, fmt.Errorf("flow %s: end offset of %s[%d] on %s: %w", cfg.Name(), t.Topic, p, cfg.Source, e.Err)
			}
			out[tp{t.Topic, p}] = e.Offset
		}
	}
	return out, nil
}
