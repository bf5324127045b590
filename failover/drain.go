package failover

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// caughtUp returns, for one group of a plan, what is still missing before
// its source position is replicated: a partition whose commit has no exact
// translation yet (not replicated, no translation, or a translation that is
// not exact). Partitions without a source commit, and groups already
// refused, are not waited for. nil means caught up.
func caughtUp(gp *GroupPlan) []string {
	if len(gp.Refused) > 0 {
		return nil
	}
	var missing []string
	for _, pp := range gp.Partitions {
		switch pp.Action {
		case ActionSkipNoSourceCommit:
			continue
		case ActionCommit, ActionUnchanged, ActionSkipRewind:
			if pp.Mode == ModeExact && pp.Rereads != nil && *pp.Rereads == 0 {
				continue
			}
			missing = append(missing, fmt.Sprintf("%s[%d]: no exact translation yet (%s mode)", pp.Topic, pp.Partition, pp.Mode))
		default:
			why := pp.Reason
			if why == "" {
				why = string(pp.Action)
			}
			missing = append(missing, fmt.Sprintf("%s[%d]: %s", pp.Topic, pp.Partition, why))
		}
	}
	return missing
}

// WaitCaughtUp is the drain step of a planned failover: it plans the
// failover (see [Engine.PlanFailover]; opts.Mode must be auto or exact, and
// the source must answer) every interval until every group's source
// position is replicated, that is every partition the group has committed
// on has an exact translation, the target holding the copy of the next
// record the group would read, or until timeout passes. It returns the
// last plan; a group still not caught up then is refused with what is
// missing (so it is not committed and the run exits 3). ctx's end is
// returned as an error.
func (e *Engine) WaitCaughtUp(ctx context.Context, opts PlanOptions, timeout, interval time.Duration) (*Plan, error) {
	if opts.Mode == ModeCheckpoint {
		return nil, fmt.Errorf("waiting until caught up needs exact translation; mode %s cannot tell", opts.Mode)
	}
	if interval <= 0 {
		interval = time.Second
	}
	deadline := time.Now().Add(timeout)
	for {
		plan, err := e.PlanFailover(ctx, opts)
		if err != nil {
			return nil, err
		}
		done := true
		for gi := range plan.Groups {
			if len(caughtUp(&plan.Groups[gi])) > 0 {
				done = false
			}
		}
		if !done && plan.Mode == ModeAuto {
			for _, g := range plan.Groups {
				for _, pp := range g.Partitions {
					if pp.Mode == ModeCheckpoint {
						done = true // the source is down: waiting cannot help
					}
				}
			}
		}
		if done || !time.Now().Before(deadline) {
			for gi := range plan.Groups {
				gp := &plan.Groups[gi]
				if m := caughtUp(gp); len(m) > 0 {
					gp.Refused = append(gp.Refused, fmt.Sprintf("group %s is not caught up after waiting %s: %s", gp.Group, timeout, strings.Join(m, "; ")))
				}
			}
			return plan, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(interval, time.Until(deadline))):
		}
	}
}
