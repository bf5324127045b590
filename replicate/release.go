package replicate

import (
	"context"
	"fmt"
)

// PartitionCloser is implemented by a [PartitionObserver] that wants to know
// when its task ends here (the group moved the partition, or the flow
// stopped): internal/metrics drops the partition's series then, so a
// process exports only the partitions it copies, and a partition assigned
// again starts from a fresh observer.
type PartitionCloser interface {
	Close()
}

// release ends the tasks of parts: each moves to draining (under the
// dispatch lock, so nothing more of it is handed to the producer), its
// partition is closed on the fetch gate (clearing its pauses), its copying
// is drained (in-flight copies acknowledged, exactly-once transactions
// ended), its delayed offset sync is queued and, with handover, its final
// progress is written; then it is released, its observer closed. All of
// it is bounded by the stop budget. A revocation hands over (the next owner
// resumes exactly there); a loss does not write progress (another member
// may own the partition already and be ahead).
func (w *worker) release(ctx context.Context, parts map[string][]int32, handover bool) {
	w.run.dmu.Lock()
	gone := w.tasks.take(parts)
	for _, t := range gone {
		t.to(TaskDraining, w.log)
		t.life.cancel()
	}
	w.run.dmu.Unlock()
	if len(gone) == 0 {
		// A freeze seen after the group took every partition (the lost
		// callback ran first on waking) has no task left to release:
		// it ends here, or the tasks of the next join copy nothing. A
		// release still draining its tasks ends it itself.
		if w.tasks.settled() {
			w.freezeCleared()
		}
		return
	}
	w.gate.close(gone)
	sctx, cancel := w.stop.drainCtx(ctx)
	defer cancel()
	for _, t := range gone {
		select {
		case <-t.life.started:
		case <-sctx.Done():
		}
	}
	w.mode.drain(sctx, gone, handover)
	stuck := 0
	for _, t := range gone {
		if !t.awaitIdle(sctx) {
			stuck++
		}
	}
	if stuck > 0 {
		w.stop.left(fmt.Sprintf("%d released partitions still had copies in flight", stuck))
	}
	// The delayed offset syncs of the released tasks are written now, as
	// MM2 does when a task stops: they are the freshest translation points.
	if w.cfg.EmitOffsetSyncs {
		w.syncs.promote(gone)
	}
	if handover {
		if !w.mode.ownProgress() {
			if err := w.writer.write(sctx, gone); err != nil {
				w.stop.left(fmt.Sprintf("final progress of %d released partitions (the next owner re-copies from the previous one): %v", len(gone), err))
			}
		}
		w.counts.revoked.Add(int64(len(gone)))
	} else {
		w.counts.lost.Add(int64(len(gone)))
	}
	for _, t := range gone {
		t.to(TaskReleased, w.log)
		if c, ok := t.obs.(PartitionCloser); ok {
			c.Close()
		}
		w.log.Info("partition task released", "topic", t.src.topic, "partition", t.src.partition, "position", t.ackedNow(), "progress_written", handover)
	}
	w.tasks.retire(gone)
	if w.tasks.settled() {
		w.freezeCleared()
	}
}

// releaseAll releases every task of the flow (see release).
func (w *worker) releaseAll(ctx context.Context, handover bool) {
	w.release(ctx, w.tasks.parts(), handover)
}
