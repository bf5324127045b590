package replicate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// Exactly-once mode ([FlowConfig].ExactlyOnce, MM2's
// <target>.exactly.once.source.support = enabled).
//
// The flow's group lives on the SOURCE, so its generation cannot fence a
// producer on the TARGET (KIP-447's group-fenced commits need the group and
// the transaction on one cluster). Fencing comes from the transactional id
// instead: every partition task copies through a transactional producer of
// its own whose id names the partition, GroupID-<topic>-<partition>
// ([TransactionalID]). A new owner's InitProducerID bumps that id's epoch,
// which aborts whatever the previous owner left open and makes every later
// produce or commit of the previous owner fail (PRODUCER_FENCED). Only then
// does the new owner read the progress topic, so the position it resumes
// from is final: no earlier epoch can commit past it.
//
// A task's transaction holds its copies and one progress record naming the
// next source offset after them; it commits every TransactionInterval (and
// at a handover). The progress view and every other reader read committed,
// so a crash anywhere leaves, on the target, the copies of exactly the
// source offsets below the committed progress. Offset syncs are computed
// from the copies' target offsets but written only after the transaction
// that holds them commits (on the control producer, or the source's), so
// no sync names an aborted copy; a sync lost in a crash only makes
// translation coarser, as in at-least-once mode.
//
// A transaction the target refuses (a record too large, ...) is aborted and
// its copies are produced again in a new one; the third refusal in a row at
// the same position stops the partition with a [RecordError] naming the
// first refused record. A fenced task copies nothing more: the group takes
// the partition away (this process lost it); if it has not within two
// session timeouts, the flow stops with the error.

// TransactionalID is the transactional id of the exactly-once task copying
// topic[partition] of the flow with the given group id:
// "<group>-<topic>-<partition>".
func TransactionalID(group, topic string, partition int32) string {
	return fmt.Sprintf("%s-%s-%d", group, topic, partition)
}

// TransactionObserver is an optional [Observer] extension: an Observer that
// implements it is told of every transaction an exactly-once task ends.
type TransactionObserver interface {
	// TransactionEnded reports a transaction committed (true) or aborted
	// (false, also when fenced) on the target.
	TransactionEnded(source, target string, committed bool)
}

// eosQueueMax is the most fetched records an exactly-once task holds before
// its partition's fetching pauses (and resumes below half of it).
const eosQueueMax = 20000

// eosMaxAborts is how many aborts in a row at one position stop a task.
const eosMaxAborts = 3

// txTask is the exactly-once side of one task.
type txTask struct {
	w    *worker
	t    *task
	id   string
	prod *kgo.Client

	wake chan struct{}
	stop chan struct{} // closed by release
	done chan struct{} // closed when run returns
	// handover: at stop, commit what is open (a revocation) rather than
	// abandon it (a loss).
	handover bool

	qmu    sync.Mutex
	q      []*kgo.Record
	paused bool

	// Owned by run.
	next      int64         // next source offset to copy
	committed int64         // progress of the last commit
	open      bool          // a transaction is open
	began     time.Time     // when it opened, or the last commit
	recs      []*kgo.Record // copies of the open transaction, for a retry
	ups       []int64       // their source offsets
	started   atomic.Bool   // run was started
	aborts    int           // aborts in a row at the same position
	fenced    bool
	finishing bool // finish runs: an abort copies nothing again
}

// txState, on the task (guarded by t.mu), is what the produce promises of
// the open transaction gather until it commits.
type txState struct {
	err     error       // the first refused copy's error
	bad     int64       // its source offset
	badRec  *kgo.Record // and the record
	sync    syncState   // t.sync advanced by the open transaction's copies
	syncs   []mm2.OffsetSync
	records int64
	bytes   int64
}

// CheckTransactions fails with a *SettingError when the target's brokers do
// not all support transactions (InitProducerID, AddPartitionsToTxn, EndTxn),
// or with the request's error. replicate runs it at the start of an
// exactly-once flow, --dry-run too.
func CheckTransactions(ctx context.Context, cfg FlowConfig, tgt *kadm.Client) error {
	vs, err := tgt.ApiVersions(ctx)
	if err != nil {
		return fmt.Errorf("flow %s: api versions of %s: %w", cfg.Name(), cfg.Target, err)
	}
	var missing error
	vs.Each(func(v kadm.BrokerApiVersions) {
		if v.Err != nil {
			if missing == nil {
				missing = fmt.Errorf("flow %s: api versions of broker %d of %s: %w", cfg.Name(), v.NodeID, cfg.Target, v.Err)
			}
			return
		}
		for _, key := range []int16{22, 24, 26} { // InitProducerID, AddPartitionsToTxn, EndTxn
			if _, ok := v.KeyMaxVersion(key); !ok {
				missing = &SettingError{Cluster: cfg.Target, Key: cfg.Target + ".exactly.once.source.support",
					Msg: fmt.Sprintf("enabled, but broker %d of %s does not support transactions (no API key %d); set disabled, or upgrade the target", v.NodeID, cfg.Target, key)}
				return
			}
		}
	})
	return missing
}

// initTransactions gives each starting task of batch its transactional
// producer and fences the id's previous epoch (InitProducerID), in parallel.
// It runs before the progress is read: see the comment at the top.
func (w *worker) initTransactions(ctx context.Context, batch []*task) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for _, t := range batch {
		if t.tx != nil || t.State() != TaskStarting {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			x, err := w.newTxTask(ctx, t)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			t.mu.Lock()
			if t.State() == TaskStarting {
				t.tx, x = x, nil
			}
			t.mu.Unlock()
			if x != nil {
				x.prod.Close() // revoked meanwhile
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (w *worker) newTxTask(ctx context.Context, t *task) (*txTask, error) {
	id := TransactionalID(w.cfg.GroupID, t.src.topic, t.src.partition)
	prod, err := w.clients.Client(w.cfg.Target, RoleProducer, kgo.TransactionalID(id),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(0),
		kgo.ConcurrentTransactionsBackoff(5*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("flow %s: transactional producer %s on %s: %w", w.cfg.Name(), id, w.cfg.Target, err)
	}
	if _, _, err := prod.ProducerID(ctx); err != nil {
		prod.Close()
		return nil, fmt.Errorf("flow %s: init transactional id %s on %s: %w", w.cfg.Name(), id, w.cfg.Target, err)
	}
	return &txTask{w: w, t: t, id: id, prod: prod, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}, nil
}

// startTx starts the task's transaction loop at its resume point.
func (x *txTask) start(resume int64) {
	x.next, x.committed, x.began = resume, resume, time.Now()
	x.started.Store(true)
	go x.run()
}

// enqueue takes a fetch's records for the task (the poll goroutine, under
// w.dmu); past eosQueueMax queued records the partition stops fetching.
func (x *txTask) enqueue(recs []*kgo.Record) {
	x.qmu.Lock()
	x.q = append(x.q, recs...)
	pause := len(x.q) > eosQueueMax && !x.paused
	if pause {
		x.paused = true
	}
	x.qmu.Unlock()
	if pause {
		x.w.consumer.PauseFetchPartitions(map[string][]int32{x.t.src.topic: {x.t.src.partition}})
	}
	select {
	case x.wake <- struct{}{}:
	default:
	}
}

func (x *txTask) take() []*kgo.Record {
	x.qmu.Lock()
	q := x.q
	x.q = nil
	resume := x.paused
	x.paused = false
	x.qmu.Unlock()
	if resume {
		x.w.consumer.ResumeFetchPartitions(map[string][]int32{x.t.src.topic: {x.t.src.partition}})
	}
	return q
}

func (x *txTask) run() {
	defer close(x.done)
	ctx := context.WithoutCancel(x.w.retryCtx)
	tick := time.NewTicker(max(x.w.cfg.TransactionInterval/4, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-x.stop:
			x.finish(ctx)
			return
		case <-x.wake:
		case <-tick.C:
		}
		if x.fenced || x.t.halted.Load() {
			x.take() // drop: nothing more is copied here
			continue
		}
		for _, r := range x.take() {
			x.copy(ctx, r)
		}
		if time.Since(x.began) >= x.w.cfg.TransactionInterval {
			x.commit(ctx)
		}
	}
}

// copy produces r's copy into the open transaction (opening one).
func (x *txTask) copy(ctx context.Context, r *kgo.Record) {
	t := x.t
	if r.Offset < x.next {
		return // buffered before this assignment started
	}
	next := r.Offset + 1
	if r.Attrs.IsControl() {
		x.next = next
		t.position.Store(next)
		return
	}
	if !x.begin() {
		return
	}
	if x.w.observing {
		t.obs.Polled(len(r.Value), time.Since(r.Timestamp))
	}
	prepareCopy(r, t)
	x.recs = append(x.recs, r)
	x.ups = append(x.ups, r.Offset)
	t.mu.Lock()
	t.push(r.Offset, len(r.Value))
	t.mu.Unlock()
	x.prod.Produce(ctx, r, t.ack)
	x.next = next
	t.position.Store(next)
}

func (x *txTask) begin() bool {
	if x.open {
		return true
	}
	if err := x.prod.BeginTransaction(); err != nil {
		x.fence(err)
		return false
	}
	x.open = true
	return true
}

// onTxnAck is the produce promise of an exactly-once copy: the record is in
// the open transaction, not yet committed.
func (w *worker) onTxnAck(t *task, r *kgo.Record, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.pop()
	up := c.up
	ts := &t.txs
	if err != nil {
		if ts.err == nil {
			ts.err, ts.bad, ts.badRec = err, up, r
		}
		return
	}
	ts.records++
	ts.bytes += c.bytes
	if w.observing {
		t.obs.Acked(len(r.Value), time.Since(r.Timestamp), t.acked)
	}
	if w.cfg.EmitOffsetSyncs {
		if s, now := ts.sync.update(t.src.topic, t.src.partition, up, r.Offset, w.cfg.OffsetLagMax); now {
			ts.syncs = append(ts.syncs, s)
		}
	}
}

// commit writes the progress record into the open transaction and commits
// it; a refusal aborts it and produces its copies again in a new one.
func (x *txTask) commit(ctx context.Context) {
	t, w := x.t, x.w
	if x.next == x.committed && !x.open {
		x.began = time.Now()
		return
	}
	if !x.begin() {
		return
	}
	pr := encodeProgress(t.src, x.next, w.now())
	pr.Topic = w.progress.topic
	var perr error
	x.prod.Produce(ctx, pr, func(_ *kgo.Record, err error) { perr = err })
	err := x.prod.Flush(ctx)
	t.mu.Lock()
	refused := t.txs.err
	t.mu.Unlock()
	if err == nil {
		err = errors.Join(refused, perr)
	}
	if err == nil {
		err = x.prod.EndTransaction(ctx, kgo.TryCommit)
		if err == nil {
			x.committedOK()
			return
		}
	}
	if isFenced(err) {
		x.fence(err)
		return
	}
	x.abort(ctx, err)
}

func (x *txTask) committedOK() {
	t, w := x.t, x.w
	t.mu.Lock()
	ts := t.txs
	t.acked, t.written = x.next, x.next
	t.records += ts.records
	t.bytes += ts.bytes
	t.sync = ts.sync
	t.txs = txState{sync: ts.sync}
	t.mu.Unlock()
	for _, s := range ts.syncs {
		w.queueSync(s)
	}
	x.committed, x.open, x.began, x.aborts = x.next, false, time.Now(), 0
	clear(x.recs)
	x.recs, x.ups = x.recs[:0], x.ups[:0]
	w.txCommitted.Add(1)
	if o, ok := w.obs.(TransactionObserver); ok {
		o.TransactionEnded(w.cfg.Source, w.cfg.Target, true)
	}
}

func (w *worker) noteAbort() {
	w.txAborted.Add(1)
	if o, ok := w.obs.(TransactionObserver); ok {
		o.TransactionEnded(w.cfg.Source, w.cfg.Target, false)
	}
}

// abort aborts the open transaction after cause and produces its copies
// again in a new one, or stops the task after eosMaxAborts in a row.
func (x *txTask) abort(ctx context.Context, cause error) {
	t, w := x.t, x.w
	if err := x.prod.EndTransaction(ctx, kgo.TryAbort); err != nil {
		x.fence(fmt.Errorf("abort after %v: %w", cause, err))
		return
	}
	w.noteAbort()
	x.open = false
	// A commit whose outcome was not confirmed may have gone through: the
	// committed progress says.
	if err := w.progress.catchUp(ctx); err == nil {
		if p, ok := w.progress.get(t.src); ok && p >= x.next {
			x.committedOK()
			return
		}
	}
	t.mu.Lock()
	ts := t.txs
	t.txs = txState{sync: t.sync}
	t.inflight, t.head = t.inflight[:0], 0
	t.mu.Unlock()
	x.aborts++
	if x.finishing {
		return
	}
	if x.aborts >= eosMaxAborts && ts.err != nil {
		rec := ts.badRec
		size := len(rec.Key) + len(rec.Value)
		for _, h := range rec.Headers {
			size += len(h.Key) + len(h.Value)
		}
		rerr := &RecordError{Flow: w.cfg.Name(), Topic: t.src.topic, RemoteTopic: t.remote, Partition: t.src.partition,
			Offset: ts.bad, Size: size, Timestamp: rec.Timestamp, Err: ts.err}
		t.mu.Lock()
		t.err = rerr
		t.mu.Unlock()
		t.halted.Store(true)
		t.state.Store(TaskStopped)
		w.log.Error("partition stopped", "err", rerr, "transactional_id", x.id)
		return
	}
	w.log.Warn("transaction aborted; copying its records again in a new one", "topic", t.src.topic, "partition", t.src.partition,
		"transactional_id", x.id, "from", x.committed, "to", x.next, "err", cause)
	select {
	case <-time.After(min(time.Duration(x.aborts)*100*time.Millisecond, 2*time.Second)):
	case <-x.stop:
	}
	if len(x.recs) == 0 || !x.begin() {
		return
	}
	for i, r := range x.recs {
		t.mu.Lock()
		t.push(x.ups[i], len(r.Value))
		t.mu.Unlock()
		x.prod.Produce(ctx, r, t.ack)
	}
}

// fence stops the task for good: its transactional id has a newer epoch
// (another member owns the partition), or its producer failed fatally.
func (x *txTask) fence(err error) {
	t, w := x.t, x.w
	if x.fenced {
		return
	}
	x.fenced = true
	t.halted.Store(true)
	t.mu.Lock()
	t.firstErr = fmt.Errorf("transactional id %s fenced: %w", x.id, err)
	t.mu.Unlock()
	if x.open {
		w.noteAbort()
		x.open = false
	}
	w.log.Warn("transaction fenced: nothing of it is committed; another member owns the partition now", "topic", t.src.topic,
		"partition", t.src.partition, "transactional_id", x.id, "committed", x.committed, "err", err)
	// Normally the group takes the partition away at once (this process
	// was cut off); if it keeps it, copying is stuck: stop the flow.
	go func() {
		select {
		case <-x.stop:
		case <-time.After(2 * w.cfg.SessionTimeout):
			if w.task(t.src.topic, t.src.partition) == t {
				w.fatal(fmt.Errorf("flow %s: %s[%d]: transactional id %s fenced while this process still owns the partition: %w",
					w.cfg.Name(), t.src.topic, t.src.partition, x.id, err))
			}
		}
	}()
}

// finish ends the loop at release: it copies what is queued and commits,
// on a handover and on a loss alike. Committing is safe even after a loss:
// a new owner that already fenced this id makes the commit fail (logged as
// fenced, nothing of it visible), and one that has not yet reads the
// committed progress after its fencing. What stays open (a refused commit)
// is aborted with the buffered records dropped, never by reloading the
// producer id, which would fence the new owner. The producer is closed.
func (x *txTask) finish(ctx context.Context) {
	defer x.prod.Close()
	x.finishing = true
	if !x.fenced && !x.t.halted.Load() {
		for _, r := range x.take() {
			x.copy(ctx, r)
		}
		if x.open || x.next > x.committed {
			x.commit(ctx)
		}
	}
	if x.open && !x.fenced {
		_ = x.prod.AbortBufferedRecords(ctx)
		x.w.noteAbort()
	}
}

// isFenced reports errors after which the transactional id cannot go on:
// a newer epoch exists, or the producer id is unusable.
func isFenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed) || errors.Is(err, kerr.InvalidProducerIDMapping) ||
		errors.Is(err, kerr.InvalidTxnState)
}

// stopTransactions ends the transaction loops of released tasks: commit
// what is open on a handover, abort it on a loss; bounded by ctx.
func (w *worker) stopTransactions(ctx context.Context, gone []*task, handover bool) {
	for _, t := range gone {
		t.mu.Lock()
		x := t.tx
		t.mu.Unlock()
		if x == nil {
			continue
		}
		if !x.started.Load() {
			x.prod.Close()
			continue
		}
		x.handover = handover
		close(x.stop)
	}
	for _, t := range gone {
		t.mu.Lock()
		x := t.tx
		t.mu.Unlock()
		if x == nil || !x.started.Load() {
			continue
		}
		select {
		case <-x.done:
		case <-ctx.Done():
			w.log.Warn("transaction of a released partition not ended in time; the next owner's fencing aborts it",
				"topic", t.src.topic, "partition", t.src.partition, "transactional_id", x.id)
		}
	}
}
