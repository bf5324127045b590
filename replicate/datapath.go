package replicate

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The data path of a flow in one process: one direct consumer on the source
// fetches the partitions whose tasks run here (through the fetch gate), and
// every fetched record goes through one copy path, copyRecords, whichever
// the delivery mode: the same checks (offsets already copied, gaps left by
// retention, transaction markers, the remote topic's limits) in the same
// order, then the copy goes to the task's sink: the flow's data producer
// (at-least-once, alo.go) or the task's open transaction (exactly-once,
// eos.go). The modes differ only in how a copy is made durable and where
// the position is written. Control records (progress, offset syncs,
// checkpoints, heartbeats) never go through the data path.

// copySink is where a task's copies go (see above).
type copySink interface {
	// open readies the sink for a run of copies (exactly-once: begins a
	// transaction); false when nothing can be sent (fenced).
	open(t *task) bool
	// send hands one prepared copy, of source offset up, to the
	// producer, with t.ack as its promise.
	send(ctx context.Context, t *task, r *kgo.Record, up int64)
	// passMarker is told that a transaction marker at next-1 was passed:
	// no record to copy. t.mu is held.
	passMarker(t *task, next int64)
}

// copyMode is the flow's delivery mode: what a task needs beyond the copy
// path (alo.go, eos.go).
type copyMode interface {
	// attach readies starting tasks before their progress is read
	// (exactly-once: a transactional producer each, the previous owner
	// fenced) and sets each one's sink.
	attach(ctx context.Context, batch []*task) error
	// begin starts t at its resume point (exactly-once: its transaction
	// loop; also for a task stopped at start, which records its stop).
	begin(t *task)
	// deliver hands one fetch's records of running task t to its copier;
	// the poll goroutine calls it with the dispatch lock held.
	deliver(ctx context.Context, t *task, p *kgo.FetchTopicPartition, now time.Time)
	// drain ends the copying of released tasks, bounded by ctx: what is in
	// flight is acknowledged (or committed, exactly-once; handover says
	// the partition goes to another member rather than was lost).
	drain(ctx context.Context, ts []*task, handover bool)
	// ownProgress reports whether the mode writes task progress itself
	// (exactly-once: in each transaction) rather than the progress writer.
	ownProgress() bool
}

// pollLoop moves records from the source consumer to the tasks until ctx is
// done or, with once, the flow reached the end offsets it had at start (see
// worker.onceDone).
func (w *worker) pollLoop(ctx context.Context) {
	var looked time.Time
	for {
		// The completion check walks every partition: at most every 20 ms,
		// not on every poll of a busy copy, and soon after a task of this
		// process copied its last record (onAck): after a µs per partition
		// since the last walk, so that thousands of tasks ending one after
		// another do not walk thousands of partitions each.
		gap := 20 * time.Millisecond
		if w.once && w.run.atEnd.Load() {
			gap = min(gap, time.Duration(w.tasks.count())*time.Microsecond)
		}
		if w.once && time.Since(looked) >= gap {
			w.run.atEnd.Store(false)
			if w.onceDone(ctx) {
				return
			}
			looked, gap = time.Now(), 20*time.Millisecond
		}
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if w.once {
			// Wake up to look again at the flow's progress, which other
			// members write (wakeAtEnd cancels the poll).
			pctx, cancel = context.WithTimeout(ctx, max(gap-time.Since(looked), 0))
			w.run.pollCancel.Store(&cancel)
			if w.run.atEnd.Load() && time.Since(looked) >= time.Duration(w.tasks.count())*time.Microsecond {
				cancel()
			}
		}
		fetches := w.io.consumer.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		fetches.EachError(w.fetchError) // topicid.go
		w.dispatch(ctx, fetches)
	}
}

// dispatch hands one poll's records to the tasks. It holds the dispatch
// lock, so a release (which takes it to move a task to draining) never races
// a record of the task it releases: once the release has the lock, nothing
// more of that partition is handed over.
func (w *worker) dispatch(ctx context.Context, fetches kgo.Fetches) {
	w.run.dmu.Lock()
	defer w.run.dmu.Unlock()
	var now time.Time
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		if len(p.Records) == 0 {
			return
		}
		t := w.tasks.get(p.Topic, p.Partition)
		if t == nil || !t.copying() {
			return // not ours (any more), or halted: the owner resumes from progress
		}
		if now.IsZero() {
			now = time.Now()
			if w.freeze.frozen(now) {
				w.freezeDetected(now) // freeze.go: copy nothing more until the group is joined again
			}
		}
		if w.freeze.suspect.Load() {
			return
		}
		if w.observing {
			t.obs.Fetched(p.HighWatermark)
		}
		t.mu.Lock()
		t.pos.sourceEnd = max(t.pos.sourceEnd, p.HighWatermark) // progress records carry it (loss.go)
		t.mu.Unlock()
		w.mode.deliver(ctx, t, &p, now)
	})
}

// copyRecords is the copy path of both modes: it hands recs (one fetch of
// t's partition, whose log start was logStart) to t's sink, in order, from
// the task's position on. Runs of copies are handed over together: their
// upstream offsets go into the in-flight queue under one lock (before any of
// them is produced, as the promise pops them), and the position moves once
// per run, rather than this goroutine and the producer's promise goroutine
// writing the task's lock and position in turn for every record. A
// transaction marker, a gap, a refusal or the task's halt ends a run: what
// was collected before it is sent first, so every event sees the queue and
// position as if the records were handed over one by one.
//
// A run is a contiguous part of recs (nothing inside one is left out), at
// most copyRun records long: its records are read by the checks, then
// queued, then prepared and produced, and a short run is still in the CPU
// cache for the later passes where a whole fetch (10,000 records of 100 B)
// is not. now is the producer's clock for the limits preflight.
func (w *worker) copyRecords(ctx context.Context, t *task, recs []*kgo.Record, logStart int64, now time.Time) {
	pos := t.position.Load()
	lo := 0 // recs[lo:i] is the run collected so far
	flush := func(i int) bool {
		run := recs[lo:i]
		lo = i
		if len(run) == 0 {
			return true
		}
		if !t.sink.open(t) {
			return false
		}
		t.mu.Lock()
		for _, r := range run {
			t.q.push(r.Offset, len(r.Value))
		}
		t.mu.Unlock()
		for _, r := range run {
			if w.observing {
				t.obs.Polled(len(r.Value), now.Sub(r.Timestamp))
			}
			up := r.Offset
			prepareCopy(r, t)
			t.sink.send(ctx, t, r, up)
		}
		t.position.Store(pos)
		return true
	}
	for i, r := range recs {
		if t.halted.Load() {
			flush(i)
			return
		}
		if r.Offset < pos {
			if !flush(i) {
				return
			}
			lo = i + 1 // buffered before this assignment started
			continue
		}
		if i-lo == copyRun && !flush(i) {
			return
		}
		if r.Offset > pos && logStart > pos {
			// The log start passed the position while copying: the
			// offsets between were deleted before they were copied.
			// (Compaction leaves offset holes too, but never moves the
			// log start.)
			if !flush(i) {
				return
			}
			to := min(r.Offset, logStart)
			w.reportLoss(t, LossEvent{Kind: LossGap, From: pos, To: to, Stopped: w.cfg.StopOnGap, Reason: gapReason(w.cfg.StopOnGap, to)})
			if t.halted.Load() {
				return
			}
		}
		next := r.Offset + 1
		if r.Attrs.IsControl() {
			// A transaction marker is no record to copy.
			if !flush(i) {
				return
			}
			lo = i + 1
			t.mu.Lock()
			t.sink.passMarker(t, next)
			pos = next
			t.position.Store(next)
			t.mu.Unlock()
			continue
		}
		if stop := w.admit(t, r, now); stop != nil {
			flush(i)
			stop() // nothing of r or after it is sent
			return
		}
		pos = next
	}
	flush(len(recs))
}

// admit runs the checks a record passes before it joins a run: the ring
// check (ring.go), then, stamped when the flow stamps (the header counts in
// the copy's size), the remote topic's limits (limits.go). It returns nil,
// or the stop to report once what was collected before r is sent.
func (w *worker) admit(t *task, r *kgo.Record, now time.Time) (stop func()) {
	if w.ring.closesRing(r) {
		return func() { w.stopAtRing(t, r) }
	}
	w.ring.stampCopy(r)
	if err := w.preflight(t, r, now); err != nil {
		return func() { w.refuseBefore(t, r, err) }
	}
	return nil
}

// copyRun bounds a run of copyRecords, in records.
const copyRun = 256

// wakeAtEnd has the poll loop look at once whether the run is done: a task
// copied the last record it had to (Once).
func (w *worker) wakeAtEnd() {
	w.run.atEnd.Store(true)
	if c := w.run.pollCancel.Load(); c != nil {
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
