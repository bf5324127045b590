package replicate

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TaskState is where a partition task is in its life (see the package doc
// and docs/architecture.md, "The partition task").
type TaskState string

// Partition task states. A task goes starting -> running -> draining ->
// released; stopped and fenced end its copying (it keeps the partition
// until the group moves it, then drains and is released like any other).
const (
	// TaskStarting: assigned to this process; the resume point is being
	// chosen and the remote partition awaited.
	TaskStarting TaskState = "starting"
	// TaskRunning: records are fetched, copied and acknowledged.
	TaskRunning TaskState = "running"
	// TaskStopped: a loss event or a record the target refuses stopped
	// the task; it keeps its ownership but copies nothing more
	// ([RecordError], [LossEvent] say why).
	TaskStopped TaskState = "stopped"
	// TaskFenced (exactly-once): a newer owner of the partition's
	// transactional id fenced this task; nothing more of it commits.
	TaskFenced TaskState = "fenced"
	// TaskDraining: the group moved the partition away (or the flow
	// stops); in-flight copies are awaited and the final progress is
	// written before it is released.
	TaskDraining TaskState = "draining"
	// TaskReleased: the partition ran here and was handed back to the
	// group; everything the task held is given back.
	TaskReleased TaskState = "released"
	// TaskElsewhere ([PartitionStats] only, with once): the partition never
	// ran here; another member copied it, or it was copied already.
	TaskElsewhere TaskState = "elsewhere"
)

// taskMoves are the legal state changes; [task.to] refuses any other.
var taskMoves = map[TaskState][]TaskState{
	TaskStarting: {TaskRunning, TaskStopped, TaskDraining},
	TaskRunning:  {TaskStopped, TaskFenced, TaskDraining},
	TaskStopped:  {TaskDraining},
	TaskFenced:   {TaskDraining},
	TaskDraining: {TaskReleased},
}

// Where a task's resume point came from ([PartitionStats].ResumedFrom).
const (
	ResumeProgress = "progress"  // mirrorctl's progress topic on the target
	ResumeLogStart = "log-start" // no progress: the source log start
	ResumeLogEnd   = "log-end"   // no progress and auto.offset.reset=latest
)

// task is the copy of one source partition in this process for one
// assignment of it. It is created by the starter when the group assigns the
// partition and released when the group takes it back; a later assignment
// gets a new task, which holds nothing of this one's (its observer, fetch
// holds, producer and loss record are its own).
//
// Who writes what: the state only through [task.to]; position by the
// goroutine that copies (the poll loop at-least-once, the task's
// transaction loop exactly-once); the fields under mu by the copier and the
// produce promises; limits and sink once, before the task runs.
type task struct {
	src    tp
	remote string
	obs    PartitionObserver        // the task's own (Observer.Partition at start, closed at release)
	sink   copySink                 // where its copies go: the flow's data producer, or its transaction (eos.go)
	ack    func(*kgo.Record, error) // the produce promise of its copies, bound once
	life   taskLife
	limits *topicLimits // the remote topic's, read at start; nil unknown (limits.go)

	position atomic.Int64 // next source offset to hand to the producer
	halted   atomic.Bool  // nothing more of the partition is produced (refused, stopped, fenced, frozen)

	mu   sync.Mutex // guards q, pos, sync, fail and loss (and the txTask's txs)
	q    inflightQueue
	pos  taskPosition
	sync syncState
	fail taskFailure
	loss lossState // loss.go
}

// taskLife is a task's state and the handles of its start.
type taskLife struct {
	state atomic.Value // TaskState, changed by task.to only
	// ctx ends when the task is released, aborting a start in progress;
	// started is closed once the start finished or was given up.
	ctx     context.Context
	cancel  context.CancelFunc
	started chan struct{}
	once    sync.Once
}

// taskPosition is how far a task got (t.mu).
type taskPosition struct {
	acked       int64 // next source offset after the last acknowledged (or committed) copy
	written     int64 // acked value last written to the progress topic, -1 none
	firstStart  int64 // the resume point
	end         int64 // once: the partition's end offset when the run started; -1 unknown
	resumedFrom string
	records     int64 // acknowledged in this assignment
	bytes       int64 // their value bytes
	sourceEnd   int64 // the source partition's high watermark last seen (a fetch, or the position report); 0 unknown
	downstream  int64 // the remote partition's offset after the newest acknowledged (committed) copy, as progress records it; 0 unknown
}

// taskFailure is what went wrong with a task's copies (t.mu).
type taskFailure struct {
	err      *RecordError    // the record at fault, once found
	first    error           // the error that halted the partition, or that its start retries on
	refused  []refusedRecord // refused copies, in order, awaiting the one-by-one retry (alo.go)
	retrying bool            // that retry runs
}

func newTask(src tp, remote string, end int64) *task {
	t := &task{src: src, remote: remote, sync: newSyncState()}
	t.pos = taskPosition{acked: -1, written: -1, end: end}
	t.life.started = make(chan struct{})
	t.life.ctx, t.life.cancel = context.WithCancel(context.Background())
	t.life.state.Store(TaskStarting)
	return t
}

// State returns the task's state.
func (t *task) State() TaskState { return t.life.state.Load().(TaskState) }

// to moves the task to next when taskMoves allows it from its current
// state, and reports whether it did. A refused move is logged (at debug
// level while the task drains or after: a refusal found while the
// partition is handed over is expected; otherwise as a warning).
func (t *task) to(next TaskState, log *slog.Logger) bool {
	for {
		cur := t.State()
		legal := false
		for _, s := range taskMoves[cur] {
			legal = legal || s == next
		}
		if !legal {
			lvl := slog.LevelWarn
			if cur == TaskDraining || cur == TaskReleased {
				lvl = slog.LevelDebug
			}
			log.Log(context.Background(), lvl, "partition task state change refused", "topic", t.src.topic, "partition", t.src.partition, "from", cur, "to", next)
			return false
		}
		if t.life.state.CompareAndSwap(cur, next) {
			return true
		}
	}
}

// started marks the task's start as finished (or given up), once.
func (t *task) startDone() { t.life.once.Do(func() { close(t.life.started) }) }

// copying reports whether records fetched for the task are to be copied.
func (t *task) copying() bool { return t.State() == TaskRunning && !t.halted.Load() }

// resume sets the task's resume point: the first source offset it copies.
// Everything before it counts as handled, so acked starts there; written is
// the value already in the progress topic (-1 if none).
func (t *task) resume(start, written int64, from string) {
	t.mu.Lock()
	t.pos.acked, t.pos.written, t.pos.resumedFrom, t.pos.firstStart = start, written, from, start
	t.mu.Unlock()
	t.position.Store(start)
}

// ackedNow returns the next source offset after the last acknowledged copy.
func (t *task) ackedNow() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pos.acked
}

// idle reports whether nothing of the task is in flight: every copy handed
// to the producer came back and no refused record is being retried.
func (t *task) idle() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.q.empty() && !t.fail.retrying
}

// awaitIdle waits until the task is idle, polling every 2 ms; false if ctx
// ended first.
func (t *task) awaitIdle(ctx context.Context) bool {
	for !t.idle() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(2 * time.Millisecond):
		}
	}
	return true
}

// inflightQueue holds the copies handed to the producer and not yet
// acknowledged, in order (t.mu). kgo calls a partition's promises in order,
// so the front is always the copy an acknowledgement is for.
type inflightQueue struct {
	items []inflightCopy
	head  int
}

// inflightCopy is a copy handed to the producer: its upstream offset, and
// its value's length in bytes, taken while the record is in the CPU cache
// (the acknowledgement counts it without reading the record again).
type inflightCopy struct {
	up, bytes int64
}

func (q *inflightQueue) push(off int64, bytes int) {
	if q.head > 0 && q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	} else if q.head > 1024 && q.head*2 > len(q.items) {
		n := copy(q.items, q.items[q.head:])
		q.items, q.head = q.items[:n], 0
	}
	q.items = append(q.items, inflightCopy{off, int64(bytes)})
}

func (q *inflightQueue) pop() inflightCopy {
	c := q.items[q.head]
	q.head++
	return c
}

func (q *inflightQueue) empty() bool { return q.head == len(q.items) }

func (q *inflightQueue) reset() { q.items, q.head = q.items[:0], 0 }

// refusedRecord is a copy the target refused, with its source offset.
type refusedRecord struct {
	up int64
	r  *kgo.Record
}

// recordSize is what a [RecordError] reports of r: key, value and headers,
// in bytes.
func recordSize(r *kgo.Record) int {
	size := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		size += len(h.Key) + len(h.Value)
	}
	return size
}
