package replicate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/groupstate"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
	"github.com/mirrorctl/mirrorctl/replicate/syncstore"
)

// ckKey names a checkpoint: group, target-side topic and partition (the
// checkpoint record's key).
type ckKey struct {
	group, topic string
	partition    int32
}

// Group-offset sync outcomes in [GroupStats].
const (
	SyncCommitted = "committed"  // offsets were committed to the target group
	SyncUpToDate  = "up-to-date" // the target group was at or ahead of every checkpoint
	SyncActive    = "active"     // the target group has members: left alone
	SyncFailed    = "failed"     // the commit failed; Error says why
)

// GroupStats describes what a flow did for one consumer group.
type GroupStats struct {
	Flow  string `json:"flow"`
	Group string `json:"group"`
	// Checkpoints is how many partitions of the group have a checkpoint.
	Checkpoints int `json:"checkpoints"`
	// Sync is the last sync.group.offsets outcome (SyncCommitted, ...), ""
	// when offset sync is off or has not run.
	Sync string `json:"sync,omitempty"`
	// Committed counts partitions committed on the target in this run.
	Committed int    `json:"committed"`
	Error     string `json:"error,omitempty"`
	// Invalid counts the group's checkpoints that could not be true (a
	// target offset outside the remote partition) and were neither
	// written nor committed (invalid.go).
	Invalid int `json:"invalid,omitempty"`
}

// checkpointer emits a flow's checkpoints, as MM2's MirrorCheckpointTask
// does, and syncs group offsets to the target (sync.group.offsets, with
// stricter safety); docs/mm2-formats.md §7.
type checkpointer struct {
	cfg     FlowConfig
	clients Clients
	log     *slog.Logger
	now     func() time.Time

	src, tgt *kadm.Client
	producer *kgo.Client // target
	obs      Observer
	topic    string // <source>.checkpoints.internal
	syncs    *syncstore.Store

	mu     sync.Mutex               // guards last and groups
	last   map[ckKey]mm2.Checkpoint // newest checkpoint per key (MM2's CheckpointStore)
	groups map[string]*GroupStats

	invalidLog lossLimiter // invalid.go
	read       syncsRead
}

// syncsRead is what the offset-syncs follower has read (followSyncs), for
// awaitSyncs; followErr carries a --once follower's error.
type syncsRead struct {
	mu        sync.Mutex // guards next, changed and from
	next      int64
	changed   chan struct{}
	followErr chan error
	// from is the offset the first read began at (syncsFrom): 0 for the
	// whole topic, above 0 when the checkpointed groups needed less.
	from int64
	// fullHistory makes the first read start at the log start, as MM2's
	// does: set for a flow that writes reverse checkpoints, whose pins
	// translate the target groups' positions back through syncs the source
	// groups' needs do not cover (reversepin.go). Set before the read.
	fullHistory bool
}

func newCheckpointer(cfg FlowConfig, clients Clients, log *slog.Logger, now func() time.Time, src, tgt *kadm.Client, producer *kgo.Client) *checkpointer {
	return &checkpointer{
		cfg: cfg, clients: clients, log: log, now: now, src: src, tgt: tgt, producer: producer, obs: nopObserver{},
		topic: cfg.Policy.CheckpointsTopic(cfg.Source),
		// The checkpoints are reloaded before the syncs are read, so the
		// full sync history can be rebuilt (MM2 3.8+, KAFKA-15905).
		syncs:  syncstore.New(false),
		last:   make(map[ckKey]mm2.Checkpoint),
		groups: make(map[string]*GroupStats),

		read: syncsRead{changed: make(chan struct{})},
	}
}

// start creates the checkpoints topic and reloads the checkpoints already in
// it, so a restart neither rewinds nor stalls a group.
func (c *checkpointer) start(ctx context.Context) error {
	if err := ensureInternalTopic(ctx, c.tgt, c.topic, c.cfg.CheckpointsReplicationFactor); err != nil {
		return fmt.Errorf("flow %s: %w", c.cfg.Name(), err)
	}
	skipped := 0
	err := ReadInternalTopic(ctx, c.clients, c.cfg.Target, c.topic, func(r *kgo.Record) {
		ck, err := mm2.DecodeCheckpoint(r.Key, r.Value)
		if err != nil {
			skipped++
			c.log.Warn("skipping undecodable checkpoint", "topic", c.topic, "offset", r.Offset, "err", err)
			return
		}
		c.last[ckKey{ck.Group, ck.Topic, ck.Partition}] = ck
	})
	if err != nil {
		return fmt.Errorf("flow %s: reload checkpoints: %w", c.cfg.Name(), err)
	}
	if skipped > 0 {
		c.log.Warn("checkpoint records skipped", "topic", c.topic, "count", skipped)
	}
	return nil
}

// followOnce starts following the flow's offset-syncs topic for --once, in
// the background from the moment the flow is led, so the checkpoint pass at
// the end of the copy only waits for the syncs written since (awaitSyncs)
// instead of reading the whole topic after the copy. It ends with ctx.
func (c *checkpointer) followOnce(ctx context.Context) {
	if c.following() {
		return
	}
	alias, topic := c.cfg.offsetSyncsCluster()
	c.read.followErr = make(chan error, 1)
	go func() {
		if err := c.followSyncs(ctx, alias, topic); err != nil && ctx.Err() == nil {
			c.read.followErr <- fmt.Errorf("flow %s: read offset syncs: %w", c.cfg.Name(), err)
		}
	}()
}

// following reports whether followOnce started the follower.
func (c *checkpointer) following() bool { return c.read.followErr != nil }

// awaitSyncs waits until the follower started by followOnce has read the
// offset-syncs topic up to its current end (every sync written before the
// call) and marks the store ready. It returns the follower's error, or
// ctx's.
func (c *checkpointer) awaitSyncs(ctx context.Context) error {
	alias, topic := c.cfg.offsetSyncsCluster()
	adm, err := c.clients.Admin(alias)
	if err != nil {
		return err
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("flow %s: list end offsets of %s on %s: %w", c.cfg.Name(), topic, alias, err)
	}
	var end int64
	if o, ok := ends.Lookup(topic, 0); ok && o.Err == nil {
		end = o.Offset
	}
	if end > 0 {
		// Nothing left to read when retention deleted everything.
		starts, err := adm.ListStartOffsets(ctx, topic)
		if err != nil {
			return fmt.Errorf("flow %s: list start offsets of %s on %s: %w", c.cfg.Name(), topic, alias, err)
		}
		if o, ok := starts.Lookup(topic, 0); ok && o.Err == nil && o.Offset >= end {
			end = 0
		}
	}
	for {
		c.read.mu.Lock()
		done := c.read.next >= end
		ch := c.read.changed
		c.read.mu.Unlock()
		if done {
			c.syncs.ReadToEnd()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("flow %s: read offset syncs: %w", c.cfg.Name(), ctx.Err())
		case err := <-c.read.followErr:
			return err
		case <-ch:
		}
	}
}

// syncsReadTo records that the syncs follower has read up to next (the
// offset after the last record of a fetch, transaction markers included).
func (c *checkpointer) syncsReadTo(next int64) {
	c.read.mu.Lock()
	defer c.read.mu.Unlock()
	if next > c.read.next {
		c.read.next = next
		close(c.read.changed)
		c.read.changed = make(chan struct{})
	}
}

func (c *checkpointer) addSync(topic string, r *kgo.Record) {
	s, err := mm2.DecodeOffsetSync(r.Key, r.Value)
	if err != nil {
		c.log.Warn("skipping undecodable offset sync", "topic", topic, "offset", r.Offset, "err", err)
		return
	}
	c.syncs.Add(s)
}

// tailSyncs reads the offset-syncs topic from where the checkpointed groups
// need it (followSyncs, syncsFrom), marks the store ready once it reached the
// end offset it had at start, and keeps adding new syncs until ctx is done.
func (c *checkpointer) tailSyncs(ctx context.Context) {
	alias, topic := c.cfg.offsetSyncsCluster()
	for ctx.Err() == nil {
		err := c.followSyncs(ctx, alias, topic)
		if err == nil || ctx.Err() != nil {
			return
		}
		c.log.Warn("following offset syncs failed; retrying", "topic", topic, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// followSyncs feeds the store from the offset-syncs topic (partition 0, as
// MM2 reads it) and keeps following it until ctx ends. The first read
// begins where syncsFrom says and marks the store ready once it reaches the
// end the topic had at the call; a later call (tailSyncs retrying) goes on
// after the last record read.
func (c *checkpointer) followSyncs(ctx context.Context, alias, topic string) error {
	adm, err := c.clients.Admin(alias)
	if err != nil {
		return err
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return err
	}
	var end int64
	if o, ok := ends.Lookup(topic, 0); ok && o.Err == nil {
		end = o.Offset
	}
	ready := c.syncs.Ready()
	c.read.mu.Lock()
	from := c.read.next
	c.read.mu.Unlock()
	if !ready && from == 0 {
		from = c.syncsFrom(ctx, alias, topic)
		c.read.mu.Lock()
		c.read.from = from
		c.read.mu.Unlock()
	}
	cl, err := c.clients.Client(alias, "consumer", kgo.KeepControlRecords(), readCommitted(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(from)}}))
	if err != nil {
		return err
	}
	defer cl.Close()
	if !ready && from >= end {
		c.syncs.ReadToEnd()
		ready = true
	}
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			// A topic not there (yet) reads as no syncs, as ReadInternalTopic
			// does; anything else (no permission, say) is the caller's.
			if ferr == nil && !errors.Is(err, kerr.UnknownTopicOrPartition) && !errors.Is(err, context.Canceled) {
				ferr = err
			}
		})
		if ferr != nil {
			return ferr
		}
		var last int64 = -1
		fs.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				c.addSync(topic, r)
			}
			if !ready && r.Offset+1 >= end {
				c.syncs.ReadToEnd()
				ready = true
			}
			last = r.Offset
		})
		if last >= 0 {
			c.syncsReadTo(last + 1)
		}
	}
}

// syncsFrom returns the offset of the offset-syncs topic (partition 0) the
// store's first read begins at, so a flow's start costs what its groups
// need rather than the topic's age (the topic is compacted, but its
// segments, 1 GiB by default, rarely roll, and a flow that has run for long
// holds millions of syncs). MM2 reads the topic from its start; the store
// keeps, per partition, syncs spaced back from the newest (syncstore), and a
// translation uses the newest sync at or below the group's offset. So a
// read that begins before, for every partition a checkpointed group has an
// offset on, a sync at or below the lowest such offset, translates those
// groups from a sync at least as close to their offsets as a whole read
// (whose store may have dropped that sync for an older one). syncsFrom reads
// backwards from the end in parts that double from syncScanChunk records
// until that holds, checks that a store fed from there still translates
// every such offset, and returns where it got to. It returns 0 (the whole topic, MM2's read) when
// the groups or their offsets cannot be listed, when no group has an offset
// to translate (a group that appears later may need any sync), and for
// flows with reverse checkpoints (read.fullHistory). A group that first commits
// after the start, at an offset older than every sync read, is not
// checkpointed until it passes one (docs/architecture.md).
func (c *checkpointer) syncsFrom(ctx context.Context, alias, topic string) int64 {
	if c.read.fullHistory {
		return 0
	}
	need, ok := c.syncNeeds(ctx)
	if !ok || len(need) == 0 {
		return 0
	}
	cl, err := rangeClient(c.clients, alias)
	if err != nil {
		return 0
	}
	defer cl.Close()
	starts, ends, err := logBounds(ctx, kadm.NewClient(cl), alias, topic)
	if err != nil {
		return 0
	}
	var lo, hi int64
	if o, ok := starts.Lookup(topic, 0); ok && o.Err == nil {
		lo = o.Offset
	}
	if o, ok := ends.Lookup(topic, 0); ok && o.Err == nil {
		hi = o.Offset
	}
	// The parts read, newest first, each in log order: a store fed them in
	// log order must translate every group as the whole read does, checked
	// below before the answer is given.
	var parts [][]mm2.OffsetSync
	missing := maps.Clone(need)
	for chunk := syncScanChunk; len(missing) > 0 && hi > lo; chunk *= 2 {
		from := max(lo, hi-chunk)
		var part []mm2.OffsetSync
		if err := readRanges(ctx, cl, alias, topic, map[int32][2]int64{0: {from, hi}}, func(r *kgo.Record) {
			s, err := mm2.DecodeOffsetSync(r.Key, r.Value)
			if err != nil {
				return
			}
			part = append(part, s)
			k := tp{s.Topic, s.Partition}
			if off, ok := missing[k]; ok && s.UpstreamOffset <= off {
				delete(missing, k)
			}
		}); err != nil {
			return 0
		}
		parts = append(parts, part)
		hi = from
	}
	if len(missing) > 0 || hi <= lo {
		return 0 // some group is older than every sync, or all was read: read all, as MM2 does
	}
	// The store keeps older syncs only at growing distances from the newest
	// (syncstore): check that, fed from hi, it still has a sync at or below
	// each group's offset, else read all.
	trial := syncstore.New(false)
	for i := len(parts) - 1; i >= 0; i-- {
		for _, s := range parts[i] {
			trial.Add(s)
		}
	}
	trial.ReadToEnd()
	for k, off := range need {
		if r := trial.Translate(k.topic, k.partition, off); !r.OK {
			return 0
		}
	}
	c.log.Debug("offset syncs read from where the checkpointed groups need them", "topic", topic, "from", hi)
	return hi
}

// syncNeeds returns, for every source partition of a mirrored topic on
// which a group the flow checkpoints has an offset, the lowest such offset;
// ok is false when the groups or their offsets could not be listed.
func (c *checkpointer) syncNeeds(ctx context.Context) (map[tp]int64, bool) {
	groups, err := c.consumerGroups(ctx, c.src)
	if err != nil {
		return nil, false
	}
	need := map[tp]int64{}
	for _, resp := range c.src.FetchManyOffsets(ctx, groups...) {
		if resp.Err != nil {
			return nil, false
		}
		resp.Fetched.Each(func(o kadm.OffsetResponse) {
			if o.Err != nil || o.At < 0 || !c.cfg.Topics.Accept(o.Topic) {
				return
			}
			k := tp{o.Topic, o.Partition}
			if cur, ok := need[k]; !ok || o.At < cur {
				need[k] = o.At
			}
		})
	}
	return need, true
}

// hasWork reports whether a checkpoint could be emitted now: a group the
// flow checkpoints has an offset committed on the source for a topic it
// mirrors. On an error it reports true: the checkpoint pass then runs and
// reports the error.
func (c *checkpointer) hasWork(ctx context.Context) bool {
	groups, err := c.consumerGroups(ctx, c.src)
	if err != nil {
		return true
	}
	for _, resp := range c.src.FetchManyOffsets(ctx, groups...) {
		if resp.Err != nil {
			return true
		}
		work := false
		resp.Fetched.Each(func(o kadm.OffsetResponse) {
			work = work || o.Err != nil || o.At >= 0 && c.cfg.Topics.Accept(o.Topic)
		})
		if work {
			return true
		}
	}
	return false
}

// consumerGroups lists the consumer groups on adm's cluster that the flow's
// group filter admits, sorted (MM2 MirrorCheckpointConnector lists the
// groups the same way).
func (c *checkpointer) consumerGroups(ctx context.Context, adm *kadm.Client) ([]string, error) {
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return nil, err
	}
	var groups []string
	for _, g := range listed.Sorted() {
		if (g.ProtocolType == "consumer" || g.ProtocolType == "") && c.cfg.Groups.Accept(g.Group) {
			groups = append(groups, g.Group)
		}
	}
	return groups, nil
}

// targetTopic is the topic a checkpoint names: the remote topic on the
// target, or, for a topic that came from the target in the first place, its
// original name there (MM2 MirrorCheckpointTask.renameTopicPartition).
func (c *checkpointer) targetTopic(upstream string) string {
	if src, ok := c.cfg.Policy.TopicSource(upstream); ok && src == c.cfg.Target {
		return c.cfg.Policy.OriginalTopic(upstream)
	}
	return c.cfg.Policy.FormatRemoteTopic(c.cfg.Source, upstream)
}

// emit runs one checkpoint pass: it lists the source's groups, keeps those
// the group filter admits, fetches their commits, translates each through
// the offset syncs, drops what MM2 drops (no commit, -1, no sync, older than
// every sync, a translation that would move a checkpoint backwards without
// a real rewind), writes the rest to the checkpoints topic in one batch and
// returns how many it wrote. One group's failure does not stop the others;
// failures are returned joined.
func (c *checkpointer) emit(ctx context.Context) (int, error) {
	if !c.syncs.Ready() {
		return 0, nil // KAFKA-13659: never checkpoint before the syncs are read
	}
	groups, err := c.consumerGroups(ctx, c.src)
	if err != nil {
		return 0, fmt.Errorf("flow %s: list groups on %s: %w", c.cfg.Name(), c.cfg.Source, err)
	}
	if len(groups) == 0 {
		return 0, nil
	}
	listedAt := c.now()
	fetched := c.src.FetchManyOffsets(ctx, groups...)
	cks, confirmed, errs := c.translate(groups, fetched)
	if co, ok := c.obs.(interface {
		CheckpointConfirmed(source, target, group string, listedAt time.Time)
	}); ok {
		for _, g := range confirmed {
			co.CheckpointConfirmed(c.cfg.Source, c.cfg.Target, g, listedAt)
		}
	}
	if len(cks) == 0 {
		return 0, errors.Join(errs...)
	}
	// A checkpoint whose target offset the target cannot hold (from a
	// bogus offset sync) is never written (invalid.go).
	_, kept, err := c.dropImpossible(ctx, cks, "checkpoint")
	if err != nil {
		return 0, errors.Join(append(errs, err)...)
	}
	if len(kept) < len(cks) {
		var kcks []mm2.Checkpoint
		for _, i := range kept {
			kcks = append(kcks, cks[i])
		}
		cks = kcks
	}
	written, werrs := c.write(ctx, cks, listedAt)
	return written, errors.Join(append(errs, werrs...)...)
}

// translate turns the fetched source offsets of groups into the
// checkpoints to write (MM2's monotonic filter: not a repeat, not going
// backwards), and returns the groups whose every checkpointable partition
// repeats its newest checkpoint exactly: idle, and current at this listing
// (package freshness).
func (c *checkpointer) translate(groups []string, fetched kadm.FetchOffsetsResponses) (cks []mm2.Checkpoint, confirmed []string, errs []error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, g := range groups {
		resp, ok := fetched[g]
		if !ok {
			continue
		}
		if resp.Err != nil {
			errs = append(errs, fmt.Errorf("flow %s: fetch offsets of group %s on %s: %w", c.cfg.Name(), g, c.cfg.Source, resp.Err))
			continue
		}
		repeats, others := 0, 0
		for _, o := range resp.Fetched.Sorted() {
			if o.Err != nil || o.At < 0 || !c.cfg.Topics.Accept(o.Topic) {
				continue // no offset (null, or -1 from some clients), or not mirrored
			}
			others++
			res := c.syncs.Translate(o.Topic, o.Partition, o.At)
			if !res.OK || res.Offset < 0 {
				continue
			}
			ck := mm2.Checkpoint{Group: g, Topic: c.targetTopic(o.Topic), Partition: o.Partition,
				UpstreamOffset: o.At, DownstreamOffset: res.Offset, Metadata: o.Metadata}
			if prev, ok := c.last[ckKey{g, ck.Topic, ck.Partition}]; ok && !(ck.UpstreamOffset < prev.UpstreamOffset || ck.DownstreamOffset > prev.DownstreamOffset) {
				if prev.UpstreamOffset == ck.UpstreamOffset {
					repeats, others = repeats+1, others-1
				}
				continue // a repeat, or a translation going backwards
			}
			cks = append(cks, ck)
		}
		if repeats > 0 && others == 0 {
			confirmed = append(confirmed, g)
		}
	}
	return cks, confirmed, errs
}

// write writes cks, dated listedAt, and keeps the acknowledged ones as the
// newest per key.
func (c *checkpointer) write(ctx context.Context, cks []mm2.Checkpoint, listedAt time.Time) (int, []error) {
	var (
		errs []error
		recs []*kgo.Record
		sent []mm2.Checkpoint
	)
	for _, ck := range cks {
		k, err := ck.MarshalKey()
		if err == nil {
			var v []byte
			if v, err = ck.MarshalValue(); err == nil {
				recs = append(recs, &kgo.Record{Topic: c.topic, Partition: 0, Key: k, Value: v, Timestamp: listedAt})
				sent = append(sent, ck)
				continue
			}
		}
		errs = append(errs, fmt.Errorf("flow %s: checkpoint for group %s: %w", c.cfg.Name(), ck.Group, err))
	}
	if len(recs) == 0 {
		return 0, errs
	}
	results := c.producer.ProduceSync(ctx, recs...)
	written := 0
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, res := range results {
		if res.Err != nil {
			errs = append(errs, fmt.Errorf("flow %s: write checkpoint to %s on %s: %w", c.cfg.Name(), c.topic, c.cfg.Target, res.Err))
			continue
		}
		ck := sent[i]
		c.last[ckKey{ck.Group, ck.Topic, ck.Partition}] = ck
		written++
		c.obs.CheckpointWritten(c.cfg.Source, c.cfg.Target, ck.Group, ck.Topic, ck.Partition, c.now().Sub(listedAt))
	}
	return written, errs
}

// activeErr reports commit errors that mean the group has members.
func activeErr(err error) bool {
	return errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.IllegalGeneration) ||
		errors.Is(err, kerr.RebalanceInProgress) || errors.Is(err, kerr.FencedInstanceID)
}

// groupIdle reports whether group is absent or empty on the target, and its
// state and member count for the log. The state is read through the API
// the group's protocol needs (classic, KIP-848 consumer; others refused),
// and any error leaves the group not idle (package groupstate).
func (c *checkpointer) groupIdle(ctx context.Context, group string) (bool, string, int, error) {
	st := groupstate.Describe(ctx, c.tgt, []string{group})[group]
	if st.Err != nil {
		return false, "", 0, st.Err
	}
	if !st.Supported() {
		return false, st.Type + " group", len(st.Members), nil
	}
	return st.Idle(), st.State, len(st.Members), nil
}

// syncGroupOffsets commits checkpointed offsets to each checkpointed group on
// the target (MM2 sync.group.offsets, KIP-545), more carefully than MM2: only
// to groups absent or Empty there, checked again right before the commit
// (KAFKA-19794); only partitions with no commit, a -1 commit, or a commit
// behind the checkpoint (never backwards); without a leader epoch (epochs
// belong to the source). A group that turned active (UNKNOWN_MEMBER_ID,
// REBALANCE_IN_PROGRESS, ...) is reported as active, never as an error that
// stops the others.
func (c *checkpointer) syncGroupOffsets(ctx context.Context) {
	c.mu.Lock()
	byGroup := map[string][]mm2.Checkpoint{}
	for _, ck := range c.last {
		byGroup[ck.Group] = append(byGroup[ck.Group], ck)
	}
	c.mu.Unlock()
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		outcome, committed, err := c.syncGroup(ctx, g, byGroup[g])
		c.mu.Lock()
		st := c.groupStats(g)
		st.Sync = outcome
		st.Committed += committed
		st.Error = ""
		if err != nil {
			st.Error = err.Error()
		}
		c.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			c.log.Warn("group offsets not synced", "group", g, "err", err)
		}
	}
}

func (c *checkpointer) syncGroup(ctx context.Context, group string, cks []mm2.Checkpoint) (string, int, error) {
	idle, state, members, err := c.groupIdle(ctx, group)
	if err != nil {
		return SyncFailed, 0, fmt.Errorf("describe group %s on %s: %w", group, c.cfg.Target, err)
	}
	if !idle {
		c.log.Info("group is active on the target; offsets left alone", "group", group, "state", state, "members", members)
		return SyncActive, 0, nil
	}
	current, err := c.tgt.FetchOffsets(ctx, group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		current, err = nil, nil // an unknown group has no commits
	}
	if err != nil {
		return SyncFailed, 0, fmt.Errorf("fetch offsets of group %s on %s: %w", group, c.cfg.Target, err)
	}
	// Never commit a target offset the target cannot hold (invalid.go).
	if cks, _, err = c.dropImpossible(ctx, cks, "group-offset"); err != nil {
		return SyncFailed, 0, err
	}
	commit := kadm.Offsets{}
	for _, ck := range cks {
		if cur, ok := current.Lookup(ck.Topic, ck.Partition); ok && cur.Err != nil {
			// Unknown is not "no commit": commit nothing to the group.
			return SyncFailed, 0, fmt.Errorf("fetch offset of group %s %s[%d] on %s: %w", group, ck.Topic, ck.Partition, c.cfg.Target, cur.Err)
		}
		if cur, ok := current.Lookup(ck.Topic, ck.Partition); ok && cur.At >= 0 && cur.At >= ck.DownstreamOffset {
			continue // at or ahead of the checkpoint: never move a group backwards
		}
		commit.Add(kadm.Offset{Topic: ck.Topic, Partition: ck.Partition, At: ck.DownstreamOffset, LeaderEpoch: -1, Metadata: ck.Metadata})
	}
	if len(commit) == 0 {
		return SyncUpToDate, 0, nil
	}
	// The group may have come alive since the first look.
	if idle, state, members, err = c.groupIdle(ctx, group); err != nil || !idle {
		if err != nil {
			return SyncFailed, 0, fmt.Errorf("describe group %s on %s: %w", group, c.cfg.Target, err)
		}
		c.log.Info("group became active on the target; offsets left alone", "group", group, "state", state, "members", members)
		return SyncActive, 0, nil
	}
	resp, err := c.tgt.CommitOffsets(ctx, group, commit)
	if err != nil {
		if activeErr(err) {
			return SyncActive, 0, nil
		}
		return SyncFailed, 0, fmt.Errorf("commit group %s on %s: %w", group, c.cfg.Target, err)
	}
	n := 0
	var errs []error
	active := false
	resp.Each(func(o kadm.OffsetResponse) {
		switch {
		case o.Err == nil:
			n++
		case activeErr(o.Err):
			active = true
		default:
			errs = append(errs, fmt.Errorf("commit group %s %s[%d] on %s: %w", group, o.Topic, o.Partition, c.cfg.Target, o.Err))
		}
	})
	switch {
	case len(errs) > 0:
		return SyncFailed, n, errors.Join(errs...)
	case active && n == 0:
		return SyncActive, 0, nil
	}
	return SyncCommitted, n, nil
}

func (c *checkpointer) groupStats(g string) *GroupStats {
	st := c.groups[g]
	if st == nil {
		st = &GroupStats{Flow: c.cfg.Name(), Group: g}
		c.groups[g] = st
	}
	return st
}

// stats returns a snapshot per group, sorted by group.
func (c *checkpointer) stats() []GroupStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	counts := map[string]int{}
	for k := range c.last {
		counts[k.group]++
	}
	for g := range counts {
		c.groupStats(g)
	}
	out := make([]GroupStats, 0, len(c.groups))
	for g, st := range c.groups {
		s := *st
		s.Checkpoints = counts[g]
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out
}

// run emits checkpoints every CheckpointsInterval and syncs group offsets
// every SyncGroupOffsetsInterval until ctx is done, following the
// offset-syncs topic in the background.
func (c *checkpointer) run(ctx context.Context) {
	go c.tailSyncs(ctx)
	emit := time.NewTicker(c.cfg.CheckpointsInterval)
	defer emit.Stop()
	var syncC <-chan time.Time
	if c.cfg.SyncGroupOffsets {
		t := time.NewTicker(c.cfg.SyncGroupOffsetsInterval)
		defer t.Stop()
		syncC = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-emit.C:
			if n, err := c.emit(ctx); err != nil && ctx.Err() == nil {
				c.log.Warn("checkpoints not all written", "err", err)
			} else if n > 0 {
				c.log.Debug("checkpoints written", "count", n)
			}
		case <-syncC:
			c.syncGroupOffsets(ctx)
		}
	}
}
