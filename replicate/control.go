package replicate

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// Control records: offset syncs and progress. They go through the control
// producers, never the data producer, so a control write does not wait
// behind a backlog of copies (and an exactly-once data producer can commit
// copies and progress together without carrying offset syncs).

func (w *worker) queueSync(s mm2.OffsetSync) {
	w.smu.Lock()
	w.syncQ = append(w.syncQ, s)
	w.smu.Unlock()
	select {
	case w.syncWake <- struct{}{}:
	default:
	}
}

// runSyncSender writes queued offset syncs as they come, and promotes the
// delayed ones every OffsetFlushInterval.
func (w *worker) runSyncSender(ctx context.Context) {
	if !w.cfg.EmitOffsetSyncs {
		return
	}
	t := time.NewTicker(w.cfg.OffsetFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.syncWake:
		case <-t.C:
			w.promoteDelayed()
		}
		w.sendSyncs()
	}
}

func (w *worker) promoteDelayed() {
	var promoted []mm2.OffsetSync
	for _, t := range w.allTasks() {
		t.mu.Lock()
		if s, ok := t.sync.flush(t.src.topic, t.src.partition); ok {
			promoted = append(promoted, s)
		}
		t.mu.Unlock()
	}
	if len(promoted) > 0 {
		w.smu.Lock()
		w.syncQ = append(w.syncQ, promoted...)
		w.smu.Unlock()
	}
}

// sendSyncs hands queued syncs to the producer of the offset-syncs cluster,
// in order, partition 0 (MM2 writes only there). Send errors are logged: a
// lost sync only makes translation more conservative.
func (w *worker) sendSyncs() {
	w.smu.Lock()
	q := w.syncQ
	w.syncQ = nil
	w.smu.Unlock()
	for _, s := range q {
		k, err := s.MarshalKey()
		if err != nil {
			w.log.Warn("offset sync not encodable", "topic", s.Topic, "err", err)
			continue
		}
		v, _ := s.MarshalValue()
		w.syncProducer.Produce(w.sendCtx, &kgo.Record{Topic: w.syncTopic, Partition: 0, Key: k, Value: v}, w.onSyncAck)
	}
}

func (w *worker) onSyncAck(_ *kgo.Record, err error) {
	if err != nil && !errors.Is(err, context.Canceled) {
		w.log.Warn("offset sync not written", "topic", w.syncTopic, "err", err)
	}
}

// runProgressWriter writes progress every ProgressInterval, and also
// firstWriteDelay after a task's first acknowledgement, so a process that
// dies within its first interval (a crash loop) still saved how far it got:
// a restart re-copies at most ProgressInterval of acknowledged copies, plus
// what was in flight, whenever it dies.
func (w *worker) runProgressWriter(ctx context.Context) {
	t := time.NewTicker(w.cfg.ProgressInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.firstAck:
			select { // gather the first acknowledgements of the other tasks too
			case <-ctx.Done():
				return
			case <-time.After(firstWriteDelay):
			}
			if err := w.writeProgress(ctx, w.allTasks()); err != nil && ctx.Err() == nil {
				w.log.Warn("progress not written", "err", err)
			}
		case <-t.C:
			if err := w.writeProgress(ctx, w.allTasks()); err != nil && ctx.Err() == nil {
				w.log.Warn("progress not written", "err", err)
			}
		}
	}
}

// firstWriteDelay is how long after a task's first acknowledgement its
// progress is written.
const firstWriteDelay = 20 * time.Millisecond

// writeProgress writes the acknowledged position of each of tasks that moved
// since its last write, with the control producer, and waits for the target
// to acknowledge them. Writes are serialised, so a periodic write never lands
// after (and below) a revocation's final one.
func (w *worker) writeProgress(ctx context.Context, tasks []*task) error {
	w.pmu.Lock()
	defer w.pmu.Unlock()
	type pending struct {
		t    *task
		next int64
	}
	now := w.now()
	var (
		recs []*kgo.Record
		pend []pending
	)
	for _, t := range tasks {
		if t.State() == TaskStarting {
			continue // no resume point yet
		}
		t.mu.Lock()
		if (t.acked > t.written || t.loss.dirty) && t.tx == nil { // exactly-once tasks commit their progress
			r := encodeProgressValue(t.src, t.progressValue(t.acked, now))
			r.Topic = w.progress.topic
			recs = append(recs, r)
			pend = append(pend, pending{t, t.acked})
			t.loss.dirty = false
		}
		t.mu.Unlock()
	}
	if len(recs) == 0 {
		return nil
	}
	results := w.control.ProduceSync(ctx, recs...)
	var errs []error
	for i, res := range results {
		if res.Err != nil {
			errs = append(errs, res.Err)
			pend[i].t.mu.Lock()
			pend[i].t.loss.dirty = true // write it again next time
			pend[i].t.mu.Unlock()
			continue
		}
		p := pend[i]
		p.t.mu.Lock()
		if p.next > p.t.written {
			p.t.written = p.next
		}
		p.t.mu.Unlock()
	}
	return errors.Join(errs...)
}
