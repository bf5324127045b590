package lag

import (
	"strconv"
	"time"

	"github.com/mirrorctl/mirrorctl/freshness"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// Threshold names used in Breach.Check (the CLI flags of the same name).
const (
	CheckMaxLatency = "max-latency"
	CheckMaxRecords = "max-records"
	CheckStaleAfter = "stale-after"
	// CheckStopped is not a threshold: a stopped partition
	// (PartitionLag.Stopped) always breaches, since it copies nothing
	// more until an operator acts.
	CheckStopped = "stopped"
)

// Thresholds are the limits Evaluate applies. A zero or negative duration is
// off; MaxRecords is off when negative (0 means "not one record behind").
type Thresholds struct {
	// MaxLatency: a partition whose TimeBehindMs exceeds it (or is
	// unknown) breaches.
	MaxLatency time.Duration
	// MaxRecords: a partition more than this many records behind breaches.
	MaxRecords int64
	// StaleAfter: a heartbeat older than this (or missing) breaches, and
	// so does a group without a checkpoint or whose checkpoint is not
	// current by package freshness's rule with this bound: it matches the
	// group's source commit (whatever its age), or the group moved past it
	// less than StaleAfter ago. An idle group never breaches. The heartbeat
	// is checked only when the flow emits heartbeats or one was found.
	StaleAfter time.Duration
}

// Breach is one threshold exceeded.
type Breach struct {
	Flow  string `json:"flow"`  // "source->target"
	Check string `json:"check"` // CheckMaxLatency, CheckMaxRecords, CheckStaleAfter or CheckStopped
	// Subject is "<remote topic>[<partition>]", "heartbeat" or
	// "group <id>".
	Subject string `json:"subject"`
	// Value is what was measured: ms for latency and staleness, records
	// for max-records and stopped (the records behind; -1 with the source
	// down); -1 when it is unknown (no heartbeat or checkpoint,
	// unreadable oldest record, a source that does not answer), which
	// counts as a breach. Subject is "source <alias>" when the source does
	// not answer and the target knows no partition of the flow.
	Value int64 `json:"value"`
	Limit int64 `json:"limit"` // the threshold, same unit; 0 for CheckStopped
	// Reason says why a partition is stopped (CheckStopped only).
	Reason string `json:"reason,omitempty"`
}

// Evaluate applies th to fl (read for the flow fc), sets the Breach mark of
// each partition and group that breached, and returns the breaches in the
// order partitions, heartbeat, groups. A stopped partition breaches
// (CheckStopped) whatever th says, even with no threshold set.
func Evaluate(fc replicate.FlowConfig, fl *FlowLag, th Thresholds) []Breach {
	var out []Breach
	name := fc.Name()
	for i := range fl.Partitions {
		p := &fl.Partitions[i]
		subject := p.Topic + "[" + strconv.Itoa(int(p.Partition)) + "]"
		if p.Stopped {
			p.Breach = true
			out = append(out, Breach{Flow: name, Check: CheckStopped, Subject: subject, Value: p.RecordsBehind, Reason: p.StopReason})
		}
		if th.MaxRecords >= 0 && p.SourceUnknown {
			p.Breach = true
			out = append(out, Breach{name, CheckMaxRecords, subject, -1, th.MaxRecords, ""})
		} else if th.MaxRecords >= 0 && p.RecordsBehind > th.MaxRecords {
			p.Breach = true
			out = append(out, Breach{name, CheckMaxRecords, subject, p.RecordsBehind, th.MaxRecords, ""})
		}
		if th.MaxLatency > 0 {
			limit := th.MaxLatency.Milliseconds()
			switch {
			case p.TimeBehindMs == nil:
				p.Breach = true
				out = append(out, Breach{name, CheckMaxLatency, subject, -1, limit, ""})
			case *p.TimeBehindMs > limit:
				p.Breach = true
				out = append(out, Breach{name, CheckMaxLatency, subject, *p.TimeBehindMs, limit, ""})
			}
		}
	}
	// A source that does not answer leaves the partition checks unknown
	// even when no partition is known from the target: never "ok".
	if fl.SourceError != "" && len(fl.Partitions) == 0 {
		subject := "source " + fc.Source
		if th.MaxRecords >= 0 {
			out = append(out, Breach{name, CheckMaxRecords, subject, -1, th.MaxRecords, ""})
		}
		if th.MaxLatency > 0 {
			out = append(out, Breach{name, CheckMaxLatency, subject, -1, th.MaxLatency.Milliseconds(), ""})
		}
	}
	if th.StaleAfter > 0 {
		limit := th.StaleAfter.Milliseconds()
		stale := func(age *int64) (int64, bool) {
			if age == nil {
				return -1, true
			}
			return *age, *age > limit
		}
		if fc.EmitHeartbeats || fl.HeartbeatAgeMs != nil {
			if v, bad := stale(fl.HeartbeatAgeMs); bad {
				out = append(out, Breach{name, CheckStaleAfter, "heartbeat", v, limit, ""})
			}
		}
		for i := range fl.Groups {
			g := &fl.Groups[i]
			if g.CheckpointAgeMs == nil {
				g.Breach = true
				out = append(out, Breach{name, CheckStaleAfter, "group " + g.Group, -1, limit, ""})
				continue
			}
			// A checkpoint is stale when it does not reflect the group's
			// source position (package freshness), never for its age
			// alone: an idle group never breaches. Ages are measured from
			// Read's now, so "now" is age 0 here.
			for _, p := range g.Partitions {
				var commit *int64
				if p.CommittedOffset >= 0 {
					commit = &p.CommittedOffset
				}
				at := time.UnixMilli(0)
				// With the source down, freshness judges by the mirror's
				// newest sign of life (heartbeat, else checkpoint).
				var liveness time.Time
				for _, age := range []*int64{fl.HeartbeatAgeMs, fl.NewestCheckpointAgeMs} {
					if age != nil && liveness.IsZero() {
						liveness = at.Add(-time.Duration(*age) * time.Millisecond)
					}
				}
				v := freshness.Judge(freshness.Checkpoint{Upstream: p.UpstreamOffset, Written: at.Add(-time.Duration(p.CheckpointAgeMs) * time.Millisecond)},
					freshness.Source{Up: fl.SourceError == "", Commit: commit, Alias: fc.Source}, liveness, at, th.StaleAfter)
				if !v.Current {
					g.Breach = true
					out = append(out, Breach{name, CheckStaleAfter, "group " + g.Group, p.CheckpointAgeMs, limit, ""})
					break
				}
			}
		}
	}
	return out
}
