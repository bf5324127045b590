package failover

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// locReq asks where, on cluster Y, a consumer must resume to read next the
// copy (or original) of the record a group would read next on cluster X at
// position pos. Forward (failover) X is the source and Y the target;
// failback swaps them. The anchor is an offset sync mapped to (ax on X, ay on
// Y): the record at ax on X is the one at ay on Y.
type locReq struct {
	xTopic, yTopic string
	partition      int32
	pos            int64

	hasAnchor bool
	ax, ay    int64

	// fallback is the safe, conservative answer (MM2's sync-based rule)
	// used when the exact position cannot be pinned; nil when there is none.
	fallback       *int64
	fallbackReason string

	// results
	offset        *int64
	exact         bool // offset is the exact position
	notReplicated bool
	reason        string

	// working state
	xStart, xEnd, yStart, yEnd int64
	scanFrom                   int64
	n                          int64 // data records on X from ax to want; -1 unknown
	seen                       int64 // data records counted on X so far
	want                       Content
	haveWant, atEnd            bool
	last                       Content // last data record seen on X (for at-end)
	lastN                      int64
	haveLast                   bool
	notes                      []string
	// deletedFrom is the position asked for when it was below the log
	// start of X (records deleted before the group read them), else -1.
	deletedFrom int64
}

func (q *locReq) note(format string, args ...any) {
	q.notes = append(q.notes, fmt.Sprintf(format, args...))
}

func (q *locReq) setFallback(why string) {
	q.offset = q.fallback
	reason := why
	if q.fallbackReason != "" {
		reason += "; " + q.fallbackReason
	}
	q.reason = reason
}

// listOffsets returns log start and end offsets (high watermarks) of topics
// on alias.
func listOffsets(ctx context.Context, adm *kadm.Client, alias string, topics []string) (starts, ends kadm.ListedOffsets, err error) {
	if starts, err = adm.ListStartOffsets(ctx, topics...); err != nil {
		return nil, nil, fmt.Errorf("list start offsets on %s: %w", alias, err)
	}
	if ends, err = adm.ListEndOffsets(ctx, topics...); err != nil {
		return nil, nil, fmt.Errorf("list end offsets on %s: %w", alias, err)
	}
	return starts, ends, nil
}

// locate answers every request: it reads X from each anchor (or the group's
// position) to the next data record the group would read, then Y from the
// anchor's counterpart, stepping over as many data records as X holds
// between anchor and position, and checks the record there by content. A
// mismatch (duplicates after a retry, gaps, compaction since the copy) falls
// back to the first content match after the anchor within the search bound,
// which is never past the true position. Requests it cannot pin get their
// fallback and a reason.
func (e *Engine) locate(ctx context.Context, xAlias, yAlias string, reqs []*locReq) error {
	if len(reqs) == 0 {
		return nil
	}
	xAdm, err := e.clients.Admin(xAlias)
	if err != nil {
		return err
	}
	yAdm, err := e.clients.Admin(yAlias)
	if err != nil {
		return err
	}
	xTopics, yTopics := map[string]bool{}, map[string]bool{}
	for _, q := range reqs {
		xTopics[q.xTopic], yTopics[q.yTopic] = true, true
	}
	xs, xe, err := listOffsets(ctx, xAdm, xAlias, keys(xTopics))
	if err != nil {
		return err
	}
	ys, ye, err := listOffsets(ctx, yAdm, yAlias, keys(yTopics))
	if err != nil {
		return err
	}
	var xJobs []*scanJob
	for _, q := range reqs {
		s, ok1 := xs.Lookup(q.xTopic, q.partition)
		en, ok2 := xe.Lookup(q.xTopic, q.partition)
		if !ok1 || !ok2 || s.Err != nil || en.Err != nil {
			q.setFallback(fmt.Sprintf("%s[%d] cannot be read on %s", q.xTopic, q.partition, xAlias))
			continue
		}
		q.xStart, q.xEnd = s.Offset, en.Offset
		ys1, ok1 := ys.Lookup(q.yTopic, q.partition)
		ye1, ok2 := ye.Lookup(q.yTopic, q.partition)
		if !ok1 || !ok2 || ys1.Err != nil || ye1.Err != nil {
			q.notReplicated = true
			q.reason = fmt.Sprintf("%s[%d] does not exist on %s: not yet replicated", q.yTopic, q.partition, yAlias)
			continue
		}
		q.yStart, q.yEnd = ys1.Offset, ye1.Offset
		q.deletedFrom = -1
		if q.pos < q.xStart {
			q.deletedFrom, q.pos = q.pos, q.xStart
		}
		if q.pos > q.xEnd {
			q.note("offset %d is past the end %d of %s[%d] on %s; using the end", q.pos, q.xEnd, q.xTopic, q.partition, xAlias)
			q.pos = q.xEnd
		}
		if q.xStart >= q.xEnd {
			q.setFallback(fmt.Sprintf("%s[%d] on %s holds no records (log start = end = %d)", q.xTopic, q.partition, xAlias, q.xEnd))
			continue
		}
		q.n = -1
		switch {
		case q.hasAnchor && q.ax >= q.xStart && q.ax <= q.pos && q.pos-q.ax <= e.maxScan:
			q.scanFrom, q.n = q.ax, 0
		case q.pos < q.xEnd:
			q.scanFrom = q.pos
		default: // at the end: find the last data record
			q.scanFrom = max(q.xStart, q.xEnd-tailWindow)
		}
		xJobs = append(xJobs, &scanJob{topic: q.xTopic, partition: q.partition, from: q.scanFrom, end: q.xEnd, visit: q.visitX})
	}
	end := e.tracked(xAlias, xJobs)
	err = scan(ctx, e.clients, xAlias, xJobs)
	end()
	if err != nil {
		return err
	}
	// At the end with no data record seen (the scan began at pos): look at
	// the tail of the log.
	var tail []*scanJob
	for _, q := range reqs {
		if q.offset != nil || q.reason != "" || q.haveWant || q.haveLast || q.xStart >= q.xEnd {
			continue
		}
		q.scanFrom, q.n = max(q.xStart, q.xEnd-tailWindow), -1
		tail = append(tail, &scanJob{topic: q.xTopic, partition: q.partition, from: q.scanFrom, end: q.xEnd, visit: q.visitX})
	}
	end = e.tracked(xAlias, tail)
	err = scan(ctx, e.clients, xAlias, tail)
	end()
	if err != nil {
		return err
	}
	var (
		yJobs  []*scanJob
		states []*yState
	)
	for _, q := range reqs {
		if q.offset != nil || q.reason != "" || q.xStart >= q.xEnd {
			continue
		}
		if !q.haveWant {
			if !q.haveLast {
				q.setFallback(fmt.Sprintf("no data record in the last %d offsets of %s[%d] on %s", tailWindow, q.xTopic, q.partition, xAlias))
				continue
			}
			q.want, q.atEnd = q.last, true
			if q.n >= 0 {
				q.n = q.lastN
			}
		}
		if q.scanFrom != q.ax {
			q.n = -1
		}
		base := q.yStart
		limit := e.maxScan
		switch {
		case q.hasAnchor && q.ay >= q.yStart:
			base = q.ay
			limit = max(q.want.Offset-q.ax, 0) + e.bound
			if q.want.Offset < q.ax { // the anchor's own record is gone on X
				limit = e.maxScan
			}
		case q.hasAnchor:
			q.note("the offset sync's record %d is below the log start %d of %s[%d] on %s; searching from the log start", q.ay, q.yStart, q.yTopic, q.partition, yAlias)
			q.n = -1
		default:
			q.n = -1
			q.note("no offset sync at or below the group's position; searching %s[%d] on %s from its log start %d", q.yTopic, q.partition, yAlias, q.yStart)
		}
		y := &yState{q: q, limit: limit}
		states = append(states, y)
		yJobs = append(yJobs, &scanJob{topic: q.yTopic, partition: q.partition, from: base, end: q.yEnd, visit: y.visit})
	}
	end = e.tracked(yAlias, yJobs)
	err = scan(ctx, e.clients, yAlias, yJobs)
	end()
	if err != nil {
		return err
	}
	for _, y := range states {
		y.finish(xAlias, yAlias)
	}
	return nil
}

// tailWindow is how many offsets before a log end are read to find the last
// data record (transaction markers can follow it).
const tailWindow = 1000

func (q *locReq) visitX(r *kgo.Record) bool {
	if r.Attrs.IsControl() {
		return true
	}
	if r.Offset >= q.pos {
		q.want, q.haveWant = ContentOf(r), true
		if q.n >= 0 {
			q.n = q.seen
		}
		return false
	}
	q.last, q.lastN, q.haveLast = ContentOf(r), q.seen, true
	q.seen++
	return true
}

type yState struct {
	q        *locReq
	limit    int64
	i        int64
	expected *int64 // offset at the expected index, when it matched
	first    *int64 // first content match
}

func (y *yState) visit(r *kgo.Record) bool {
	if r.Attrs.IsControl() {
		return true
	}
	q := y.q
	i := y.i
	y.i++
	if ContentOf(r).Matches(q.want) {
		off := r.Offset
		if i == q.n {
			y.expected = &off
			return false
		}
		if y.first == nil {
			y.first = &off
			if q.n < 0 || i > q.n {
				return false
			}
		}
	}
	if q.n >= 0 && i >= q.n && y.first != nil {
		return false
	}
	return i < y.limit
}

func (y *yState) finish(xAlias, yAlias string) {
	q := y.q
	var at *int64
	switch {
	case y.expected != nil:
		at = y.expected
	case y.first != nil:
		at = y.first
		if q.n >= 0 {
			q.note("the record at the expected position did not match (duplicates or gaps on %s); matched by content at %d", yAlias, *at)
		}
	}
	what := fmt.Sprintf("the record at %d of %s[%d] on %s", q.want.Offset, q.xTopic, q.partition, xAlias)
	if q.atEnd {
		what = fmt.Sprintf("the last record (%d) of %s[%d] on %s", q.want.Offset, q.xTopic, q.partition, xAlias)
	}
	if q.deletedFrom >= 0 && q.deletedFrom < q.xStart {
		// First: what the group loses is the headline of the reason.
		gone := fmt.Sprintf("%s[%d] records %d to %d on %s (%d) were deleted (retention) before the group read them: it never reads them",
			q.xTopic, q.partition, q.deletedFrom, q.xStart-1, xAlias, q.xStart-q.deletedFrom)
		if at != nil {
			gone += fmt.Sprintf(", and resumes on %s at the copy of %d, the first record kept; records of %s[%d] below it are not read either", yAlias, q.xStart, q.yTopic, q.partition)
		}
		q.notes = append([]string{gone}, q.notes...)
	}
	switch {
	case at != nil:
		off := *at
		if q.atEnd {
			off++
		}
		q.offset, q.exact = &off, true
		q.reason = joinNotes(q.notes)
	case !y.hitLimit():
		q.notReplicated = true
		q.reason = joinNotes(append(q.notes, fmt.Sprintf("not yet replicated: no copy of %s on %s (end %d)", what, yAlias, q.yEnd)))
	default:
		q.setFallback(joinNotes(append(q.notes, fmt.Sprintf("no record within %d records of the sync on %s matches %s", y.limit, yAlias, what))))
	}
}

func (y *yState) hitLimit() bool { return y.i > y.limit }

func joinNotes(ns []string) string {
	out := ""
	for _, n := range ns {
		if out != "" {
			out += "; "
		}
		out += n
	}
	return out
}
