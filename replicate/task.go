package replicate

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TaskState is where a partition task is in its life (see the package doc).
type TaskState string

// Partition task states, in the order a task goes through them.
const (
	// TaskStarting: assigned to this process; the resume point is being
	// chosen and the remote partition awaited.
	TaskStarting TaskState = "starting"
	// TaskRunning: records are fetched, copied and acknowledged.
	TaskRunning TaskState = "running"
	// TaskStopped: the target refused a record; the task keeps its
	// ownership but copies nothing more ([RecordError] says why).
	TaskStopped TaskState = "stopped"
	// TaskRevoking: the group moved the partition away; in-flight copies
	// are awaited and the final progress is written before it is released.
	TaskRevoking TaskState = "revoking"
	// TaskReleased ([PartitionStats] only): the partition ran here and
	// was handed to another member.
	TaskReleased TaskState = "released"
	// TaskElsewhere ([PartitionStats] only, with once): the partition never
	// ran here; another member copied it, or it was copied already.
	TaskElsewhere TaskState = "elsewhere"
)

// Where a task's resume point came from ([PartitionStats].ResumedFrom).
const (
	ResumeProgress = "progress"  // mirrorctl's progress topic on the target
	ResumeLogStart = "log-start" // no progress: the source log start
	ResumeLogEnd   = "log-end"   // no progress and auto.offset.reset=latest
)

// task is the copy of one source partition in this process: its resume
// point, the upstream offsets handed to the data producer and not yet
// acknowledged (in order), the acknowledged position that progress stores,
// and the offset-sync state of MM2's OffsetSyncWriter. One task lives as
// long as one assignment of its partition; a later assignment gets a new
// task that resumes from the progress the old one wrote.
type task struct {
	src    tp
	remote string
	// ack is the produce promise of the task's copies, bound to it once
	// (worker.onAck, or worker.onTxnAck in exactly-once mode).
	ack func(*kgo.Record, error)
	obs PartitionObserver

	// startCtx ends when the task is revoked, aborting a start in progress;
	// started is closed once the start finished (or was aborted).
	startCtx    context.Context
	cancelStart context.CancelFunc
	started     chan struct{}

	position atomic.Int64 // next source offset to produce; the poll goroutine writes it
	end      int64        // Once: the partition's end offset when the run started; -1 unknown
	halted   atomic.Bool  // a produce failed: no more records from this partition
	state    atomic.Value // TaskState
	limits   *topicLimits // the remote topic's, read at start; nil unknown (limits.go)

	mu          sync.Mutex
	inflight    []inflightCopy // the copies handed to the producer, in order
	head        int
	acked       int64 // next source offset after the last acknowledged record (the resume point before any)
	firstStart  int64 // the resume point
	written     int64 // acked value last written to the progress topic, -1 none
	resumedFrom string
	sync        syncState
	records     int64
	bytes       int64
	err         *RecordError    // the record at fault, once retryRefused found it
	firstErr    error           // the error that halted the partition
	refused     []refusedRecord // refused copies, in order, awaiting retryRefused
	retrying    bool
	tx          *txTask   // exactly-once mode: the task's transactional producer (eos.go)
	txs         txState   // exactly-once mode: what the open transaction's copies gathered
	loss        lossState // loss events (loss.go)
}

func newTask(src tp, remote string, end int64) *task {
	t := &task{src: src, remote: remote, end: end, acked: -1, written: -1, sync: newSyncState(), started: make(chan struct{})}
	t.startCtx, t.cancelStart = context.WithCancel(context.Background())
	t.state.Store(TaskStarting)
	return t
}

func (t *task) State() TaskState { return t.state.Load().(TaskState) }

// resume sets the task's resume point: the first source offset it copies.
// Everything before it counts as handled, so acked starts there; written is
// the value already in the progress topic (-1 if none).
func (t *task) resume(start, written int64, from string) {
	t.mu.Lock()
	t.acked, t.written, t.resumedFrom, t.firstStart = start, written, from, start
	t.mu.Unlock()
	t.position.Store(start)
}

// inflightCopy is a copy handed to the producer: its upstream offset, and
// its value's length in bytes, taken while the record is in the CPU cache
// (the acknowledgement counts it without reading the record again).
type inflightCopy struct {
	up, bytes int64
}

func (t *task) push(off int64, bytes int) {
	if t.head > 0 && t.head == len(t.inflight) {
		t.inflight, t.head = t.inflight[:0], 0
	} else if t.head > 1024 && t.head*2 > len(t.inflight) {
		n := copy(t.inflight, t.inflight[t.head:])
		t.inflight, t.head = t.inflight[:n], 0
	}
	t.inflight = append(t.inflight, inflightCopy{off, int64(bytes)})
}

func (t *task) pop() inflightCopy {
	c := t.inflight[t.head]
	t.head++
	return c
}

// idle reports whether nothing of the task is in flight: every copy handed
// to the producer came back and no refused record is being retried.
func (t *task) idle() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.head == len(t.inflight) && !t.retrying
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

// refusedRecord is a copy the target refused, with its source offset.
type refusedRecord struct {
	up int64
	r  *kgo.Record
}
