package failover

import (
	"fmt"
	"sort"
	"strings"
)

// Summarize sets every group's Summary (one line: what was, or would be,
// committed, left unchanged and skipped, and why) and Incomplete (why the
// group's move falls short of what was asked; empty when it does not). A
// group is incomplete when it was refused; when it has no commit to move
// (no rows, or none with a source commit: a typo, a group that does not
// exist, or a principal without DESCRIBE on its topics) unless allowEmpty;
// when a partition is skip-rewind (saying how far ahead the current commit
// is), skip-not-replicated, skip-no-translation, skip-unknown,
// skip-unsupported or skip-out-of-range; and, after Apply, when a
// partition's outcome is refused, failed, interrupted or unknown. Call it
// after PlanFailover/PlanFailback, and again after Apply and Verify.
func (p *Plan) Summarize(allowEmpty bool) {
	for gi := range p.Groups {
		gp := &p.Groups[gi]
		gp.Incomplete = []string{} // one JSON shape: [] when the move is complete
		add := func(format string, args ...any) { gp.Incomplete = append(gp.Incomplete, fmt.Sprintf(format, args...)) }
		gp.Incomplete = append(gp.Incomplete, gp.Refused...)
		counts := map[string]int{}
		withCommit := 0
		for i := range gp.Partitions {
			pp := &gp.Partitions[i]
			key := string(pp.Action)
			if p.Applied && pp.Outcome != "" && pp.Outcome != OutcomeSkipped {
				key = pp.Outcome
			}
			counts[key]++
			if pp.Action != ActionSkipNoSourceCommit {
				withCommit++
			}
			tp := fmt.Sprintf("%s[%d]", p.commitTopic(pp), pp.Partition)
			switch pp.Action {
			case ActionSkipRewind:
				if at := p.commitAt(pp); at != nil && pp.Current != nil {
					add("%s: the group's offset on %s is %d, %d ahead of the translated %d; not lowered without --allow-rewind", tp, p.CommitCluster(), *pp.Current, *pp.Current-*at, *at)
				}
			case ActionSkipNotReplicated:
				add("%s: not yet replicated (%s)", tp, pp.Reason)
			case ActionSkipNoTranslation:
				add("%s: no safe translated offset (%s)", tp, pp.Reason)
			}
			if p.Applied && len(gp.Refused) == 0 {
				switch pp.Outcome {
				case OutcomeFailed, OutcomeUnknown, OutcomeInterrupted, OutcomeRefused:
					add("%s: %s: %s", tp, pp.Outcome, pp.Error)
				}
			}
		}
		if withCommit == 0 && len(gp.Refused) == 0 && !allowEmpty {
			add("group %s has no committed offset to move on the flow's topics (does it exist? does the principal have DESCRIBE on its topics?); --allow-empty accepts this", gp.Group)
		}
		verb := "would commit"
		if p.Applied {
			verb = "committed"
		}
		var parts []string
		if n := counts[string(ActionCommit)] + counts[OutcomeCommitted]; n > 0 || len(counts) == 0 {
			parts = append(parts, fmt.Sprintf("%s %d", verb, n))
		}
		if n := counts[string(ActionUnchanged)]; n > 0 {
			parts = append(parts, fmt.Sprintf("unchanged %d", n))
		}
		var rest []string
		for k, n := range counts {
			switch k {
			case string(ActionCommit), OutcomeCommitted, string(ActionUnchanged):
				continue
			}
			rest = append(rest, fmt.Sprintf("%s %d", k, n))
		}
		sort.Strings(rest)
		parts = append(parts, rest...)
		line := fmt.Sprintf("group %s: %s", gp.Group, strings.Join(parts, ", "))
		if len(gp.Partitions) == 0 {
			line = fmt.Sprintf("group %s: nothing to move", gp.Group)
		}
		if len(gp.Incomplete) > 0 {
			line += " — incomplete"
		}
		gp.Summary = line
	}
}

// Incomplete reports whether any group's move falls short (see
// [Plan.Summarize]).
func (p *Plan) Incomplete() bool {
	for _, g := range p.Groups {
		if len(g.Incomplete) > 0 {
			return true
		}
	}
	return false
}
