package replicate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/replicate/progress"
)

// Progress records live in mirrorctl's progress topic (see [ProgressTopic]);
// their format is package replicate/progress. A record is written only after
// the target acknowledged the data it covers, so a restart (even after
// kill -9) resumes with nothing lost; at most the records acknowledged since
// the last write are copied again (at-least-once).
type tp struct {
	topic     string
	partition int32
}

func encodeProgressValue(t tp, v progress.Value) *kgo.Record {
	k, val := progress.EncodeValue(progress.Key{Topic: t.topic, Partition: t.partition}, v)
	return &kgo.Record{Key: k, Value: val, Partition: 0, Timestamp: v.Time}
}

func decodeProgress(key, value []byte) (tp, progress.Value, error) {
	k, v, err := progress.DecodeValue(key, value)
	return tp{k.Topic, k.Partition}, v, err
}

// ReadInternalTopic reads partition 0 of topic on cluster alias (where MM2
// writes all its internal topics: offset-syncs, checkpoints, heartbeats) from
// the log start to its last stable offset when the read began, read
// committed, calling fn for each data record in offset order (transaction
// markers and records of aborted transactions are skipped; so are records
// of transactions still open, which lie at or past that offset). A missing
// or empty topic reads as nothing. The read is bounded by ctx; the error
// names the topic and cluster.
func ReadInternalTopic(ctx context.Context, clients Clients, alias, topic string, fn func(*kgo.Record)) error {
	return readPartitionZero(ctx, clients, alias, topic, true, func(r *kgo.Record) {
		if !r.Attrs.IsControl() {
			fn(r)
		}
	})
}

// readPartitionZero reads partition 0 of topic on cluster alias from its log
// start to the end it had when the read began, calling fn with every record
// below that end in offset order, control records included. With committed
// the read is read_committed and the end the last stable offset, else
// read_uncommitted to the high watermark. A missing or empty topic reads as
// nothing. Bounded by ctx; the error names the topic and cluster.
func readPartitionZero(ctx context.Context, clients Clients, alias, topic string, committed bool, fn func(*kgo.Record)) error {
	adm, err := clients.Admin(alias)
	if err != nil {
		return err
	}
	list, isolation := adm.ListEndOffsets, readUncommitted()
	if committed {
		list, isolation = adm.ListCommittedOffsets, readCommitted()
	}
	var end kadm.ListedOffset
	if err := retryTransient(ctx, func() error {
		ends, err := list(ctx, topic)
		if err != nil {
			return fmt.Errorf("list end offsets of %s on %s: %w", topic, alias, err)
		}
		var ok bool
		if end, ok = ends.Lookup(topic, 0); !ok {
			end.Err = kerr.UnknownTopicOrPartition
		}
		if end.Err != nil && !errors.Is(end.Err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("end offset of %s on %s: %w", topic, alias, end.Err)
		}
		return nil
	}); err != nil {
		return err
	}
	if end.Err != nil || end.Offset <= 0 {
		return nil // missing or empty
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("list start offsets of %s on %s: %w", topic, alias, err)
	}
	if s, ok := starts.Lookup(topic, 0); ok && s.Err == nil && s.Offset >= end.Offset {
		return nil
	}
	cl, err := clients.Client(alias, RoleConsumer,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.KeepControlRecords(), isolation)
	if err != nil {
		return err
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read %s on %s: %w", topic, alias, err)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) { ferr = fmt.Errorf("read %s[%d] on %s: %w", t, p, alias, err) })
		if ferr != nil {
			return ferr
		}
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < end.Offset {
				fn(r)
			}
			done = done || r.Offset+1 >= end.Offset
		})
		if done {
			return nil
		}
	}
}

// progressView follows a flow's progress topic from its start for as long
// as the flow runs here, and holds the newest position per source partition,
// whoever wrote it. A task resumes from it; a --once run reads the other
// members' positions from it. It reads uncommitted and holds transactions
// back itself (txnFilter, txnread.go): a transaction left open by a killed
// exactly-once process hides only its own positions, not every one written
// after it.
type progressView struct {
	clients Clients
	alias   string // the target
	topic   string
	log     *slog.Logger

	cmu       sync.Mutex  // guards cl, from and following
	cl        *kgo.Client // follow's, also the start-up read's lists (client)
	from      kgo.Offset  // where follow starts: the log start the start-up read listed, else AtStart
	following bool        // follow has started on cl

	ends endsLister // catchUp's listings, shared by concurrent callers

	mu      sync.Mutex       // guards vals, txns, read, changed and skipped
	vals    map[tp]heldValue // the newest value per source partition (position, topic ID, loss)
	txns    txnFilter        // the transactions read but not ended yet
	read    int64            // offset after the last record read, -1 before the first fetch
	changed chan struct{}
	skipped int
}

// heldValue is a progress value and the offset of its record.
type heldValue struct {
	progress.Value
	offset int64
}

func newProgressView(clients Clients, cfg FlowConfig, log *slog.Logger) *progressView {
	return &progressView{clients: clients, alias: cfg.Target, topic: ProgressTopic(cfg.Policy, cfg.Source), log: log,
		from: kgo.NewOffset().AtStart(), vals: make(map[tp]heldValue), changed: make(chan struct{})}
}

// client returns the view's client, built at the first call: the start-up
// read lists the topic's offsets with it, which opens the connection that
// follow then fetches on.
func (v *progressView) client() (*kgo.Client, error) {
	v.cmu.Lock()
	defer v.cmu.Unlock()
	if v.cl != nil {
		return v.cl, nil
	}
	cl, err := v.clients.Client(v.alias, RoleConsumer, kgo.KeepControlRecords(), readUncommitted())
	if err != nil {
		return nil, err
	}
	v.cl = cl
	return cl, nil
}

// close closes the view's client, once follow has returned.
func (v *progressView) close() {
	v.cmu.Lock()
	defer v.cmu.Unlock()
	if v.cl != nil {
		v.cl.Close()
		v.cl = nil
	}
}

// get returns the newest position stored for t.
func (v *progressView) get(t tp) (int64, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	val, ok := v.vals[t]
	return val.Next, ok
}

// value returns the newest progress value stored for t.
func (v *progressView) value(t tp) (progress.Value, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	val, ok := v.vals[t]
	return val.Value, ok
}

// downstreams returns the downstream position (the remote partition's next
// offset) of every partition the view holds progress for.
func (v *progressView) downstreams() map[tp]int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make(map[tp]int64, len(v.vals))
	for k, val := range v.vals {
		out[k] = val.Downstream
	}
	return out
}

// follow reads the progress topic until ctx ends.
func (v *progressView) follow(ctx context.Context) error {
	cl, err := v.client()
	if err != nil {
		return err
	}
	v.cmu.Lock()
	from := v.from
	v.following = true
	v.cmu.Unlock()
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{v.topic: {0: from}})
	var recs []*kgo.Record
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		fs.EachError(func(t string, p int32, err error) {
			v.log.Warn("reading progress", "topic", t, "partition", p, "err", err)
		})
		v.mu.Lock()
		recs = recs[:0]
		fs.EachRecord(func(r *kgo.Record) {
			v.read = r.Offset + 1
			recs = v.txns.add(r, recs)
		})
		v.apply(recs)
		clear(recs) // hold no fetch buffer until the next poll
		close(v.changed)
		v.changed = make(chan struct{})
		v.mu.Unlock()
	}
}

// apply takes the progress records one poll made visible into the view
// (v.mu held): the newest record by offset that decodes wins per source
// partition, as compaction keeps it, and a record older than the one the
// view holds (a transaction's, visible at its commit marker, after a newer
// record written outside it) changes nothing. Only the newest is decoded:
// the records are walked newest first, and an older record whose key was
// already taken is passed over (a restart reads the whole uncompacted tail,
// one record per task and interval, in few polls). An undecodable record is
// counted and warned about, and the next older one of its key is tried.
func (v *progressView) apply(recs []*kgo.Record) {
	var keys map[string]bool
	var tps map[tp]bool
	if len(recs) > 1 {
		keys, tps = map[string]bool{}, map[tp]bool{}
		if !slices.IsSortedFunc(recs, byOffset) {
			slices.SortFunc(recs, byOffset)
		}
	}
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		if keys[string(r.Key)] {
			continue
		}
		t, val, err := decodeProgress(r.Key, r.Value)
		if err != nil {
			v.skipped++
			v.log.Warn("skipping undecodable progress record", "topic", v.topic, "offset", r.Offset, "err", err)
			continue
		}
		if keys != nil {
			keys[string(r.Key)] = true
			if tps[t] {
				continue // a newer record under another spelling of the key
			}
			tps[t] = true
		}
		if held, ok := v.vals[t]; ok && held.offset > r.Offset {
			continue
		}
		v.vals[t] = heldValue{val, r.Offset}
	}
}

func byOffset(a, b *kgo.Record) int { return cmp.Compare(a.Offset, b.Offset) }

// catchUp waits until the view has read the progress topic up to the high
// watermark it has now, so it holds every position written before the
// call, and until the transactions open then that hold a position of one of
// tps ended: a commit whose marker was not written yet (EndTxn returns
// before the markers are) is then taken in. An exactly-once task fences the
// previous owner of its partition first, which aborts that one's open
// transaction, so the wait is short; a transaction open for another
// partition is not waited for (one of a killed process stays open until
// its timeout).
//
// Concurrent callers share the listing of the topic's offsets (endsLister):
// exactly-once tasks taking turns with producers catch up by the hundred.
func (v *progressView) catchUp(ctx context.Context, tps ...tp) error {
	start, end, err := v.ends.list(ctx, v.listEnds)
	if err != nil {
		return err
	}
	if err := v.awaitRead(ctx, start, end, nil); err != nil {
		return err
	}
	if len(tps) == 0 {
		return nil
	}
	keys := make(map[string]bool, len(tps)) // as progress.EncodeValue spells them
	for _, t := range tps {
		k, _ := progress.EncodeValue(progress.Key{Topic: t.topic, Partition: t.partition}, progress.Value{})
		keys[string(k)] = true
	}
	return v.awaitRead(ctx, start, end, func(r *kgo.Record) bool { return keys[string(r.Key)] })
}

// listEnds lists the progress topic's log start and end offset.
func (v *progressView) listEnds(ctx context.Context) (start, end int64, err error) {
	adm, err := v.clients.Admin(v.alias)
	if err != nil {
		return 0, 0, err
	}
	var e kadm.ListedOffset
	if err := retryTransient(ctx, func() error {
		ends, err := adm.ListEndOffsets(ctx, v.topic)
		if err != nil {
			return fmt.Errorf("list end offsets of %s on %s: %w", v.topic, v.alias, err)
		}
		var ok bool
		if e, ok = ends.Lookup(v.topic, 0); !ok {
			e.Err = kerr.UnknownTopicOrPartition
		}
		if e.Err != nil {
			return fmt.Errorf("end offset of progress topic %s on %s: %w", v.topic, v.alias, e.Err)
		}
		return nil
	}); err != nil {
		return 0, 0, err
	}
	starts, err := adm.ListStartOffsets(ctx, v.topic)
	if err != nil {
		return 0, 0, fmt.Errorf("list start offsets of %s on %s: %w", v.topic, v.alias, err)
	}
	s, _ := starts.Lookup(v.topic, 0)
	return s.Offset, e.Offset, nil
}

// endsListBudget bounds one shared listing of the progress topic's offsets
// (its retries of transient errors included); a caller stops waiting for it
// when its own context ends.
const endsListBudget = 30 * time.Second

// endsLister coalesces listings of the progress topic's offsets. A caller
// joins the listing that starts next, never one already in flight (that one
// may predate a write the caller must see), so any number of concurrent
// callers cost at most two listings.
type endsLister struct {
	mu      sync.Mutex // guards running and next
	running bool
	next    *endsCall // the listing callers arriving now wait for
}

// endsCall is one shared listing and its outcome (set before done closes).
type endsCall struct {
	done       chan struct{}
	start, end int64
	err        error
}

// list returns the outcome of a listing by do that starts after the call.
func (l *endsLister) list(ctx context.Context, do func(context.Context) (int64, int64, error)) (int64, int64, error) {
	l.mu.Lock()
	if l.next == nil {
		l.next = &endsCall{done: make(chan struct{})}
	}
	c := l.next
	if !l.running {
		l.running, l.next = true, nil
		go l.run(c, do)
	}
	l.mu.Unlock()
	select {
	case <-c.done:
		return c.start, c.end, c.err
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
}

// run performs c, then whatever listing callers joined meanwhile, until
// none is waiting.
func (l *endsLister) run(c *endsCall, do func(context.Context) (int64, int64, error)) {
	for c != nil {
		ctx, cancel := context.WithTimeout(context.Background(), endsListBudget)
		c.start, c.end, c.err = do(ctx)
		cancel()
		close(c.done)
		l.mu.Lock()
		c, l.next = l.next, nil
		l.running = c != nil
		l.mu.Unlock()
	}
}

// awaitRead waits until the view has read the progress topic up to end, or
// the topic's log start is at or past it (nothing to read), and, with open
// not nil, no transaction that began before end and holds a record open
// accepts is still open.
func (v *progressView) awaitRead(ctx context.Context, start, end int64, open func(*kgo.Record) bool) error {
	for {
		v.mu.Lock()
		done := v.read >= end || start >= end
		if done && open != nil {
			done = !v.txns.openBefore(end, open)
		}
		ch := v.changed
		v.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// readAtStart returns the position per source partition that the progress
// topic holds up to its high watermark now, as a read_committed reader sees
// it (transactions still open are left out, see txnFilter): the flow's
// start-up read (resumeSnapshot.progress). It reads them through the view, started by
// follow (called once the topic is known to hold records), which then goes
// on following the topic: the partition tasks' catch-ups only read what was
// written since, rather than the topic a second time. A topic that is
// missing or holds nothing reads as no positions, and the view is not
// started: the flow creates the topic afterwards.
func (v *progressView) readAtStart(ctx context.Context, follow func()) (map[tp]int64, error) {
	// Not the shared admin client: it would keep the metadata of a topic
	// found missing here, created next, for a while (see below).
	cl, err := v.client()
	if err != nil {
		return nil, err
	}
	adm := kadm.NewClient(cl)
	var ends, starts kadm.ListedOffsets
	if err := retryTransient(ctx, func() error {
		return concurrently(ctx, func(ctx context.Context) (err error) {
			if ends, err = adm.ListEndOffsets(ctx, v.topic); err != nil {
				return fmt.Errorf("list end offsets of %s on %s: %w", v.topic, v.alias, err)
			}
			if e, ok := ends.Lookup(v.topic, 0); ok && e.Err != nil && transient(e.Err) {
				return fmt.Errorf("end offset of progress topic %s on %s: %w", v.topic, v.alias, e.Err)
			}
			return nil
		}, func(ctx context.Context) (err error) {
			if starts, err = adm.ListStartOffsets(ctx, v.topic); err != nil {
				return fmt.Errorf("list start offsets of %s on %s: %w", v.topic, v.alias, err)
			}
			return nil
		})
	}); err != nil {
		return nil, err
	}
	end, ok := ends.Lookup(v.topic, 0)
	switch {
	case !ok || errors.Is(end.Err, kerr.UnknownTopicOrPartition):
		// The client would answer from the missing topic's metadata for
		// a while: a read again (preflightAgain), or follow once the
		// flow created the topic, gets a new one.
		v.cmu.Lock()
		if v.cl != nil && !v.following {
			v.cl.Close()
			v.cl = nil
		}
		v.cmu.Unlock()
		return map[tp]int64{}, nil
	case end.Err != nil:
		return nil, fmt.Errorf("end offset of progress topic %s on %s: %w", v.topic, v.alias, end.Err)
	}
	start, ok := starts.Lookup(v.topic, 0)
	if end.Offset <= 0 || ok && start.Err == nil && start.Offset >= end.Offset {
		return map[tp]int64{}, nil
	}
	if ok && start.Err == nil {
		v.cmu.Lock()
		v.from = kgo.NewOffset().At(start.Offset) // no ListOffsets before the first fetch
		v.cmu.Unlock()
	}
	follow()
	if err := v.awaitRead(ctx, 0, end.Offset, nil); err != nil {
		return nil, fmt.Errorf("read progress topic %s on %s: %w", v.topic, v.alias, err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make(map[tp]int64, len(v.vals))
	for k, val := range v.vals {
		out[k] = val.Next
	}
	return out, nil
}

// ensureProgressTopic creates the flow's progress topic on the target.
func ensureProgressTopic(ctx context.Context, cfg FlowConfig, tgt *kadm.Client) error {
	return ensureInternalTopic(ctx, tgt, ProgressTopic(cfg.Policy, cfg.Source), cfg.ProgressReplicationFactor)
}
