package replicate

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Target topic limits. The target refuses a copy that its remote topic's
// configs do not allow: a batch over max.message.bytes (MESSAGE_TOO_LARGE),
// and with message.timestamp.type=CreateTime a timestamp further in the past
// than message.timestamp.before.max.ms or in the future than
// message.timestamp.after.max.ms (INVALID_TIMESTAMP; KIP-937, Kafka 3.6).
// A refusal the producer only reports after later records of the partition
// went out would leave those on the target ahead of the refused one, and a
// resume at the refused record would copy them twice. So the data path checks
// each copy against the limits before it produces it (preflight): the first
// copy that would be refused stops its partition, nothing after it is sent,
// and the progress stays at it, so once the limit is raised a restart copies
// it and what follows, in order, once. The data producers' batches are
// capped at the remote topic's max.message.bytes too (kgo
// ProducerBatchMaxBytesFn), so no batch of copies that each fit is refused.
// Both delivery modes do all of this alike: exactly-once copies take the same
// copy path (copyRecords) and their producers the same options
// (worker.dataProducer). The limits are read again at every task start.

// limitKeys are the target topic configs the preflight reads.
var limitKeys = []string{"max.message.bytes", "message.timestamp.type", "message.timestamp.before.max.ms", "message.timestamp.after.max.ms"}

// defaultMaxBytes is Kafka's max.message.bytes default (and kgo's batch cap).
const defaultMaxBytes = 1000012

// topicLimits are one remote topic's limits; -1 is "no limit".
type topicLimits struct {
	maxBytes      int64
	logAppendTime bool  // message.timestamp.type=LogAppendTime: timestamps are the broker's, never refused
	beforeMaxMs   int64 // message.timestamp.before.max.ms
	afterMaxMs    int64 // message.timestamp.after.max.ms
}

func parseLimits(cfgs []kadm.Config) topicLimits {
	l := topicLimits{maxBytes: defaultMaxBytes, beforeMaxMs: -1, afterMaxMs: -1}
	for _, c := range cfgs {
		if c.Value == nil {
			continue
		}
		n, err := strconv.ParseInt(*c.Value, 10, 64)
		switch c.Key {
		case "max.message.bytes":
			if err == nil {
				l.maxBytes = n
			}
		case "message.timestamp.type":
			l.logAppendTime = *c.Value == "LogAppendTime"
		case "message.timestamp.before.max.ms":
			if err == nil {
				l.beforeMaxMs = n
			}
		case "message.timestamp.after.max.ms":
			if err == nil {
				l.afterMaxMs = n
			}
		}
	}
	return l
}

// limitsCache holds the limits of the remote topics of a flow's tasks, and
// the batch cap the at-least-once data producer took for each (kgo asks
// once, when it first learns a partition, and keeps the answer: a limit
// raised later counts only once the producer forgot the topic, recap).
type limitsCache struct {
	mu     sync.RWMutex // guards topics, used and warned
	topics map[string]topicLimits
	used   map[string]int32 // the cap batchMaxBytes last answered per topic
	warned bool
}

func (c *limitsCache) get(topic string) (topicLimits, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	l, ok := c.topics[topic]
	return l, ok
}

// batchMaxBytes is the data producers' per-topic batch cap: the remote
// topic's max.message.bytes, Kafka's default while unknown.
func (c *limitsCache) batchMaxBytes(topic string) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.capLocked(topic)
	if c.used == nil {
		c.used = map[string]int32{}
	}
	c.used[topic] = n
	return n
}

func (c *limitsCache) capLocked(topic string) int32 {
	if l, ok := c.topics[topic]; ok && l.maxBytes >= 512 && l.maxBytes <= 1<<30 {
		return int32(l.maxBytes)
	}
	return defaultMaxBytes
}

// stale returns the topics of remotes whose limit changed since a producer
// took its batch cap.
func (c *limitsCache) stale(remotes []string) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []string
	for _, r := range remotes {
		if n, ok := c.used[r]; ok && n != c.capLocked(r) {
			out = append(out, r)
		}
	}
	return out
}

// forget drops what a producer took for topics (it asks again).
func (c *limitsCache) forget(topics []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range topics {
		delete(c.used, t)
	}
}

// load reads the limits of remotes afresh (DescribeConfigs on the target):
// every task start does, so a limit raised on the target while a partition
// was stopped counts when the partition is assigned again. A target that
// does not answer or denies DESCRIBE_CONFIGS keeps what was read before, or
// leaves them unread: the preflight then checks nothing and the broker's
// refusal is handled as before (said once).
func (c *limitsCache) load(ctx context.Context, w *worker, remotes []string) {
	if len(remotes) == 0 {
		return
	}
	want := append([]string(nil), remotes...)
	sort.Strings(want)
	rcs, err := w.io.tgt.DescribeTopicConfigs(ctx, want...)
	for _, rc := range rcs {
		if err == nil && rc.Err != nil {
			err = fmt.Errorf("topic %s: %w", rc.Name, rc.Err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		if !c.warned && ctx.Err() == nil {
			c.warned = true
			w.log.Warn("target topic limits not read: copies are not checked against max.message.bytes and timestamp bounds before they are sent", "err", err)
		}
		return
	}
	if c.topics == nil {
		c.topics = map[string]topicLimits{}
	}
	for _, rc := range rcs {
		c.topics[rc.Name] = parseLimits(rc.Configs)
	}
}

// of returns the limits of remote, nil while unread.
func (c *limitsCache) of(remote string) *topicLimits {
	if l, ok := c.get(remote); ok {
		return &l
	}
	return nil
}

// batchBytes is the size of the record batch holding r alone as the
// producer encodes it, uncompressed (record batch header, length varint,
// attributes, deltas, key, value, headers), in bytes.
func batchBytes(r *kgo.Record) int64 {
	l := 1 + 1 + 1 + kbin.VarintLen(int32(len(r.Key))) + len(r.Key) + kbin.VarintLen(int32(len(r.Value))) + len(r.Value) +
		kbin.VarintLen(int32(len(r.Headers)))
	for _, h := range r.Headers {
		l += kbin.VarintLen(int32(len(h.Key))) + len(h.Key) + kbin.VarintLen(int32(len(h.Value))) + len(h.Value)
	}
	const batchHeader = 61
	return int64(batchHeader + kbin.VarintLen(int32(l)) + l)
}

// preflight returns why the target would refuse the copy of r (a source
// record, before prepareCopy) into t's remote topic, as an error wrapping
// the broker's error code, or nil. now is the producer's clock.
func (w *worker) preflight(t *task, r *kgo.Record, now time.Time) error {
	l := t.limits
	if l == nil {
		return nil // not read: the broker decides
	}
	if n := batchBytes(r); n > l.maxBytes {
		return fmt.Errorf("%w: the copy takes %d bytes uncompressed, over max.message.bytes %d of %s on %s",
			kerr.MessageTooLarge, n, l.maxBytes, t.remote, w.cfg.Target)
	}
	if l.logAppendTime {
		return nil // the broker stamps it
	}
	ts := r.Timestamp.UnixMilli()
	if ts < 0 {
		return nil // the producer stamps now
	}
	// Milliseconds, as the broker compares them: no time.Duration per copy.
	age := now.UnixMilli() - ts
	switch {
	case l.beforeMaxMs >= 0 && age > l.beforeMaxMs:
		return fmt.Errorf("%w: the timestamp %s is %d ms old, over message.timestamp.before.max.ms %d of %s on %s",
			kerr.InvalidTimestamp, r.Timestamp.UTC().Format(time.RFC3339Nano), age, l.beforeMaxMs, t.remote, w.cfg.Target)
	case l.afterMaxMs >= 0 && -age > l.afterMaxMs:
		return fmt.Errorf("%w: the timestamp %s is %d ms ahead, over message.timestamp.after.max.ms %d of %s on %s",
			kerr.InvalidTimestamp, r.Timestamp.UTC().Format(time.RFC3339Nano), -age, l.afterMaxMs, t.remote, w.cfg.Target)
	}
	return nil
}

// refuseBefore stops t at r, a copy the preflight refused: nothing of r or
// after it is produced, the copies in flight before it still count, and the
// stop is reported as a refused record ([RecordError], loss event).
func (w *worker) refuseBefore(t *task, r *kgo.Record, why error) {
	size := recordSize(r)
	rerr := &RecordError{Flow: w.cfg.Name(), Topic: t.src.topic, RemoteTopic: t.remote, Partition: t.src.partition,
		Offset: r.Offset, Size: size, Timestamp: r.Timestamp, Err: why}
	t.mu.Lock()
	t.fail.err = rerr
	t.mu.Unlock()
	w.reportLoss(t, LossEvent{Kind: LossRefused, From: r.Offset, To: r.Offset, Stopped: true,
		Reason: fmt.Sprintf("not sent, the target would refuse it: %v; raise the limit on the target (or exclude the topic), then restart: copying resumes at this record", why)})
}

// LimitDifference is a limit of a remote topic stricter than its source
// topic's, so that records the source holds can be refused on the target
// ([PlanLimits]).
type LimitDifference struct {
	Topic       string `json:"topic"` // source topic
	RemoteTopic string `json:"remote_topic"`
	Key         string `json:"key"`
	Source      string `json:"source_value"`
	Target      string `json:"target_value"`
	Effect      string `json:"effect"`
}

// PlanLimits compares, for every replicated topic whose remote topic exists,
// the limits of source and remote topic (max.message.bytes,
// message.timestamp.type and the timestamp bounds) and returns those where
// the target is stricter, sorted by topic and key. It only reads
// (DescribeConfigs on both clusters).
func PlanLimits(ctx context.Context, plan *Plan, src, tgt *kadm.Client) ([]LimitDifference, error) {
	var srcNames, remotes []string
	remoteOf := map[string]string{}
	for _, t := range plan.Replicated() {
		if t.Action == ActionCreate {
			continue
		}
		srcNames = append(srcNames, t.Topic)
		remotes = append(remotes, t.RemoteTopic)
		remoteOf[t.Topic] = t.RemoteTopic
	}
	if len(srcNames) == 0 {
		return nil, nil
	}
	sc, err := describeConfigs(ctx, src, srcNames...)
	if err != nil {
		return nil, fmt.Errorf("flow %s: describe configs on %s: %w", plan.Flow, plan.Source, err)
	}
	tc, err := describeConfigs(ctx, tgt, remotes...)
	if err != nil {
		return nil, fmt.Errorf("flow %s: describe configs on %s: %w", plan.Flow, plan.Target, err)
	}
	value := func(cfgs []kadm.Config, key string) string {
		for _, c := range cfgs {
			if c.Key == key && c.Value != nil {
				return *c.Value
			}
		}
		return ""
	}
	var out []LimitDifference
	for _, topic := range srcNames {
		remote := remoteOf[topic]
		for _, key := range limitKeys {
			s, t := value(sc[topic], key), value(tc[remote], key)
			if s == t || t == "" {
				continue
			}
			d := LimitDifference{Topic: topic, RemoteTopic: remote, Key: key, Source: s, Target: t}
			if key == "message.timestamp.type" {
				if t != "LogAppendTime" {
					continue
				}
				d.Effect = "the target stamps copies with its own append time: source timestamps are lost on the target (time-based lookups and lag there see copy times)"
			} else {
				sn, serr := strconv.ParseInt(s, 10, 64)
				tn, terr := strconv.ParseInt(t, 10, 64)
				if serr != nil || terr != nil || tn >= sn {
					continue
				}
				d.Effect = "records the source accepts can be refused on the target: such a record stops its partition before it is sent"
			}
			out = append(out, d)
		}
	}
	return out, nil
}
