package replicate

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// Control records: offset syncs and progress. They go through the control
// producers, never the data producer, so a control write does not wait
// behind a backlog of copies (and an exactly-once data producer can commit
// copies and progress together without carrying offset syncs).

// syncSender writes a flow's offset syncs, in order, to partition 0 of the
// offset-syncs topic (MM2 writes only there): immediate ones as they come,
// delayed ones every OffsetFlushInterval and when a task is released
// (MM2's OffsetSyncWriter, offsetsync.go).
type syncSender struct {
	cfg   FlowConfig
	log   *slog.Logger
	prod  *kgo.Client // the control producer, or the source's when the topic is there
	topic string
	mu    sync.Mutex // guards q
	q     []mm2.OffsetSync
	wake  chan struct{}
}

func newSyncSender(cfg FlowConfig, log *slog.Logger) *syncSender {
	return &syncSender{cfg: cfg, log: log, wake: make(chan struct{}, 1)}
}

func (s *syncSender) queue(syncs ...mm2.OffsetSync) {
	if len(syncs) == 0 {
		return
	}
	s.mu.Lock()
	s.q = append(s.q, syncs...)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run writes queued syncs as they come, and promotes the delayed ones of
// tasks every OffsetFlushInterval, until ctx ends.
func (s *syncSender) run(ctx context.Context, tasks *taskSet) {
	if !s.cfg.EmitOffsetSyncs {
		return
	}
	t := time.NewTicker(s.cfg.OffsetFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-t.C:
			s.promote(tasks.all())
		}
		s.send()
	}
}

// promote queues the delayed sync of each of ts.
func (s *syncSender) promote(ts []*task) {
	var promoted []mm2.OffsetSync
	for _, t := range ts {
		t.mu.Lock()
		if sync, ok := t.sync.flush(t.src.topic, t.src.partition); ok {
			promoted = append(promoted, sync)
		}
		t.mu.Unlock()
	}
	s.queue(promoted...)
}

// send hands the queued syncs to the producer. Send errors are logged: a
// lost sync only makes translation more conservative. The records are
// produced without a deadline of their own: the final flush, bounded by
// the stop budget, is what waits for them.
func (s *syncSender) send() {
	s.mu.Lock()
	q := s.q
	s.q = nil
	s.mu.Unlock()
	for _, sync := range q {
		k, err := sync.MarshalKey()
		if err != nil {
			s.log.Warn("offset sync not encodable", "topic", sync.Topic, "err", err)
			continue
		}
		v, _ := sync.MarshalValue()
		s.prod.Produce(context.Background(), &kgo.Record{Topic: s.topic, Partition: 0, Key: k, Value: v}, s.onAck)
	}
}

func (s *syncSender) onAck(_ *kgo.Record, err error) {
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, kgo.ErrClientClosed) {
		s.log.Warn("offset sync not written", "topic", s.topic, "err", err)
	}
}

// progressWriter writes the acknowledged positions of at-least-once tasks
// to the flow's progress topic with the control producer: every
// ProgressInterval, firstWriteDelay after a task's first acknowledgement
// (so a process that dies within its first interval, a crash loop, still
// saved how far it got), when a task is released and at the stop. Writes
// are serialised, so a periodic write never lands after (and below) a
// release's final one. Exactly-once tasks commit their progress in their
// transactions (eos.go).
type progressWriter struct {
	cfg   FlowConfig
	log   *slog.Logger
	now   func() time.Time
	prod  *kgo.Client
	topic string
	mu    sync.Mutex // serialises writes
	first chan struct{}
	// frozen reports a freeze at a time (freeze.go): a periodic write is
	// left out then; nil never.
	frozen func(time.Time) bool
}

func newProgressWriter(cfg FlowConfig, log *slog.Logger, now func() time.Time) *progressWriter {
	return &progressWriter{cfg: cfg, log: log, now: now, topic: ProgressTopic(cfg.Policy, cfg.Source), first: make(chan struct{}, 1)}
}

// firstAck wakes the writer: a task acknowledged its first copy.
func (p *progressWriter) firstAck() {
	select {
	case p.first <- struct{}{}:
	default:
	}
}

// firstWriteDelay is how long after a task's first acknowledgement its
// progress is written.
const firstWriteDelay = 20 * time.Millisecond

// run writes the progress of tasks until ctx ends.
func (p *progressWriter) run(ctx context.Context, tasks *taskSet) {
	t := time.NewTicker(p.cfg.ProgressInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.first:
			select { // gather the first acknowledgements of the other tasks too
			case <-ctx.Done():
				return
			case <-time.After(firstWriteDelay):
			}
		case <-t.C:
		}
		if p.frozen != nil && p.frozen(p.now()) {
			continue // the tasks are released without progress (freeze.go)
		}
		if err := p.write(ctx, tasks.all()); err != nil && ctx.Err() == nil {
			p.log.Warn("progress not written", "err", err)
		}
	}
}

// write writes the position of each of ts that moved (or whose loss record
// changed) since its last write, and waits for the target to acknowledge
// them. Tasks still starting have no resume point yet and are left out.
func (p *progressWriter) write(ctx context.Context, ts []*task) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	type pending struct {
		t    *task
		next int64
	}
	now := p.now()
	var (
		recs []*kgo.Record
		pend []pending
	)
	for _, t := range ts {
		if t.State() == TaskStarting {
			continue
		}
		t.mu.Lock()
		if t.pos.acked > t.pos.written || t.loss.dirty {
			r := encodeProgressValue(t.src, t.progressValue(t.pos.acked, now))
			r.Topic = p.topic
			recs = append(recs, r)
			pend = append(pend, pending{t, t.pos.acked})
			t.loss.dirty = false
		}
		t.mu.Unlock()
	}
	if len(recs) == 0 {
		return nil
	}
	results := p.prod.ProduceSync(ctx, recs...)
	var errs []error
	for i, res := range results {
		pt := pend[i]
		pt.t.mu.Lock()
		if res.Err != nil {
			errs = append(errs, res.Err)
			pt.t.loss.dirty = true // write it again next time
		} else if pt.next > pt.t.pos.written {
			pt.t.pos.written = pt.next
		}
		pt.t.mu.Unlock()
	}
	return errors.Join(errs...)
}
