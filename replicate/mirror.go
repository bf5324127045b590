package replicate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/replicate/filter"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
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
	// ShutdownTimeout bounds the final flush of data, offset syncs and
	// progress after ctx is cancelled; default 30s.
	ShutdownTimeout time.Duration
}

// Mirror copies topics along its flows. Create it with [New], then call Run
// once.
type Mirror struct {
	opts    Options
	log     *slog.Logger
	mu      sync.Mutex
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
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = 30 * time.Second
	}
	return &Mirror{opts: opts, log: opts.Logger}, nil
}

// Run runs every flow until ctx is cancelled (or, with Options.Once, until
// each enabled flow has copied what its source held at start). On
// cancellation it flushes what the target already has in flight, then writes
// offset syncs and progress, bounded by Options.ShutdownTimeout, and returns
// nil. It returns an error when a flow cannot start (the other flows are then
// stopped too), and, after all flows stopped, the [RecordError]s of partitions
// that stopped because the target refused a record, joined.
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
	for _, f := range m.opts.Flows {
		if f.EmitHeartbeats {
			wg.Add(1)
			go func(f FlowConfig) {
				defer wg.Done()
				if err := runHeartbeats(ctx, f, m.opts.Clients, m.log, m.opts.Now, m.opts.Once); err != nil && ctx.Err() == nil {
					fail(err)
				}
			}(f)
		}
		if !f.Enabled {
			continue
		}
		r := &flowRunner{
			cfg:      f,
			clients:  m.opts.Clients,
			log:      m.log.With("flow", f.Name()),
			now:      m.opts.Now,
			once:     m.opts.Once,
			stopWait: m.opts.ShutdownTimeout,
			obs:      m.opts.Observer,
			observing: func() bool {
				_, nop := m.opts.Observer.(nopObserver)
				return !nop
			}(),
			parts:    make(map[tp]*partState),
			syncWake: make(chan struct{}, 1),
		}
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
	mu   sync.Mutex
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
}

// Stats returns a snapshot of every partition of every running flow, sorted
// by flow, topic and partition.
func (m *Mirror) Stats() []PartitionStats {
	m.mu.Lock()
	runners := append([]*flowRunner(nil), m.runners...)
	m.mu.Unlock()
	var out []PartitionStats
	for _, r := range runners {
		out = append(out, r.stats()...)
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

// partState is the engine's state for one source partition.
type partState struct {
	src    tp
	remote string
	ctx    context.Context // carries the *partState to the produce promise
	obs    PartitionObserver

	position atomic.Int64 // next source offset to produce; poll goroutine writes
	end      int64        // Once: end offset at start
	halted   atomic.Bool  // a produce failed: no more records from this partition this run

	mu       sync.Mutex
	inflight []int64 // upstream offsets handed to the producer, in order
	head     int
	acked    int64 // next source offset after the last acknowledged record, -1 none
	written  int64 // acked value last written to the progress topic
	sync     syncState
	records  int64
	bytes    int64
	err      *RecordError    // the record at fault, once retryRefused found it
	firstErr error           // the error that halted the partition
	refused  []refusedRecord // refused copies, in order, awaiting retryRefused
	retrying bool
}

type partKey struct{}

func newPartState(src tp, remote string, start int64) *partState {
	ps := &partState{src: src, remote: remote, acked: -1, written: -1, sync: newSyncState()}
	ps.ctx = context.WithValue(context.Background(), partKey{}, ps)
	ps.position.Store(start)
	return ps
}

func (ps *partState) push(off int64) {
	if ps.head > 0 && ps.head == len(ps.inflight) {
		ps.inflight, ps.head = ps.inflight[:0], 0
	} else if ps.head > 1024 && ps.head*2 > len(ps.inflight) {
		n := copy(ps.inflight, ps.inflight[ps.head:])
		ps.inflight, ps.head = ps.inflight[:n], 0
	}
	ps.inflight = append(ps.inflight, off)
}

func (ps *partState) pop() int64 {
	off := ps.inflight[ps.head]
	ps.head++
	return off
}

// flowRunner runs the data path of one enabled flow.
type flowRunner struct {
	cfg      FlowConfig
	clients  Clients
	log      *slog.Logger
	now      func() time.Time
	once     bool
	stopWait time.Duration
	obs      Observer
	// observing is false with the no-op observer: the hot path then skips
	// the clock reads that only metrics need.
	observing bool

	src, tgt     *kadm.Client
	consumer     *kgo.Client
	producer     *kgo.Client
	syncProducer *kgo.Client // == producer when the offset-syncs topic is on the target
	syncTopic    string

	pmu   sync.RWMutex
	parts map[tp]*partState

	smu      sync.Mutex
	syncQ    []mm2.OffsetSync
	syncWake chan struct{}

	ckpt *checkpointer // nil unless emit.checkpoints.enabled

	noAuthorizerSaid bool // ACL sync reported the source has no authorizer

	retryCtx context.Context // cancelled when the flow stops
	sendCtx  context.Context // never cancelled: offset-sync produces
	retries  atomic.Int32    // retryRefused goroutines running
}

func (fr *flowRunner) checkpointer() *checkpointer {
	fr.pmu.RLock()
	defer fr.pmu.RUnlock()
	return fr.ckpt
}

func (fr *flowRunner) part(topic string, partition int32) *partState {
	fr.pmu.RLock()
	ps := fr.parts[tp{topic, partition}]
	fr.pmu.RUnlock()
	return ps
}

func (fr *flowRunner) run(ctx context.Context) (err error) {
	cfg := fr.cfg
	if fr.src, err = fr.clients.Admin(cfg.Source); err != nil {
		return err
	}
	if fr.tgt, err = fr.clients.Admin(cfg.Target); err != nil {
		return err
	}
	syncAlias, syncTopic := cfg.offsetSyncsCluster()
	fr.syncTopic = syncTopic
	// No delivery timeout for copies: kgo dates a record from its
	// timestamp, and copies keep the source's, so a delivery.timeout.ms
	// would fail every record older than it at once.
	if fr.producer, err = fr.clients.Client(cfg.Target, "producer", kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(0)); err != nil {
		return err
	}
	defer fr.producer.Close()
	fr.syncProducer = fr.producer
	if cfg.EmitOffsetSyncs && syncAlias == cfg.Source {
		if fr.syncProducer, err = fr.clients.Client(cfg.Source, "producer", kgo.RecordPartitioner(kgo.ManualPartitioner())); err != nil {
			return err
		}
		defer fr.syncProducer.Close()
	}

	// The start-up steps below are independent of each other and each a
	// few admin round trips, so they run at once: a --once run of a small
	// backlog is mostly start-up.
	var (
		plan     *Plan
		progress map[tp]int64
		ckpt     *checkpointer
	)
	steps := []func(context.Context) error{
		func(ctx context.Context) error {
			if err := ensureProgressTopic(ctx, cfg, fr.tgt); err != nil {
				return fmt.Errorf("flow %s: %w", cfg.Name(), err)
			}
			var err error
			if progress, err = loadProgress(ctx, fr.clients, cfg, fr.log); err != nil {
				return fmt.Errorf("flow %s: load progress: %w", cfg.Name(), err)
			}
			return nil
		},
		func(ctx context.Context) (err error) {
			if plan, err = PlanFlow(ctx, cfg, fr.src, fr.tgt); err != nil {
				return err
			}
			if err := applyPlan(ctx, cfg, plan, fr.src, fr.tgt); err != nil {
				return err
			}
			if cfg.SyncTopicConfigs {
				if err := syncConfigs(ctx, cfg, plan, fr.src, fr.tgt); err != nil {
					fr.log.Warn("topic config sync failed", "err", err)
				}
			}
			return nil
		},
	}
	if cfg.EmitOffsetSyncs {
		adm := fr.src
		if syncAlias == cfg.Target {
			adm = fr.tgt
		}
		steps = append(steps, func(ctx context.Context) error {
			if err := ensureInternalTopic(ctx, adm, syncTopic, cfg.OffsetSyncsReplicationFactor); err != nil {
				return fmt.Errorf("flow %s: %w", cfg.Name(), err)
			}
			return nil
		})
	}
	if cfg.SyncTopicACLs {
		steps = append(steps, func(ctx context.Context) error { fr.syncACLs(ctx); return nil })
	}
	if cfg.EmitCheckpoints {
		ckpt = newCheckpointer(cfg, fr.clients, fr.log, fr.now, fr.src, fr.tgt, fr.producer)
		ckpt.obs = fr.obs
		steps = append(steps, ckpt.start)
	}
	if err := concurrently(ctx, steps...); err != nil {
		return err
	}
	for _, name := range unmatchedNames(cfg, plan) {
		fr.log.Warn("topics names a topic the source does not list: it does not exist, or the principal may not DESCRIBE it; nothing is copied from it",
			"item", name, "cluster", cfg.Source)
	}
	assign, err := fr.addPartitions(ctx, plan, progress)
	if err != nil {
		return err
	}
	if fr.consumer, err = fr.clients.Client(cfg.Source, "consumer",
		kgo.ConsumePartitions(assign),
		kgo.KeepControlRecords(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	); err != nil {
		return err
	}
	defer fr.consumer.Close()
	// The consumer fetches in the background while the target loads the
	// partitions just created, so the first copies find both ready.
	fr.awaitServed(ctx, plan)
	if ckpt != nil {
		fr.pmu.Lock()
		fr.ckpt = ckpt
		fr.pmu.Unlock()
	}
	fr.log.Info("flow started", "topics", len(plan.Replicated()), "partitions", len(fr.parts))
	fr.obs.FlowState(cfg.Source, cfg.Target, true)
	defer fr.obs.FlowState(cfg.Source, cfg.Target, false)

	fr.retryCtx = ctx
	// Syncs handed to the producer must survive the stop: the final flush,
	// bounded by ShutdownTimeout, is what waits for them.
	fr.sendCtx = context.WithoutCancel(ctx)
	bgCtx, stopBg := context.WithCancel(ctx)
	var bg sync.WaitGroup
	bg.Add(2)
	go func() { defer bg.Done(); fr.runSyncSender(bgCtx) }()
	go func() { defer bg.Done(); fr.runProgressWriter(bgCtx) }()
	if !fr.once && (cfg.RefreshTopics || cfg.SyncTopicConfigs || cfg.SyncTopicACLs) {
		bg.Add(1)
		go func() { defer bg.Done(); fr.runRefresher(bgCtx) }()
	}
	if !fr.once && fr.ckpt != nil {
		bg.Add(1)
		go func() { defer bg.Done(); fr.ckpt.run(bgCtx) }()
	}

	fr.pollLoop(ctx)

	stopBg()
	bg.Wait()
	if err := fr.shutdown(ctx); err != nil {
		return err
	}
	if fr.once && fr.ckpt != nil && ctx.Err() == nil {
		return fr.checkpointOnce(ctx)
	}
	return nil
}

// awaitServed waits, at most 10 s, until the target serves every partition
// the plan created or added, so the first copies are not refused and backed
// off (see awaitLeaders). Not being served in time is only logged.
func (fr *flowRunner) awaitServed(ctx context.Context, plan *Plan) {
	var topics []string
	for _, t := range plan.Topics {
		if t.Action == ActionCreate || t.Action == ActionGrow {
			topics = append(topics, t.RemoteTopic)
		}
	}
	start := time.Now()
	if err := awaitLeaders(ctx, fr.producer, topics, 10*time.Second); err != nil {
		if ctx.Err() == nil {
			fr.log.Warn("new remote partitions not served yet; copies will be retried", "err", err)
		}
		return
	}
	if len(topics) > 0 {
		fr.log.Debug("new remote partitions served", "topics", len(topics), "waited", time.Since(start))
	}
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
// cancels the others' context; every step's error is returned, joined.
func concurrently(ctx context.Context, steps ...func(context.Context) error) error {
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
	return errors.Join(errs...)
}

// checkpointOnce is --once's checkpoint pass: with the offset syncs of this
// run written, read them all, emit checkpoints, and sync group offsets.
func (fr *flowRunner) checkpointOnce(ctx context.Context) error {
	if err := fr.ckpt.readSyncs(ctx); err != nil {
		return err
	}
	if _, err := fr.ckpt.emit(ctx); err != nil {
		return err
	}
	if fr.cfg.SyncGroupOffsets {
		fr.ckpt.syncGroupOffsets(ctx)
	}
	return nil
}

// addPartitions registers the partitions of the plan's replicated topics that
// the runner does not know yet, each starting at its stored progress, else at
// the log start (or end, with StartFromLatest). It returns them as a
// consumption map.
func (fr *flowRunner) addPartitions(ctx context.Context, plan *Plan, progress map[tp]int64) (map[string]map[int32]kgo.Offset, error) {
	var topics []string
	for _, t := range plan.Replicated() {
		topics = append(topics, t.Topic)
	}
	if len(topics) == 0 {
		return nil, nil
	}
	starts, err := fr.src.ListStartOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("flow %s: list start offsets on %s: %w", fr.cfg.Name(), fr.cfg.Source, err)
	}
	ends, err := fr.src.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("flow %s: list end offsets on %s: %w", fr.cfg.Name(), fr.cfg.Source, err)
	}
	assign := make(map[string]map[int32]kgo.Offset)
	fr.pmu.Lock()
	defer fr.pmu.Unlock()
	for _, t := range plan.Replicated() {
		for p := int32(0); p < t.Partitions; p++ {
			key := tp{t.Topic, p}
			if _, ok := fr.parts[key]; ok {
				continue
			}
			s, sok := starts.Lookup(t.Topic, p)
			e, eok := ends.Lookup(t.Topic, p)
			if !sok || !eok || s.Err != nil || e.Err != nil {
				return nil, fmt.Errorf("flow %s: offsets of %s[%d] on %s: %v", fr.cfg.Name(), t.Topic, p, fr.cfg.Source, errors.Join(s.Err, e.Err))
			}
			start := s.Offset
			if next, ok := progress[key]; ok {
				switch {
				case next < s.Offset:
					fr.log.Warn("source records were deleted before they were copied", "topic", t.Topic, "partition", p, "from", next, "to", s.Offset)
				case next > e.Offset:
					fr.log.Warn("stored progress is past the source end (topic recreated?); starting at the log start", "topic", t.Topic, "partition", p, "progress", next, "end", e.Offset)
				default:
					start = next
				}
			} else if fr.cfg.StartFromLatest {
				start = e.Offset
			}
			ps := newPartState(key, t.RemoteTopic, start)
			ps.end = e.Offset
			ps.obs = fr.obs.Partition(fr.cfg.Source, fr.cfg.Target, t.RemoteTopic, p)
			if next, ok := progress[key]; ok && next == start {
				ps.acked, ps.written = next, next
			}
			fr.parts[key] = ps
			if assign[t.Topic] == nil {
				assign[t.Topic] = make(map[int32]kgo.Offset)
			}
			assign[t.Topic][p] = kgo.NewOffset().At(start)
		}
	}
	return assign, nil
}

// pollLoop moves records from the source consumer to the target producer
// until ctx is done or, with once, every partition reached its end offset.
func (fr *flowRunner) pollLoop(ctx context.Context) {
	for {
		if fr.once && fr.caughtUp() {
			// Wait for the target to acknowledge, and for refused records
			// to be retried (which may resume a partition), then decide.
			if err := fr.producer.Flush(ctx); err != nil {
				return
			}
			if !fr.waitRetries(ctx) {
				return
			}
			if fr.caughtUp() {
				return
			}
		}
		fetches := fr.consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				fr.log.Warn("fetch error", "topic", t, "partition", p, "err", err)
			}
		})
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			if len(p.Records) == 0 {
				return
			}
			ps := fr.part(p.Topic, p.Partition)
			if ps == nil {
				return
			}
			var now time.Time
			if fr.observing {
				ps.obs.Fetched(p.HighWatermark)
				now = time.Now()
			}
			for _, r := range p.Records {
				if ps.halted.Load() {
					return
				}
				next := r.Offset + 1
				if r.Attrs.IsControl() {
					ps.position.Store(next)
					continue
				}
				ps.mu.Lock()
				ps.push(r.Offset)
				ps.mu.Unlock()
				if fr.observing {
					ps.obs.Polled(len(r.Value), now.Sub(r.Timestamp))
				}
				prepareCopy(r, ps)
				fr.producer.Produce(ctx, r, fr.onAck)
				ps.position.Store(next)
			}
		})
	}
}

// prepareCopy turns a fetched source record into its copy for the target, in
// place: same partition, key, value, headers and timestamp (MM2
// MirrorSourceTask.convertRecord). A source timestamp of -1 lets the producer
// stamp the current time, as MM2 does.
func prepareCopy(r *kgo.Record, ps *partState) {
	r.Topic = ps.remote
	r.Attrs = kgo.RecordAttrs{}
	r.ProducerEpoch, r.ProducerID, r.LeaderEpoch = 0, 0, 0
	r.Context = ps.ctx
	if r.Timestamp.UnixMilli() < 0 {
		r.Timestamp = time.Time{}
	}
}

// waitRetries waits until no retryRefused runs; false if ctx ended first.
func (fr *flowRunner) waitRetries(ctx context.Context) bool {
	for fr.retries.Load() > 0 {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
	return true
}

func (fr *flowRunner) caughtUp() bool {
	fr.pmu.RLock()
	defer fr.pmu.RUnlock()
	if fr.retries.Load() > 0 {
		return false
	}
	for _, ps := range fr.parts {
		if !ps.halted.Load() && ps.position.Load() < ps.end {
			return false
		}
	}
	return true
}

// onAck is the produce promise of every copied record. kgo calls promises in
// order per partition, so the front of the partition's in-flight queue is
// the upstream offset of r.
//
// A refused produce halts the partition: nothing after it counts as copied.
// Kafka refuses whole batches (MESSAGE_TOO_LARGE names the batch, not the
// record), so once the partition's in-flight records have all come back the
// refused ones are retried one at a time (see retryRefused) to find the
// record at fault.
func (fr *flowRunner) onAck(r *kgo.Record, err error) {
	ps := r.Context.Value(partKey{}).(*partState)
	ps.mu.Lock()
	up := ps.pop()
	if err != nil || ps.halted.Load() {
		if err != nil && !errors.Is(err, context.Canceled) {
			if !ps.halted.Load() {
				ps.firstErr = err
			}
			ps.refused = append(ps.refused, refusedRecord{up: up, r: r})
		}
		ps.halted.Store(true)
		retry := ps.head == len(ps.inflight) && len(ps.refused) > 0 && !ps.retrying
		if retry {
			ps.retrying = true
		}
		ps.mu.Unlock()
		if retry {
			fr.consumer.PauseFetchPartitions(map[string][]int32{ps.src.topic: {ps.src.partition}})
			fr.retries.Add(1)
			go fr.retryRefused(ps)
		}
		return
	}
	s, now := fr.ackLocked(ps, up, r)
	ps.mu.Unlock()
	if now {
		fr.queueSync(s)
	}
}

// ackLocked records that the copy of source offset up is on the target at
// r.Offset. ps.mu must be held. It returns the offset sync to write now, if
// MM2's rules call for one.
func (fr *flowRunner) ackLocked(ps *partState, up int64, r *kgo.Record) (mm2.OffsetSync, bool) {
	ps.acked = up + 1
	ps.records++
	ps.bytes += int64(len(r.Value))
	if fr.observing {
		ps.obs.Acked(len(r.Value), time.Since(r.Timestamp), ps.acked)
	}
	if !fr.cfg.EmitOffsetSyncs {
		return mm2.OffsetSync{}, false
	}
	return ps.sync.update(ps.src.topic, ps.src.partition, up, r.Offset, fr.cfg.OffsetLagMax)
}

func (fr *flowRunner) queueSync(s mm2.OffsetSync) {
	fr.smu.Lock()
	fr.syncQ = append(fr.syncQ, s)
	fr.smu.Unlock()
	select {
	case fr.syncWake <- struct{}{}:
	default:
	}
}

// refusedRecord is a copy the target refused, with its source offset.
type refusedRecord struct {
	up int64
	r  *kgo.Record
}

// retryRefused produces a halted partition's refused records one at a time,
// in order. Those that now succeed count as copied; the first one refused on
// its own is the record at fault: the partition stays stopped with a
// [RecordError] naming it. If every record goes through (the batch, not a
// record, was the problem), the partition resumes after them.
func (fr *flowRunner) retryRefused(ps *partState) {
	defer fr.retries.Add(-1)
	ps.mu.Lock()
	recs := ps.refused
	ps.refused = nil
	firstErr := ps.firstErr
	ps.mu.Unlock()
	ctx := fr.retryCtx
	for _, rr := range recs {
		rr.r.Context = nil
		err := fr.producer.ProduceSync(ctx, rr.r).FirstErr()
		if ctx.Err() != nil {
			return // stopping: the partition resumes from its progress next run
		}
		if err != nil {
			size := len(rr.r.Key) + len(rr.r.Value)
			for _, h := range rr.r.Headers {
				size += len(h.Key) + len(h.Value)
			}
			rerr := &RecordError{
				Flow: fr.cfg.Name(), Topic: ps.src.topic, RemoteTopic: ps.remote, Partition: ps.src.partition,
				Offset: rr.up, Size: size, Timestamp: rr.r.Timestamp, Err: err,
			}
			ps.mu.Lock()
			ps.err = rerr
			ps.mu.Unlock()
			fr.log.Error("partition stopped", "err", rerr)
			return
		}
		ps.mu.Lock()
		s, now := fr.ackLocked(ps, rr.up, rr.r)
		ps.mu.Unlock()
		if now {
			fr.queueSync(s)
		}
	}
	// Every refused record went through on its own: resume after them.
	ps.mu.Lock()
	next := ps.acked
	ps.retrying = false
	ps.firstErr = nil
	ps.mu.Unlock()
	fr.log.Warn("target refused a batch but took its records one by one; resuming", "topic", ps.src.topic, "partition", ps.src.partition, "err", firstErr)
	fr.consumer.SetOffsets(map[string]map[int32]kgo.EpochOffset{ps.src.topic: {ps.src.partition: {Epoch: -1, Offset: next}}})
	ps.position.Store(next)
	ps.halted.Store(false)
	fr.consumer.ResumeFetchPartitions(map[string][]int32{ps.src.topic: {ps.src.partition}})
}

// runSyncSender writes queued offset syncs as they come, and promotes the
// delayed ones every OffsetFlushInterval.
func (fr *flowRunner) runSyncSender(ctx context.Context) {
	if !fr.cfg.EmitOffsetSyncs {
		return
	}
	t := time.NewTicker(fr.cfg.OffsetFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-fr.syncWake:
		case <-t.C:
			fr.promoteDelayed()
		}
		fr.sendSyncs()
	}
}

func (fr *flowRunner) promoteDelayed() {
	fr.pmu.RLock()
	var promoted []mm2.OffsetSync
	for _, ps := range fr.parts {
		ps.mu.Lock()
		if s, ok := ps.sync.flush(); ok {
			promoted = append(promoted, s)
		}
		ps.mu.Unlock()
	}
	fr.pmu.RUnlock()
	if len(promoted) > 0 {
		fr.smu.Lock()
		fr.syncQ = append(fr.syncQ, promoted...)
		fr.smu.Unlock()
	}
}

// sendSyncs hands queued syncs to the producer of the offset-syncs cluster,
// in order, partition 0 (MM2 writes only there). Send errors are logged: a
// lost sync only makes translation more conservative.
func (fr *flowRunner) sendSyncs() {
	fr.smu.Lock()
	q := fr.syncQ
	fr.syncQ = nil
	fr.smu.Unlock()
	for _, s := range q {
		k, err := s.MarshalKey()
		if err != nil {
			fr.log.Warn("offset sync not encodable", "topic", s.Topic, "err", err)
			continue
		}
		v, _ := s.MarshalValue()
		fr.syncProducer.Produce(fr.sendCtx, &kgo.Record{Topic: fr.syncTopic, Partition: 0, Key: k, Value: v}, fr.onSyncAck)
	}
}

func (fr *flowRunner) onSyncAck(r *kgo.Record, err error) {
	if err != nil && !errors.Is(err, context.Canceled) {
		fr.log.Warn("offset sync not written", "topic", fr.syncTopic, "err", err)
	}
}

func (fr *flowRunner) runProgressWriter(ctx context.Context) {
	t := time.NewTicker(fr.cfg.ProgressInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := fr.writeProgress(ctx); err != nil && ctx.Err() == nil {
				fr.log.Warn("progress not written", "err", err)
			}
		}
	}
}

// writeProgress writes the acknowledged position of every partition that
// moved since the last write, and waits for the target to acknowledge them.
func (fr *flowRunner) writeProgress(ctx context.Context) error {
	type pending struct {
		ps   *partState
		next int64
	}
	topic := ProgressTopic(fr.cfg.Policy, fr.cfg.Source)
	now := fr.now()
	var (
		recs []*kgo.Record
		pend []pending
	)
	fr.pmu.RLock()
	for _, ps := range fr.parts {
		ps.mu.Lock()
		if ps.acked > ps.written {
			r := encodeProgress(ps.src, ps.acked, now)
			r.Topic = topic
			recs = append(recs, r)
			pend = append(pend, pending{ps, ps.acked})
		}
		ps.mu.Unlock()
	}
	fr.pmu.RUnlock()
	if len(recs) == 0 {
		return nil
	}
	results := fr.producer.ProduceSync(ctx, recs...)
	var errs []error
	for i, res := range results {
		if res.Err != nil {
			errs = append(errs, res.Err)
			continue
		}
		p := pend[i]
		p.ps.mu.Lock()
		if p.next > p.ps.written {
			p.ps.written = p.next
		}
		p.ps.mu.Unlock()
	}
	return errors.Join(errs...)
}

// runRefresher re-plans topics every refresh.topics.interval.seconds
// (creating and growing remote topics, adding new partitions to the copy) and
// syncs topic configs every sync.topic.configs.interval.seconds.
func (fr *flowRunner) runRefresher(ctx context.Context) {
	never := make(<-chan time.Time)
	refresh, configs, acls := never, never, never
	if fr.cfg.RefreshTopics {
		t := time.NewTicker(fr.cfg.RefreshTopicsInterval)
		defer t.Stop()
		refresh = t.C
	}
	if fr.cfg.SyncTopicConfigs {
		t := time.NewTicker(fr.cfg.SyncTopicConfigsInterval)
		defer t.Stop()
		configs = t.C
	}
	if fr.cfg.SyncTopicACLs {
		t := time.NewTicker(fr.cfg.SyncTopicACLsInterval)
		defer t.Stop()
		acls = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-refresh:
			if err := fr.refreshTopics(ctx); err != nil && ctx.Err() == nil {
				fr.log.Warn("topic refresh failed", "err", err)
			}
		case <-acls:
			fr.syncACLs(ctx)
		case <-configs:
			plan, err := PlanFlow(ctx, fr.cfg, fr.src, fr.tgt)
			if err == nil {
				err = syncConfigs(ctx, fr.cfg, plan, fr.src, fr.tgt)
			}
			if err != nil && ctx.Err() == nil {
				fr.log.Warn("topic config sync failed", "err", err)
			}
		}
	}
}

// syncACLs runs one ACL sync; failures are logged, never fatal (MM2 logs
// them too): the data path does not depend on it. A source without an
// authorizer is said once, at info level, as MM2 does (KAFKA-14781).
func (fr *flowRunner) syncACLs(ctx context.Context) {
	n, err := SyncTopicACLs(ctx, fr.cfg, fr.src, fr.tgt)
	switch {
	case errors.Is(err, ErrNoAuthorizer):
		if !fr.noAuthorizerSaid {
			fr.noAuthorizerSaid = true
			fr.log.Info("topic ACL sync skipped: the source has no authorizer")
		}
	case err != nil && ctx.Err() == nil:
		fr.log.Warn("topic ACL sync failed", "err", err)
	case n > 0:
		fr.log.Info("topic ACLs created on the target", "count", n)
	}
}

func (fr *flowRunner) refreshTopics(ctx context.Context) error {
	plan, err := PlanFlow(ctx, fr.cfg, fr.src, fr.tgt)
	if err != nil {
		return err
	}
	if err := applyPlan(ctx, fr.cfg, plan, fr.src, fr.tgt); err != nil {
		return err
	}
	fr.awaitServed(ctx, plan)
	assign, err := fr.addPartitions(ctx, plan, nil)
	if err != nil {
		return err
	}
	if len(assign) > 0 {
		fr.log.Info("new source partitions", "topics", len(assign))
		fr.consumer.AddConsumePartitions(assign)
	}
	return nil
}

// shutdown waits (bounded) for the target to acknowledge what is in flight,
// then writes the delayed offset syncs and the final progress.
func (fr *flowRunner) shutdown(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fr.stopWait)
	defer cancel()
	var errs []error
	if err := fr.producer.Flush(sctx); err != nil {
		errs = append(errs, fmt.Errorf("flow %s: flush copies: %w", fr.cfg.Name(), err))
	}
	fr.waitRetries(sctx)
	// The last offset syncs and the last progress go to different topics
	// and depend only on what is acknowledged by now, so they are written
	// at once. Each uses sctx: one failing must not cut the other short.
	steps := []func(context.Context) error{func(context.Context) error {
		if err := fr.writeProgress(sctx); err != nil {
			return fmt.Errorf("flow %s: write progress: %w", fr.cfg.Name(), err)
		}
		return nil
	}}
	if fr.cfg.EmitOffsetSyncs {
		fr.promoteDelayed()
		fr.sendSyncs()
		steps = append(steps, func(context.Context) error {
			if err := fr.syncProducer.Flush(sctx); err != nil {
				return fmt.Errorf("flow %s: flush offset syncs: %w", fr.cfg.Name(), err)
			}
			return nil
		})
	}
	errs = append(errs, concurrently(sctx, steps...))
	fr.log.Info("flow stopped")
	return errors.Join(errs...)
}

func (fr *flowRunner) recordErrors() []error {
	fr.pmu.RLock()
	defer fr.pmu.RUnlock()
	var errs []*RecordError
	for _, ps := range fr.parts {
		ps.mu.Lock()
		if ps.err != nil {
			errs = append(errs, ps.err)
		}
		ps.mu.Unlock()
	}
	sort.Slice(errs, func(i, j int) bool {
		if errs[i].Topic != errs[j].Topic {
			return errs[i].Topic < errs[j].Topic
		}
		return errs[i].Partition < errs[j].Partition
	})
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return out
}

func (fr *flowRunner) stats() []PartitionStats {
	fr.pmu.RLock()
	defer fr.pmu.RUnlock()
	out := make([]PartitionStats, 0, len(fr.parts))
	for _, ps := range fr.parts {
		ps.mu.Lock()
		s := PartitionStats{
			Flow: fr.cfg.Name(), Topic: ps.src.topic, RemoteTopic: ps.remote, Partition: ps.src.partition,
			Position: ps.position.Load(), Acked: ps.acked, Records: ps.records, Bytes: ps.bytes,
		}
		if ps.err != nil {
			s.Error = ps.err.Error()
		}
		ps.mu.Unlock()
		out = append(out, s)
	}
	return out
}
