package failover

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// vReq compares the record a group reads next on cluster X (at xPos) with
// the record at its committed position on cluster Y (yPos).
type vReq struct {
	pp                       *PartitionPlan
	xTopic, yTopic           string
	partition                int32
	xPos, yPos               int64
	slack                    int64 // records Y may hold before the match (re-reads), 0 for exact rows
	xStart, xEnd, yStart     int64
	yEnd                     int64
	want, got                Content
	haveWant, haveGot, atEnd bool
	gotAt, firstAt           int64
}

// Verify reads, for each partition committed (or, on a plan that was not
// applied, already committed) on the plan's commit cluster, the record at
// the committed offset and the record the group reads next on the other
// cluster, and compares them by content (timestamp, key, value, header
// digest). For a group at the log end, the last records before both
// positions are compared. Rows that were not exact (checkpoint or sync
// based, with re-reads) pass when the match lies within their re-reads
// after the committed offset. Each checked partition gets Verified and a
// VerifyNote. When a cluster cannot be read, every checked partition keeps
// Verified nil with the note "source unavailable: <error>" (or target) and
// Verify returns nil (see [Plan.Unverified]); an error is returned only when
// ctx ends.
func (e *Engine) Verify(ctx context.Context, plan *Plan) error {
	xAlias, yAlias := plan.Source, plan.Target
	if plan.Direction == Failback {
		xAlias, yAlias = plan.Target, plan.Source
	}
	var reqs []*vReq
	xTopics, yTopics := map[string]bool{}, map[string]bool{}
	for gi := range plan.Groups {
		for pi := range plan.Groups[gi].Partitions {
			pp := &plan.Groups[gi].Partitions[pi]
			var y *int64
			switch {
			case plan.Applied && (pp.Outcome == OutcomeCommitted || pp.Outcome == OutcomeUnchanged):
				y = plan.commitAt(pp)
			case !plan.Applied && pp.Current != nil:
				y = pp.Current
			}
			x := pp.SourceOffset
			xt, yt := pp.SourceTopic, pp.Topic
			if plan.Direction == Failback {
				x, xt, yt = pp.TargetOffset, pp.Topic, pp.SourceTopic
			}
			if y == nil || x == nil {
				continue
			}
			q := &vReq{pp: pp, xTopic: xt, yTopic: yt, partition: pp.Partition, xPos: *x, yPos: *y, slack: e.bound}
			if pp.Rereads != nil && *pp.Rereads == 0 && pp.Mode == ModeExact {
				q.slack = 0
			} else if pp.Rereads != nil {
				q.slack = *pp.Rereads + e.bound
			}
			reqs = append(reqs, q)
			xTopics[xt], yTopics[yt] = true, true
		}
	}
	if len(reqs) == 0 {
		return nil
	}
	// Roles of X and Y for notes: X is where the group was, Y where it was
	// committed.
	xRole, yRole := "source", "target"
	if plan.Direction == Failback {
		xRole, yRole = "target", "source"
	}
	if role, err := e.verifyRead(ctx, reqs, xAlias, yAlias, xRole, yRole, xTopics, yTopics); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("verify: %w", err)
		}
		for _, q := range reqs {
			q.pp.Verified, q.pp.VerifyNote = nil, fmt.Sprintf("%s unavailable: %v", role, err)
		}
		return nil
	}
	for _, q := range reqs {
		ok := false
		var note string
		switch {
		case q.atEnd && !q.haveWant && !q.haveGot:
			ok, note = true, "both sides hold no records before the positions"
		case q.atEnd && q.haveWant && q.haveGot && q.got.Matches(q.want):
			ok, note = true, fmt.Sprintf("at the end: the record before %d on %s matches the last record %d on %s", q.yPos, yAlias, q.want.Offset, xAlias)
		case q.atEnd:
			note = fmt.Sprintf("at the end: the record before %d on %s is not the copy of the last record on %s", q.yPos, yAlias, xAlias)
		case q.haveGot && q.got.Matches(q.want) && q.gotAt == q.firstAt:
			ok, note = true, fmt.Sprintf("record %d on %s matches record %d on %s", q.gotAt, yAlias, q.want.Offset, xAlias)
		case q.haveGot && q.got.Matches(q.want):
			ok, note = true, fmt.Sprintf("matches record %d on %s at %d; records from %d are read again", q.want.Offset, xAlias, q.gotAt, q.yPos)
		case q.haveGot:
			note = fmt.Sprintf("record %d on %s does not match record %d on %s", q.gotAt, yAlias, q.want.Offset, xAlias)
		default:
			note = fmt.Sprintf("no record at or after %d on %s (end %d) to compare with record %d on %s", q.yPos, yAlias, q.yEnd, q.want.Offset, xAlias)
		}
		q.pp.Verified, q.pp.VerifyNote = &ok, note
	}
	return nil
}

// verifyRead reads both sides of reqs. On error it returns the role
// ("source" or "target") of the cluster that could not be read.
func (e *Engine) verifyRead(ctx context.Context, reqs []*vReq, xAlias, yAlias, xRole, yRole string, xTopics, yTopics map[string]bool) (string, error) {
	xAdm, err := e.clients.Admin(xAlias)
	if err != nil {
		return xRole, err
	}
	yAdm, err := e.clients.Admin(yAlias)
	if err != nil {
		return yRole, err
	}
	xs, xe, err := listOffsets(ctx, xAdm, xAlias, keys(xTopics))
	if err != nil {
		return xRole, err
	}
	ys, ye, err := listOffsets(ctx, yAdm, yAlias, keys(yTopics))
	if err != nil {
		return yRole, err
	}
	var xJobs []*scanJob
	for _, q := range reqs {
		a, _ := xs.Lookup(q.xTopic, q.partition)
		b, _ := xe.Lookup(q.xTopic, q.partition)
		c, _ := ys.Lookup(q.yTopic, q.partition)
		d, _ := ye.Lookup(q.yTopic, q.partition)
		q.xStart, q.xEnd, q.yStart, q.yEnd = a.Offset, b.Offset, c.Offset, d.Offset
		q.xPos = max(q.xPos, q.xStart)
		xJobs = append(xJobs, &scanJob{topic: q.xTopic, partition: q.partition, from: q.xPos, end: q.xEnd, visit: func(r *kgo.Record) bool {
			if r.Attrs.IsControl() {
				return true
			}
			q.want, q.haveWant = ContentOf(r), true
			return false
		}})
	}
	if err := scan(ctx, e.clients, xAlias, xJobs); err != nil {
		return xRole, err
	}
	// At the end on X: compare the last records before both positions.
	var xTail, yJobs []*scanJob
	for _, q := range reqs {
		if q.haveWant {
			n := int64(0)
			yJobs = append(yJobs, &scanJob{topic: q.yTopic, partition: q.partition, from: q.yPos, end: q.yEnd, visit: func(r *kgo.Record) bool {
				if r.Attrs.IsControl() {
					return true
				}
				c := ContentOf(r)
				if !q.haveGot {
					q.got, q.haveGot, q.gotAt, q.firstAt = c, true, r.Offset, r.Offset
				}
				if c.Matches(q.want) {
					q.got, q.gotAt = c, r.Offset
					return false
				}
				n++
				return n <= q.slack
			}})
			continue
		}
		q.atEnd = true
		xTail = append(xTail, &scanJob{topic: q.xTopic, partition: q.partition, from: max(q.xStart, q.xEnd-tailWindow), end: q.xEnd, visit: func(r *kgo.Record) bool {
			if !r.Attrs.IsControl() {
				q.want, q.haveWant = ContentOf(r), true
			}
			return true
		}})
		yJobs = append(yJobs, &scanJob{topic: q.yTopic, partition: q.partition, from: max(q.yStart, q.yPos-tailWindow), end: min(q.yPos, q.yEnd), visit: func(r *kgo.Record) bool {
			if !r.Attrs.IsControl() {
				q.got, q.haveGot, q.gotAt = ContentOf(r), true, r.Offset
			}
			return true
		}})
	}
	if err := scan(ctx, e.clients, xAlias, xTail); err != nil {
		return xRole, err
	}
	if err := scan(ctx, e.clients, yAlias, yJobs); err != nil {
		return yRole, err
	}
	return "", nil
}
