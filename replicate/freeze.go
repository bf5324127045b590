package replicate

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A process that was not running for longer than its session timeout
// (SIGSTOP, a VM paused, a debugger, a host swapping hard) has been removed
// from the flow's groups: its partitions belong to others now, which resume
// from the progress it wrote. When it runs again it still believes it owns
// them until its next heartbeat is refused. The freeze guard ends that
// window: a ticker notes every freezeTick that the process runs, and a gap
// longer than the session timeout less a heartbeat interval (freezeLimit;
// seen by the ticker, the poll loop or the data producer, whichever runs
// first after the pause) holds every partition at once
// (nothing more is handed to the producer), and has the membership leave
// and join the group again, releasing the tasks without writing progress
// (the new owners may be ahead). Copies the producer still had buffered
// from before the pause land after the removal: the copies acknowledged
// after the freeze was seen are counted ([FlowStatus].LateCopies) and
// logged, since they can duplicate the new owners' copies (the count may
// include a few that were in flight when the process froze, written before
// its removal). In exactly-once mode the new owners fenced the
// transactional ids, so nothing of them commits.
type freezeGuard struct {
	limit      time.Duration // freezeLimit
	last       atomic.Int64  // unix ns of the last tick
	suspect    atomic.Bool   // a freeze was detected; cleared when the tasks are released
	lateCopies atomic.Int64  // copies acknowledged after a detected freeze, over the run
	lateBefore atomic.Int64  // lateCopies when the freeze was detected
	rejoin     chan struct{} // tells the membership to leave and join again
}

// freezeLimit is the longest a process may not run before the coordinator
// may have expired it: its last heartbeat went out up to a heartbeat
// interval before the pause began, and the session ends a session timeout
// after it. A starved process taken for frozen rejoins and copies again
// from the progress: a false alarm costs a rebalance, a missed freeze
// copies twice.
func freezeLimit(f FlowConfig) time.Duration {
	return max(f.SessionTimeout-f.heartbeatInterval(), f.SessionTimeout/2)
}

// freezeTick is how often the guard notes that the process runs.
const freezeTick = 100 * time.Millisecond

func newFreezeGuard(limit time.Duration) *freezeGuard {
	g := &freezeGuard{limit: limit, rejoin: make(chan struct{}, 1)}
	g.last.Store(time.Now().UnixNano())
	return g
}

// writeHook is the at-least-once data producer's kgo hook: a produce
// request written after a freeze (a batch buffered before it) makes the
// guard see the freeze before that batch's answer comes, so its copies are
// counted as late.
type writeHook struct{ w *worker }

func (h writeHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, _ error) {
	if key != 0 { // Produce
		return
	}
	if now := time.Now(); h.w.freeze.frozen(now) {
		h.w.freezeDetected(now)
	}
}

// frozen reports whether the process did not run (no tick) for longer than
// the limit before now.
func (g *freezeGuard) frozen(now time.Time) bool {
	return now.UnixNano()-g.last.Load() > int64(g.limit)
}

// frozenAt reports whether the process is in a freeze at now: one seen
// before, or a gap the guard has not noticed yet (then it is noticed now).
// The progress writer asks before each periodic write: a zombie's write
// of its old positions would land after the new owners' and send them
// back.
func (w *worker) frozenAt(now time.Time) bool {
	if w.freeze.frozen(now) {
		w.freezeDetected(now)
	}
	return w.freeze.suspect.Load()
}

// runFreezeGuard ticks until ctx ends.
func (w *worker) runFreezeGuard(ctx context.Context) {
	t := time.NewTicker(freezeTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if w.freeze.frozen(now) {
				w.freezeDetected(now)
			}
			w.freeze.last.Store(now.UnixNano())
		}
	}
}

// freezeDetected holds every partition and asks the membership to rejoin
// (once per freeze).
func (w *worker) freezeDetected(now time.Time) {
	if w.freeze.suspect.Swap(true) {
		return
	}
	w.freeze.lateBefore.Store(w.freeze.lateCopies.Load())
	gap := time.Duration(now.UnixNano() - w.freeze.last.Load())
	w.gate.holdAll(holdFrozen)
	w.log.Warn("this process did not run for longer than the session timeout: the group has given its partitions to other members; copying nothing more and joining the group again",
		"paused_for", gap.Round(time.Millisecond), "session_timeout", w.cfg.SessionTimeout, "tasks", w.tasks.count())
	select {
	case w.freeze.rejoin <- struct{}{}:
	default:
	}
}

// freezeCleared ends a detected freeze once its tasks were released, and
// says how many copies landed after the removal.
func (w *worker) freezeCleared() {
	if !w.freeze.suspect.Swap(false) {
		return
	}
	late := w.freeze.lateCopies.Load() - w.freeze.lateBefore.Load()
	w.freeze.last.Store(time.Now().UnixNano())
	if late > 0 {
		w.log.Warn("copies acknowledged after this process was removed from the group: the new owners may hold them twice",
			"records", late)
	}
}
