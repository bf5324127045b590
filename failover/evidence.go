package failover

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// EvidenceKind is the Kind of an [Evidence] document.
const EvidenceKind = "mirrorctl failover evidence"

// Evidence is the report of one failover apply or drill, for the change
// record and the auditor: its type, what it committed per group and
// partition (the offset before and after), its recovery time (RTO: the
// wall time from the start of the procedure to the end of the
// verification) and recovery point (RPO) and how that was established
// (the quiescence of a planned failover, the bounds of an unplanned one,
// the duplicates of a restore), and the audit operations that recorded it.
type Evidence struct {
	SchemaVersion int       `json:"schema_version"` // 1
	Kind          string    `json:"kind"`           // EvidenceKind
	Type          Type      `json:"type"`
	Drill         bool      `json:"drill"`
	Source        string    `json:"source"`
	Target        string    `json:"target"`
	StartedAt     time.Time `json:"started_at"`
	FinishedAt    time.Time `json:"finished_at"`
	RTOMs         int64     `json:"rto_ms"`
	RPO           RPO       `json:"rpo"`
	// Passed: every partition of every group committed (or unchanged)
	// and, where verified, matching.
	Passed     bool        `json:"passed"`
	Quiescence *Quiescence `json:"quiescence,omitempty"`
	Bounds     []Bound     `json:"bounds,omitempty"`
	Duplicates int64       `json:"duplicates"`
	// Verified and Failed count the partitions verified record by record
	// and those that did not match or could not be checked.
	Verified int             `json:"verified"`
	Failed   int             `json:"failed"`
	Groups   []EvidenceGroup `json:"groups"`
	// AuditOps are the audit log's operation ids of the procedure (the
	// fence, the apply), in order.
	AuditOps []string `json:"audit_operations"`
}

// EvidenceGroup is one group of an [Evidence]: where it was committed and
// how each partition ended.
type EvidenceGroup struct {
	Group      string              `json:"group"`
	Cluster    string              `json:"cluster"` // the cluster committed to
	Summary    string              `json:"summary"`
	Incomplete []string            `json:"incomplete"`
	Partitions []EvidencePartition `json:"partitions"`
}

// EvidencePartition is one partition: the group's committed offset on
// the cluster committed to before (nil: none) and after (nil: not
// committed), the outcome, and the verification (nil: not verified).
type EvidencePartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Mode      Mode   `json:"mode"`
	Before    *int64 `json:"before"`
	After     *int64 `json:"after"`
	Rereads   *int64 `json:"rereads"`
	Outcome   string `json:"outcome"`
	Verified  *bool  `json:"verified"`
	Note      string `json:"note,omitempty"`
}

// NewEvidence builds the evidence of p, its plans applied (and verified)
// or not, finished at finished, recorded by the audit operations ops.
func NewEvidence(p *Procedure, finished time.Time, ops []string) *Evidence {
	ev := &Evidence{SchemaVersion: 1, Kind: EvidenceKind, Type: p.Type, StartedAt: p.StartedAt, FinishedAt: finished.UTC(),
		RTOMs: finished.Sub(p.StartedAt).Milliseconds(), RPO: p.RPO, Quiescence: p.Quiescence, Bounds: p.Bounds,
		Duplicates: p.Duplicates, Groups: []EvidenceGroup{}, AuditOps: append([]string{}, ops...), Passed: len(p.Plans) > 0}
	for _, plan := range p.Plans {
		if ev.Source == "" {
			ev.Source, ev.Target = plan.Source, plan.Target
		}
		if plan.Problems() > 0 || plan.Incomplete() || plan.PrecheckFailed() {
			ev.Passed = false
		}
		for _, g := range plan.Groups {
			eg := EvidenceGroup{Group: g.Group, Cluster: plan.CommitCluster(), Summary: g.Summary, Incomplete: append([]string{}, g.Incomplete...), Partitions: []EvidencePartition{}}
			for i := range g.Partitions {
				pp := &g.Partitions[i]
				ep := EvidencePartition{Topic: plan.commitTopic(pp), Partition: pp.Partition, Mode: pp.Mode, Before: pp.Current,
					Rereads: pp.Rereads, Outcome: pp.Outcome, Verified: pp.Verified, Note: pp.VerifyNote}
				if ep.Outcome == "" {
					ep.Outcome = string(pp.Action)
				}
				if pp.Outcome == OutcomeCommitted || pp.Outcome == OutcomeUnchanged {
					ep.After = plan.commitAt(pp)
				}
				switch {
				case pp.Verified != nil && *pp.Verified:
					ev.Verified++
				case pp.Verified != nil || pp.Outcome == OutcomeFailed || pp.Outcome == OutcomeUnknown:
					ev.Failed++
					ev.Passed = false
				}
				eg.Partitions = append(eg.Partitions, ep)
			}
			ev.Groups = append(ev.Groups, eg)
		}
	}
	return ev
}

// WriteMarkdown writes ev as a page a change record can hold.
func (ev *Evidence) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	verdict := "PASSED"
	if !ev.Passed {
		verdict = "FAILED"
	}
	what := string(ev.Type) + " failover"
	// A restore moves the groups the other way along the flow: name the
	// direction they move, then the flow, so nobody reads it backwards.
	move := fmt.Sprintf("%s -> %s", ev.Source, ev.Target)
	if ev.Type == TypeRestore {
		what = "restore (failback)"
		move = fmt.Sprintf("%s -> %s (flow %s->%s)", ev.Target, ev.Source, ev.Source, ev.Target)
	}
	if ev.Drill {
		what += " drill"
	}
	fmt.Fprintf(&b, "# %s %s: %s\n\n", what, move, verdict)
	fmt.Fprintf(&b, "- Started %s, finished %s: RTO %d ms\n", ev.StartedAt.Format(time.RFC3339), ev.FinishedAt.Format(time.RFC3339), ev.RTOMs)
	proven := "a bound"
	if ev.RPO.Proven {
		proven = "proven"
	}
	fmt.Fprintf(&b, "- RPO (%s): %d records, oldest %d ms: %s\n", proven, ev.RPO.Records, ev.RPO.Ms, ev.RPO.How)
	if q := ev.Quiescence; q != nil {
		fmt.Fprintf(&b, "- Quiescence: %s on %s; end offsets unchanged for %d ms since %s; mirrored at %s\n",
			q.Method, plural(len(q.Topics), "topic"), q.SettleMs, q.QuietSince.Format(time.RFC3339Nano), q.MirroredAt.Format(time.RFC3339Nano))
		if q.Fence != nil {
			for _, bd := range q.Fence.Bindings {
				fmt.Fprintf(&b, "  - %s\n", bd)
			}
		}
	}
	if ev.Type == TypeRestore {
		fmt.Fprintf(&b, "- Records the groups read again on the source: %d\n", ev.Duplicates)
	}
	fmt.Fprintf(&b, "- Partitions verified record by record: %d passed, %d failed\n", ev.Verified, ev.Failed)
	fmt.Fprintf(&b, "- Audit operations: %s\n\n", strings.Join(ev.AuditOps, ", "))
	b.WriteString("| group | cluster | topic | partition | mode | before | after | outcome | verified |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, g := range ev.Groups {
		for _, p := range g.Partitions {
			v := "-"
			if p.Verified != nil {
				v = map[bool]string{true: "pass", false: "FAIL"}[*p.Verified]
			} else if p.Note != "" {
				v = "unknown"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | %s | %s | %s | %s |\n", g.Group, g.Cluster, p.Topic, p.Partition, p.Mode, optStr(p.Before), optStr(p.After), p.Outcome, v)
		}
	}
	if len(ev.Bounds) > 0 {
		b.WriteString("\n## Error bound per partition\n\n" +
			"| group | source topic | partition | checkpoint | committed | target end | copied | source end seen | seen at | reread at most | not mirrored at least |\n" +
			"|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, bd := range ev.Bounds {
			fmt.Fprintf(&b, "| %s | %s | %d | %d | %s | %s | %s | %s | %s | %s | %s |\n", bd.Group, bd.SourceTopic, bd.Partition, bd.Checkpoint,
				Unknown(bd.Committed), Unknown(bd.TargetEnd), Unknown(bd.Copied), Unknown(bd.SourceEnd), seenAt(bd.SeenAt), Unknown(bd.RereadMax), Unknown(bd.NotMirroredMin))
		}
	}
	for _, g := range ev.Groups {
		if len(g.Incomplete) > 0 {
			fmt.Fprintf(&b, "\n%s: %s\n", g.Group, strings.Join(g.Incomplete, "; "))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Unknown formats n, or "unknown" when it is negative (a [Bound]'s -1).
func Unknown(n int64) string {
	if n < 0 {
		return "unknown"
	}
	return strconv.FormatInt(n, 10)
}

func seenAt(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format(time.RFC3339)
}

func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
