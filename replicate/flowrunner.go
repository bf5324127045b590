package replicate

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// flowRunner runs one flow in this process: its membership in the flow's
// source group and the partition tasks that brings (worker, enabled flows
// only), and its membership in the leader group and the flow-level work
// while it leads.
type flowRunner struct {
	flowEnv
	self Identity

	worker *worker // nil for a pair that only emits heartbeats

	// dataDone is closed when, with once, the data side is done and its
	// offset syncs and progress are flushed (the leader's checkpoint pass
	// waits for it).
	dataDone chan struct{}

	// beats are the once heartbeats written while the flows start
	// (prepareHeartbeats): the end offsets of a once run are listed after
	// them, and the leader writes none for a pair written there.
	beats *onceBeats

	leading          atomic.Bool
	leaderChanges    atomic.Int64
	rebalances       atomic.Int64
	noAuthorizerSaid atomic.Bool

	mu         sync.Mutex
	ckpt       *checkpointer // the leader's, once it leads
	member     *groupMember
	lease      *groupMember
	membership string
	subscribed map[string]bool
}

// flowEnv is what the parts of one flow in this process share: its
// settings and the engine's options.
type flowEnv struct {
	cfg      FlowConfig
	clients  Clients
	log      *slog.Logger // with the flow's name
	now      func() time.Time
	once     bool
	stopWait time.Duration
	obs      Observer
	// ignoreMM2 is Options.IgnoreLiveMM2.
	ignoreMM2 bool
}

func newFlowRunner(f FlowConfig, opts Options, log *slog.Logger, observing bool) *flowRunner {
	env := flowEnv{cfg: f, clients: opts.Clients, log: log.With("flow", f.Name()), now: opts.Now, once: opts.Once,
		stopWait: opts.ShutdownTimeout, obs: opts.Observer, ignoreMM2: opts.IgnoreLiveMM2}
	fr := &flowRunner{flowEnv: env, dataDone: make(chan struct{}), membership: MemberJoining, subscribed: map[string]bool{}}
	if f.Enabled {
		fr.worker = &worker{flowEnv: env, observing: observing, tasks: make(map[tp]*task), syncWake: make(chan struct{}, 1), firstAck: make(chan struct{}, 1),
			progress: newProgressView(opts.Clients, f, env.log)}
	}
	return fr
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
	return append(fr.worker.recordErrors(), fr.worker.lossErrors()...)
}

func (fr *flowRunner) status() FlowStatus {
	fr.mu.Lock()
	st := FlowStatus{
		Flow: fr.cfg.Name(), Group: fr.cfg.GroupID, LeaderGroup: fr.cfg.GroupID + "-leader", Member: fr.self,
		Membership: fr.membership, Leader: fr.leading.Load(), TasksMax: fr.cfg.TasksMax,
		Rebalances: fr.rebalances.Load(), LeaderChanges: fr.leaderChanges.Load(),
		Delivery: fr.cfg.Delivery(), SourceIsolation: fr.cfg.SourceIsolation(),
	}
	member := fr.member
	fr.mu.Unlock()
	if !fr.cfg.Enabled {
		st.Group, st.Membership = "", ""
	}
	if member != nil {
		st.MemberID = member.memberID()
	}
	if w := fr.worker; w != nil {
		st.Tasks = len(w.allTasks())
		st.Assigned, st.Revoked, st.Lost = w.assigned.Load(), w.revoked.Load(), w.lost.Load()
		st.TransactionsCommitted, st.TransactionsAborted = w.txCommitted.Load(), w.txAborted.Load()
	}
	return st
}

// run runs the flow until ctx ends or, with once, until it is done. The first
// error of any of its parts (membership, the leader's work) stops the rest
// and is returned.
func (fr *flowRunner) run(ctx context.Context) (err error) {
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
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
	result := func() error {
		errMu.Lock()
		defer errMu.Unlock()
		return firstErr
	}

	if fr.worker == nil {
		// A pair that only emits heartbeats: the leader group's topic is
		// the heartbeats topic, which must exist to be subscribed to.
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
		if err := fr.runLease(ctx); err != nil {
			return err
		}
		return nil
	}

	w := fr.worker
	w.fatal = fail
	bgCtx, stopBg := context.WithCancel(ctx)
	var bg sync.WaitGroup
	defer func() { stopBg(); bg.Wait(); w.progress.close() }()
	// The progress view starts following the progress topic in the
	// start-up reads (progressView.readAtStart), else once the topic is
	// created.
	w.followProgress = sync.OnceFunc(func() {
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
	fr.setSelf(selfIdentity(w.consumer))
	fr.obs.FlowState(fr.cfg.Source, fr.cfg.Target, true)
	defer fr.obs.FlowState(fr.cfg.Source, fr.cfg.Target, false)
	fr.log.Info("flow started", "topics", len(topics), "member", fr.self, "group", fr.cfg.GroupID, "tasks_max", fr.cfg.TasksMax)
	if fr.cfg.ReadUncommitted {
		fr.log.Warn("the source is read read_uncommitted (isolation.level of the source consumer): records of open and aborted source transactions are copied to the target as committed records",
			"cluster", fr.cfg.Source, "key", fr.cfg.Source+".consumer.isolation.level")
	}

	w.retryCtx = ctx
	// Open the producers' connections and load their producer IDs while the
	// groups are joined, not in front of the first copy. A failure here is
	// the first produce's to report.
	for _, p := range []*kgo.Client{w.data, w.control} {
		go func() {
			_ = p.EnsureProduceConnectionIsOpen(ctx, -1)
			_, _, _ = p.ProducerID(ctx)
		}()
	}
	// Syncs handed to the producer must survive the stop: the final flush,
	// bounded by ShutdownTimeout, is what waits for them.
	w.sendCtx = context.WithoutCancel(ctx)

	bg.Add(3)
	go func() { defer bg.Done(); w.runPositions(bgCtx) }() // health.go
	go func() { defer bg.Done(); w.runSyncSender(bgCtx) }()
	go func() { defer bg.Done(); w.runProgressWriter(bgCtx) }()
	w.followProgress()

	var leaseDone sync.WaitGroup
	leaseDone.Add(1)
	go func() {
		defer leaseDone.Done()
		if err := fr.runLease(ctx); err != nil {
			fail(fmt.Errorf("flow %s: leader: %w", fr.cfg.Name(), err))
		}
	}()

	memberCtx, stopMember := context.WithCancel(ctx)
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

	// Leave the source group first (releasing every task writes its final
	// progress), then flush what is left and tell the leader the data side
	// is done.
	stopMember()
	<-memberDone
	stopBg()
	bg.Wait()
	shutdownErr := w.shutdown(ctx)
	close(fr.dataDone)
	leaseDone.Wait()
	fr.log.Info("flow stopped")
	if err := result(); err != nil {
		return err
	}
	return shutdownErr
}

// setUp builds the flow's clients and runs the start-up steps that every
// member needs (the progress and offset-syncs topics, the topics to
// subscribe to, with once the end offsets to copy up to), at once. It
// returns the replicated source topics and a func that closes the clients.
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

func (fr *flowRunner) setUp(ctx context.Context) (topics []string, _ func(), err error) {
	w, cfg := fr.worker, fr.cfg
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	if w.src, err = fr.clients.Admin(cfg.Source); err != nil {
		return nil, nil, err
	}
	if w.tgt, err = fr.clients.Admin(cfg.Target); err != nil {
		return nil, nil, err
	}
	client := func(alias string, opts ...kgo.Opt) (*kgo.Client, error) {
		role := RoleProducer
		if alias == "" {
			alias, role = cfg.Source, RoleConsumer
		}
		cl, err := fr.clients.Client(alias, role, opts...)
		if err == nil {
			closers = append(closers, cl.Close)
		}
		return cl, err
	}
	// No delivery timeout for copies: kgo dates a record from its
	// timestamp, and copies keep the source's, so a delivery.timeout.ms
	// would fail every record older than it at once.
	// Batches are capped at the remote topic's max.message.bytes (limits.go).
	if w.data, err = client(cfg.Target, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(0),
		kgo.ProducerBatchMaxBytesFn(w.limits.batchMaxBytes)); err != nil {
		return nil, nil, err
	}
	if w.control, err = client(cfg.Target, kgo.RecordPartitioner(kgo.ManualPartitioner())); err != nil {
		return nil, nil, err
	}
	syncAlias, syncTopic := cfg.offsetSyncsCluster()
	w.syncTopic = syncTopic
	w.syncProducer = w.control
	if cfg.EmitOffsetSyncs && syncAlias == cfg.Source {
		if w.syncProducer, err = client(cfg.Source, kgo.RecordPartitioner(kgo.ManualPartitioner())); err != nil {
			return nil, nil, err
		}
	}
	// The source is read committed unless the user's source consumer says
	// read_uncommitted (FlowConfig.ReadUncommitted): the engine's choice
	// comes after the user's properties, so it is stated both ways. The
	// reset is always the log start, whatever the user's auto.offset.reset:
	// the data path finds a gap from the fetch's log start and reports it,
	// and StopOnGap (auto.offset.reset=none) stops the partition there
	// (loss.go).
	if w.consumer, err = client("", kgo.KeepControlRecords(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(sourceIsolation(cfg))); err != nil {
		return nil, nil, err
	}

	// First the reads, at once: never beside a running MM2, where MM2
	// stopped (mm2resume.go), the progress, the topic plan. Nothing is
	// written before they all passed.
	var (
		plan *Plan
		snap resumeSnapshot
	)
	w.takeover = newTakeover(cfg)
	steps := []func(context.Context) error{
		func(ctx context.Context) error { return w.takeover.readOffsets(ctx, cfg, fr.clients) },
		func(ctx context.Context) (err error) {
			snap.progress, err = w.progress.readAtStart(ctx, w.followProgress)
			return err
		},
		func(ctx context.Context) (err error) {
			plan, err = PlanFlow(ctx, cfg, w.src, w.tgt)
			return err
		},
	}
	if !fr.ignoreMM2 {
		steps = append(steps, func(ctx context.Context) error { return refuseBesideMM2(ctx, cfg, fr.clients, fr.now) })
	}
	if cfg.ExactlyOnce {
		steps = append(steps, func(ctx context.Context) error { return CheckTransactions(ctx, cfg, w.tgt) })
	}
	if err := concurrently(ctx, steps...); err != nil {
		return nil, nil, err
	}
	// Then the internal topics the flow writes, beside the offsets the
	// resume points are chosen from, and the offset syncs when they can
	// change a resume point (needSyncs): the topic is read back from its
	// end until those partitions have one (readSyncs).
	var onceEnds kadm.ListedOffsets
	steps = []func(context.Context) error{
		func(ctx context.Context) error {
			if err := ensureProgressTopic(ctx, cfg, w.tgt); err != nil {
				return fmt.Errorf("flow %s: %w", cfg.Name(), err)
			}
			return nil
		},
		func(ctx context.Context) error {
			if len(plan.Replicated()) == 0 {
				return nil
			}
			if err := snap.listOffsets(ctx, cfg, fr.clients, w.src, plan); err != nil {
				return fmt.Errorf("flow %s: %w", cfg.Name(), err)
			}
			if want := snap.needSyncs(cfg, plan); len(want) > 0 {
				return w.takeover.readSyncs(ctx, cfg, fr.clients, want)
			}
			return nil
		},
	}
	if cfg.EmitOffsetSyncs {
		adm := w.src
		if syncAlias == cfg.Target {
			adm = w.tgt
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
			if onceEnds, err = listSourceEnds(ctx, cfg, w.src, names...); err != nil {
				return fmt.Errorf("flow %s: list end offsets on %s: %w", cfg.Name(), cfg.Source, err)
			}
			return nil
		})
	}
	if err := concurrently(ctx, steps...); err != nil {
		return nil, nil, err
	}
	if err := w.preflightResume(plan, &snap); err != nil {
		if err = w.preflightAgain(ctx, plan, &snap, err); err != nil {
			return nil, nil, err
		}
	}
	for _, name := range unmatchedNames(cfg, plan) {
		fr.log.Warn("topics names a topic the source does not list: it does not exist, or the principal may not DESCRIBE it; nothing is copied from it",
			"item", name, "cluster", cfg.Source)
	}
	for _, t := range plan.Replicated() {
		if t.Note != "" {
			fr.log.Warn(t.Note, "topic", t.Topic)
		}
		topics = append(topics, t.Topic)
		fr.subscribed[t.Topic] = true
	}
	if fr.once && len(topics) > 0 {
		byPartition := map[tp]int64{}
		for _, t := range plan.Replicated() {
			for p := int32(0); p < t.Partitions; p++ {
				e, ok := onceEnds.Lookup(t.Topic, p)
				if !ok || e.Err != nil {
					return nil, nil, fmt.Errorf("flow %s: end offset of %s[%d] on %s: %w", cfg.Name(), t.Topic, p, cfg.Source, e.Err)
				}
				byPartition[tp{t.Topic, p}] = e.Offset
			}
		}
		w.tmu.Lock() // Stats reads it from other goroutines
		w.onceEnds = byPartition
		w.tmu.Unlock()
	}
	return topics, closeAll, nil
}
