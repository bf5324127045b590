package replicate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// worker is the data side of one enabled flow in this process: the
// partition tasks the flow's consumer group assigned here, and the parts
// that serve them, each with one job:
//
//   - starter (start.go) turns assigned partitions into running tasks;
//   - release (release.go) turns revoked or lost ones into released tasks;
//   - tasks (tasks.go) is the registry of both;
//   - gate (gate.go) owns the direct source consumer's assignment and pauses;
//   - the poll loop and copyRecords (datapath.go) move fetched records to
//     the tasks' sinks; mode (alo.go or eos.go) makes them durable;
//   - writer and syncs (control.go) write progress and offset syncs;
//   - freeze (freeze.go) stops a process that was paused past its session.
//
// Only the starter and the release change a task's state between starting,
// running, draining and released; the copy path moves a running task to
// stopped or fenced (loss.go, eos.go). Lock order, where two are held: the
// dispatch lock (run.dmu), then the task set's, then a task's mu, then the
// gate's; nothing holds a task's mu while it takes the dispatch lock.
type worker struct {
	flowEnv
	io       flowIO
	tasks    *taskSet
	gate     *fetchGate
	mode     copyMode
	progress *progressView
	starter  *starter
	writer   *progressWriter
	syncs    *syncSender
	freeze   *freezeGuard
	run      runState
	counts   flowCounts
	lossLog  lossLimiter // loss.go
	ring     ringGuard   // ring.go: read at start, then only read
	fatal    func(err error)
}

// flowIO is the flow's clients in this process.
type flowIO struct {
	src, tgt *kadm.Client // the caller's (Clients.Admin), never closed here
	consumer *kgo.Client  // source, direct: the running tasks' partitions, through the gate
	data     *kgo.Client  // target: at-least-once copies only (producer.go)
	control  *kgo.Client  // target: progress (and the leader's checkpoints)
	// syncs is the offset syncs' producer: control when the
	// offset-syncs topic is on the target, else one on the source.
	syncs  *kgo.Client
	limits *limitsCache // the remote topics' limits (limits.go)
}

// runState is what the data side shares while it runs.
type runState struct {
	ctx context.Context // ends when the flow stops: task starts, retries and transaction loops
	// sendCtx is ctx without its end, for the at-least-once copies: kgo
	// fails a record whose context ended with that error even when its
	// batch already reached the broker, so a copy sent before the stop
	// would count as not copied, and the next run would copy it again. The
	// stop waits for the copies' answers instead, within the stop budget.
	sendCtx context.Context
	// dmu, the dispatch lock, is held while a poll's records are
	// dispatched and while tasks change between running and draining.
	dmu sync.Mutex
	// Once: a task copied its last record (atEnd), and the cancel of the
	// poll loop's current poll, so the loop looks at once (wakeAtEnd).
	atEnd      atomic.Bool
	pollCancel atomic.Pointer[context.CancelFunc]
	retries    atomic.Int32 // retryRefused goroutines running
	// followProgress starts the progress view's follow (once; the
	// flowRunner sets it).
	followProgress func()
	fetchWarned    onceAMinute // holds back repeats of a fetch error (topicid.go)
}

// flowCounts are the flow's counters over the run ([FlowStatus]).
type flowCounts struct {
	assigned, revoked, lost atomic.Int64 // partitions
	txCommitted, txAborted  atomic.Int64 // exactly-once transactions
}

func newWorker(env flowEnv) *worker {
	f := env.cfg
	w := &worker{flowEnv: env, tasks: newTaskSet(), progress: newProgressView(env.clients, f, env.log),
		writer: newProgressWriter(f, env.log, env.now), syncs: newSyncSender(f, env.log), freeze: newFreezeGuard(freezeLimit(f))}
	w.io.limits = &limitsCache{}
	w.writer.frozen = w.frozenAt
	w.starter = &starter{w: w}
	if f.ExactlyOnce {
		slots, fences, why := txPoolSize(f)
		if why != "" {
			env.log.Warn("exactly-once: fewer transactional producers at once than configured", "reason", why)
		}
		w.mode = exactlyOnce{w: w, pool: newTxPool(slots, fences)}
	} else {
		w.mode = atLeastOnce{w}
	}
	return w
}

// dataProducer builds a producer of copies for the flow's target: the
// flow's one at-least-once data producer (txnID "") or an exactly-once
// task's transactional producer. Both take the same options: the cluster's
// producer settings (compression, idempotence, acks: Clients), the manual
// partitioner (a copy keeps its partition number), no delivery timeout
// (kgo dates a record from its timestamp, and copies keep the source's, so
// a delivery.timeout.ms would fail every record older than it at once),
// and batches capped at the remote topic's max.message.bytes (limits.go).
// A task's transactional producer pushes no client metrics unless
// FlowConfig.TaskMetricsPush says so.
func (w *worker) dataProducer(txnID string) (*kgo.Client, error) {
	opts := []kgo.Opt{kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(0),
		kgo.ProducerBatchMaxBytesFn(w.io.limits.batchMaxBytes)}
	if txnID != "" {
		opts = append(opts, kgo.TransactionalID(txnID), kgo.ConcurrentTransactionsBackoff(5*time.Millisecond))
		if !w.cfg.TaskMetricsPush {
			opts = append(opts, kgo.DisableClientMetrics()) // FlowConfig.TaskMetricsPush
		}
	} else {
		opts = append(opts, kgo.WithHooks(writeHook{w})) // freeze.go
	}
	return w.clients.Client(w.cfg.Target, RoleProducer, opts...)
}

// warmProducers opens the producers' connections and loads their producer
// IDs while the groups are joined, not in front of the first copy. A
// failure here is the first produce's to report.
func (w *worker) warmProducers(ctx context.Context) {
	for _, p := range []*kgo.Client{w.io.data, w.io.control} {
		go func() {
			_ = p.EnsureProduceConnectionIsOpen(ctx, -1)
			_, _, _ = p.ProducerID(ctx)
		}()
	}
}

// runBackground starts the data side's background loops (positions, offset
// syncs, progress, the freeze guard) in bg until ctx ends.
func (w *worker) runBackground(ctx context.Context, bg *sync.WaitGroup) {
	loops := []func(){
		func() { w.runPositions(ctx) }, // health.go
		func() { w.syncs.run(ctx, w.tasks) },
		func() { w.runFreezeGuard(ctx) },
	}
	if !w.mode.ownProgress() {
		loops = append(loops, func() { w.writer.run(ctx, w.tasks) })
	}
	for _, loop := range loops {
		bg.Add(1)
		go func() {
			defer bg.Done()
			loop()
		}()
	}
}

// shutdown flushes what the data side has in flight and writes the
// progress of tasks not released yet and the delayed offset syncs, within
// the stop budget.
func (w *worker) shutdown(ctx context.Context) error {
	sctx, cancel := w.stop.drainCtx(ctx)
	defer cancel()
	var errs []error
	if err := w.io.data.Flush(sctx); err != nil {
		errs = append(errs, fmt.Errorf("flow %s: flush copies: %w", w.cfg.Name(), err))
	}
	w.waitRetries(sctx)
	started := make(chan struct{})
	go func() { w.starter.running.Wait(); close(started) }()
	select {
	case <-started:
	case <-sctx.Done():
		w.stop.left("partition task starts still running")
	}
	var steps []func(context.Context) error
	if !w.mode.ownProgress() {
		steps = append(steps, func(ctx context.Context) error {
			if err := w.writer.write(ctx, w.tasks.all()); err != nil {
				return fmt.Errorf("flow %s: write progress: %w", w.cfg.Name(), err)
			}
			return nil
		})
	}
	if w.cfg.EmitOffsetSyncs {
		w.syncs.promote(w.tasks.all())
		w.syncs.send()
		steps = append(steps, func(ctx context.Context) error {
			if err := w.io.syncs.Flush(ctx); err != nil {
				return fmt.Errorf("flow %s: flush offset syncs: %w", w.cfg.Name(), err)
			}
			return nil
		})
	}
	errs = append(errs, concurrently(sctx, steps...))
	err := errors.Join(errs...)
	if err != nil && sctx.Err() != nil {
		w.stop.left(fmt.Sprintf("the final flush (%v)", err))
		return nil // said, by name, in the stop report
	}
	return err
}

// onceDone reports whether a --once run of the flow is complete: every
// partition the flow had at start has, in the progress topic or in a task of
// this process, reached the end offset it had at start, or is stopped here
// with an error, and nothing is in flight.
func (w *worker) onceDone(ctx context.Context) bool {
	if w.run.retries.Load() > 0 {
		return false
	}
	mine := map[tp]*task{}
	for _, t := range w.tasks.all() {
		mine[t.src] = t
	}
	var finished []*task // own tasks at their end whose progress is not written yet
	done := true
	for key, end := range w.tasks.ends() {
		// Copied, by whichever member; unless the remote partition lost
		// mirrored records since: then the task owning it reports that
		// first (and its progress write lowers the downstream position).
		if v, ok := w.progress.value(key); ok && v.Next >= end && !w.tasks.remoteShort(key) {
			continue
		}
		t, ok := mine[key]
		if !ok {
			done = false
			continue
		}
		switch st := t.State(); {
		case st == TaskStopped || st == TaskFenced:
			continue // reported by recordErrors and lossErrors
		case st == TaskRunning && !t.halted.Load() && t.ackedNow() >= end:
			t.mu.Lock()
			if t.pos.written < t.pos.acked {
				finished = append(finished, t)
			}
			t.mu.Unlock()
			continue
		}
		done = false
	}
	// Say at once that these partitions are copied: the other members'
	// runs end on it, without waiting for the next progress interval.
	if len(finished) > 0 && !w.mode.ownProgress() {
		if err := w.writer.write(ctx, finished); err != nil && ctx.Err() == nil {
			w.log.Warn("progress not written", "err", err)
		}
	}
	if !done {
		return false
	}
	// Every partition is copied: flush, then look once more.
	if err := w.io.data.Flush(ctx); err != nil {
		return true
	}
	return w.waitRetries(ctx)
}
