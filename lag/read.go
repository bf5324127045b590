package lag

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/replicate"
	"github.com/mirrorctl/mirrorctl/replicate/filter"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
	"github.com/mirrorctl/mirrorctl/replicate/progress"
	"github.com/mirrorctl/mirrorctl/replicate/syncstore"
)

// Where a partition's replicated offset comes from (PartitionLag.From).
const (
	// FromProgress: mirrorctl's progress topic on the target (mirrorctl
	// replicates the flow); exact.
	FromProgress = "progress"
	// FromOffsetSyncs: the newest offset sync of the partition (MM2, or
	// mirrorctl without progress), extended by the records the target
	// holds after that sync's downstream offset.
	FromOffsetSyncs = "offset-syncs"
	// FromMM2Offsets: MM2's Connect source offsets (the last copied
	// upstream offset, plus one), where they are ahead of mirrorctl's
	// progress: the flow was handed back to MM2 (mm2 handoff), or MM2 runs
	// it beside stale progress; exact as of MM2's last offset flush.
	FromMM2Offsets = "mm2-offsets"
	// FromNone: nothing says the partition was ever replicated.
	FromNone = "none"
)

// Partition states (PartitionLag.State).
const (
	StateOK      = "ok"
	StateGap     = "gap"
	StateStopped = "stopped"
)

// StateRecreated is the state of a partition whose source topic was
// deleted and created again since its progress was written (the kind of
// replicate's loss event of the same name).
const StateRecreated = string(replicate.LossSourceRecreated)

// setLoss sets the partition's loss state from its progress value.
func (pl *PartitionLag) setLoss(v progress.Value) {
	pl.Skipped, pl.Loss = v.Skipped, v.Loss
	switch {
	case v.Loss != nil && v.Loss.Stopped:
		pl.State = StateStopped
		pl.StopReason = v.Loss.Kind + ": " + v.Loss.Reason
	case v.Loss != nil:
		pl.State = v.Loss.Kind
	}
}

// sourceRecreated reports whether the source partition's progress belongs
// to an earlier topic of the same name: its topic ID differs from the
// source's (currentID), or, with either ID unknown, it copied past the
// source's end offset now (offsets of a topic never go back otherwise).
func sourceRecreated(v progress.Value, currentID string, end int64) bool {
	if v.TopicID != "" && currentID != "" {
		return v.TopicID != currentID
	}
	return v.Next > end
}

// FlowLag is one flow in the lag report.
type FlowLag struct {
	Source string `json:"source"`
	Target string `json:"target"`
	// HeartbeatAgeMs is now minus the timestamp of the newest heartbeat
	// keyed (source, target) in the target's heartbeats topic (written by
	// MM2's MirrorHeartbeatTask or by mirrorctl), in ms; null when none.
	HeartbeatAgeMs *int64 `json:"heartbeat_age_ms"`
	// NewestCheckpointAgeMs is now minus the timestamp of the newest
	// checkpoint of any group in the flow, in ms; null when none. With
	// HeartbeatAgeMs it is the mirror's liveness (package freshness).
	NewestCheckpointAgeMs *int64         `json:"newest_checkpoint_age_ms"`
	Partitions            []PartitionLag `json:"partitions"`
	Groups                []GroupLag     `json:"groups"`
	// Members are the replicate processes in the flow's group on the
	// source (replicate.ReadOwnership), Leader the one that leads the flow;
	// OwnershipError says why they are unknown (e.g. no DESCRIBE on the
	// groups), "" when they were read.
	Members        []replicate.Member `json:"members"`
	Leader         *replicate.Member  `json:"leader"`
	OwnershipError string             `json:"ownership_error,omitempty"`
	// SourceError says why the source cluster did not answer; "" when it
	// did. The figures only the source knows are then unknown: partitions
	// come from the progress topic (and the offset syncs, when they are on
	// the target) with SourceEndOffset and RecordsBehind -1, TimeBehindMs
	// null and SourceUnknown set; groups have CommittedOffset -1; members
	// are unknown. Heartbeat and checkpoint ages come from the target as
	// always, and [Evaluate] breaches every threshold that needs the source.
	SourceError string `json:"source_error,omitempty"`
}

// PartitionLag is the replication lag of one source partition.
type PartitionLag struct {
	SourceTopic string `json:"source_topic"`
	Topic       string `json:"topic"` // remote topic on the target
	Partition   int32  `json:"partition"`
	// SourceEndOffset is the source partition's end offset (high watermark).
	SourceEndOffset int64 `json:"source_end_offset"`
	// ReplicatedOffset is the source offset of the last record known to be
	// on the target; -1 when none is.
	ReplicatedOffset int64 `json:"replicated_offset"`
	// RecordsBehind is the source offsets not yet on the target that the
	// source still holds: SourceEndOffset - max(ReplicatedOffset+1, log
	// start), not counting the transaction markers (and aborted records)
	// before the first record still to copy, so a partition whose only
	// uncopied offsets are markers (a trailing commit marker) is 0 behind.
	// A stopped partition counts from where it stopped; a source topic
	// recreated since its progress was written (State StateRecreated, or
	// StateStopped) counts every record the new topic holds, none of which
	// was copied: SourceEndOffset - log start.
	RecordsBehind int64 `json:"records_behind"`
	// TimeBehindMs is now minus the timestamp of the oldest source record
	// not yet on the target, in ms; 0 when caught up, null when it could
	// not be read.
	TimeBehindMs *int64 `json:"time_behind_ms"`
	// TargetEndOffset is the remote partition's end offset; 0 when missing.
	TargetEndOffset int64 `json:"target_end_offset"`
	// From is FromProgress, FromOffsetSyncs or FromNone.
	From   string `json:"from"`
	Breach bool   `json:"breach,omitempty"`
	// Owner is the replicate process that copies the partition
	// ("client-id@host"), "" when no process holds it.
	Owner string `json:"owner,omitempty"`
	// SourceUnknown: the source did not answer (FlowLag.SourceError);
	// SourceEndOffset and RecordsBehind are -1 and TimeBehindMs null.
	SourceUnknown bool `json:"source_unknown,omitempty"`
	// State is what the partition's progress says of loss (replicate's
	// loss events): StateOK, StateStopped when a loss event stopped it,
	// else the kind of its newest loss event (StateGap, "recreated",
	// "target-recreated", ...). With offset syncs only it is StateOK.
	// Found before the mirror reports it: StateRecreated (see
	// RecordsBehind), and "target-recreated" when the remote partition ends
	// below the downstream position the progress recorded (when it is
	// empty, every record the source holds is then behind: the mirror
	// copies it again).
	State string `json:"state"`
	// Stopped: the partition copies nothing until an operator acts: a
	// loss event stopped it (State StateStopped), or its source topic was
	// recreated and the flow does not copy recreated topics
	// (mirrorctl.source.recreated), so the mirror stops it. [Evaluate]
	// breaches it whatever the thresholds (CheckStopped); StopReason
	// says why.
	Stopped    bool   `json:"stopped"`
	StopReason string `json:"stop_reason,omitempty"`
	// Skipped is the partition's source offsets that were never copied,
	// in total; Loss its newest loss event; both from the progress topic.
	Skipped int64          `json:"skipped"`
	Loss    *progress.Loss `json:"loss,omitempty"`
	// ProgressTime is when a replicate process wrote the partition's
	// newest progress record (its time_ms, else the record timestamp; RFC
	// 3339); absent when the partition has no progress.
	ProgressTime *time.Time `json:"progress_time,omitempty"`

	next int64 // first source offset not on the target
}

// GroupLag is one consumer group's checkpoint state for the flow.
type GroupLag struct {
	Group string `json:"group"`
	// CheckpointAgeMs is now minus the record timestamp of the group's
	// newest checkpoint (when its source offsets were listed), in ms; null
	// when the group has none.
	CheckpointAgeMs *int64 `json:"checkpoint_age_ms"`
	// RereadsOnFailover estimates the records the group would read again
	// if it moved to the target now, summed over its partitions (see
	// GroupPartition.Rereads).
	RereadsOnFailover int64            `json:"rereads_on_failover"`
	Partitions        []GroupPartition `json:"partitions"`
	Breach            bool             `json:"breach,omitempty"`
}

// GroupPartition is one checkpointed partition of a group.
type GroupPartition struct {
	Topic     string `json:"topic"` // target-side topic, as in the checkpoint
	Partition int32  `json:"partition"`
	// CommittedOffset is the group's committed offset on the source now;
	// -1 when it has none.
	CommittedOffset  int64 `json:"committed_offset"`
	UpstreamOffset   int64 `json:"upstream_offset"`   // the checkpoint's source offset
	DownstreamOffset int64 `json:"downstream_offset"` // the checkpoint's target offset
	// Rereads is a conservative (high) estimate of the source offsets a
	// consumer restarting at DownstreamOffset on the target would see again:
	// (CommittedOffset - UpstreamOffset), the commits since the checkpoint,
	// plus (UpstreamOffset - the source offset DownstreamOffset maps back to
	// by the newest offset sync at or below it), the slack of MM2's
	// conservative translation. Exact translation is `failover`'s job.
	Rereads int64 `json:"rereads"`
	// CheckpointAgeMs is now minus this partition's checkpoint record
	// timestamp, in ms. Its age alone does not make it stale: see
	// [Evaluate] and package freshness.
	CheckpointAgeMs int64 `json:"checkpoint_age_ms"`
}

// Options say what Read reports and when "now" is.
type Options struct {
	// Now is the instant ages and time behind are measured from.
	Now time.Time
	// Groups are the consumer groups to report; empty means every group
	// with a checkpoint in the flow's checkpoints topic.
	Groups []string
	// FetchTimeout bounds the read of the oldest uncopied records and of
	// the heartbeats topic; zero or negative means DefaultFetchTimeout.
	FetchTimeout time.Duration
	// NoGroups leaves the checkpoints topic and the groups' commits
	// unread: FlowLag.Groups is empty and NewestCheckpointAgeMs null
	// (mirrorctl status, which shows partitions and processes only).
	NoGroups bool
}

// DefaultFetchTimeout is Options.FetchTimeout when unset.
const DefaultFetchTimeout = 10 * time.Second

// Read measures the lag of one flow: every partition the flow replicates
// (replicate.PlanFlow), the flow's newest heartbeat and the checkpoint state
// of the groups in opts. It only reads: ListOffsets on both clusters, the
// progress, offset-syncs, heartbeats and checkpoints topics, OffsetFetch of
// the groups on the source, and one bounded Fetch per lagging partition.
// The error names the flow, cluster and topic that could not be read; a
// partition's oldest uncopied record that cannot be read within the fetch
// timeout is not an error, its TimeBehindMs stays nil.
func Read(ctx context.Context, clients replicate.Clients, fc replicate.FlowConfig, opts Options) (FlowLag, error) {
	c := &collector{clients: clients, fc: fc, now: opts.Now, groups: opts.Groups, fetchTimeout: opts.FetchTimeout, noGroups: opts.NoGroups,
		progressAt: map[tpKey]time.Time{}}
	if c.fetchTimeout <= 0 {
		c.fetchTimeout = DefaultFetchTimeout
	}
	return c.collect(ctx)
}

// collector reads one flow's lag.
type collector struct {
	clients replicate.Clients
	fc      replicate.FlowConfig
	now     time.Time
	groups  []string // empty means every group with checkpoints
	// newestCheckpoint is the newest checkpoint record time of any group
	// (set by groupLag).
	newestCheckpoint time.Time
	// fetchTimeout bounds the read of the oldest uncopied records.
	fetchTimeout time.Duration
	// mm2 are MM2's Connect source offsets (replicate.ReadMM2Offsets).
	mm2 map[string]map[int32]int64
	// noGroups is Options.NoGroups.
	noGroups bool
	// progressAt is each partition's newest progress record time
	// (readProgress).
	progressAt map[tpKey]time.Time
}

func (c *collector) collect(ctx context.Context) (FlowLag, error) {
	fc := c.fc
	fl := FlowLag{Source: fc.Source, Target: fc.Target, Partitions: []PartitionLag{}, Groups: []GroupLag{}}
	src, err := c.clients.Admin(fc.Source)
	if err != nil {
		return fl, err
	}
	tgt, err := c.clients.Admin(fc.Target)
	if err != nil {
		return fl, err
	}
	if err := c.probe(ctx, src); err != nil {
		fl.SourceError = err.Error()
		return fl, c.collectSourceDown(ctx, &fl, tgt)
	}
	plan, err := replicate.PlanFlow(ctx, fc, src, tgt)
	if err != nil {
		return fl, err
	}
	var topics, remotes []string
	remoteToSource := map[string]string{}
	for _, t := range plan.Replicated() {
		topics = append(topics, t.Topic)
		remotes = append(remotes, t.RemoteTopic)
		remoteToSource[t.RemoteTopic] = t.Topic
	}
	progress, err := c.readProgress(ctx)
	if err != nil {
		return fl, err
	}
	syncs, err := c.readSyncs(ctx)
	if err != nil {
		return fl, err
	}
	if c.mm2, err = replicate.ReadMM2Offsets(ctx, fc, c.clients); err != nil {
		return fl, err
	}
	if len(topics) > 0 {
		if err := c.partitions(ctx, &fl, plan, src, tgt, topics, remotes, progress, syncs); err != nil {
			return fl, err
		}
	}
	fl.Members = []replicate.Member{}
	if own, err := replicate.ReadOwnership(ctx, src, tgt, fc); err != nil {
		fl.OwnershipError = err.Error()
	} else {
		fl.Members, fl.Leader = own.Members, own.Leader
		for i := range fl.Partitions {
			pl := &fl.Partitions[i]
			pl.Owner = own.Owner[pl.SourceTopic][pl.Partition]
		}
	}
	if fl.HeartbeatAgeMs, err = c.heartbeatAge(ctx, tgt); err != nil {
		return fl, err
	}
	if c.noGroups {
		return fl, nil
	}
	if fl.Groups, err = c.groupLag(ctx, src, syncs, remoteToSource); err != nil {
		return fl, err
	}
	if !c.newestCheckpoint.IsZero() {
		age := max(0, c.now.Sub(c.newestCheckpoint).Milliseconds())
		fl.NewestCheckpointAgeMs = &age
	}
	return fl, nil
}

func (c *collector) partitions(ctx context.Context, fl *FlowLag, plan *replicate.Plan, src, tgt *kadm.Client, topics, remotes []string,
	progress map[tpKey]progress.Value, syncs *syncstore.Store) error {
	fc := c.fc
	srcStarts, err := src.ListStartOffsets(ctx, topics...)
	if err != nil {
		return fmt.Errorf("flow %s: list start offsets on %s: %w", fc.Name(), fc.Source, err)
	}
	srcEnds, err := src.ListEndOffsets(ctx, topics...)
	if err != nil {
		return fmt.Errorf("flow %s: list end offsets on %s: %w", fc.Name(), fc.Source, err)
	}
	tgtEnds, err := tgt.ListEndOffsets(ctx, remotes...)
	if err != nil {
		return fmt.Errorf("flow %s: list end offsets on %s: %w", fc.Name(), fc.Target, err)
	}
	md, err := src.Metadata(ctx, topics...)
	if err != nil {
		return fmt.Errorf("flow %s: metadata on %s: %w", fc.Name(), fc.Source, err)
	}
	ids := map[string]string{}
	for name, td := range md.Topics {
		if td.Err == nil && td.ID != [16]byte{} {
			ids[name] = td.ID.String()
		}
	}
	for _, t := range plan.Replicated() {
		for p := int32(0); p < t.Partitions; p++ {
			s, sok := srcStarts.Lookup(t.Topic, p)
			e, eok := srcEnds.Lookup(t.Topic, p)
			if !sok || !eok || s.Err != nil || e.Err != nil {
				return fmt.Errorf("flow %s: offsets of %s[%d] on %s: %v", fc.Name(), t.Topic, p, fc.Source, errors.Join(s.Err, e.Err))
			}
			pl := PartitionLag{SourceTopic: t.Topic, Topic: t.RemoteTopic, Partition: p, SourceEndOffset: e.Offset, From: FromNone, State: StateOK}
			if te, ok := tgtEnds.Lookup(t.RemoteTopic, p); ok && te.Err == nil {
				pl.TargetEndOffset = te.Offset
			}
			next := int64(0)
			if v, ok := progress[tpKey{t.Topic, p}]; ok {
				next, pl.From = v.Next, FromProgress
				pl.setLoss(v)
				pl.ProgressTime = c.progressTime(tpKey{t.Topic, p})
				if v.Downstream > 0 && pl.TargetEndOffset < v.Downstream && pl.State != StateStopped {
					// The remote partition lost mirrored records and the
					// mirror has not reported it yet. Emptied (the remote
					// topic deleted or recreated), it is copied again
					// from the log start, so everything is behind; only
					// its last records gone, it is not (replicate's
					// targetLoss).
					pl.State = string(replicate.LossTargetRecreated)
					if pl.TargetEndOffset == 0 {
						next = 0
					}
				}
				if sourceRecreated(v, ids[t.Topic], e.Offset) {
					// Nothing of the new topic was copied: all of it
					// is behind, whatever the old position was.
					next = 0
					if pl.State != StateStopped {
						pl.State = StateRecreated
						if !fc.CopyRecreatedSource {
							pl.StopReason = StateRecreated + ": the source topic was deleted and created again since its progress was written; " +
								"the mirror stops the partition (mirrorctl.source.recreated = copy-from-start copies the new topic)"
						}
					}
				}
			} else if ss := syncs.Syncs(t.Topic, p); len(ss) > 0 {
				// Records after the sync's downstream offset on the target
				// are copies of source records after its upstream offset,
				// one for one at least (source offsets may have gaps), so
				// this is a lower bound of what is on the target.
				sy := ss[0]
				next, pl.From = sy.UpstreamOffset+1+max(0, pl.TargetEndOffset-1-sy.DownstreamOffset), FromOffsetSyncs
			}
			// Whoever copies the flow now: MM2 after a hand-back moves
			// its Connect offsets on while mirrorctl's progress stays.
			if o, ok := c.mm2[t.Topic][p]; ok && o+1 > next && pl.State != StateStopped && pl.State != StateRecreated {
				next, pl.From = o+1, FromMM2Offsets
			}
			next = min(next, e.Offset)
			pl.ReplicatedOffset = next - 1
			if pl.From == FromNone || pl.State == StateRecreated {
				pl.ReplicatedOffset = -1
			}
			pl.Stopped = pl.StopReason != ""
			pl.next = max(next, s.Offset)
			pl.RecordsBehind = max(0, e.Offset-pl.next)
			if pl.RecordsBehind == 0 {
				zero := int64(0)
				pl.TimeBehindMs = &zero
			}
			fl.Partitions = append(fl.Partitions, pl)
		}
	}
	return c.timeBehind(ctx, fl.Partitions)
}

// timeBehind reads, for each partition behind, the first source record at
// or after its next offset (read_committed, markers kept), and sets
// TimeBehindMs to now minus its timestamp. Markers and aborted records
// before that record are not behind: RecordsBehind counts from it, and a
// partition whose offsets up to the end are only markers is caught up.
// Partitions whose record cannot be read within fetchTimeout (an open
// transaction) keep a null TimeBehindMs.
func (c *collector) timeBehind(ctx context.Context, parts []PartitionLag) error {
	want := map[string]map[int32]kgo.Offset{}
	idx := map[tpKey]int{}
	for i, p := range parts {
		if p.RecordsBehind == 0 {
			continue
		}
		if want[p.SourceTopic] == nil {
			want[p.SourceTopic] = map[int32]kgo.Offset{}
		}
		want[p.SourceTopic][p.Partition] = kgo.NewOffset().At(p.next)
		idx[tpKey{p.SourceTopic, p.Partition}] = i
	}
	if len(idx) == 0 {
		return nil
	}
	cl, err := c.clients.Client(c.fc.Source, replicate.RoleConsumer, kgo.ConsumePartitions(want),
		kgo.FetchMaxPartitionBytes(64<<10), kgo.FetchMaxBytes(1<<20), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		return err
	}
	defer cl.Close()
	fctx, cancel := context.WithTimeout(ctx, c.fetchTimeout)
	defer cancel()
	for len(idx) > 0 {
		fs := cl.PollFetches(fctx)
		if fctx.Err() != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return nil // what is left stays unknown
		}
		fs.EachRecord(func(r *kgo.Record) {
			k := tpKey{r.Topic, r.Partition}
			i, ok := idx[k]
			if !ok {
				return
			}
			p := &parts[i]
			if r.Attrs.IsControl() {
				if r.Offset+1 < p.SourceEndOffset {
					return // a marker: the next record decides
				}
				p.RecordsBehind = 0 // only markers were left
			} else {
				p.RecordsBehind = max(0, p.SourceEndOffset-r.Offset)
			}
			ms := int64(0)
			if !r.Attrs.IsControl() {
				ms = max(0, c.now.Sub(r.Timestamp).Milliseconds())
			}
			p.TimeBehindMs = &ms
			delete(idx, k)
			cl.PauseFetchPartitions(map[string][]int32{r.Topic: {r.Partition}})
		})
	}
	return nil
}

type tpKey struct {
	topic     string
	partition int32
}

// readProgress reads mirrorctl's progress topic of the flow on the target:
// the newest record per source partition (package replicate/progress).
// Undecodable records are skipped: the partition then falls back to the
// offset syncs.
func (c *collector) readProgress(ctx context.Context) (map[tpKey]progress.Value, error) {
	out := map[tpKey]progress.Value{}
	topic := replicate.ProgressTopic(c.fc.Policy, c.fc.Source)
	err := replicate.ReadProgressTopic(ctx, c.clients, c.fc.Target, topic, func(r *kgo.Record) {
		if k, v, err := progress.DecodeValue(r.Key, r.Value); err == nil {
			out[tpKey{k.Topic, k.Partition}] = v
			at := v.Time // when the writer wrote it; the record's time if it said none
			if at.IsZero() || at.UnixMilli() == 0 {
				at = r.Timestamp
			}
			c.progressAt[tpKey{k.Topic, k.Partition}] = at
		}
	})
	return out, err
}

// progressTime is k's newest progress record time, UTC; nil when unknown.
func (c *collector) progressTime(k tpKey) *time.Time {
	at, ok := c.progressAt[k]
	if !ok || at.IsZero() {
		return nil
	}
	at = at.UTC()
	return &at
}

// readSyncs reads the flow's offset-syncs topic (where
// offset-syncs.topic.location puts it) into an MM2 OffsetSyncStore.
func (c *collector) readSyncs(ctx context.Context) (*syncstore.Store, error) {
	st := syncstore.New(false)
	alias, topic := c.fc.OffsetSyncsTopic()
	err := replicate.ReadInternalTopic(ctx, c.clients, alias, topic, func(r *kgo.Record) {
		if s, err := mm2.DecodeOffsetSync(r.Key, r.Value); err == nil {
			st.Add(s)
		}
	})
	st.ReadToEnd()
	return st, err
}

// heartbeatTail is how many records from the end of the heartbeats topic
// are searched for the flow's newest heartbeat. The topic is compacted and
// holds one key per flow into the cluster, so this covers it in practice.
const heartbeatTail = 10000

// heartbeatAge returns now minus the newest heartbeat of the flow, in ms.
func (c *collector) heartbeatAge(ctx context.Context, tgt *kadm.Client) (*int64, error) {
	topic := c.fc.Policy.HeartbeatsTopic()
	ends, err := tgt.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("list end offsets of %s on %s: %w", topic, c.fc.Target, err)
	}
	end, ok := ends.Lookup(topic, 0)
	if !ok || end.Err != nil || end.Offset <= 0 {
		return nil, nil
	}
	starts, err := tgt.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("list start offsets of %s on %s: %w", topic, c.fc.Target, err)
	}
	from := max(int64(0), end.Offset-heartbeatTail)
	if s, ok := starts.Lookup(topic, 0); ok && s.Err == nil {
		if s.Offset >= end.Offset {
			return nil, nil
		}
		from = max(from, s.Offset)
	}
	cl, err := c.clients.Client(c.fc.Target, replicate.RoleConsumer,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(from)}}), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	newest := int64(-1)
	fctx, cancel := context.WithTimeout(ctx, c.fetchTimeout)
	defer cancel()
	for done := false; !done; {
		fs := cl.PollFetches(fctx)
		if err := fctx.Err(); err != nil {
			if ctx.Err() == nil && newest >= 0 {
				break // the end is transaction markers: what was read is enough
			}
			return nil, fmt.Errorf("read %s on %s: %w", topic, c.fc.Target, err)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) { ferr = fmt.Errorf("read %s[%d] on %s: %w", t, p, c.fc.Target, err) })
		if ferr != nil {
			return nil, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset+1 >= end.Offset {
				done = true
			}
			hb, err := mm2.DecodeHeartbeat(r.Key, r.Value)
			if err == nil && hb.SourceAlias == c.fc.Source && hb.TargetAlias == c.fc.Target && hb.Timestamp > newest {
				newest = hb.Timestamp
			}
		})
	}
	if newest < 0 {
		return nil, nil
	}
	age := max(0, c.now.UnixMilli()-newest)
	return &age, nil
}

// groupLag reads the checkpoints topic of the flow on the target and
// compares each group's newest checkpoints with its source commits.
func (c *collector) groupLag(ctx context.Context, src *kadm.Client, syncs *syncstore.Store, remoteToSource map[string]string) ([]GroupLag, error) {
	cs := newCheckpointIndex()
	topic := c.fc.Policy.CheckpointsTopic(c.fc.Source)
	if err := replicate.ReadInternalTopic(ctx, c.clients, c.fc.Target, topic, cs.add); err != nil {
		return nil, err
	}
	if cs.newest.After(c.newestCheckpoint) {
		c.newestCheckpoint = cs.newest
	}
	groups := c.groups
	if len(groups) == 0 {
		groups = slices.Clone(cs.groups)
		sort.Strings(groups)
	}
	byGroup := cs.byGroup()
	var fetched kadm.FetchOffsetsResponses
	if src != nil { // nil: the source does not answer, commits unknown
		var want []string
		for _, g := range groups {
			if len(byGroup[g]) > 0 {
				want = append(want, g)
			}
		}
		fetched = src.FetchManyOffsets(ctx, want...)
	}
	return c.groupRows(groups, cs, byGroup, src != nil, fetched, syncs, remoteToSource)
}

// checkpointKey is a checkpoint's key: group and remote topic (their
// numbers in a checkpointIndex) and partition. Twelve bytes without
// pointers: the index of 10 million checkpoints hashes and the collector
// scans less.
type checkpointKey struct {
	group, topic, partition int32
}

// checkpointAt is a checkpoint and its record's timestamp.
type checkpointAt struct {
	mm2.Checkpoint
	at time.Time
}

// checkpointIndex keeps, of the records of a checkpoints topic given to add
// in log order, the newest checkpoint per key, the newest record time per
// group and the newest of all. Group and topic names are kept once each
// (the decoded copies are dropped).
type checkpointIndex struct {
	groupIDs map[string]int32
	groups   []string    // by number
	newestOf []time.Time // per group number
	topicIDs map[string]int32
	topics   []string // by number
	at       map[checkpointKey]int32
	recs     []checkpointAt // in the order their keys were first seen
	newest   time.Time
}

func newCheckpointIndex() *checkpointIndex {
	return &checkpointIndex{groupIDs: map[string]int32{}, topicIDs: map[string]int32{}, at: map[checkpointKey]int32{}}
}

// add decodes r (MM2's Checkpoint key and value); undecodable records are
// skipped.
func (cs *checkpointIndex) add(r *kgo.Record) {
	ck, err := mm2.DecodeCheckpoint(r.Key, r.Value)
	if err != nil {
		return
	}
	g, ok := cs.groupIDs[ck.Group]
	if !ok {
		g = int32(len(cs.groups))
		cs.groupIDs[ck.Group] = g
		cs.groups = append(cs.groups, ck.Group)
		cs.newestOf = append(cs.newestOf, time.Time{})
	}
	t, ok := cs.topicIDs[ck.Topic]
	if !ok {
		t = int32(len(cs.topics))
		cs.topicIDs[ck.Topic] = t
		cs.topics = append(cs.topics, ck.Topic)
	}
	ck.Group, ck.Topic = cs.groups[g], cs.topics[t]
	k := checkpointKey{g, t, ck.Partition}
	if i, ok := cs.at[k]; ok {
		cs.recs[i] = checkpointAt{ck, r.Timestamp}
	} else {
		cs.at[k] = int32(len(cs.recs))
		cs.recs = append(cs.recs, checkpointAt{ck, r.Timestamp})
	}
	if r.Timestamp.After(cs.newest) {
		cs.newest = r.Timestamp
	}
	if r.Timestamp.After(cs.newestOf[g]) {
		cs.newestOf[g] = r.Timestamp
	}
}

// newestOfGroup is the newest record time of group's checkpoints; false
// when it has none.
func (cs *checkpointIndex) newestOfGroup(group string) (time.Time, bool) {
	g, ok := cs.groupIDs[group]
	if !ok {
		return time.Time{}, false
	}
	return cs.newestOf[g], true
}

// byGroup is each group's newest checkpoints, sorted by topic and
// partition.
func (cs *checkpointIndex) byGroup() map[string][]checkpointAt {
	n := make([]int, len(cs.groups))
	for i := range cs.recs {
		n[cs.groupIDs[cs.recs[i].Group]]++
	}
	out := make(map[string][]checkpointAt, len(cs.groups))
	for g, name := range cs.groups {
		out[name] = make([]checkpointAt, 0, n[g])
	}
	for _, c := range cs.recs {
		out[c.Group] = append(out[c.Group], c)
	}
	for _, cks := range out {
		slices.SortFunc(cks, func(a, b checkpointAt) int {
			if c := strings.Compare(a.Topic, b.Topic); c != 0 {
				return c
			}
			return cmp.Compare(a.Partition, b.Partition)
		})
	}
	return out
}

// groupRows builds a GroupLag per group of groups from its checkpoints
// (byGroup, cs) and, when fetchedOK, its source commits in fetched; it
// reads no cluster. A group whose commits could not be fetched fails it
// (see fetchedOffsets).
func (c *collector) groupRows(groups []string, cs *checkpointIndex, byGroup map[string][]checkpointAt, fetchedOK bool,
	fetched kadm.FetchOffsetsResponses, syncs *syncstore.Store, remoteToSource map[string]string) ([]GroupLag, error) {
	out := make([]GroupLag, 0, len(groups))
	for _, g := range groups {
		gl := GroupLag{Group: g, Partitions: []GroupPartition{}}
		if ts, ok := cs.newestOfGroup(g); ok {
			age := max(0, c.now.Sub(ts).Milliseconds())
			gl.CheckpointAgeMs = &age
		}
		cks := byGroup[g]
		if len(cks) > 0 {
			var committed kadm.OffsetResponses
			if fetchedOK {
				var err error
				if committed, err = fetchedOffsets(fetched, g); err != nil {
					return nil, fmt.Errorf("flow %s: fetch offsets of group %s on %s: %w", c.fc.Name(), g, c.fc.Source, err)
				}
			}
			gl.Partitions = make([]GroupPartition, 0, len(cks))
			for _, ck := range cks {
				srcTopic, ok := remoteToSource[ck.Topic]
				if !ok {
					srcTopic = ck.Topic
					if up, ok := c.fc.Policy.UpstreamTopic(ck.Topic); ok {
						srcTopic = up
					}
				}
				gp := GroupPartition{Topic: ck.Topic, Partition: ck.Partition, CommittedOffset: -1,
					UpstreamOffset: ck.UpstreamOffset, DownstreamOffset: ck.DownstreamOffset,
					CheckpointAgeMs: max(0, c.now.Sub(ck.at).Milliseconds())}
				if o, ok := committed.Lookup(srcTopic, ck.Partition); ok && o.Err == nil && o.At >= 0 {
					gp.CommittedOffset = o.At
					gp.Rereads = max(0, o.At-ck.UpstreamOffset)
				}
				if up, ok := syncs.TranslateUpstream(srcTopic, ck.Partition, ck.DownstreamOffset); ok {
					gp.Rereads += max(0, ck.UpstreamOffset-up)
				}
				gl.RereadsOnFailover += gp.Rereads
				gl.Partitions = append(gl.Partitions, gp)
			}
		}
		out = append(out, gl)
	}
	return out, nil
}

// fetchedOffsets is group's answer in fetched (kadm's FetchManyOffsets:
// one OffsetFetch per coordinator for every group, where FetchOffsets sent
// one request per group) with FetchOffsets' failure contract: the group's
// error, or an authorization error on any of its partitions as a
// *kadm.AuthError, fails the whole group.
func fetchedOffsets(fetched kadm.FetchOffsetsResponses, group string) (kadm.OffsetResponses, error) {
	r, ok := fetched[group]
	if !ok {
		return nil, errors.New("no answer for the group")
	}
	if r.Err != nil {
		return nil, r.Err
	}
	var authErr error
	r.Fetched.Each(func(o kadm.OffsetResponse) {
		if authErr == nil && isAuthErr(o.Err) {
			authErr = &kadm.AuthError{Err: o.Err}
		}
	})
	return r.Fetched, authErr
}

// isAuthErr reports the authorization errors kadm turns into a
// *kadm.AuthError.
func isAuthErr(err error) bool {
	return errors.Is(err, kerr.ClusterAuthorizationFailed) || errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.GroupAuthorizationFailed) ||
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed) || errors.Is(err, kerr.DelegationTokenAuthorizationFailed)
}

// probeTimeout bounds the look at whether the source answers.
const probeTimeout = 10 * time.Second

// probe reports whether the source cluster answers a Metadata request
// within probeTimeout (or the fetch timeout, if shorter); the error says
// why not.
func (c *collector) probe(ctx context.Context, src *kadm.Client) error {
	pctx, cancel := context.WithTimeout(ctx, min(probeTimeout, c.fetchTimeout))
	defer cancel()
	if _, err := src.BrokerMetadata(pctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("source %s does not answer: %w", c.fc.Source, err)
	}
	return nil
}

// collectSourceDown fills fl from what the target holds while the source
// does not answer: the partitions the progress topic (or offset syncs kept
// on the target) knows, with their source-side figures unknown, the
// newest heartbeat, and each group's checkpoints without its commits.
func (c *collector) collectSourceDown(ctx context.Context, fl *FlowLag, tgt *kadm.Client) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	fc := c.fc
	fl.Members = []replicate.Member{}
	fl.OwnershipError = "unknown: " + fl.SourceError
	progress, err := c.readProgress(ctx)
	if err != nil {
		return err
	}
	syncs := syncstore.New(false)
	if alias, _ := fc.OffsetSyncsTopic(); alias == fc.Target {
		if syncs, err = c.readSyncs(ctx); err != nil {
			return err
		}
	}
	keys := map[tpKey]bool{}
	for k := range progress {
		keys[k] = true
	}
	for _, tp := range syncs.Partitions() {
		keys[tpKey{tp.Topic, tp.Partition}] = true
	}
	var sorted []tpKey
	for k := range keys {
		if filter.DecideTopic(fc.Policy, fc.Topics, k.topic, fc.Target, fc.HeartbeatsReplication).Replicate {
			sorted = append(sorted, k)
		}
	}
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].topic != sorted[j].topic {
			return sorted[i].topic < sorted[j].topic
		}
		return sorted[i].partition < sorted[j].partition
	})
	remoteToSource := map[string]string{}
	var remotes []string
	for _, k := range sorted {
		r := fc.Policy.FormatRemoteTopic(fc.Source, k.topic)
		if _, ok := remoteToSource[r]; !ok {
			remotes = append(remotes, r)
		}
		remoteToSource[r] = k.topic
	}
	var tgtEnds kadm.ListedOffsets
	if len(remotes) > 0 {
		if tgtEnds, err = tgt.ListEndOffsets(ctx, remotes...); err != nil {
			return fmt.Errorf("flow %s: list end offsets on %s: %w", fc.Name(), fc.Target, err)
		}
	}
	for _, k := range sorted {
		pl := PartitionLag{SourceTopic: k.topic, Topic: fc.Policy.FormatRemoteTopic(fc.Source, k.topic), Partition: k.partition,
			SourceEndOffset: -1, ReplicatedOffset: -1, RecordsBehind: -1, From: FromNone, SourceUnknown: true, State: StateOK}
		if te, ok := tgtEnds.Lookup(pl.Topic, k.partition); ok && te.Err == nil {
			pl.TargetEndOffset = te.Offset
		}
		if v, ok := progress[k]; ok {
			pl.ReplicatedOffset, pl.From = v.Next-1, FromProgress
			pl.setLoss(v)
			pl.ProgressTime = c.progressTime(k)
			pl.Stopped = pl.StopReason != ""
			if v.Downstream > 0 && pl.TargetEndOffset < v.Downstream && !pl.Stopped {
				pl.State = string(replicate.LossTargetRecreated) // see partitions
			}
		} else if ss := syncs.Syncs(k.topic, k.partition); len(ss) > 0 {
			sy := ss[0]
			pl.ReplicatedOffset, pl.From = sy.UpstreamOffset+max(0, pl.TargetEndOffset-1-sy.DownstreamOffset), FromOffsetSyncs
		}
		fl.Partitions = append(fl.Partitions, pl)
	}
	if fl.HeartbeatAgeMs, err = c.heartbeatAge(ctx, tgt); err != nil {
		return err
	}
	if c.noGroups {
		return nil
	}
	if fl.Groups, err = c.groupLag(ctx, nil, syncs, remoteToSource); err != nil {
		return err
	}
	if !c.newestCheckpoint.IsZero() {
		age := max(0, c.now.Sub(c.newestCheckpoint).Milliseconds())
		fl.NewestCheckpointAgeMs = &age
	}
	return nil
}
