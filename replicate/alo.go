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

// atLeastOnce is the default delivery mode: every task's copies go to the
// flow's one data producer; an acknowledged copy advances the task's
// position, which the progress writer stores every ProgressInterval
// (control.go). A process that dies copies again, at its next start or in
// the partition's next owner, what was acknowledged after the last
// progress write.
type atLeastOnce struct{ w *worker }

func (a atLeastOnce) attach(_ context.Context, batch []*task) error {
	for _, t := range batch {
		if t.sink != nil || t.State() != TaskStarting {
			continue // attached by an earlier try of the batch's start
		}
		t.sink = a
		t.ack = func(r *kgo.Record, err error) { a.w.onAck(t, r, err) }
	}
	return nil
}

func (atLeastOnce) begin(*task) {}

func (a atLeastOnce) deliver(ctx context.Context, t *task, p *kgo.FetchTopicPartition, now time.Time) {
	a.w.copyRecords(ctx, t, p.Records, p.LogStartOffset, now)
}

func (atLeastOnce) drain(context.Context, []*task, bool) {}

func (atLeastOnce) ownProgress() bool { return false }

func (atLeastOnce) open(*task) bool { return true }

func (a atLeastOnce) send(_ context.Context, t *task, r *kgo.Record, _ int64) {
	a.w.io.data.Produce(a.w.run.sendCtx, r, t.ack)
}

// passMarker counts a marker as acknowledged when nothing is in flight
// before it (otherwise the acknowledgement of the last copy before it
// does, onAck).
func (atLeastOnce) passMarker(t *task, next int64) {
	if t.q.empty() && len(t.fail.refused) == 0 && !t.halted.Load() {
		t.pos.acked = next
	}
}

// onAck is the produce promise of every at-least-once copy. kgo calls
// promises in order per partition, so the front of the task's in-flight
// queue is the upstream offset of r.
//
// A refused produce halts the task: nothing after it counts as copied.
// Kafka refuses whole batches (MESSAGE_TOO_LARGE names the batch, not the
// record), so once the task's in-flight records have all come back the
// refused ones are retried one at a time (see retryRefused) to find the
// record at fault.
func (w *worker) onAck(t *task, r *kgo.Record, err error) {
	t.mu.Lock()
	c := t.q.pop()
	// A task stopped by a loss event (loss.go) produced nothing after it:
	// the copies still in flight before it count.
	if err != nil || t.halted.Load() && t.loss.stop == nil {
		if err != nil && !errors.Is(err, context.Canceled) {
			if !t.halted.Load() {
				t.fail.first = err
			}
			t.fail.refused = append(t.fail.refused, refusedRecord{up: c.up, r: r})
		}
		t.halted.Store(true)
		retry := t.q.empty() && len(t.fail.refused) > 0 && !t.fail.retrying
		if retry {
			t.fail.retrying = true
		}
		t.mu.Unlock()
		if retry {
			w.gate.hold(t, holdRetry)
			w.run.retries.Add(1)
			go w.retryRefused(t)
		}
		return
	}
	was := t.pos.acked
	s, now := w.ackLocked(t, c.up, c.bytes, r)
	if t.q.empty() {
		// Transaction markers after the last copy are handled too.
		if p := t.position.Load(); p > t.pos.acked {
			t.pos.acked = p
		}
	}
	end := t.pos.end >= 0 && was < t.pos.end && t.pos.acked >= t.pos.end // this ack crossed the end
	t.mu.Unlock()
	if w.freeze.suspect.Load() {
		w.freeze.lateCopies.Add(1) // freeze.go
	}
	if end && w.once {
		w.wakeAtEnd()
	}
	if now {
		w.syncs.queue(s)
	}
}

// ackLocked records that the copy of source offset up (a value of n bytes)
// is on the target at r.Offset. t.mu must be held. It returns the offset
// sync to write now, if MM2's rules call for one.
func (w *worker) ackLocked(t *task, up, n int64, r *kgo.Record) (mm2.OffsetSync, bool) {
	t.pos.acked = up + 1
	t.pos.downstream = max(t.pos.downstream, r.Offset+1)
	t.pos.records++
	if t.pos.records == 1 {
		w.writer.firstAck() // control.go: this task's first progress is written soon
	}
	t.pos.bytes += n
	if w.observing {
		t.obs.Acked(len(r.Value), time.Since(r.Timestamp), t.pos.acked)
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
	defer w.run.retries.Add(-1)
	t.mu.Lock()
	recs := t.fail.refused
	t.fail.refused = nil
	firstErr := t.fail.first
	t.mu.Unlock()
	ctx := w.run.ctx
	done := func() {
		t.mu.Lock()
		t.fail.retrying = false
		t.mu.Unlock()
	}
	for _, rr := range recs {
		err := w.io.data.ProduceSync(ctx, rr.r).FirstErr()
		if ctx.Err() != nil {
			done()
			return // stopping: the partition resumes from its progress next run
		}
		if err != nil && remoteGone(err) {
			w.refillDeleted(t, rr.up, err)
			return
		}
		if err != nil {
			size := recordSize(rr.r)
			rerr := &RecordError{
				Flow: w.cfg.Name(), Topic: t.src.topic, RemoteTopic: t.remote, Partition: t.src.partition,
				Offset: rr.up, Size: size, Timestamp: rr.r.Timestamp, Err: err,
			}
			t.mu.Lock()
			t.fail.err = rerr
			t.fail.retrying = false
			t.mu.Unlock()
			w.reportLoss(t, LossEvent{Kind: LossRefused, From: rr.up, To: rr.up, Stopped: true,
				Reason: fmt.Sprintf("the target refused the copy in %s (%d bytes): %v", t.remote, size, err)})
			w.gate.unhold(t, holdRetry) // the stop holds it now
			return
		}
		t.mu.Lock()
		s, now := w.ackLocked(t, rr.up, int64(len(rr.r.Value)), rr.r)
		t.mu.Unlock()
		if now {
			w.syncs.queue(s)
		}
	}
	// Every refused record went through on its own: resume after them.
	t.mu.Lock()
	next := t.pos.acked
	t.fail.first = nil
	t.mu.Unlock()
	w.log.Warn("target refused a batch but took its records one by one; resuming", "topic", t.src.topic, "partition", t.src.partition, "err", firstErr)
	t.position.Store(next)
	t.halted.Store(false)
	done()
	w.gate.seek(t, next, holdRetry)
}

// waitRetries waits until no retryRefused runs; false if ctx ended first.
func (w *worker) waitRetries(ctx context.Context) bool {
	for w.run.retries.Load() > 0 {
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
// partition empty does (start.go). The task is held and reported (a
// target-recreated loss event, never "running" with nothing landing) until
// the flow leader has created the remote topic again (within
// refresh.topics.interval.seconds); then it copies from the log start with
// fresh offset-sync state. It gives up, the task halted, only when the flow
// stops or the task is released. up is the first source offset that was
// not copied.
func (w *worker) refillDeleted(t *task, up int64, cause error) {
	ctx := w.run.ctx
	t.mu.Lock()
	down := t.pos.downstream // kept until the refill starts: a restart before it finds the loss again
	// The start found the remote topic gone and reported it (start.go);
	// nothing was copied since: this is the same loss.
	reported := len(t.loss.events) > 0 && t.loss.events[len(t.loss.events)-1].Kind == LossTargetRecreated && t.pos.records == 0
	t.mu.Unlock()
	if !reported {
		w.reportRemoteGone(t, up, down, cause)
	}
	w.gate.hold(t, holdRefill)
	w.gate.unhold(t, holdRetry)
	var start int64 = -1
	for start < 0 && ctx.Err() == nil && w.tasks.isLive(t) {
		select { // the leader creates the topic at its next refresh, not at once
		case <-ctx.Done():
		case <-time.After(time.Second):
			start = w.refillStart(ctx, t)
		}
	}
	t.mu.Lock()
	t.fail.retrying = false
	t.fail.first = nil
	t.fail.refused = nil
	t.mu.Unlock()
	if start < 0 {
		return // stopping or released: the next start finds the remote partition empty and refills it
	}
	// kgo keeps a topic's first ID and fails it with UNKNOWN_TOPIC_ID for
	// good once it was recreated, also when the deletion was seen first
	// (UNKNOWN_TOPIC_OR_PARTITION: the recreated topic was not created
	// yet); purged, the next produce loads the new one. Other partitions
	// of the topic are failing too and retry (retryRefused), in order.
	w.io.data.PurgeTopicsFromProducing(t.remote)
	t.mu.Lock()
	t.sync = newSyncState() // downstream offsets start again at the new topic's
	t.pos.downstream = 0
	t.mu.Unlock()
	t.resume(start, -1, ResumeLogStart)
	w.log.Info("refilling the remote partition from the source log start", "topic", t.src.topic, "partition", t.src.partition, "remote", t.remote, "resume", start)
	t.halted.Store(false)
	w.gate.seek(t, start, holdRefill)
}

// reportRemoteGone reports the loss of a remote topic found deleted while
// copying: down mirrored records gone (the downstream position), those the
// source no longer holds lost (targetLoss), up the first source offset not
// copied.
func (w *worker) reportRemoteGone(t *task, up, down int64, cause error) {
	ctx := w.run.ctx
	ev := LossEvent{Kind: LossTargetRecreated, From: up, To: up, Gone: down}
	what := "how many of its mirrored records the source still holds is unknown (its log start could not be read)"
	lctx, cancel := context.WithTimeout(ctx, refillLookupBudget)
	if starts, err := w.io.src.ListStartOffsets(lctx, t.src.topic); err == nil {
		if s, ok := starts.Lookup(t.src.topic, t.src.partition); ok && s.Err == nil {
			if tl, _ := targetLoss(t.remote, t.src.partition, down, 0, up, s.Offset); tl != nil {
				ev.Count, ev.From, ev.To = tl.Count, s.Offset, s.Offset
			}
			what = fmt.Sprintf("%d mirrored records gone, %d of them no longer on the source (its log starts at %d)", down, ev.Count, s.Offset)
			if down == 0 {
				what = fmt.Sprintf("how many mirrored records are gone is unknown (the progress predates downstream positions); the source log starts at %d", s.Offset)
			}
		}
	}
	cancel()
	ev.Reason = fmt.Sprintf("the remote topic %s is gone from %s while copying (%v): it was deleted; %s; refilling %s[%d] from the source log start once the flow leader has created it again",
		t.remote, w.cfg.Target, cause, what, t.src.topic, t.src.partition)
	w.reportLoss(t, ev)
}

// refillLookupBudget bounds the look at the source log start when a remote
// topic is found deleted while copying.
const refillLookupBudget = 10 * time.Second

// refillStart returns the source log start of t's partition once the remote
// partition exists again on the target, else -1.
func (w *worker) refillStart(ctx context.Context, t *task) int64 {
	rends, err := w.io.tgt.ListEndOffsets(ctx, t.remote)
	if err != nil {
		return -1
	}
	if re, ok := rends.Lookup(t.remote, t.src.partition); !ok || re.Err != nil {
		return -1
	}
	starts, err := w.io.src.ListStartOffsets(ctx, t.src.topic)
	if err != nil {
		return -1
	}
	s, ok := starts.Lookup(t.src.topic, t.src.partition)
	if !ok || s.Err != nil {
		return -1
	}
	return s.Offset
}
