package replicate

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// worker runs the partition tasks of one enabled flow that the flow's
// consumer group assigned to this process. It owns the flow's direct source
// consumer, the data producer and the control producers; the group member
// (see membership.go) tells it which partitions to start and to release.
type worker struct {
	flowEnv
	// observing is false with the no-op observer: the hot path then skips
	// the clock reads that only metrics need.
	observing bool

	src, tgt     *kadm.Client
	consumer     *kgo.Client // source, direct: the running tasks' partitions
	data         *kgo.Client // target: copies only
	control      *kgo.Client // target: progress (and the leader's checkpoints)
	syncProducer *kgo.Client // == control when the offset-syncs topic is on the target
	syncTopic    string
	progress     *progressView
	// followProgress starts the progress view's follow (once; the
	// flowRunner sets it).
	followProgress func()
	takeover       *takeover   // what MM2 left, read at the flow's start
	limits         limitsCache // the remote topics' limits (limits.go)

	// dmu is held while a poll's records are dispatched and while a task
	// changes state between running and revoking (see dispatch).
	dmu   sync.Mutex
	tmu   sync.RWMutex
	tasks map[tp]*task
	// remotes holds one remote topic name per source topic (tmu), shared
	// by its tasks: the producer looks a record's topic up on every
	// produce, and one string compares by pointer.
	remotes map[string]string

	// Once: the flow's partitions and their end offsets when the run
	// started; the run is done when the progress of each reached its end.
	onceEnds map[tp]int64
	// Once: a task copied its last record (atEnd), and the cancel of the
	// poll loop's current poll, so the loop looks at once (wakeAtEnd).
	atEnd      atomic.Bool
	pollCancel atomic.Pointer[context.CancelFunc]

	pmu sync.Mutex // serialises progress writes

	smu      sync.Mutex
	syncQ    []mm2.OffsetSync
	syncWake chan struct{}

	retryCtx context.Context // cancelled when the flow stops
	sendCtx  context.Context // never cancelled: offset-sync produces
	retries  atomic.Int32    // retryRefused goroutines running
	starts   sync.WaitGroup  // task starts in progress
	released []*task         // tasks released during the run, for the totals (tmu)

	assigned, revoked, lost atomic.Int64 // partitions, counted over the run

	txCommitted, txAborted atomic.Int64 // exactly-once transactions, over the run
	lossLog                lossLimiter  // loss.go
	// firstAck wakes the progress writer at a task's first
	// acknowledgement (runProgressWriter).
	firstAck chan struct{}
	// fetchWarned holds back repeats of a fetch error (topicid.go).
	fetchWarned onceAMinute

	// fatal stops the flow with err (set by the flowRunner).
	fatal func(err error)
}

func (w *worker) task(topic string, partition int32) *task {
	w.tmu.RLock()
	t := w.tasks[tp{topic, partition}]
	w.tmu.RUnlock()
	return t
}

func (w *worker) allTasks() []*task {
	w.tmu.RLock()
	defer w.tmu.RUnlock()
	out := make([]*task, 0, len(w.tasks))
	for _, t := range w.tasks {
		out = append(out, t)
	}
	return out
}

// assign creates a task for each newly assigned partition and starts them
// in the background: choosing a resume point needs the progress topic read
// to its end and the remote partition to exist, which must not hold up the
// group's rebalance.
func (w *worker) assign(parts map[string][]int32) {
	var batch []*task
	w.tmu.Lock()
	for topic, ps := range parts {
		for _, p := range ps {
			key := tp{topic, p}
			if _, ok := w.tasks[key]; ok {
				continue
			}
			end := int64(-1)
			if e, ok := w.onceEnds[key]; ok {
				end = e
			}
			t := newTask(key, w.remoteTopic(topic), end)
			if w.cfg.ExactlyOnce {
				t.ack = func(r *kgo.Record, err error) { w.onTxnAck(t, r, err) }
			} else {
				t.ack = func(r *kgo.Record, err error) { w.onAck(t, r, err) }
			}
			t.obs = w.obs.Partition(w.cfg.Source, w.cfg.Target, t.remote, p)
			w.tasks[key] = t
			batch = append(batch, t)
		}
	}
	w.tmu.Unlock()
	if len(batch) == 0 {
		return
	}
	w.assigned.Add(int64(len(batch)))
	w.starts.Add(1)
	go func() {
		defer w.starts.Done()
		w.start(batch)
	}()
}

// remoteTopic returns the remote topic of the source topic, the same string
// for every task of it (w.tmu held for writing).
func (w *worker) remoteTopic(topic string) string {
	if r, ok := w.remotes[topic]; ok {
		return r
	}
	r := w.cfg.Policy.FormatRemoteTopic(w.cfg.Source, topic)
	if w.remotes == nil {
		w.remotes = map[string]string{}
	}
	w.remotes[topic] = r
	return r
}

// start chooses each task's resume point and adds its partition to the
// consumer. The resume point is the progress the previous owner wrote (it
// writes it before it releases the partition, so reading the progress topic
// to its current end finds it), else the log start (or end, with
// StartFromLatest). A task revoked meanwhile is left alone.
func (w *worker) start(batch []*task) {
	ctx, cancel := context.WithCancel(w.retryCtx)
	defer cancel()
	// Abort the whole batch when every task of it was revoked.
	go func() {
		for _, t := range batch {
			select {
			case <-t.startCtx.Done():
			case <-ctx.Done():
				return
			}
		}
		cancel()
	}()
	defer func() {
		for _, t := range batch {
			select {
			case <-t.started:
			default:
				close(t.started)
			}
		}
	}()
	// A start that fails (offsets not listed yet for a partition just
	// created, a broker moving) is tried again until it works or every task
	// of the batch was revoked: a task never stays assigned and idle.
	said := ""
	first := time.Now()
	for {
		err := w.startBatch(ctx, batch)
		if err == nil {
			w.reportPositions(ctx, batch) // records behind from the start, also while idle (health.go)
			return
		}
		if ctx.Err() != nil {
			return
		}
		// What will not heal (no permission, the progress topic gone), or
		// has not healed for startGiveUp, stops the flow with its cause:
		// never a run that waits forever, or exits 0 having copied nothing.
		if permanent(err) || time.Since(first) > startGiveUp {
			w.fatal(fmt.Errorf("flow %s: partition tasks cannot start: %w", w.cfg.Name(), err))
			return
		}
		if msg := err.Error(); msg != said {
			said = msg
			w.log.Warn("partition tasks not started yet; retrying", "partitions", len(batch), "err", err)
		}
		for _, t := range batch {
			t.mu.Lock()
			t.firstErr = err
			t.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// startGiveUp bounds how long a partition task's start is retried.
const startGiveUp = 30 * time.Second

// permanent reports errors that retrying does not heal.
func permanent(err error) bool {
	return errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.GroupAuthorizationFailed) ||
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed) || errors.As(err, new(*SettingError)) ||
		errors.Is(err, kerr.ClusterAuthorizationFailed) || errors.Is(err, kerr.UnknownTopicOrPartition) && strings.Contains(err.Error(), "progress topic") ||
		errors.Is(err, ErrResumeUnknown)
}

func (w *worker) startBatch(ctx context.Context, batch []*task) error {
	// Exactly-once: fence the previous owners first, so the progress read
	// next is final (eos.go).
	if w.cfg.ExactlyOnce {
		if err := w.initTransactions(ctx, batch); err != nil {
			return err
		}
	}
	topics := map[string]bool{}
	need := map[string]int32{}
	for _, t := range batch {
		topics[t.src.topic] = true
		if need[t.remote] < t.src.partition+1 {
			need[t.remote] = t.src.partition + 1
		}
	}
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	sort.Strings(names)
	remotes := make([]string, 0, len(need))
	for r := range need {
		remotes = append(remotes, r)
	}
	sort.Strings(remotes)
	// The progress read, the source offsets and the remote partitions (the
	// flow leader creates them) are independent: ask for them at once.
	var starts, ends kadm.ListedOffsets
	var ids map[string]string
	steps := []func(context.Context) error{
		func(ctx context.Context) (err error) {
			ids, err = w.sourceTopicIDs(ctx, names) // topicid.go
			return err
		},
		func(ctx context.Context) error {
			if err := w.progress.catchUp(ctx); err != nil {
				return fmt.Errorf("read progress: %w", err)
			}
			return nil
		},
		func(ctx context.Context) (err error) {
			if starts, err = w.src.ListStartOffsets(ctx, names...); err != nil {
				return fmt.Errorf("list start offsets on %s: %w", w.cfg.Source, err)
			}
			return nil
		},
		// A task without progress resumes where MM2 stopped, or by the
		// reset policy (mm2resume.go), which needs both ends of the
		// partition.
		func(ctx context.Context) (err error) {
			if ends, err = listSourceEnds(ctx, w.cfg, w.src, names...); err != nil {
				return fmt.Errorf("list end offsets on %s: %w", w.cfg.Source, err)
			}
			return nil
		},
		func(ctx context.Context) error {
			if err := awaitRemotePartitions(ctx, w.data, need); err != nil {
				return err
			}
			// Before the data producer learns the partitions: it takes
			// their batch cap from the limits then (limits.go).
			w.loadLimits(ctx, remotes)
			return awaitProducerPartitions(ctx, w.data, need) // growth.go
		},
	}
	if err := concurrently(ctx, steps...); err != nil {
		return err
	}
	// The remote ends tell a remote topic that lost its copies (refill
	// below), so they are listed for every batch, after the progress read:
	// a copy the progress covers is on the target by then. Where a remote
	// partition holds records, an offset sync may tell where its copy
	// stopped (syncMatters; readSyncs reads back from the end of the
	// offset-syncs topic only as far as these partitions need).
	rends, err := w.tgt.ListEndOffsets(ctx, remotes...)
	if err != nil {
		return fmt.Errorf("list end offsets on %s: %w", w.cfg.Target, err)
	}
	var syncs []tp
	for _, t := range batch {
		_, hasProgress := w.progress.get(t.src)
		if e, ok := rends.Lookup(t.remote, t.src.partition); syncMatters(w.cfg, t.src.topic, hasProgress, e, ok) {
			syncs = append(syncs, t.src)
		}
	}
	if len(syncs) > 0 {
		if err := w.takeover.readSyncs(ctx, w.cfg, w.clients, syncs); err != nil {
			return err
		}
	}
	add := map[string]map[int32]kgo.Offset{}
	var errs []error
	w.dmu.Lock()
	defer w.dmu.Unlock()
	for _, t := range batch {
		if t.State() != TaskStarting {
			continue
		}
		s, ok := starts.Lookup(t.src.topic, t.src.partition)
		if !ok || s.Err != nil {
			errs = append(errs, fmt.Errorf("start offset of %s[%d] on %s: %v", t.src.topic, t.src.partition, w.cfg.Source, s.Err))
			continue
		}
		written := int64(-1)
		val, hasProgress := w.progress.value(t.src)
		if hasProgress {
			written = val.Next
			t.inheritLoss(val)
		}
		ev := w.checkTopicID(t, val, hasProgress, ids[t.src.topic])
		if re, ok := rends.Lookup(t.remote, t.src.partition); ev == nil && hasProgress && written > s.Offset && ok && re.Err == nil && re.Offset == 0 {
			// Progress says records were copied, yet the remote partition
			// is empty: the remote topic was deleted or recreated. Refill
			// it from the source log start.
			ev = &LossEvent{Kind: LossTargetRecreated, From: s.Offset, To: s.Offset,
				Reason: fmt.Sprintf("the remote partition %s[%d] is empty though progress says source offsets up to %d were copied: the remote topic was deleted or recreated; refilling it from the source log start (offset %d)",
					t.remote, t.src.partition, written-1, s.Offset)}
		}
		if ev != nil {
			// The source topic was recreated (topicid.go).
			if ev.Stopped {
				t.resume(val.Next, written, ResumeProgress)
				w.reportLoss(t, *ev)
				close(t.started)
				continue
			}
			w.reportLoss(t, *ev)
			t.resume(s.Offset, -1, ResumeLogStart) // -1: every position from here on is written
			if add[t.src.topic] == nil {
				add[t.src.topic] = map[int32]kgo.Offset{}
			}
			add[t.src.topic][t.src.partition] = kgo.NewOffset().At(s.Offset).WithEpoch(-1)
			if t.tx != nil {
				t.tx.start(s.Offset)
			}
			t.state.Store(TaskRunning)
			close(t.started)
			w.log.Info("partition task started", "topic", t.src.topic, "partition", t.src.partition, "resume", s.Offset, "from", ResumeLogStart)
			continue
		}
		// The resume point: progress, else where MM2 stopped, else the
		// reset policy (mm2resume.go).
		rp, err := w.resumePoint(t, s.Offset, written, ends, rends)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		start, from := rp.Offset, rp.From
		var gap *LossEvent
		if rp.Skip > 0 && rp.From != ResumeLogEnd {
			// Deleted on the source before they were copied (loss.go).
			next := rp.Offset - rp.Skip
			gap = &LossEvent{Kind: LossGap, From: next, To: rp.Offset, Stopped: w.cfg.StopOnGap, Reason: gapReason(w.cfg.StopOnGap, rp.Offset)}
			if gap.Stopped {
				start = next
			}
		}
		t.resume(start, written, from)
		t.limits = w.limitsOf(t.remote)
		t.mu.Lock()
		t.firstErr = nil
		t.mu.Unlock()
		if gap != nil {
			w.reportLoss(t, *gap)
			if gap.Stopped {
				close(t.started)
				continue
			}
		}
		if add[t.src.topic] == nil {
			add[t.src.topic] = map[int32]kgo.Offset{}
		}
		add[t.src.topic][t.src.partition] = kgo.NewOffset().At(start).WithEpoch(-1)
		if t.tx != nil {
			t.tx.start(start)
		}
		t.state.Store(TaskRunning)
		close(t.started)
		w.log.Info("partition task started", "topic", t.src.topic, "partition", t.src.partition, "resume", start, "from", from)
	}
	w.consumer.AddConsumePartitions(add)
	// A partition the consumer's metadata lacks (one just added to the
	// source) is fetched only once its metadata is refreshed (growth.go).
	w.consumer.ForceMetadataRefresh()
	return errors.Join(errs...)
}

// release stops the tasks of parts and removes them: it stops fetching their
// partitions, waits (bounded by stopWait) for their in-flight copies to be
// acknowledged and, with writeProgress, writes their final progress. A
// revocation writes progress (the partition goes to another member, which
// resumes exactly there); a loss does not (another member may own the
// partition already and be ahead).
func (w *worker) release(ctx context.Context, parts map[string][]int32, writeProgress bool) {
	var gone []*task
	w.dmu.Lock()
	w.tmu.Lock()
	for topic, ps := range parts {
		for _, p := range ps {
			key := tp{topic, p}
			t, ok := w.tasks[key]
			if !ok {
				continue
			}
			delete(w.tasks, key)
			t.state.Store(TaskRevoking)
			t.cancelStart()
			gone = append(gone, t)
		}
	}
	w.tmu.Unlock()
	w.dmu.Unlock()
	if len(gone) == 0 {
		return
	}
	w.consumer.RemoveConsumePartitions(parts)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.stopWait)
	defer cancel()
	w.stopTransactions(sctx, gone, writeProgress)
	for _, t := range gone {
		select {
		case <-t.started:
		case <-sctx.Done():
		}
		if !t.awaitIdle(sctx) {
			w.log.Warn("copies still in flight when the partition was released", "topic", t.src.topic, "partition", t.src.partition)
		}
	}
	// The delayed offset syncs of the released tasks are written now, as
	// MM2 does when a task stops: they are the freshest translation points.
	if w.cfg.EmitOffsetSyncs {
		for _, t := range gone {
			t.mu.Lock()
			s, ok := t.sync.flush(t.src.topic, t.src.partition)
			t.mu.Unlock()
			if ok {
				w.queueSync(s)
			}
		}
	}
	if writeProgress {
		if err := w.writeProgress(sctx, gone); err != nil {
			w.log.Warn("final progress of released partitions not written; the next owner re-copies from the previous one", "err", err)
		}
		w.revoked.Add(int64(len(gone)))
	} else {
		w.lost.Add(int64(len(gone)))
	}
	// Keep the stats of released tasks: the run's totals include them.
	w.tmu.Lock()
	w.released = append(w.released, gone...)
	w.tmu.Unlock()
	for _, t := range gone {
		w.log.Info("partition task released", "topic", t.src.topic, "partition", t.src.partition, "position", t.ackedNow(), "progress_written", writeProgress)
	}
}

// onceDone reports whether a --once run of the flow is complete: every
// partition the flow had at start has, in the progress topic or in a task of
// this process, reached the end offset it had at start, or is stopped here
// with an error, and nothing is in flight.
func (w *worker) onceDone(ctx context.Context) bool {
	if w.retries.Load() > 0 {
		return false
	}
	mine := map[tp]*task{}
	for _, t := range w.allTasks() {
		mine[t.src] = t
	}
	var finished []*task // own tasks at their end whose progress is not written yet
	done := true
	for key, end := range w.onceEnds {
		if next, ok := w.progress.get(key); ok && next >= end {
			continue // copied, by whichever member
		}
		t, ok := mine[key]
		if !ok {
			done = false
			continue
		}
		switch st := t.State(); {
		case st == TaskStopped:
			continue // reported by recordErrors
		case st == TaskRunning && !t.halted.Load() && t.ackedNow() >= end:
			t.mu.Lock()
			if t.written < t.acked {
				finished = append(finished, t)
			}
			t.mu.Unlock()
			continue
		}
		done = false
	}
	// Say at once that these partitions are copied: the other members'
	// runs end on it, without waiting for the next progress interval.
	if len(finished) > 0 {
		if err := w.writeProgress(ctx, finished); err != nil && ctx.Err() == nil {
			w.log.Warn("progress not written", "err", err)
		}
	}
	if !done {
		return false
	}
	// Every partition is copied: flush, then look once more.
	if err := w.data.Flush(ctx); err != nil {
		return true
	}
	return w.waitRetries(ctx)
}

func (t *task) ackedNow() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.acked
}

// shutdown releases every task (writing its final progress), then writes the
// delayed offset syncs, bounded by stopWait.
func (w *worker) shutdown(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.stopWait)
	defer cancel()
	var errs []error
	if err := w.data.Flush(sctx); err != nil {
		errs = append(errs, fmt.Errorf("flow %s: flush copies: %w", w.cfg.Name(), err))
	}
	w.waitRetries(sctx)
	w.starts.Wait()
	steps := []func(context.Context) error{func(context.Context) error {
		if err := w.writeProgress(sctx, w.allTasks()); err != nil {
			return fmt.Errorf("flow %s: write progress: %w", w.cfg.Name(), err)
		}
		return nil
	}}
	if w.cfg.EmitOffsetSyncs {
		w.promoteDelayed()
		w.sendSyncs()
		steps = append(steps, func(context.Context) error {
			if err := w.syncProducer.Flush(sctx); err != nil {
				return fmt.Errorf("flow %s: flush offset syncs: %w", w.cfg.Name(), err)
			}
			return nil
		})
	}
	errs = append(errs, concurrently(sctx, steps...))
	return errors.Join(errs...)
}

func (w *worker) recordErrors() []error {
	var errs []*RecordError
	for _, t := range w.everyTask() {
		t.mu.Lock()
		if t.err != nil {
			errs = append(errs, t.err)
		}
		t.mu.Unlock()
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

// everyTask returns the running tasks and those released during the run,
// newest last.
func (w *worker) everyTask() []*task {
	w.tmu.RLock()
	defer w.tmu.RUnlock()
	out := append([]*task(nil), w.released...)
	for _, t := range w.tasks {
		out = append(out, t)
	}
	return out
}

// stats sums the run's tasks per partition: a partition assigned, released
// and assigned again counts once, with the records of every assignment.
func (w *worker) stats(owner string) []PartitionStats {
	byKey := map[tp]*PartitionStats{}
	var order []tp
	current := map[tp]bool{}
	w.tmu.RLock()
	for k := range w.tasks {
		current[k] = true
	}
	w.tmu.RUnlock()
	for _, t := range w.everyTask() {
		t.mu.Lock()
		s := byKey[t.src]
		if s == nil {
			s = &PartitionStats{Flow: w.cfg.Name(), Topic: t.src.topic, RemoteTopic: t.remote, Partition: t.src.partition, Start: -1, End: t.end}
			byKey[t.src] = s
			order = append(order, t.src)
		}
		if s.Start < 0 && t.resumedFrom != "" {
			s.Start = t.firstStart
		}
		s.Position, s.Acked = t.position.Load(), t.acked
		s.Records += t.records
		s.Bytes += t.bytes
		s.State, s.ResumedFrom = t.State(), t.resumedFrom
		if t.err != nil {
			s.Error = t.err.Error()
		} else if t.loss.stop != nil {
			s.Error = t.loss.stop.Error()
		} else if t.firstErr != nil && t.State() == TaskStarting {
			s.Error = t.firstErr.Error()
		}
		s.Skipped = t.loss.skipped
		s.Losses = append(s.Losses, t.loss.events...)
		t.mu.Unlock()
	}
	// With once, every partition the run had to copy is reported, also
	// those that another member copied or that were copied already.
	w.tmu.RLock()
	onceEnds := w.onceEnds
	w.tmu.RUnlock()
	for k, end := range onceEnds {
		if _, ok := byKey[k]; ok {
			continue
		}
		next, _ := w.progress.get(k)
		byKey[k] = &PartitionStats{Flow: w.cfg.Name(), Topic: k.topic, RemoteTopic: w.cfg.Policy.FormatRemoteTopic(w.cfg.Source, k.topic),
			Partition: k.partition, Position: next, Acked: next, State: TaskElsewhere, Start: end, End: end}
		order = append(order, k)
	}
	// The skipped total is the progress topic's where no task of this run
	// has taken it over yet (not started, or copied elsewhere).
	if w.progress != nil {
		for k, s := range byKey {
			if v, ok := w.progress.value(k); ok && v.Skipped > s.Skipped {
				s.Skipped = v.Skipped
			}
		}
	}
	out := make([]PartitionStats, 0, len(order))
	for _, k := range order {
		s := byKey[k]
		switch {
		case current[k]:
			s.Owner = owner
		case s.State != TaskElsewhere:
			s.State = TaskReleased
		}
		out = append(out, *s)
	}
	return out
}
