package replicate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// The data path of a flow in one process: one direct consumer on the source
// fetches the partitions whose tasks run here, one data producer on the
// target writes their copies, and the produce promises do the
// acknowledgement bookkeeping. Control records (progress, offset syncs,
// checkpoints, heartbeats) never go through the data producer.

// pollLoop moves records from the source consumer to the data producer until
// ctx is done or, with once, the flow reached the end offsets it had at
// start (see worker.onceDone).
func (w *worker) pollLoop(ctx context.Context) {
	var looked time.Time
	for {
		// The completion check walks every partition: at most every 20 ms,
		// not on every poll of a busy copy, and at once when a task of
		// this process copied its last record (onAck).
		if w.once && (w.atEnd.Swap(false) || time.Since(looked) >= 20*time.Millisecond) {
			if w.onceDone(ctx) {
				return
			}
			looked = time.Now()
		}
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if w.once {
			// Wake up to look again at the flow's progress, which other
			// members write.
			pctx, cancel = context.WithTimeout(ctx, 20*time.Millisecond)
			w.pollCancel.Store(&cancel)
			if w.atEnd.Load() {
				cancel()
			}
		}
		fetches := w.consumer.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		fetches.EachError(w.fetchError) // topicid.go
		w.dispatch(ctx, fetches)
	}
}

// dispatch hands one poll's records to the data producer. It holds w.dmu, so
// a revocation (which takes w.dmu to stop a task) never races a record of
// the task it stops: after the revocation has the lock, nothing more of that
// partition is produced.
func (w *worker) dispatch(ctx context.Context, fetches kgo.Fetches) {
	w.dmu.Lock()
	defer w.dmu.Unlock()
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		if len(p.Records) == 0 {
			return
		}
		t := w.task(p.Topic, p.Partition)
		if t == nil || t.State() != TaskRunning {
			return // not ours (any more): the owner resumes from progress
		}
		var now time.Time
		if w.observing || t.limits != nil {
			now = time.Now()
		}
		if w.observing {
			t.obs.Fetched(p.HighWatermark)
		}
		if t.tx != nil {
			t.tx.enqueue(p.Records) // exactly-once: the task's transaction loop copies them (eos.go)
			return
		}
		w.copyRecords(ctx, t, p, now)
	})
}

// copyRecords hands one fetched partition's records to the data producer, in
// order, from the task's position on. Runs of copies are handed over
// together: their upstream offsets go into the in-flight queue under one
// lock (before any of them is produced, as onAck pops them), and the
// position moves once per run, rather than this goroutine and the
// producer's promise goroutine writing the task's lock and position in turn
// for every record. A transaction marker, a gap, a refusal or the task's
// halt ends a run: what was collected before it is produced first, so every
// event sees the queue and position as if the records were handed over one
// by one.
//
// A run is a contiguous part of p.Records (nothing inside one is left out),
// at most copyRun records long: its records are read by the checks, then
// queued, then prepared and produced, and a short run is still in the CPU
// cache for the later passes where a whole fetch (10,000 records of 100 B)
// is not.
func (w *worker) copyRecords(ctx context.Context, t *task, p kgo.FetchTopicPartition, now time.Time) {
	pos := t.position.Load()
	recs := p.Records
	lo := 0 // recs[lo:i] is the run collected so far
	flush := func(i int) {
		run := recs[lo:i]
		lo = i
		if len(run) == 0 {
			return
		}
		t.mu.Lock()
		for _, r := range run {
			t.push(r.Offset, len(r.Value))
		}
		t.mu.Unlock()
		for _, r := range run {
			if w.observing {
				t.obs.Polled(len(r.Value), now.Sub(r.Timestamp))
			}
			prepareCopy(r, t)
			w.data.Produce(ctx, r, t.ack)
		}
		t.position.Store(pos)
	}
	for i, r := range recs {
		if t.halted.Load() {
			flush(i)
			return
		}
		if r.Offset < pos {
			flush(i)
			lo = i + 1 // buffered before this assignment started
			continue
		}
		if i-lo == copyRun {
			flush(i)
		}
		if r.Offset > pos && p.LogStartOffset > pos {
			// The log start passed the position while copying: the
			// offsets between were deleted before they were copied.
			// (Compaction leaves offset holes too, but never moves the
			// log start.)
			flush(i)
			to := min(r.Offset, p.LogStartOffset)
			w.reportLoss(t, LossEvent{Kind: LossGap, From: pos, To: to, Stopped: w.cfg.StopOnGap, Reason: gapReason(w.cfg.StopOnGap, to)})
			if t.halted.Load() {
				return
			}
		}
		next := r.Offset + 1
		if r.Attrs.IsControl() {
			// A transaction marker is no record to copy: with nothing in
			// flight it is handled at once.
			flush(i)
			lo = i + 1
			t.mu.Lock()
			if t.head == len(t.inflight) && len(t.refused) == 0 && !t.halted.Load() {
				t.acked = next
			}
			pos = next
			t.position.Store(next)
			t.mu.Unlock()
			continue
		}
		if err := w.preflight(t, r, now); err != nil {
			flush(i)
			w.refuseBefore(t, r, err) // limits.go: stops here, nothing after r is sent
			return
		}
		pos = next
	}
	flush(len(recs))
}

// copyRun bounds a run of copyRecords, in records.
const copyRun = 256

// wakeAtEnd has the poll loop look at once whether the run is done: a task
// copied the last record it had to (Once).
func (w *worker) wakeAtEnd() {
	w.atEnd.Store(true)
	if c := w.pollCancel.Load(); c != nil {
		(*c)()
	}
}

// prepareCopy turns a fetched source record into its copy for the target, in
// place: same partition, key, value, headers and timestamp (MM2
// MirrorSourceTask.convertRecord). A source timestamp of -1 lets the producer
// stamp the current time, as MM2 does.
func prepareCopy(r *kgo.Record, t *task) {
	r.Topic = t.remote
	r.Attrs = kgo.RecordAttrs{}
	r.ProducerEpoch, r.ProducerID, r.LeaderEpoch = 0, 0, 0
	if r.Timestamp.UnixMilli() < 0 {
		r.Timestamp = time.Time{}
	}
}

// onAck is the produce promise of every copied record. kgo calls promises in
// order per partition, so the front of the task's in-flight queue is the
// upstream offset of r.
//
// A refused produce halts the task: nothing after it counts as copied.
// Kafka refuses whole batches (MESSAGE_TOO_LARGE names the batch, not the
// record), so once the task's in-flight records have all come back the
// refused ones are retried one at a time (see retryRefused) to find the
// record at fault.
func (w *worker) onAck(t *task, r *kgo.Record, err error) {
	t.mu.Lock()
	c := t.pop()
	up := c.up
	// A task stopped by a loss event (loss.go) produced nothing after it:
	// the copies still in flight before it count.
	if err != nil || t.halted.Load() && t.loss.stop == nil {
		if err != nil && !errors.Is(err, context.Canceled) {
			if !t.halted.Load() {
				t.firstErr = err
			}
			t.refused = append(t.refused, refusedRecord{up: up, r: r})
		}
		t.halted.Store(true)
		retry := t.head == len(t.inflight) && len(t.refused) > 0 && !t.retrying
		if retry {
			t.retrying = true
		}
		t.mu.Unlock()
		if retry {
			w.consumer.PauseFetchPartitions(map[string][]int32{t.src.topic: {t.src.partition}})
			w.retries.Add(1)
			go w.retryRefused(t)
		}
		return
	}
	was := t.acked
	s, now := w.ackLocked(t, up, c.bytes, r)
	if t.head == len(t.inflight) {
		// Transaction markers after the last copy are handled too.
		if p := t.position.Load(); p > t.acked {
			t.acked = p
		}
	}
	end := t.end >= 0 && was < t.end && t.acked >= t.end // this ack crossed the end
	t.mu.Unlock()
	if end && w.once {
		w.wakeAtEnd()
	}
	if now {
		w.queueSync(s)
	}
}

// ackLocked records that the copy of source offset up (a value of n bytes)
// is on the target at r.Offset. t.mu must be held. It returns the offset sync to write now, if
// MM2's rules call for one.
func (w *worker) ackLocked(t *task, up, n int64, r *kgo.Record) (mm2.OffsetSync, bool) {
	t.acked = up + 1
	t.records++
	if t.records == 1 {
		select { // runProgressWriter writes this task's first progress soon
		case w.firstAck <- struct{}{}:
		default:
		}
	}
	t.bytes += n
	if w.observing {
		t.obs.Acked(len(r.Value), time.Since(r.Timestamp), t.acked)
	}
	if !w.cfg.EmitOffsetSyncs {
		return mm2.OffsetSync{}, false
	}
	return t.sync.update(t.src.topic, t.src.partition, up, r.Offset, w.cfg.OffsetLagMax)
}

// retryRefused produces a halted task's refused records one at a time, in
// order. Those that now succeed count as copied; the first one refused on its
// own is the record at fault: the task stops with a [RecordError] naming it.
// If every record goes through (the batch, not a record, was the problem),
// the task resumes after them.
func (w *worker) retryRefused(t *task) {
	defer w.retries.Add(-1)
	t.mu.Lock()
	recs := t.refused
	t.refused = nil
	firstErr := t.firstErr
	t.mu.Unlock()
	ctx := w.retryCtx
	done := func() {
		t.mu.Lock()
		t.retrying = false
		t.mu.Unlock()
	}
	for _, rr := range recs {
		err := w.data.ProduceSync(ctx, rr.r).FirstErr()
		if ctx.Err() != nil {
			done()
			return // stopping: the partition resumes from its progress next run
		}
		if err != nil && remoteGone(err) {
			w.refillDeleted(t, rr.up, err)
			return
		}
		if err != nil {
			size := len(rr.r.Key) + len(rr.r.Value)
			for _, h := range rr.r.Headers {
				size += len(h.Key) + len(h.Value)
			}
			rerr := &RecordError{
				Flow: w.cfg.Name(), Topic: t.src.topic, RemoteTopic: t.remote, Partition: t.src.partition,
				Offset: rr.up, Size: size, Timestamp: rr.r.Timestamp, Err: err,
			}
			t.mu.Lock()
			t.err = rerr
			t.retrying = false
			t.mu.Unlock()
			t.state.Store(TaskStopped)
			w.reportLoss(t, LossEvent{Kind: LossRefused, From: rr.up, To: rr.up, Stopped: true,
				Reason: fmt.Sprintf("the target refused the copy in %s (%d bytes): %v", t.remote, size, err)})
			return
		}
		t.mu.Lock()
		s, now := w.ackLocked(t, rr.up, int64(len(rr.r.Value)), rr.r)
		t.mu.Unlock()
		if now {
			w.queueSync(s)
		}
	}
	// Every refused record went through on its own: resume after them.
	t.mu.Lock()
	next := t.acked
	t.firstErr = nil
	t.mu.Unlock()
	w.log.Warn("target refused a batch but took its records one by one; resuming", "topic", t.src.topic, "partition", t.src.partition, "err", firstErr)
	w.consumer.SetOffsets(map[string]map[int32]kgo.EpochOffset{t.src.topic: {t.src.partition: {Epoch: -1, Offset: next}}})
	t.position.Store(next)
	t.halted.Store(false)
	done()
	w.consumer.ResumeFetchPartitions(map[string][]int32{t.src.topic: {t.src.partition}})
}

// waitRetries waits until no retryRefused runs; false if ctx ended first.
func (w *worker) waitRetries(ctx context.Context) bool {
	for w.retries.Load() > 0 {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
	return true
}

// remoteGone reports whether a produce error says the remote topic is gone
// from the target: deleted (UNKNOWN_TOPIC_OR_PARTITION), or deleted and
// created again under a new topic ID (UNKNOWN_TOPIC_ID).
func remoteGone(err error) bool {
	return errors.Is(err, kerr.UnknownTopicID) || errors.Is(err, kerr.UnknownTopicOrPartition)
}

// refillDeleted handles a remote topic deleted while the task ran: the
// target no longer holds what progress says was copied, so the partition is
// refilled from the source log start, as a start finding the remote
// partition empty does (worker.go). The task is halted and reported (a
// target-recreated loss event, never "running" with nothing landing) until
// the flow leader has created the remote topic again (within
// refresh.topics.interval.seconds); then it copies from the log start with
// fresh offset-sync state. It gives up, the task stopped, only when the flow
// stops. up is the first source offset that was not copied.
func (w *worker) refillDeleted(t *task, up int64, cause error) {
	ctx := w.retryCtx
	w.reportLoss(t, LossEvent{Kind: LossTargetRecreated, From: up, To: up,
		Reason: fmt.Sprintf("the remote topic %s is gone from %s while copying (%v): it was deleted; refilling %s[%d] from the source log start once the flow leader has created it again",
			t.remote, w.cfg.Target, cause, t.src.topic, t.src.partition)})
	var start int64 = -1
	for start < 0 && ctx.Err() == nil {
		select { // the leader creates the topic at its next refresh, not at once
		case <-ctx.Done():
		case <-time.After(time.Second):
			start = w.refillStart(ctx, t)
		}
	}
	t.mu.Lock()
	t.retrying = false
	t.firstErr = nil
	t.refused = nil
	t.mu.Unlock()
	if ctx.Err() != nil {
		return // stopping: the next start finds the remote partition empty and refills it
	}
	// kgo keeps a topic's first ID and fails it with UNKNOWN_TOPIC_ID for
	// good once it was recreated; purged, the next produce loads the new
	// one. Other partitions of the topic are failing too and retry
	// (retryRefused), in order.
	if errors.Is(cause, kerr.UnknownTopicID) {
		w.data.PurgeTopicsFromProducing(t.remote)
	}
	t.mu.Lock()
	t.sync = newSyncState() // downstream offsets start again at the new topic's
	t.mu.Unlock()
	t.resume(start, -1, ResumeLogStart)
	w.log.Info("refilling the remote partition from the source log start", "topic", t.src.topic, "partition", t.src.partition, "remote", t.remote, "resume", start)
	w.consumer.SetOffsets(map[string]map[int32]kgo.EpochOffset{t.src.topic: {t.src.partition: {Epoch: -1, Offset: start}}})
	t.halted.Store(false)
	w.consumer.ResumeFetchPartitions(map[string][]int32{t.src.topic: {t.src.partition}})
}

// refillStart returns the source log start of t's partition once the remote
// partition exists again on the target, else -1.
func (w *worker) refillStart(ctx context.Context, t *task) int64 {
	rends, err := w.tgt.ListEndOffsets(ctx, t.remote)
	if err != nil {
		return -1
	}
	if re, ok := rends.Lookup(t.remote, t.src.partition); !ok || re.Err != nil {
		return -1
	}
	starts, err := w.src.ListStartOffsets(ctx, t.src.topic)
	if err != nil {
		return -1
	}
	s, ok := starts.Lookup(t.src.topic, t.src.partition)
	if !ok || s.Err != nil {
		return -1
	}
	return s.Offset
}
