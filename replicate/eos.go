package replicate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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
// The copies take the same path as at-least-once ones (copyRecords: the
// same checks against the remote topic's limits, gaps and markers) and the
// producer is built by the same function with the same batch cap
// (producer.go); the differences are that the task's own goroutine copies,
// so that its copies, commits and aborts follow one another, and that a
// transaction holds its copies and one progress record naming the next
// source offset after them (with the task's loss record). It commits every
// TransactionInterval, at a handover, and when the task stops. The progress
// view and every other reader read committed, so a crash anywhere leaves, on
// the target, the copies of exactly the source offsets below the committed
// progress. Offset syncs are computed from the copies' target offsets but
// written only after the transaction that holds them commits (on the
// control producer, or the source's), so no sync names an aborted copy.
//
// A transaction the target refuses is aborted and its copies are produced
// again in a new one; the third refusal in a row at the same position stops
// the partition with a [RecordError] naming the first refused record. A
// fenced task copies nothing more: the group takes the partition away (this
// process lost it); if it has not within two session timeouts, the flow
// stops with the error.

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
// its partition's fetching pauses (and resumes once the loop took them).
const eosQueueMax = 20000

// eosMaxAborts is how many aborts in a row at one position stop a task.
const eosMaxAborts = 3

// exactlyOnce is the exactly-once delivery mode.
type exactlyOnce struct {
	w    *worker
	pool *txPool // the flow's transactional producers in this process
}

// txTask is the exactly-once side of one task: its transactional producer
// and the loop (run) that copies its fetched records and commits.
type txTask struct {
	w    *worker
	t    *task
	id   string
	pool *txPool
	prod *kgo.Client // nil while parked (txpool.go): no slot held

	wake    chan struct{}
	stop    chan struct{} // closed by drain
	done    chan struct{} // closed when run returns
	started atomic.Bool   // run was started

	qmu    sync.Mutex // guards q and paused
	q      []fetched  // fetched, not yet copied
	paused bool       // the fetch gate holds the partition (holdQueue)

	txs txState // t.mu: what the open transaction's copies gathered
	cur txRun   // owned by run
}

// fetched is one fetch's records of the task's partition.
type fetched struct {
	recs     []*kgo.Record
	logStart int64
}

// txRun is the transaction loop's own state.
type txRun struct {
	committed int64 // progress of the last commit
	// viewed is the partition's progress in the progress view after this
	// task's last commit, or at its start (-1: none): a reopened producer
	// finds it unchanged unless another member committed (reopen).
	viewed    int64
	heldSince time.Time     // when the producer was opened
	open      bool          // a transaction is open
	began     time.Time     // when it opened, or the last commit
	recs      []*kgo.Record // copies of the open transaction, for a retry
	ups       []int64       // their source offsets
	aborts    int           // aborts in a row at the same position
	fenced    bool
	finishing bool // finish runs: an abort copies nothing again
	lossInTx  bool // the open transaction's progress record carries the task's loss record
}

// txState, on the txTask but guarded by t.mu, is what the produce promises
// of the open transaction gather until it commits.
type txState struct {
	err     error       // the first refused copy's error
	bad     int64       // its source offset
	badRec  *kgo.Record // and the record
	sync    syncState   // t.sync advanced by the open transaction's copies
	syncs   []mm2.OffsetSync
	records int64
	bytes   int64
	// downstream is the remote partition's offset after the newest copy
	// acknowledged in the open transaction, 0 none.
	downstream int64
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

// attach fences the previous epoch of each starting task's transactional
// id (InitProducerID), in parallel, and keeps the producer open where the
// pool has a slot; otherwise the fencing producer is closed again (at most
// fenceParallel at once) and the task opens one when its turn comes
// (txTask.reopen). It runs before the progress is read: see the comment at
// the top.
func (e exactlyOnce) attach(ctx context.Context, batch []*task) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for _, t := range batch {
		if t.sink != nil || t.State() != TaskStarting {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			x, err := e.w.newTxTask(ctx, t, e.pool)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			t.sink, t.ack = x, x.onAck
		}()
	}
	wg.Wait()
	if len(errs) > 5 { // one per partition: keep the log line readable
		errs = append(errs[:5], fmt.Errorf("and %d more transactional ids", len(errs)-5))
	}
	return errors.Join(errs...)
}

// connsPerTxProducer is the fewest connections a task's transactional
// producer opens: one for its produce requests and one for the others
// (InitProducerID, AddPartitionsToTxn, EndTxn), to one broker.
const connsPerTxProducer = 2

// fileLimitHint is what to do when exactly-once runs out of open files.
const fileLimitHint = "raise the open-file limit, ulimit -n, or lower mirrorctl.transaction.producers.max"

// txPoolSize is the flow's producer pool: mirrorctl.transaction.producers.max
// producers open at once and fenceParallel fencing ones, both lowered where
// the process's open-file limit (openFilesFree) cannot give them their
// connections and keep half the free descriptors, at least 64 and up to
// 256, for everything else. why says why they were lowered, "" if not.
func txPoolSize(cfg FlowConfig) (slots, fences int, why string) {
	slots, fences = cfg.TransactionProducersMax, fenceParallel
	if slots <= 0 {
		slots = DefaultTransactionProducersMax
	}
	free, limit, ok := openFilesFree()
	if !ok {
		return slots, fences, ""
	}
	// The flow's other clients, opened after this, take some 30-50.
	budget := (free - max(64, min(256, free/2))) / connsPerTxProducer // producers the descriptors hold
	if slots+fences <= budget {
		return slots, fences, ""
	}
	want := slots
	fences = max(1, min(fenceParallel, budget/8))
	slots = max(1, budget-fences)
	return slots, fences, fmt.Sprintf("mirrorctl.transaction.producers.max %d needs about %d open files and %d of this process's %d are free: "+
		"%d open at once, the other partitions take turns (%s)", want, (want+fenceParallel)*connsPerTxProducer, max(free, 0), limit, slots, fileLimitHint)
}

// newTxTask readies t's exactly-once side: its transactional id fenced,
// and its producer kept open if the pool has a slot (see attach).
func (w *worker) newTxTask(ctx context.Context, t *task, pool *txPool) (*txTask, error) {
	id := TransactionalID(w.cfg.GroupID, t.src.topic, t.src.partition)
	x := &txTask{w: w, t: t, id: id, pool: pool, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	keep := pool.tryAcquire()
	if !keep {
		select {
		case pool.fences <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("flow %s: fence transactional id %s on %s: %w", w.cfg.Name(), id, w.cfg.Target, ctx.Err())
		}
		defer func() { <-pool.fences }()
	}
	prod, err := w.initTxProducer(ctx, id)
	if err != nil {
		if keep {
			pool.release()
		}
		return nil, err
	}
	if keep {
		x.prod, x.cur.heldSince = prod, time.Now()
	} else {
		prod.Close() // fenced: the task opens its own when its turn comes
	}
	return x, nil
}

// initTxProducer opens a transactional producer under id and initialises
// it (InitProducerID), which fences the id's earlier epochs.
func (w *worker) initTxProducer(ctx context.Context, id string) (*kgo.Client, error) {
	prod, err := w.dataProducer(id)
	if err != nil {
		return nil, fmt.Errorf("flow %s: transactional producer %s on %s: %w", w.cfg.Name(), id, w.cfg.Target, err)
	}
	if _, _, err := prod.ProducerID(ctx); err != nil {
		prod.Close()
		if errors.Is(err, syscall.EMFILE) || strings.Contains(err.Error(), "too many open files") {
			err = fmt.Errorf("%w (exactly-once keeps up to mirrorctl.transaction.producers.max producers open, each with its own connections: %s)",
				err, fileLimitHint)
		}
		return nil, fmt.Errorf("flow %s: init transactional id %s on %s: %w", w.cfg.Name(), id, w.cfg.Target, err)
	}
	return prod, nil
}

func (e exactlyOnce) begin(t *task) {
	x, ok := t.sink.(*txTask)
	if !ok {
		return
	}
	x.cur.committed, x.cur.began = t.position.Load(), time.Now()
	x.cur.viewed = -1
	if p, ok := e.w.progress.get(t.src); ok {
		x.cur.viewed = p
	}
	t.mu.Lock()
	x.txs = txState{sync: t.sync}
	t.mu.Unlock()
	x.started.Store(true)
	go x.run()
}

func (exactlyOnce) deliver(_ context.Context, t *task, p *kgo.FetchTopicPartition, _ time.Time) {
	if x, ok := t.sink.(*txTask); ok {
		x.enqueue(p.Records, p.LogStartOffset)
	}
}

func (exactlyOnce) ownProgress() bool { return true }

// drain ends the transaction loops of released tasks (each commits what is
// open, see finish) and closes the producers of those that never ran,
// bounded by ctx.
func (e exactlyOnce) drain(ctx context.Context, ts []*task, handover bool) {
	var loops []*txTask
	for _, t := range ts {
		x, ok := t.sink.(*txTask)
		if !ok {
			continue
		}
		if !x.started.Load() {
			x.park()
			continue
		}
		close(x.stop)
		loops = append(loops, x)
	}
	for _, x := range loops {
		select {
		case <-x.done:
		case <-ctx.Done():
			e.w.stop.left(fmt.Sprintf("the transaction of %s[%d] (transactional id %s) not ended in time; the next owner's fencing aborts it",
				x.t.src.topic, x.t.src.partition, x.id))
		}
	}
}

// enqueue takes a fetch's records for the task (the poll goroutine, under
// the dispatch lock); past eosQueueMax queued records the partition stops
// fetching.
func (x *txTask) enqueue(recs []*kgo.Record, logStart int64) {
	x.qmu.Lock()
	x.q = append(x.q, fetched{recs: recs, logStart: logStart})
	n := 0
	for _, f := range x.q {
		n += len(f.recs)
	}
	pause := n > eosQueueMax && !x.paused
	if pause {
		x.paused = true
	}
	x.qmu.Unlock()
	if pause {
		x.w.gate.hold(x.t, holdQueue)
	}
	select {
	case x.wake <- struct{}{}:
	default:
	}
}

func (x *txTask) take() []fetched {
	x.qmu.Lock()
	q := x.q
	x.q = nil
	resume := x.paused
	x.paused = false
	x.qmu.Unlock()
	if resume {
		x.w.gate.unhold(x.t, holdQueue)
	}
	return q
}

// run is the task's transaction loop: it copies what was fetched into the
// open transaction and commits every TransactionInterval, until drain
// closes stop (then finish).
func (x *txTask) run() {
	defer close(x.done)
	w, t := x.w, x.t
	ctx := context.WithoutCancel(w.run.ctx) // the client's stop context bounds it (stop.go)
	tick := time.NewTimer(x.tickEvery())
	defer tick.Stop()
	for {
		select {
		case <-x.stop:
			x.finish(ctx)
			return
		case <-x.wake:
		case <-tick.C:
		}
		tick.Reset(x.tickEvery())
		if x.cur.fenced || t.halted.Load() || w.freeze.suspect.Load() {
			x.take() // drop: nothing more is copied here
			if !x.cur.fenced && !w.freeze.suspect.Load() && x.dirty() {
				x.commit(ctx) // the copies before the stop, and the stop itself
			}
			continue
		}
		for _, f := range x.take() {
			w.copyRecords(ctx, t, f.recs, f.logStart, time.Now())
		}
		if time.Since(x.cur.began) >= w.cfg.TransactionInterval {
			x.commit(ctx)
		}
		x.yield()
	}
}

// tickEvery is how often the transaction loop looks without being woken:
// a quarter of the transaction interval while it holds a producer (to
// commit on time, and to park when another task waits); a parked task is
// woken by its next records (enqueue) and otherwise looks every second, so
// that thousands of parked tasks cost little.
func (x *txTask) tickEvery() time.Duration {
	if x.prod == nil {
		return time.Second
	}
	return max(x.w.cfg.TransactionInterval/4, time.Millisecond)
}

// parkSlice is how long a task with records still to copy keeps its
// producer while other tasks wait for one (txPool).
func parkSlice(cfg FlowConfig) time.Duration { return max(10*cfg.TransactionInterval, time.Second) }

// yield parks the task's producer when another task waits for a slot and
// this one has nothing open or uncommitted: at once when nothing is queued,
// else once it held the producer for parkSlice.
func (x *txTask) yield() {
	if x.prod == nil || x.cur.open || x.cur.fenced || !x.pool.wanted() || x.dirty() {
		return
	}
	x.qmu.Lock()
	queued := len(x.q) > 0
	x.qmu.Unlock()
	if queued && time.Since(x.cur.heldSince) < parkSlice(x.w.cfg) {
		return
	}
	x.park()
}

// park closes the task's producer, with no transaction open, and gives its
// slot back; the next copy or commit opens one again (reopen).
func (x *txTask) park() {
	if x.prod == nil {
		return
	}
	x.prod.Close()
	x.prod = nil
	x.pool.release()
}

// errParked is why a parked task copies nothing now: it is stopping, so it
// waits for no producer.
var errParked = errors.New("no transactional producer: the task is stopping")

// reopen opens the parked task's producer again once the pool has a slot
// for it (until stop is closed: errParked). Its InitProducerID fences every
// earlier epoch of the id, so no commit can follow but this task's; one
// another member made while the producer was parked shows as the
// partition's committed progress moving from where this task last saw it,
// and then the task is fenced rather than copying on from a stale position.
func (x *txTask) reopen(ctx context.Context, stop <-chan struct{}) error {
	w, t := x.w, x.t
	if !x.pool.acquire(ctx, stop) {
		return errParked
	}
	prod, err := w.initTxProducer(ctx, x.id)
	if err == nil {
		if err = w.progress.catchUp(ctx, t.src); err != nil {
			err = fmt.Errorf("read %s after reopening transactional id %s: %w", w.progress.topic, x.id, err)
		}
	}
	if err == nil {
		now := int64(-1)
		if p, ok := w.progress.get(t.src); ok {
			now = p
		}
		if now != x.cur.viewed {
			err = fmt.Errorf("%w: the committed progress of %s[%d] moved from %d to %d while the producer was parked: another member copies it",
				kerr.ProducerFenced, t.src.topic, t.src.partition, x.cur.viewed, now)
		}
	}
	if err != nil {
		if prod != nil {
			prod.Close()
		}
		x.pool.release()
		return err
	}
	x.prod, x.cur.heldSince = prod, time.Now()
	x.pool.reopens.Add(1)
	return nil
}

// dirty reports whether something is to be committed: copies, a position
// moved past markers, or a loss record.
func (x *txTask) dirty() bool {
	x.t.mu.Lock()
	loss := x.t.loss.dirty
	x.t.mu.Unlock()
	return x.cur.open || x.t.position.Load() > x.cur.committed || loss
}

// open begins a transaction if none is open, reopening a parked producer
// first; false once fenced, and while stopping without a producer.
func (x *txTask) open(*task) bool {
	if x.cur.open {
		return true
	}
	if x.cur.fenced {
		return false
	}
	if x.prod == nil {
		if x.cur.finishing {
			return false // nothing is open: the next owner copies it
		}
		if err := x.reopen(context.WithoutCancel(x.w.run.ctx), x.stop); err != nil {
			if !errors.Is(err, errParked) {
				x.fence(err)
			}
			return false
		}
	}
	if err := x.prod.BeginTransaction(); err != nil {
		x.fence(err)
		return false
	}
	x.cur.open = true
	return true
}

func (x *txTask) send(ctx context.Context, t *task, r *kgo.Record, up int64) {
	x.cur.recs = append(x.cur.recs, r)
	x.cur.ups = append(x.cur.ups, up)
	x.prod.Produce(ctx, r, t.ack)
}

// passMarker: the commit moves acked to the position, markers included.
func (x *txTask) passMarker(*task, int64) {}

// onAck is the produce promise of an exactly-once copy: the record is in
// the open transaction, not yet committed.
func (x *txTask) onAck(r *kgo.Record, err error) {
	t, w := x.t, x.w
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.q.pop()
	ts := &x.txs
	if err != nil {
		if ts.err == nil {
			ts.err, ts.bad, ts.badRec = err, c.up, r
		}
		return
	}
	ts.records++
	ts.bytes += c.bytes
	ts.downstream = max(ts.downstream, r.Offset+1)
	if w.observing {
		t.obs.Acked(len(r.Value), time.Since(r.Timestamp), t.pos.acked)
	}
	if w.cfg.EmitOffsetSyncs {
		if s, now := ts.sync.update(t.src.topic, t.src.partition, c.up, r.Offset, w.cfg.OffsetLagMax); now {
			ts.syncs = append(ts.syncs, s)
		}
	}
}

// commit writes the progress record (the next source offset, with the
// task's loss record) into the open transaction and commits it; a refusal
// aborts it and produces its copies again in a new one.
func (x *txTask) commit(ctx context.Context) {
	t, w := x.t, x.w
	if !x.dirty() {
		x.cur.began = time.Now()
		return
	}
	if !x.open(t) {
		return
	}
	next := t.position.Load()
	t.mu.Lock()
	x.cur.lossInTx = t.loss.dirty
	t.loss.dirty = false
	pr := encodeProgressValue(t.src, t.progressValue(next, w.now()))
	t.mu.Unlock()
	pr.Topic = w.progress.topic
	var perr error
	x.prod.Produce(ctx, pr, func(_ *kgo.Record, err error) { perr = err })
	err := x.prod.Flush(ctx)
	t.mu.Lock()
	refused := x.txs.err
	t.mu.Unlock()
	if err == nil {
		err = errors.Join(refused, perr)
	}
	if err == nil {
		err = x.prod.EndTransaction(ctx, kgo.TryCommit)
		if err == nil {
			x.committedOK(next)
			return
		}
	}
	if isFenced(err) {
		x.fence(err)
		return
	}
	x.abort(ctx, next, err)
}

func (x *txTask) committedOK(next int64) {
	t, w := x.t, x.w
	t.mu.Lock()
	ts := x.txs
	t.pos.acked, t.pos.written = next, next
	t.pos.records += ts.records
	t.pos.bytes += ts.bytes
	t.pos.downstream = max(t.pos.downstream, ts.downstream)
	t.sync = ts.sync
	x.txs = txState{sync: ts.sync}
	end := t.pos.end >= 0 && next >= t.pos.end
	t.mu.Unlock()
	for _, s := range ts.syncs {
		w.syncs.queue(s)
	}
	x.cur.committed, x.cur.open, x.cur.began, x.cur.aborts, x.cur.lossInTx = next, false, time.Now(), 0, false
	x.cur.viewed = next
	clear(x.cur.recs)
	x.cur.recs, x.cur.ups = x.cur.recs[:0], x.cur.ups[:0]
	w.counts.txCommitted.Add(1)
	if o, ok := w.obs.(TransactionObserver); ok {
		o.TransactionEnded(w.cfg.Source, w.cfg.Target, true)
	}
	if end && w.once {
		w.wakeAtEnd()
	}
}

func (w *worker) noteAbort() {
	w.counts.txAborted.Add(1)
	if o, ok := w.obs.(TransactionObserver); ok {
		o.TransactionEnded(w.cfg.Source, w.cfg.Target, false)
	}
}

// abort aborts the open transaction after cause and produces its copies
// again in a new one, or stops the task after eosMaxAborts in a row.
func (x *txTask) abort(ctx context.Context, next int64, cause error) {
	t, w := x.t, x.w
	if err := x.prod.EndTransaction(ctx, kgo.TryAbort); err != nil {
		x.fence(fmt.Errorf("abort after %v: %w", cause, err))
		return
	}
	w.noteAbort()
	x.cur.open = false
	// A commit whose outcome was not confirmed may have gone through: the
	// committed progress says.
	if err := w.progress.catchUp(ctx, t.src); err == nil {
		if p, ok := w.progress.get(t.src); ok && p >= next {
			x.committedOK(next)
			return
		}
	}
	t.mu.Lock()
	ts := x.txs
	x.txs = txState{sync: t.sync}
	t.q.reset()
	if x.cur.lossInTx {
		t.loss.dirty = true // write it again with the next transaction
	}
	t.mu.Unlock()
	x.cur.aborts++
	if x.cur.finishing {
		return
	}
	if x.cur.aborts >= eosMaxAborts && ts.err != nil {
		x.refused(ts)
		return
	}
	w.log.Warn("transaction aborted; copying its records again in a new one", "topic", t.src.topic, "partition", t.src.partition,
		"transactional_id", x.id, "from", x.cur.committed, "to", next, "err", cause)
	select {
	case <-time.After(min(time.Duration(x.cur.aborts)*100*time.Millisecond, 2*time.Second)):
	case <-x.stop:
	}
	if len(x.cur.recs) == 0 || !x.open(t) {
		return
	}
	for i, r := range x.cur.recs {
		t.mu.Lock()
		t.q.push(x.cur.ups[i], len(r.Value))
		t.mu.Unlock()
		x.prod.Produce(ctx, r, t.ack)
	}
}

// refused stops the task at the first copy the target refused in each of
// eosMaxAborts transactions: a [RecordError] and a refused loss event,
// as an at-least-once refusal reports it. The aborted copies are dropped
// and the position goes back to the last commit, which the stop's own
// transaction (run) writes with the loss record: a start after the fix
// copies again from there.
func (x *txTask) refused(ts txState) {
	t, w := x.t, x.w
	rec := ts.badRec
	size := recordSize(rec)
	rerr := &RecordError{Flow: w.cfg.Name(), Topic: t.src.topic, RemoteTopic: t.remote, Partition: t.src.partition,
		Offset: ts.bad, Size: size, Timestamp: rec.Timestamp, Err: ts.err}
	t.mu.Lock()
	t.fail.err = rerr
	t.mu.Unlock()
	t.position.Store(x.cur.committed)
	clear(x.cur.recs)
	x.cur.recs, x.cur.ups = x.cur.recs[:0], x.cur.ups[:0]
	w.reportLoss(t, LossEvent{Kind: LossRefused, From: ts.bad, To: ts.bad, Stopped: true,
		Reason: fmt.Sprintf("the target refused the copy in %s (%d bytes) in %d transactions in a row (transactional id %s): %v", t.remote, size, eosMaxAborts, x.id, ts.err)})
}

// fence stops the task for good: its transactional id has a newer epoch
// (another member owns the partition), or its producer failed fatally.
func (x *txTask) fence(err error) {
	t, w := x.t, x.w
	if x.cur.fenced {
		return
	}
	x.cur.fenced = true
	t.halted.Store(true)
	t.mu.Lock()
	t.fail.first = fmt.Errorf("transactional id %s fenced: %w", x.id, err)
	t.mu.Unlock()
	t.to(TaskFenced, w.log)
	w.gate.hold(t, holdStopped)
	if x.cur.open {
		w.noteAbort()
		x.cur.open = false
	}
	x.park() // it will not be used again: its slot goes to a task that copies
	w.log.Warn("transaction fenced: nothing of it is committed; another member owns the partition now", "topic", t.src.topic,
		"partition", t.src.partition, "transactional_id", x.id, "committed", x.cur.committed, "err", err)
	// Normally the group takes the partition away at once (this process
	// was cut off); if it keeps it, copying is stuck: stop the flow.
	go func() {
		select {
		case <-x.stop:
		case <-time.After(2 * w.cfg.SessionTimeout):
			if w.tasks.isLive(t) {
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
	defer x.park()
	x.cur.finishing = true
	w, t := x.w, x.t
	if !x.cur.fenced && !t.halted.Load() && x.prod != nil {
		for _, f := range x.take() {
			w.copyRecords(ctx, t, f.recs, f.logStart, time.Now())
		}
	}
	if !x.cur.fenced && x.prod != nil && x.dirty() {
		x.commit(ctx)
	}
	if x.cur.open && !x.cur.fenced {
		_ = x.prod.AbortBufferedRecords(ctx)
		w.noteAbort()
	}
}

// isFenced reports errors after which the transactional id cannot go on:
// a newer epoch exists, or the producer id is unusable.
func isFenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed) || errors.Is(err, kerr.InvalidProducerIDMapping) ||
		errors.Is(err, kerr.InvalidTxnState)
}
