package replicate

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// holdReason is why a task's partition is not fetched for a while. A
// partition is paused on the consumer while its owner holds any reason.
type holdReason uint8

const (
	// holdRetry: refused copies are retried one at a time (alo.go).
	holdRetry holdReason = 1 << iota
	// holdStopped: a loss event or a refused record stopped the task.
	holdStopped
	// holdQueue: an exactly-once task's queue is full (eos.go).
	holdQueue
	// holdRefill: the remote topic was deleted; waiting for it again.
	holdRefill
	// holdFrozen: the process was frozen past its session timeout and
	// the group has given its partitions to others (freeze.go).
	holdFrozen
)

// fetchGate owns the flow's direct source consumer's assignment and pause
// set: nothing else adds, removes, seeks, pauses or resumes its partitions.
// A partition belongs to the task that opened it until that task closes it;
// a hold or seek by any other task (a released one whose retry or
// transaction loop still runs) is ignored, so it cannot stall the
// partition's next owner. Closing a partition clears its pause (kgo keeps
// pauses until they are resumed, across removes and adds), so a partition
// assigned again is fetched again.
type fetchGate struct {
	cl *kgo.Client
	mu sync.Mutex // guards owners; held across each consumer call, so pauses and resumes apply in order
	// owners is the task and hold set of every partition opened.
	owners map[tp]*gateEntry
}

type gateEntry struct {
	t     *task
	holds holdReason
}

func newFetchGate(cl *kgo.Client) *fetchGate {
	return &fetchGate{cl: cl, owners: map[tp]*gateEntry{}}
}

// open starts fetching each task's partition at its offset, clearing any
// pause kgo kept for the partition.
func (g *fetchGate) open(at map[*task]int64) {
	if len(at) == 0 {
		return
	}
	add := map[string]map[int32]kgo.Offset{}
	parts := map[string][]int32{}
	g.mu.Lock()
	defer g.mu.Unlock()
	for t, off := range at {
		g.owners[t.src] = &gateEntry{t: t}
		if add[t.src.topic] == nil {
			add[t.src.topic] = map[int32]kgo.Offset{}
		}
		add[t.src.topic][t.src.partition] = kgo.NewOffset().At(off).WithEpoch(-1)
		parts[t.src.topic] = append(parts[t.src.topic], t.src.partition)
	}
	g.cl.ResumeFetchPartitions(parts)
	g.cl.AddConsumePartitions(add)
	// A partition the consumer's metadata lacks (one just added to the
	// source) is fetched only once its metadata is refreshed (growth.go).
	g.cl.ForceMetadataRefresh()
}

// close stops fetching the partitions of ts that they own and clears their
// pauses.
func (g *fetchGate) close(ts []*task) {
	parts := map[string][]int32{}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, t := range ts {
		if e := g.owners[t.src]; e != nil && e.t == t {
			delete(g.owners, t.src)
			parts[t.src.topic] = append(parts[t.src.topic], t.src.partition)
		}
	}
	if len(parts) == 0 {
		return
	}
	g.cl.RemoveConsumePartitions(parts)
	g.cl.ResumeFetchPartitions(parts)
}

// hold pauses t's partition for r, if t owns it.
func (g *fetchGate) hold(t *task, r holdReason) {
	g.mu.Lock()
	defer g.mu.Unlock()
	e := g.owners[t.src]
	if e == nil || e.t != t {
		return
	}
	if e.holds == 0 {
		g.cl.PauseFetchPartitions(map[string][]int32{t.src.topic: {t.src.partition}})
	}
	e.holds |= r
}

// unhold drops t's hold r; the partition is fetched again once no hold is
// left.
func (g *fetchGate) unhold(t *task, r holdReason) {
	g.mu.Lock()
	defer g.mu.Unlock()
	e := g.owners[t.src]
	if e == nil || e.t != t || e.holds&r == 0 {
		return
	}
	e.holds &^= r
	if e.holds == 0 {
		g.cl.ResumeFetchPartitions(map[string][]int32{t.src.topic: {t.src.partition}})
	}
}

// seek makes the next fetch of t's partition start at off, then drops its
// hold r, if t owns the partition.
func (g *fetchGate) seek(t *task, off int64, r holdReason) {
	g.mu.Lock()
	e := g.owners[t.src]
	owned := e != nil && e.t == t
	if owned {
		g.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{t.src.topic: {t.src.partition: {Epoch: -1, Offset: off}}})
	}
	g.mu.Unlock()
	if owned {
		g.unhold(t, r)
	}
}

// holdAll pauses every open partition for r.
func (g *fetchGate) holdAll(r holdReason) {
	g.mu.Lock()
	defer g.mu.Unlock()
	parts := map[string][]int32{}
	for k, e := range g.owners {
		if e.holds == 0 {
			parts[k.topic] = append(parts[k.topic], k.partition)
		}
		e.holds |= r
	}
	if len(parts) > 0 {
		g.cl.PauseFetchPartitions(parts)
	}
}

// held reports the holds on t's partition (0 when t does not own it).
func (g *fetchGate) held(t *task) holdReason {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e := g.owners[t.src]; e != nil && e.t == t {
		return e.holds
	}
	return 0
}
