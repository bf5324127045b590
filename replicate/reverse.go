package replicate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// Reverse checkpoints (mirrorctl.reverse.checkpoints.enabled; the intent of
// KIP-1098, "Reverse Checkpointing in MirrorMaker", which MM2 does not
// ship). After a failover the groups consume the remote topics on the
// target (us-east.orders on eu-west). Failback has to translate their
// positions back to the source topics (orders on us-east); when the target
// is unreachable at that moment, nothing on the source says where they
// were. With reverse checkpoints on, the flow leader of us-east->eu-west
// also lists the groups on eu-west, translates their commits on the
// flow's remote topics back through the flow's own offset syncs (the
// inverse rule of [syncstore.Store.TranslateUpstream]: may re-read, never
// skips; between syncs pinned by content to the exact position, see
// reversepin.go) and writes them, in MM2's checkpoint format, to the source
// cluster: the checkpoints topic a eu-west->us-east flow would write
// (eu-west.checkpoints.internal on us-east), where KIP-1098 puts them too,
// so MM2's RemoteClusterUtils.translateOffsets(us-east, "eu-west", group)
// returns them as the group's offsets on the source topics.
//
// A reverse checkpoint record: key group, topic = the source-side topic
// (orders), partition; value upstream offset = the group's commit on the
// target's remote topic, downstream offset = the translated offset on the
// source topic; metadata carried; record timestamp = when the target's
// groups were listed.
//
// Unlike MM2's checkpoints, every reverse checkpoint is written at every
// pass (emit.checkpoints.interval.seconds), changed or not: its record
// timestamp then says when the mirror last saw the group at that position,
// so failback with the target down can tell an idle group (recent record,
// any age of commit) from a mirror that stopped checkpointing it (old
// record). A group whose commits cannot be read is not written, and its
// records age.

// ReverseCheckpointsTopic returns the cluster alias and topic of the flow's
// reverse checkpoints: the source cluster and the checkpoints topic named
// after the target, e.g. ("us-east", "eu-west.checkpoints.internal").
func (f FlowConfig) ReverseCheckpointsTopic() (alias, topic string) {
	return f.Source, f.Policy.CheckpointsTopic(f.Target)
}

// ReverseSourceTopic returns the source-side name of target-side topic t
// when t is one of the flow's remote topics (its policy traces it to the
// flow's source and the topic filter admits the upstream name), else
// ok=false. It is the mapping reverse checkpoints and failback share.
func (f FlowConfig) ReverseSourceTopic(t string) (string, bool) {
	src, ok := f.Policy.TopicSource(t)
	if !ok || src != f.Source {
		return "", false
	}
	up, ok := f.Policy.UpstreamTopic(t)
	if !ok || !f.Topics.Accept(up) || f.Policy.IsInternalTopic(up) {
		return "", false
	}
	return up, true
}

// reverseCheckpointer writes a flow's reverse checkpoints. It shares the
// flow checkpointer's clients and offset-sync store (followed by the
// checkpointer), so it runs only with checkpoints on.
type reverseCheckpointer struct {
	c        *checkpointer
	alias    string      // the source cluster
	topic    string      // <target>.checkpoints.internal
	producer *kgo.Client // to the source cluster; set by start
	// pins are the previous pass's pinned answers (reversepin.go); only
	// emit, one pass at a time, uses them.
	pins map[pinKey]int64
}

func newReverseCheckpointer(c *checkpointer) *reverseCheckpointer {
	alias, topic := c.cfg.ReverseCheckpointsTopic()
	return &reverseCheckpointer{c: c, alias: alias, topic: topic}
}

// start creates the reverse checkpoints topic on the source (compacted, one
// partition, checkpoints.topic.replication.factor) and the producer.
func (r *reverseCheckpointer) start(ctx context.Context) error {
	if err := ensureInternalTopic(ctx, r.c.src, r.topic, r.c.cfg.CheckpointsReplicationFactor); err != nil {
		return fmt.Errorf("flow %s: reverse checkpoints on %s: %w", r.c.cfg.Name(), r.alias, err)
	}
	cl, err := r.c.clients.Client(r.alias, "producer", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return fmt.Errorf("flow %s: reverse checkpoints on %s: %w", r.c.cfg.Name(), r.alias, err)
	}
	r.producer = cl
	return nil
}

func (r *reverseCheckpointer) close() {
	if r.producer != nil {
		r.producer.Close()
	}
}

// emit runs one pass: it lists the target's consumer groups the group
// filter admits, fetches their commits, keeps those on the flow's remote
// topics, translates each back through the offset syncs, and writes one
// reverse checkpoint per group partition to the source in one batch. It
// returns how many it wrote; a group whose commits cannot be read, or a
// write that fails, is in the joined error (the others are still written).
// Before the offset syncs are read to their end it writes nothing.
func (r *reverseCheckpointer) emit(ctx context.Context) (int, error) {
	c := r.c
	if !c.syncs.Ready() || r.producer == nil {
		return 0, nil
	}
	groups, err := c.consumerGroups(ctx, c.tgt)
	if err != nil {
		return 0, fmt.Errorf("flow %s: reverse checkpoints: list groups on %s: %w", c.cfg.Name(), c.cfg.Target, err)
	}
	if len(groups) == 0 {
		return 0, nil
	}
	listedAt := c.now()
	fetched := c.tgt.FetchManyOffsets(ctx, groups...)
	pins := r.newPins()
	defer pins.done()
	var (
		errs []error
		recs []*kgo.Record
	)
	for _, g := range groups {
		resp, ok := fetched[g]
		if !ok {
			errs = append(errs, fmt.Errorf("flow %s: reverse checkpoints: no offsets answer for group %s on %s", c.cfg.Name(), g, c.cfg.Target))
			continue
		}
		if resp.Err != nil {
			errs = append(errs, fmt.Errorf("flow %s: reverse checkpoints: fetch offsets of group %s on %s: %w", c.cfg.Name(), g, c.cfg.Target, resp.Err))
			continue
		}
		grecs, gerr := r.groupRecords(ctx, pins, g, resp.Fetched, listedAt)
		if gerr != nil {
			errs = append(errs, gerr)
			continue
		}
		recs = append(recs, grecs...)
	}
	if len(recs) == 0 {
		return 0, errors.Join(errs...)
	}
	written := 0
	for _, res := range r.producer.ProduceSync(ctx, recs...) {
		if res.Err != nil {
			errs = append(errs, fmt.Errorf("flow %s: write reverse checkpoint to %s on %s: %w", c.cfg.Name(), r.topic, r.alias, res.Err))
			continue
		}
		written++
	}
	return written, errors.Join(errs...)
}

// groupRecords translates group g's commits on the flow's remote topics
// (fetched on the target) back to the source and returns its reverse
// checkpoint records; one unreadable partition is an error and no record
// (none of the group's looks current then: fail closed).
func (r *reverseCheckpointer) groupRecords(ctx context.Context, pins *reversePins, g string, fetched kadm.OffsetResponses, listedAt time.Time) ([]*kgo.Record, error) {
	c := r.c
	var out []*kgo.Record
	for _, o := range fetched.Sorted() {
		up, ok := c.cfg.ReverseSourceTopic(o.Topic)
		if !ok {
			continue
		}
		if o.Err != nil {
			return nil, fmt.Errorf("flow %s: reverse checkpoints: fetch offset of group %s %s[%d] on %s: %w", c.cfg.Name(), g, o.Topic, o.Partition, c.cfg.Target, o.Err)
		}
		if o.At < 0 {
			continue
		}
		u, ok := pins.upstream(ctx, up, o.Topic, o.Partition, o.At)
		if !ok {
			continue // no offset sync at or below the commit: no safe answer
		}
		ck := mm2.Checkpoint{Group: g, Topic: up, Partition: o.Partition, UpstreamOffset: o.At, DownstreamOffset: u, Metadata: o.Metadata}
		k, err := ck.MarshalKey()
		var v []byte
		if err == nil {
			v, err = ck.MarshalValue()
		}
		if err != nil {
			return nil, fmt.Errorf("flow %s: reverse checkpoint for group %s: %w", c.cfg.Name(), g, err)
		}
		out = append(out, &kgo.Record{Topic: r.topic, Partition: 0, Key: k, Value: v, Timestamp: listedAt})
	}
	return out, nil
}

// run emits reverse checkpoints every emit.checkpoints.interval.seconds
// until ctx is done; failed passes are logged (the records they did not
// refresh age, which failback reads as not current).
func (r *reverseCheckpointer) run(ctx context.Context) {
	t := time.NewTicker(r.c.cfg.CheckpointsInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := r.emit(ctx); err != nil && ctx.Err() == nil {
				r.c.log.Warn("reverse checkpoints not all written", "err", err)
			} else if n > 0 {
				r.c.log.Debug("reverse checkpoints written", "count", n, "topic", r.topic, "cluster", r.alias)
			}
		}
	}
}
