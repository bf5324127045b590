package failover

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/mirrorctl/mirrorctl/groupstate"
)

// DefaultDrillSuffix is appended to each group's name to make its shadow
// group on the target during a drill.
const DefaultDrillSuffix = ".mirrorctl-drill"

// DrillOptions configure [Engine.Drill].
type DrillOptions struct {
	PlanOptions
	// Suffix names the shadow groups (group + Suffix); default
	// DefaultDrillSuffix.
	Suffix string
	// Keep leaves the shadow groups on the target (for inspection).
	Keep bool
}

// DrillPartitionRPO is one source partition's recovery point at the drill's
// instant: what the target did not hold yet.
type DrillPartitionRPO struct {
	Topic     string `json:"topic"` // source topic
	Partition int32  `json:"partition"`
	// Records is source offsets not copied yet (records and transaction
	// markers); Ms is the age of the oldest record not copied, 0 when none.
	Records int64 `json:"records"`
	Ms      int64 `json:"ms"`
}

// DrillReport is the evidence of a drill: the shadow plan as applied and
// verified, the recovery point (RPO, per partition and at worst) and the
// recovery time (RTO: wall time of plan, commit and verification).
type DrillReport struct {
	SchemaVersion int       `json:"schema_version"` // 1
	Source        string    `json:"source"`
	Target        string    `json:"target"`
	StartedAt     time.Time `json:"started_at"`
	// RTOMs is the wall time from the start of the plan to the end of the
	// verification, in ms.
	RTOMs int64 `json:"rto_ms"`
	// RPORecords and RPOMs are the totals (records) and the worst age (ms)
	// over Partitions.
	RPORecords int64               `json:"rpo_records"`
	RPOMs      int64               `json:"rpo_ms"`
	Partitions []DrillPartitionRPO `json:"rpo_partitions"`
	// Shadow maps each group to its shadow group; ShadowsDeleted says
	// whether they were deleted afterwards (false with Keep, or when the
	// delete failed: DeleteError says why).
	Shadow         map[string]string `json:"shadow_groups"`
	ShadowsDeleted bool              `json:"shadow_groups_deleted"`
	DeleteError    string            `json:"delete_error,omitempty"`
	// Verified counts the shadow partitions whose committed record matched
	// the source's; Failed those that did not, or could not be checked.
	Verified int   `json:"verified"`
	Failed   int   `json:"failed"`
	Plan     *Plan `json:"plan"`
}

// Passed reports whether every partition of every group was committed to
// its shadow group and verified (nothing skipped, failed or unknown).
func (r *DrillReport) Passed() bool {
	return r.Plan != nil && r.Failed == 0 && r.Plan.Problems() == 0 && r.Plan.Committed() > 0 && !r.Plan.Incomplete()
}

// Drill runs the whole failover procedure against shadow groups on the
// target (group + Suffix) and never touches the real groups there: it
// measures the RPO at the start (records and time the target does not hold
// yet, from the mirror's progress or offset syncs), plans the failover of
// the real groups (read-only), commits the translated offsets to the shadow
// groups, verifies each committed position record by record, measures the
// RTO, and deletes the shadow groups unless Keep. A shadow group that
// already exists on the target is an error (a previous drill kept it: delete
// it first). The report is returned with the error of a step that failed.
func (e *Engine) Drill(ctx context.Context, opts DrillOptions) (*DrillReport, error) {
	suffix := opts.Suffix
	if suffix == "" {
		suffix = DefaultDrillSuffix
	}
	start := time.Now()
	rep := &DrillReport{SchemaVersion: 1, Source: e.flow.Source, Target: e.flow.Target, StartedAt: e.now().UTC(), Shadow: map[string]string{}, Partitions: []DrillPartitionRPO{}}
	tgt, err := e.clients.Admin(e.flow.Target)
	if err != nil {
		return nil, err
	}
	groups := dedupe(opts.Groups)
	var shadows []string
	for _, g := range groups {
		rep.Shadow[g] = g + suffix
		shadows = append(shadows, g+suffix)
	}
	for _, st := range groupstate.Describe(ctx, tgt, shadows) {
		if !st.Known() {
			return rep, fmt.Errorf("drill: shadow group %s on %s: %w", st.Group, e.flow.Target, st.Err)
		}
		if st.State != groupstate.StateAbsent {
			return rep, fmt.Errorf("drill: shadow group %s already exists on %s (%s); delete it first (kafka-consumer-groups --delete --group %s)", st.Group, e.flow.Target, st.State, st.Group)
		}
	}
	plan, err := e.PlanFailover(ctx, opts.PlanOptions)
	if err != nil {
		return rep, err
	}
	// RPO at the drill's instant, over the topics the groups read.
	topics := map[string]bool{}
	for _, g := range plan.Groups {
		for _, pp := range g.Partitions {
			if pp.SourceTopic != "" {
				topics[pp.SourceTopic] = true
			}
		}
	}
	ages, behind, err := e.lagOf(ctx, topics)
	if err != nil {
		return rep, fmt.Errorf("drill: measure the RPO: %w", err)
	}
	for k, n := range behind {
		p := DrillPartitionRPO{Topic: k.topic, Partition: k.partition, Records: n, Ms: ages[k].Milliseconds()}
		rep.Partitions = append(rep.Partitions, p)
		rep.RPORecords += n
		rep.RPOMs = max(rep.RPOMs, p.Ms)
	}
	sort.Slice(rep.Partitions, func(i, j int) bool {
		a, b := rep.Partitions[i], rep.Partitions[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	// The shadow plan: the real groups' translations, committed to the
	// shadow groups (absent, checked above), whatever the real groups'
	// state on the target (the drill does not move them).
	for gi := range plan.Groups {
		gp := &plan.Groups[gi]
		gp.Group = rep.Shadow[gp.Group]
		gp.Refused, gp.Blocking, gp.State, gp.Type, gp.Members = nil, nil, groupstate.StateAbsent, "", 0
		for i := range gp.Partitions {
			pp := &gp.Partitions[i]
			pp.Current = nil
			pp.Action = decide(pp.SourceOffset, pp.TargetOffset, nil, pp.NotReplicated, "", false)
		}
	}
	if err := e.checkRanges(ctx, plan, opts.ClampOffsets); err != nil {
		return rep, err
	}
	rep.Plan = plan
	applyErr := e.Apply(ctx, plan)
	if applyErr == nil {
		applyErr = e.Verify(ctx, plan)
	}
	rep.RTOMs = time.Since(start).Milliseconds()
	plan.Summarize(false)
	for _, g := range plan.Groups {
		for _, pp := range g.Partitions {
			switch {
			case pp.Verified != nil && *pp.Verified:
				rep.Verified++
			case pp.Outcome == OutcomeCommitted || pp.Outcome == OutcomeUnchanged || pp.Outcome == OutcomeFailed || pp.Outcome == OutcomeUnknown:
				rep.Failed++
			}
		}
	}
	if !opts.Keep {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.commitTimeout)
		resp, err := tgt.DeleteGroups(dctx, shadows...)
		cancel()
		if err == nil {
			for _, r := range resp {
				if r.Err != nil && !errors.Is(r.Err, kerr.GroupIDNotFound) {
					err = errors.Join(err, fmt.Errorf("%s: %w", r.Group, r.Err))
				}
			}
		}
		rep.ShadowsDeleted = err == nil
		if err != nil {
			rep.DeleteError = err.Error()
		}
	}
	return rep, applyErr
}

// WriteMarkdown writes r as a summary an auditor can read: what was
// drilled, the RPO and RTO, each group's outcome and each partition's
// verification.
func (r *DrillReport) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	verdict := "PASSED"
	if !r.Passed() {
		verdict = "FAILED"
	}
	fmt.Fprintf(&b, "# Failover drill %s -> %s: %s\n\n", r.Source, r.Target, verdict)
	fmt.Fprintf(&b, "- Started: %s\n", r.StartedAt.Format(time.RFC3339))
	fmt.Fprintf(&b, "- RTO (plan, commit, verify): %d ms\n", r.RTOMs)
	fmt.Fprintf(&b, "- RPO at the start: %d records not yet on %s; oldest %d ms old\n", r.RPORecords, r.Target, r.RPOMs)
	fmt.Fprintf(&b, "- Partitions verified record by record: %d passed, %d failed\n", r.Verified, r.Failed)
	deleted := "deleted"
	switch {
	case r.DeleteError != "":
		deleted = "NOT deleted: " + r.DeleteError
	case !r.ShadowsDeleted:
		deleted = "kept"
	}
	fmt.Fprintf(&b, "- Shadow groups on %s: %s; the real groups were not touched\n\n", r.Target, deleted)
	b.WriteString("| group | shadow group | topic | partition | source offset | committed offset | outcome | verified |\n|---|---|---|---|---|---|---|---|\n")
	names := make([]string, 0, len(r.Shadow))
	for g := range r.Shadow {
		names = append(names, g)
	}
	sort.Strings(names)
	byShadow := map[string]GroupPlan{}
	if r.Plan != nil {
		for _, g := range r.Plan.Groups {
			byShadow[g.Group] = g
		}
	}
	opt := func(p *int64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	for _, g := range names {
		gp := byShadow[r.Shadow[g]]
		for _, pp := range gp.Partitions {
			v := "-"
			switch {
			case pp.Verified != nil && *pp.Verified:
				v = "pass"
			case pp.Verified != nil:
				v = "FAIL"
			case pp.VerifyNote != "":
				v = "unknown"
			}
			outcome := pp.Outcome
			if outcome == "" {
				outcome = string(pp.Action)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | %s | %s | %s |\n", g, gp.Group, pp.Topic, pp.Partition, opt(pp.SourceOffset), opt(pp.TargetOffset), outcome, v)
		}
	}
	if len(r.Partitions) > 0 {
		b.WriteString("\n## RPO per partition\n\n| topic | partition | records not mirrored | oldest (ms) |\n|---|---|---|---|\n")
		for _, p := range r.Partitions {
			fmt.Fprintf(&b, "| %s | %d | %d | %d |\n", p.Topic, p.Partition, p.Records, p.Ms)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
