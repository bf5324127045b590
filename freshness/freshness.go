// Package freshness holds mirrorctl's one definition of a current
// checkpoint, used by `failover` (checkpoint-mode rows), `lag
// --stale-after` and the mirrorctl_checkpoint_age_seconds metric behind the
// shipped alert rules.
//
// MM2's MirrorCheckpointTask (and mirrorctl, which follows it) writes a new
// checkpoint only when a group's committed offset moves, so the age of an
// idle group's newest checkpoint says nothing about it: a group stopped an
// hour ago has an hour-old checkpoint that is exactly right. A checkpoint is
// therefore judged by what it reflects, with [Judge]:
//
//   - when the source answers, the checkpoint is current if its upstream
//     offset is the group's committed offset on the source now, whatever
//     its age; if the group has moved past it, it is current only while it
//     is younger than the bound (the mirror has had less than a round to
//     catch up); a checkpoint ahead of the group's commit (a rewind on the
//     source) or for a partition the group no longer commits is not current;
//   - when the source does not answer (the disaster case), the group cannot
//     be compared, so the mirror's liveness is judged instead: the newest
//     heartbeat of the flow, or the newest checkpoint of any group, must be
//     younger than the bound. One idle group's record age is never used.
//
// The metric mirrorctl_checkpoint_age_seconds applies the first rule at
// each of the mirror's listings of the source groups: its age is the time
// since the group's checkpoint was last written or last found equal to the
// group's commit, so an idle group never breaches while the mirror runs.
package freshness

import (
	"fmt"
	"time"
)

// Verdict is the judgement of one checkpoint.
type Verdict struct {
	// Current reports whether the checkpoint may be used as the group's
	// position.
	Current bool
	// Reason says what the verdict rests on, e.g. "matches the group's
	// commit 40 on us-east" or "the group moved to 52 on us-east; the
	// checkpoint at 40 is 2m0s old, not under 15s".
	Reason string
}

// Checkpoint is what [Judge] needs of one checkpoint.
type Checkpoint struct {
	Upstream int64     // the checkpoint's source offset
	Written  time.Time // the record timestamp: when the source offsets were listed
}

// Source is what the source cluster says about the group's partition now.
type Source struct {
	// Up is false when the source did not answer; Commit is then unused.
	Up bool
	// Commit is the group's committed offset for the partition; nil when
	// it has none.
	Commit *int64
	Alias  string // the source cluster's alias, for reasons
}

// Judge decides whether ck is current (see the package doc). liveness is
// the time of the mirror's newest sign of life for the flow (the newest
// heartbeat, else the newest checkpoint of any group; zero when none) and
// is used only when the source is down; maxAge is the bound (3 ×
// emit.checkpoints.interval.seconds by default in failover).
func Judge(ck Checkpoint, src Source, liveness, now time.Time, maxAge time.Duration) Verdict {
	age := now.Sub(ck.Written).Round(time.Second)
	if src.Up {
		switch {
		case src.Commit == nil:
			return Verdict{false, fmt.Sprintf("the group has no commit on %s for this partition now; the checkpoint at %d is not its position", src.Alias, ck.Upstream)}
		case *src.Commit == ck.Upstream:
			return Verdict{true, fmt.Sprintf("matches the group's commit %d on %s", ck.Upstream, src.Alias)}
		case *src.Commit < ck.Upstream:
			return Verdict{false, fmt.Sprintf("the checkpoint at %d is ahead of the group's commit %d on %s (rewound there?); a consumer would skip records", ck.Upstream, *src.Commit, src.Alias)}
		case now.Sub(ck.Written) < maxAge:
			return Verdict{true, fmt.Sprintf("the group moved to %d on %s; the checkpoint at %d is %s old, under %s", *src.Commit, src.Alias, ck.Upstream, age, maxAge)}
		}
		return Verdict{false, fmt.Sprintf("the group moved to %d on %s; the checkpoint at %d is %s old, not under %s: the mirror is not checkpointing it", *src.Commit, src.Alias, ck.Upstream, age, maxAge)}
	}
	if liveness.IsZero() {
		return Verdict{false, "the source does not answer and the flow has no heartbeat or checkpoint to judge the mirror by"}
	}
	live := now.Sub(liveness)
	if live < maxAge {
		return Verdict{true, fmt.Sprintf("the source does not answer; the mirror was live %s ago (its newest heartbeat or checkpoint), under %s", live.Round(time.Second), maxAge)}
	}
	return Verdict{false, fmt.Sprintf("the source does not answer and the mirror's newest heartbeat or checkpoint is %s old, not under %s: it may have stopped before the source did", live.Round(time.Second), maxAge)}
}
