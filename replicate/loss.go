package replicate

import (
	"fmt"
	"sync"
	"time"

	"github.com/mirrorctl/mirrorctl/replicate/progress"
)

// Loss reporting. Whatever keeps source records from reaching the target
// (records deleted before they were copied, a topic recreated under the
// mirror, a record the target refuses) is a loss event of one partition. Each
// event is reported in every place an operator or a script looks:
//
//   - one ERROR log line when it is found (at most lossLogBurst lines per
//     flow and minute; the next line allowed says how many were held back);
//   - the partition's observer, when it implements [LossObserver]
//     (internal/metrics: mirrorctl_records_skipped_total and
//     mirrorctl_loss_events_total, and the partition's state in /status);
//   - the partition's progress records (package replicate/progress: the
//     skipped total and the newest event), which is where `lag` reads the
//     partition's state from;
//   - [PartitionStats].Losses, and the error [Mirror.Run] returns once the
//     flows stopped (a *LossEvent per event), which makes `replicate --once`
//     exit 3 naming topic, partition and offsets.

// LossKind says why source records did not reach the target.
type LossKind string

// Loss kinds.
const (
	// LossGap: source records were deleted (retention, DeleteRecords)
	// before they were copied: offsets [From, To) are missing on the
	// target. Copying goes on from the log start unless the source
	// consumer's auto.offset.reset is none, which stops the partition.
	LossGap LossKind = "gap"
	// LossSourceRecreated: the source topic was deleted and created again
	// (its topic ID changed); the positions saved for the old topic mean
	// nothing for the new one.
	LossSourceRecreated LossKind = "recreated"
	// LossTargetRecreated: the remote partition on the target lost
	// mirrored records: it ends below the downstream position the progress
	// recorded (the remote topic was deleted, or deleted and created
	// again). Gone is how many; the partition is copied again from the
	// source log start, and Count of them are lost for good (the source
	// no longer holds them). Always an error of the run, even when Count
	// is 0: the target's consumers saw their records vanish and come back
	// at other offsets.
	LossTargetRecreated LossKind = "target-recreated"
	// LossRefused: the target refused a record ([RecordError]); the
	// partition stops at it, nothing is skipped.
	LossRefused LossKind = "refused"
)

// LossKinds lists every [LossKind], so that metrics can start each series
// at zero.
var LossKinds = []LossKind{LossGap, LossSourceRecreated, LossTargetRecreated, LossRefused, LossRing}

// LossEvent is one loss event of a source partition. Source offsets [From,
// To) did not reach the target: Count of them (To-From; 0 when the partition
// stopped before it lost any). Stopped says the partition copies nothing
// more until an operator acts; Reason says what happened and what to do.
//
// A [LossTargetRecreated] event differs: Gone is the mirrored records the
// remote partition lost (target offsets: the downstream position the
// progress recorded minus the remote partition's end now), Count those of
// them that are not copied again, and From = To the source offset copying
// goes on from: for an empty remote partition, refilled, Count is those the
// source no longer holds (Gone minus the source offsets from the log start
// to the recorded position, at least 0) and From its log start; for one
// that lost only its last records, not refilled, Count is Gone and From the
// recorded position (targetLoss).
type LossEvent struct {
	Flow        string    `json:"flow"`
	Topic       string    `json:"topic"` // source topic
	RemoteTopic string    `json:"remote_topic"`
	Partition   int32     `json:"partition"`
	Kind        LossKind  `json:"kind"`
	From        int64     `json:"from"`
	To          int64     `json:"to"`
	Count       int64     `json:"count"` // source offsets, To-From
	Stopped     bool      `json:"stopped"`
	Reason      string    `json:"reason"`
	Time        time.Time `json:"time"` // when it was found
	// Gone: for LossTargetRecreated, the mirrored records the remote
	// partition lost (target offsets); 0 for other kinds, or unknown
	// (progress written before downstream positions were kept).
	Gone int64 `json:"gone,omitempty"`
}

// Error says what was lost where: flow, partition, offsets, count, why, and
// whether the partition stopped.
func (e *LossEvent) Error() string {
	s := fmt.Sprintf("flow %s: %s[%d]: %s", e.Flow, e.Topic, e.Partition, e.Kind)
	if e.Kind == LossTargetRecreated {
		if e.Gone > 0 {
			s += fmt.Sprintf(": %d mirrored records gone from %s[%d]", e.Gone, e.RemoteTopic, e.Partition)
			if e.Count > 0 {
				s += fmt.Sprintf(", %d of them lost (no longer on the source)", e.Count)
			} else {
				s += ", all still on the source"
			}
		}
		if e.Reason != "" {
			s += ": " + e.Reason
		}
		return s
	}
	if e.Count > 0 {
		s += fmt.Sprintf(": source offsets %d to %d (%d records) not copied", e.From, e.To-1, e.Count)
	} else if e.From >= 0 {
		s += fmt.Sprintf(" at source offset %d", e.From)
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	if e.Stopped {
		s += "; partition stopped"
	}
	return s
}

// progressLoss is e as the progress topic keeps it.
func (e *LossEvent) progressLoss() *progress.Loss {
	return &progress.Loss{Kind: string(e.Kind), From: e.From, To: e.To, Count: e.Count, Stopped: e.Stopped, Reason: e.Reason, TimeMs: e.Time.UnixMilli(), Gone: e.Gone}
}

// LossObserver is implemented by a [PartitionObserver] that wants the
// partition's loss events (internal/metrics counts them). Loss is called
// once per event, never in the per-record path.
type LossObserver interface {
	Loss(LossEvent)
}

// maxLossEvents is how many events a task keeps for its stats.
const maxLossEvents = 16

// lossState is a task's loss bookkeeping (task.mu). It is the task's own:
// a partition assigned again starts from what its progress record holds
// (inheritLoss), never from the previous task's events.
type lossState struct {
	events  []LossEvent    // this task's, newest last, at most maxLossEvents
	skipped int64          // offsets never copied, including those the progress already counted
	last    *progress.Loss // newest event, inherited from the progress at start
	stop    *LossEvent     // the event that stopped the task
	dirty   bool           // changed since the last progress write
	topicID string         // the source topic's ID this task copies, "" unknown
}

// lossLogBurst is the most loss ERROR lines a flow logs per minute.
const lossLogBurst = 10

// lossLimiter holds back loss log lines past lossLogBurst a minute.
type lossLimiter struct {
	mu         sync.Mutex // guards start, n and suppressed
	start      time.Time
	n          int
	suppressed int
}

// allow says whether a line may be logged now, and how many were held back
// since the last one allowed.
func (l *lossLimiter) allow(now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.start) >= time.Minute {
		l.start, l.n = now, 0
	}
	if l.n >= lossLogBurst {
		l.suppressed++
		return false, 0
	}
	l.n++
	held := l.suppressed
	l.suppressed = 0
	return true, held
}

// reportLoss records a loss event of t and reports it (see the top of this
// file). With ev.Stopped the task stops: nothing more of its partition is
// produced. t.mu must not be held.
func (w *worker) reportLoss(t *task, ev LossEvent) {
	ev.Flow, ev.Topic, ev.RemoteTopic, ev.Partition = w.cfg.Name(), t.src.topic, t.remote, t.src.partition
	if ev.Time.IsZero() {
		ev.Time = w.now()
	}
	if ev.Count == 0 && ev.To > ev.From && ev.Kind != LossTargetRecreated {
		ev.Count = ev.To - ev.From
	}
	t.mu.Lock()
	if len(t.loss.events) == maxLossEvents {
		t.loss.events = append(t.loss.events[:0], t.loss.events[1:]...)
	}
	t.loss.events = append(t.loss.events, ev)
	// A partition stopped by an event stops at it again in the next run
	// and reports it again: its offsets are in the skipped total already.
	if l := t.loss.last; l == nil || !l.Stopped || l.Kind != string(ev.Kind) || l.From != ev.From || l.To != ev.To {
		t.loss.skipped += ev.Count
	}
	t.loss.last = ev.progressLoss()
	t.loss.dirty = true
	if ev.Stopped {
		e := ev
		t.loss.stop = &e
	}
	t.mu.Unlock()
	if ev.Stopped {
		t.halted.Store(true)
		t.to(TaskStopped, w.log)
		w.gate.hold(t, holdStopped)
	}
	if lo, ok := t.obs.(LossObserver); ok {
		lo.Loss(ev)
	}
	if ok, held := w.lossLog.allow(ev.Time); ok {
		msg := "source records not copied"
		if ev.Stopped {
			msg = "partition stopped"
		}
		attrs := []any{"kind", ev.Kind, "topic", ev.Topic, "partition", ev.Partition, "from", ev.From, "to", ev.To, "count", ev.Count}
		if ev.Kind == LossTargetRecreated {
			attrs = append(attrs, "remote", ev.RemoteTopic, "gone", ev.Gone)
		}
		attrs = append(attrs, "err", &ev)
		if held > 0 {
			attrs = append(attrs, "loss_lines_held_back", held)
		}
		w.log.Error(msg, attrs...)
	}
}

// inheritLoss takes the skipped total and newest event the progress holds
// for t, so that t's own progress writes keep them.
func (t *task) inheritLoss(v progress.Value) {
	t.mu.Lock()
	t.loss.skipped, t.loss.last = v.Skipped, v.Loss
	t.pos.downstream = v.Downstream
	t.mu.Unlock()
}

// progressValue is the progress record value of t at next, t.mu held.
func (t *task) progressValue(next int64, now time.Time) progress.Value {
	return progress.Value{Next: next, Time: now, TopicID: t.loss.topicID, Skipped: t.loss.skipped, SourceEnd: max(t.pos.sourceEnd, next), Downstream: t.pos.downstream, Loss: t.loss.last}
}

// gapReason says what happened to records deleted before they were copied
// and what the mirror does about it; next is the first offset the source
// still holds.
func gapReason(stop bool, next int64) string {
	if stop {
		return "deleted on the source (retention or DeleteRecords) before they were copied; auto.offset.reset is none, so the partition stops: " +
			"to copy on from the log start, remove auto.offset.reset=none from the source consumer settings and restart"
	}
	return fmt.Sprintf("deleted on the source (retention or DeleteRecords) before they were copied; copying goes on from offset %d, the log start", next)
}

// targetLoss returns the loss event of a remote partition that lost
// mirrored records, or nil when it holds what the progress says was copied
// (see [LossTargetRecreated]), and whether the partition is to be copied
// again from the source log start. remoteEnd is the remote partition's end
// offset now, logStart the source partition's log start, next the first
// source offset not copied, downstream the progress's downstream position.
//
//   - An empty remote partition (deleted, or recreated) is refilled: what
//     the source still holds of what was mirrored is copied again, the
//     rest (Count) is lost.
//   - A remote partition ending above 0 but below downstream lost its last
//     mirrored records only (truncated by an unclean leader election, or
//     recreated and partly refilled by a run that stopped before writing
//     its progress): a refill would copy again what it still holds, so it
//     is not refilled; the records gone are all counted lost and copying
//     goes on from next.
//   - With the downstream position unknown (0: progress written before it
//     was kept), an empty remote partition though source offsets at or
//     after the log start were copied is refilled, its size unknown.
func targetLoss(remote string, partition int32, downstream, remoteEnd, next, logStart int64) (*LossEvent, bool) {
	recopy := max(0, next-logStart)
	var gone, lost int64
	switch {
	case downstream > 0 && remoteEnd > 0 && remoteEnd < downstream:
		gone = downstream - remoteEnd
		return &LossEvent{Kind: LossTargetRecreated, From: next, To: next, Count: gone, Gone: gone,
			Reason: fmt.Sprintf("the remote partition %s[%d] ends at offset %d though progress recorded mirrored records up to offset %d: its last %d mirrored records are gone "+
				"(truncated by an unclean leader election on the target, or the topic recreated and partly refilled); they are not copied again, so nothing is copied twice: copying goes on from source offset %d",
				remote, partition, remoteEnd, downstream-1, gone, next)}, false
	case downstream > 0 && remoteEnd < downstream:
		gone = downstream - remoteEnd
		lost = max(0, gone-recopy)
	case downstream == 0 && remoteEnd == 0 && next > logStart:
	default:
		return nil, false
	}
	var what string
	switch {
	case gone == 0:
		what = fmt.Sprintf("how many is unknown (the progress predates downstream positions); source offsets %d to %d are copied again", logStart, next-1)
	case lost == 0:
		what = fmt.Sprintf("the source still holds them: source offsets %d to %d are copied again", logStart, next-1)
	case recopy == 0:
		what = fmt.Sprintf("the source no longer holds any of them (its log starts at %d): they are lost", logStart)
	default:
		what = fmt.Sprintf("the source holds only offsets %d to %d of them, copied again; the other %d are lost", logStart, next-1, lost)
	}
	found := fmt.Sprintf("the remote partition %s[%d] is empty though progress says source offsets up to %d were copied", remote, partition, next-1)
	if downstream > 0 {
		found = fmt.Sprintf("the remote partition %s[%d] is empty though progress recorded mirrored records up to offset %d (source offsets up to %d)",
			remote, partition, downstream-1, next-1)
	}
	return &LossEvent{Kind: LossTargetRecreated, From: logStart, To: logStart, Count: lost, Gone: gone,
		Reason: found + ": the remote topic was deleted or recreated; " + what + "; offsets committed on the target for it no longer match its records"}, true
}
