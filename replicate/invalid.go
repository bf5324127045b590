package replicate

import (
	"context"
	"fmt"
	"sort"

	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// Internal records that cannot be true. An offset sync or checkpoint is
// well-formed yet may name a target offset the target cannot hold: past the
// remote partition's end, below its log start, or negative (a bogus or
// foreign record in the offset-syncs topic, a checkpoint reloaded from a
// topic that outlived its target). The checkpointer never writes such a
// checkpoint and never commits one to a group: each is counted
// ([GroupStats].Invalid, the observer's InvalidInternalRecord when it has
// it: mirrorctl_invalid_internal_records_total) and reported with an ERROR
// line (rate-limited like loss lines), naming group, partition and offsets.

// InvalidInternalObserver is implemented by an [Observer] that counts
// internal records that cannot be true; kind is "checkpoint" (a checkpoint
// to write, or translated from an offset sync) or "group-offset" (a
// checkpoint about to be committed to a target group).
type InvalidInternalObserver interface {
	InvalidInternalRecord(source, target, kind string)
}

// dropImpossible returns the checkpoints of cks whose downstream offset the
// target's remote partition can hold now (log start <= offset <= end), in
// order, and reports the others as kind. An error listing the target's
// offsets is returned with nothing kept: unknown is never safe to act on.
func (c *checkpointer) dropImpossible(ctx context.Context, cks []mm2.Checkpoint, kind string) ([]mm2.Checkpoint, []int, error) {
	if len(cks) == 0 {
		return nil, nil, nil
	}
	seen := map[string]bool{}
	var topics []string
	for _, ck := range cks {
		if !seen[ck.Topic] {
			seen[ck.Topic] = true
			topics = append(topics, ck.Topic)
		}
	}
	sort.Strings(topics)
	starts, err := c.tgt.ListStartOffsets(ctx, topics...)
	if err != nil {
		return nil, nil, fmt.Errorf("flow %s: list start offsets on %s: %w", c.cfg.Name(), c.cfg.Target, err)
	}
	ends, err := c.tgt.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, nil, fmt.Errorf("flow %s: list end offsets on %s: %w", c.cfg.Name(), c.cfg.Target, err)
	}
	var keep []mm2.Checkpoint
	var kept []int
	for i, ck := range cks {
		s, sok := starts.Lookup(ck.Topic, ck.Partition)
		e, eok := ends.Lookup(ck.Topic, ck.Partition)
		if !sok || !eok || s.Err != nil || e.Err != nil {
			continue // the remote partition is not there (yet): nothing to act on
		}
		if ck.DownstreamOffset >= 0 && ck.DownstreamOffset >= s.Offset && ck.DownstreamOffset <= e.Offset {
			keep = append(keep, ck)
			kept = append(kept, i)
			continue
		}
		c.mu.Lock()
		c.groupStats(ck.Group).Invalid++
		c.mu.Unlock()
		if io, ok := c.obs.(InvalidInternalObserver); ok {
			io.InvalidInternalRecord(c.cfg.Source, c.cfg.Target, kind)
		}
		if ok, held := c.invalidLog.allow(c.now()); ok {
			attrs := []any{"kind", kind, "group", ck.Group, "topic", ck.Topic, "partition", ck.Partition,
				"upstream", ck.UpstreamOffset, "downstream", ck.DownstreamOffset, "target_log_start", s.Offset, "target_end", e.Offset}
			if held > 0 {
				attrs = append(attrs, "lines_held_back", held)
			}
			c.log.Error("internal record cannot be true: its target offset is outside the remote partition; not acted on", attrs...)
		}
	}
	return keep, kept, nil
}
