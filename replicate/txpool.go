package replicate

import (
	"context"
	"sync/atomic"
)

// DefaultTransactionProducersMax is mirrorctl.transaction.producers.max's
// default: the most transactional producers an exactly-once flow holds open
// at once in one process.
const DefaultTransactionProducersMax = 1000

// fenceParallel is how many short-lived producers fence transactional ids
// at once at a batch start when the pool has no slot free (attach).
const fenceParallel = 32

// txPool bounds the transactional producers an exactly-once flow holds
// open in this process (FlowConfig.TransactionProducersMax), so that memory
// and connections grow with the pool, not with the partitions owned: each
// producer keeps its own connections, buffers and goroutines (about 185 MiB
// and two connections per 1,000 on the embedded broker).
//
// A task holds a slot while its producer is open. One that finds none free
// waits for a task that is idle (no transaction open, nothing queued) to
// close its producer and hand the slot over (park), then opens its own again
// (txTask.reopen). A task with nothing to copy keeps its producer while no
// other task waits, so a flow within the pool never reopens one.
type txPool struct {
	slots   chan struct{} // a token per open producer
	fences  chan struct{} // a token per short-lived fencing producer
	waiting atomic.Int32  // tasks blocked in acquire
	peak    atomic.Int32  // the most slots held at once
	held    atomic.Int32
	reopens atomic.Int64 // producers opened again after a park
}

// newTxPool returns a pool of slots producers open at once, and fences
// fencing ones.
func newTxPool(slots, fences int) *txPool {
	return &txPool{slots: make(chan struct{}, max(slots, 1)), fences: make(chan struct{}, max(fences, 1))}
}

// size returns the most producers the pool lets be open at once.
func (p *txPool) size() int { return cap(p.slots) }

// tryAcquire takes a slot if one is free.
func (p *txPool) tryAcquire() bool {
	select {
	case p.slots <- struct{}{}:
		p.took()
		return true
	default:
		return false
	}
}

// acquire waits for a slot until ctx ends or stop is closed (false).
func (p *txPool) acquire(ctx context.Context, stop <-chan struct{}) bool {
	if p.tryAcquire() {
		return true
	}
	p.waiting.Add(1)
	defer p.waiting.Add(-1)
	select {
	case p.slots <- struct{}{}:
		p.took()
		return true
	case <-ctx.Done():
		return false
	case <-stop:
		return false
	}
}

func (p *txPool) took() {
	n := p.held.Add(1)
	for {
		old := p.peak.Load()
		if n <= old || p.peak.CompareAndSwap(old, n) {
			return
		}
	}
}

// release gives a slot back.
func (p *txPool) release() {
	p.held.Add(-1)
	<-p.slots
}

// wanted reports whether a task waits for a slot.
func (p *txPool) wanted() bool { return p.waiting.Load() > 0 }
