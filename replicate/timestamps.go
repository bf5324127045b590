package replicate

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TimestampRefusal is a run of source records still to copy that the remote
// topic's timestamp bounds will refuse: a broker appends a CreateTime record
// only while its timestamp is within message.timestamp.before.max.ms before
// and message.timestamp.after.max.ms after the broker's clock (KIP-937),
// whatever the source accepted when the record was new. A refused copy
// stops its partition there (loss kind refused), so a dry run says so first.
type TimestampRefusal struct {
	Topic       string `json:"topic"` // source topic
	RemoteTopic string `json:"remote_topic"`
	Partition   int32  `json:"partition"`
	// Key is message.timestamp.before.max.ms or message.timestamp.after.max.ms.
	Key string `json:"key"`
	// Limit is the remote topic's value of Key, in ms (for a topic still to
	// create: the source topic's own value when set there, else the target
	// broker's log.message.timestamp.* default).
	Limit int64 `json:"limit_ms"`
	// From and To are source offsets: [From, To) would be refused now.
	// Before: every record from the resume point up to the first one
	// within the bound (exact: ListOffsets by timestamp); more age out as
	// time passes. After: the record with the highest timestamp (at least
	// that one; ListOffsets max timestamp, KIP-734).
	From  int64 `json:"from"`
	To    int64 `json:"to"`
	Count int64 `json:"count"`
}

// Timestamp limit keys of a topic and the broker defaults they fall back to.
const (
	keyTimestampType   = "message.timestamp.type"
	keyTimestampBefore = "message.timestamp.before.max.ms"
	keyTimestampAfter  = "message.timestamp.after.max.ms"
)

var brokerTimestampKeys = map[string]string{
	keyTimestampType:   "log.message.timestamp.type",
	keyTimestampBefore: "log.message.timestamp.before.max.ms",
	keyTimestampAfter:  "log.message.timestamp.after.max.ms",
}

// PlanTimestamps returns, for every replicated partition with records left
// to copy (from its resume point in resume, else its log start, to its end
// offset now), the runs the remote topic's timestamp bounds would refuse at
// now, sorted by topic, partition and key. Remote topics with
// LogAppendTime are left out (the broker stamps copies). It only reads:
// DescribeConfigs on both clusters, ListOffsets on the source.
func PlanTimestamps(ctx context.Context, plan *Plan, src, tgt *kadm.Client, resume []ResumePoint, now time.Time) ([]TimestampRefusal, error) {
	repl := plan.Replicated()
	if len(repl) == 0 {
		return nil, nil
	}
	lims, err := readTimestampLimits(ctx, plan, src, tgt)
	if err != nil {
		return nil, err
	}
	at := map[tp]int64{}
	for _, rp := range resume {
		if rp.Error == "" && rp.From != "" {
			at[tp{rp.Topic, rp.Partition}] = rp.Offset
		}
	}
	var out []TimestampRefusal
	for _, t := range repl {
		lim, err := lims.of(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("flow %s: broker configs on %s: %w", plan.Flow, plan.Target, err)
		}
		if lim[keyTimestampType] == "LogAppendTime" {
			continue
		}
		refused, err := topicRefusals(ctx, src, t, lim, at, now)
		if err != nil {
			return nil, fmt.Errorf("flow %s: %s on %s: %w", plan.Flow, t.Topic, plan.Source, err)
		}
		out = append(out, refused...)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		if a.Partition != b.Partition {
			return a.Partition < b.Partition
		}
		return a.Key < b.Key
	})
	return out, nil
}

// timestampLimits holds what PlanTimestamps reads of the topics' configs.
type timestampLimits struct {
	src, tgt       *kadm.Client
	source, remote map[string][]kadm.Config // by source topic, by remote topic
	brokerDefaults map[string]string        // the target broker's, read once when needed
}

func readTimestampLimits(ctx context.Context, plan *Plan, src, tgt *kadm.Client) (*timestampLimits, error) {
	l := &timestampLimits{src: src, tgt: tgt, remote: map[string][]kadm.Config{}}
	var srcNames, remotes []string
	for _, t := range plan.Replicated() {
		srcNames = append(srcNames, t.Topic)
		if t.Action != ActionCreate {
			remotes = append(remotes, t.RemoteTopic)
		}
	}
	var err error
	if l.source, err = describeConfigs(ctx, src, srcNames...); err != nil {
		return nil, fmt.Errorf("flow %s: describe configs on %s: %w", plan.Flow, plan.Source, err)
	}
	if len(remotes) > 0 {
		if l.remote, err = describeConfigs(ctx, tgt, remotes...); err != nil {
			return nil, fmt.Errorf("flow %s: describe configs on %s: %w", plan.Flow, plan.Target, err)
		}
	}
	return l, nil
}

// of returns t's remote topic's timestamp settings by topic key: the remote
// topic's own when it exists; for one still to create, the source topic's
// values set on it (MirrorSourceConnector creates the remote topic with
// them), else the target broker's log.message.timestamp.* defaults.
func (l *timestampLimits) of(ctx context.Context, t TopicPlan) (map[string]string, error) {
	if t.Action != ActionCreate {
		return configValues(l.remote[t.RemoteTopic]), nil
	}
	out := map[string]string{}
	for _, c := range l.source[t.Topic] {
		if _, ok := brokerTimestampKeys[c.Key]; ok && c.Value != nil && c.Source == kmsg.ConfigSourceDynamicTopicConfig {
			out[c.Key] = *c.Value
		}
	}
	if len(out) < len(brokerTimestampKeys) && l.brokerDefaults == nil {
		d, err := targetBrokerDefaults(ctx, l.tgt)
		if err != nil {
			return nil, err
		}
		l.brokerDefaults = d
	}
	for k, bk := range brokerTimestampKeys {
		if _, ok := out[k]; !ok {
			if v, ok := l.brokerDefaults[bk]; ok {
				out[k] = v
			}
		}
	}
	return out, nil
}

// topicRefusals evaluates one topic's partitions against its limits lim,
// each from its resume point in at (else its log start) to its end.
func topicRefusals(ctx context.Context, src *kadm.Client, t TopicPlan, lim map[string]string, at map[tp]int64, now time.Time) ([]TimestampRefusal, error) {
	before, bok := limitMs(lim[keyTimestampBefore])
	after, aok := limitMs(lim[keyTimestampAfter])
	if !bok && !aok {
		return nil, nil
	}
	starts, err := src.ListStartOffsets(ctx, t.Topic)
	if err != nil {
		return nil, fmt.Errorf("list start offsets: %w", err)
	}
	ends, err := src.ListEndOffsets(ctx, t.Topic)
	if err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	var firstNew, newest kadm.ListedOffsets
	if bok {
		if firstNew, err = src.ListOffsetsAfterMilli(ctx, now.UnixMilli()-before, t.Topic); err != nil {
			return nil, fmt.Errorf("list offsets by time: %w", err)
		}
	}
	if aok {
		if newest, err = src.ListMaxTimestampOffsets(ctx, t.Topic); err != nil {
			return nil, fmt.Errorf("list max timestamps: %w", err)
		}
	}
	var out []TimestampRefusal
	refuse := func(p int32, key string, limit, from, to int64) {
		out = append(out, TimestampRefusal{Topic: t.Topic, RemoteTopic: t.RemoteTopic, Partition: p, Key: key, Limit: limit, From: from, To: to, Count: to - from})
	}
	ends.Each(func(e kadm.ListedOffset) {
		s, ok := starts.Lookup(t.Topic, e.Partition)
		if e.Err != nil || !ok || s.Err != nil {
			return
		}
		from := s.Offset
		if o, ok := at[tp{t.Topic, e.Partition}]; ok && o > from {
			from = o
		}
		if from >= e.Offset {
			return // nothing left to copy
		}
		if f, ok := firstNew.Lookup(t.Topic, e.Partition); bok && ok && f.Err == nil {
			to := f.Offset
			if to < 0 || to > e.Offset {
				to = e.Offset // no record within the bound
			}
			if to > from {
				refuse(e.Partition, keyTimestampBefore, before, from, to)
			}
		}
		if m, ok := newest.Lookup(t.Topic, e.Partition); aok && ok && m.Err == nil && m.Offset >= from && m.Timestamp > now.UnixMilli()+after {
			refuse(e.Partition, keyTimestampAfter, after, m.Offset, m.Offset+1)
		}
	})
	return out, nil
}

// configValues returns the set values of cfgs by key.
func configValues(cfgs []kadm.Config) map[string]string {
	out := map[string]string{}
	for _, c := range cfgs {
		if c.Value != nil {
			out[c.Key] = *c.Value
		}
	}
	return out
}

// limitMs parses a timestamp bound; false when unset, negative, or
// effectively unbounded (Long.MAX_VALUE, the before default).
func limitMs(v string) (int64, bool) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/4 {
		return 0, false
	}
	return n, true
}

// targetBrokerDefaults returns the log.message.timestamp.* values of one
// target broker (DescribeConfigs of a broker: its static and dynamic
// values, the defaults a created topic gets).
func targetBrokerDefaults(ctx context.Context, tgt *kadm.Client) (map[string]string, error) {
	brokers, err := tgt.ListBrokers(ctx)
	if err != nil {
		return nil, err
	}
	if len(brokers) == 0 {
		return nil, fmt.Errorf("no brokers listed")
	}
	rcs, err := tgt.DescribeBrokerConfigs(ctx, brokers[0].NodeID)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, rc := range rcs {
		if rc.Err != nil {
			return nil, rc.Err
		}
		for k, v := range configValues(rc.Configs) {
			out[k] = v
		}
	}
	return out, nil
}
