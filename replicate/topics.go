package replicate

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/mirrorctl/mirrorctl/replicate/filter"
)

// Topic actions in a [Plan].
const (
	ActionCreate = "create"         // the remote topic is missing and will be created
	ActionGrow   = "add-partitions" // the source has more partitions than the remote topic
	ActionInSync = "in-sync"        // the remote topic exists with enough partitions
	ActionSkip   = "skip"           // the topic is not replicated; Reason says why
)

// TopicPlan is what a flow does with one source topic at start.
type TopicPlan struct {
	Topic            string `json:"topic"`                  // source topic
	RemoteTopic      string `json:"remote_topic,omitempty"` // policy-formatted name on the target; "" when skipped
	Action           string `json:"action"`                 // ActionCreate, ActionGrow, ActionInSync or ActionSkip
	Partitions       int32  `json:"partitions"`             // source partition count
	TargetPartitions int32  `json:"target_partitions"`      // remote partition count now (0 when missing)
	Reason           string `json:"reason,omitempty"`       // why a topic is skipped
	// Note is set on a replicated topic whose name is a platform
	// component's, not user data (filter.WellKnownTopic: _schemas,
	// connect-*, _confluent-*): MM2's rules copy it, which is rarely meant.
	Note string `json:"note,omitempty"`
}

// Plan is a flow's topic plan: every topic listed on the source, sorted by
// name, each with its action. Nothing is left out silently: a topic the flow
// does not replicate is listed with ActionSkip and its reason. Internal lists
// the internal topics the flow writes, and whether they exist yet.
// Broker-internal topics (__consumer_offsets, ...) are not listed.
type Plan struct {
	Flow     string              `json:"flow"`
	Source   string              `json:"source"`
	Target   string              `json:"target"`
	Topics   []TopicPlan         `json:"topics"`
	Internal []InternalTopicPlan `json:"internal_topics"`
}

// InternalTopicPlan is one internal topic a flow writes (compacted, one
// partition): its cluster, name, what it holds, and whether it exists.
type InternalTopicPlan struct {
	Cluster string `json:"cluster"`
	Topic   string `json:"topic"`
	Purpose string `json:"purpose"` // "progress", "offset-syncs", "checkpoints", "heartbeats" or "acl-ledger" (created by the ACL sync's first binding)
	Exists  bool   `json:"exists"`
}

// Replicated returns the plans of the topics the flow replicates.
func (p *Plan) Replicated() []TopicPlan {
	var out []TopicPlan
	for _, t := range p.Topics {
		if t.Action != ActionSkip {
			out = append(out, t)
		}
	}
	return out
}

// PlanFlow lists the source and target topics and decides, for every source
// topic, what the flow does with it (MM2 MirrorSourceConnector
// findSourceTopicPartitions and shouldReplicateTopic). It only reads: Metadata
// on both clusters. Broker-internal topics (__consumer_offsets, ...) are not
// listed, as MM2's Admin listTopics hides them.
func PlanFlow(ctx context.Context, cfg FlowConfig, src, tgt *kadm.Client) (*Plan, error) {
	// kadm answers ListTopics from kgo's metadata cache (up to
	// MetadataMinAge, 5s, old); asking for authorized operations makes it
	// send a fresh Metadata request, so a topic created a moment ago is seen.
	ctx = kadm.WithAuthorizedOps(ctx)
	srcTopics, err := src.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("flow %s: list topics on %s: %w", cfg.Name(), cfg.Source, err)
	}
	tgtTopics, err := tgt.ListTopicsWithInternal(ctx)
	if err != nil {
		return nil, fmt.Errorf("flow %s: list topics on %s: %w", cfg.Name(), cfg.Target, err)
	}
	plan := &Plan{Flow: cfg.Name(), Source: cfg.Source, Target: cfg.Target}
	for _, name := range srcTopics.Names() {
		d := srcTopics[name]
		if d.Err != nil {
			return nil, fmt.Errorf("flow %s: topic %s on %s: %w", cfg.Name(), name, cfg.Source, d.Err)
		}
		tp := TopicPlan{Topic: name, Partitions: int32(len(d.Partitions))}
		dec := filter.DecideTopic(cfg.Policy, cfg.Topics, name, cfg.Target, cfg.HeartbeatsReplication)
		if !dec.Replicate {
			tp.Action = ActionSkip
			tp.Reason = dec.Detail
			if tp.Reason == "" {
				tp.Reason = string(dec.Reason)
			}
			plan.Topics = append(plan.Topics, tp)
			continue
		}
		tp.RemoteTopic = cfg.Policy.FormatRemoteTopic(cfg.Source, name)
		if owner, ok := filter.WellKnownTopic(name); ok {
			tp.Note = fmt.Sprintf("%s looks like %s, not user data; it is replicated because the topics filter matches it and MM2's internal-topic rules do not exclude it: "+
				"add it to topics.exclude unless a copy is meant", name, owner)
		}
		if td, ok := tgtTopics[tp.RemoteTopic]; ok && td.Err == nil {
			tp.TargetPartitions = int32(len(td.Partitions))
		}
		switch {
		case tp.TargetPartitions == 0:
			tp.Action = ActionCreate
		case tp.TargetPartitions < tp.Partitions:
			tp.Action = ActionGrow
		default:
			tp.Action = ActionInSync
		}
		plan.Topics = append(plan.Topics, tp)
	}
	sort.Slice(plan.Topics, func(i, j int) bool { return plan.Topics[i].Topic < plan.Topics[j].Topic })
	exists := func(alias, topic string) bool {
		td := tgtTopics
		if alias == cfg.Source {
			td = srcTopics
		}
		d, ok := td[topic]
		return ok && d.Err == nil
	}
	add := func(alias, topic, purpose string) {
		plan.Internal = append(plan.Internal, InternalTopicPlan{Cluster: alias, Topic: topic, Purpose: purpose, Exists: exists(alias, topic)})
	}
	add(cfg.Target, ProgressTopic(cfg.Policy, cfg.Source), "progress")
	if cfg.EmitOffsetSyncs {
		alias, topic := cfg.offsetSyncsCluster()
		add(alias, topic, "offset-syncs")
	}
	if cfg.EmitCheckpoints {
		add(cfg.Target, cfg.Policy.CheckpointsTopic(cfg.Source), "checkpoints")
	}
	if cfg.EmitHeartbeats {
		add(cfg.Target, cfg.Policy.HeartbeatsTopic(), "heartbeats")
	}
	if cfg.SyncTopicACLs {
		add(cfg.Target, ACLLedgerTopic(cfg.Policy, cfg.Source), "acl-ledger")
	}
	return plan, nil
}

// applyPlan creates missing remote topics with the source's partition count,
// the flow's replication factor and the source's filtered configs, and grows
// remote topics whose source has more partitions (MM2 createNewTopics and
// createNewPartitions). It never deletes or shrinks. A topic created
// concurrently by someone else (TOPIC_ALREADY_EXISTS) and a growth that is no
// longer needed (INVALID_PARTITIONS) are not errors. Every other per-topic
// failure is returned, joined, after the other topics were handled.
func applyPlan(ctx context.Context, cfg FlowConfig, plan *Plan, src, tgt *kadm.Client) error {
	var create, grow []TopicPlan
	for _, t := range plan.Topics {
		switch t.Action {
		case ActionCreate:
			create = append(create, t)
		case ActionGrow:
			grow = append(grow, t)
		}
	}
	var errs []error
	if len(create) > 0 {
		names := make([]string, len(create))
		for i, t := range create {
			names[i] = t.Topic
		}
		configs, err := describeConfigs(ctx, src, names...)
		if err != nil {
			return fmt.Errorf("flow %s: describe configs on %s: %w", cfg.Name(), cfg.Source, err)
		}
		for _, t := range create {
			set, _ := targetConfigs(configs[t.Topic], cfg.ConfigProperties, true, cfg.UseDefaultsFromSource)
			resp, err := tgt.CreateTopic(ctx, t.Partitions, cfg.ReplicationFactor, set, t.RemoteTopic)
			if err == nil {
				err = resp.Err
			}
			if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
				errs = append(errs, fmt.Errorf("flow %s: create %s on %s: %w", cfg.Name(), t.RemoteTopic, cfg.Target, err))
			}
		}
	}
	for _, t := range grow {
		resps, err := tgt.UpdatePartitions(ctx, int(t.Partitions), t.RemoteTopic)
		if err == nil {
			if r, ok := resps[t.RemoteTopic]; ok {
				err = r.Err
			}
		}
		if err != nil && !errors.Is(err, kerr.InvalidPartitions) {
			errs = append(errs, fmt.Errorf("flow %s: grow %s on %s to %d partitions: %w", cfg.Name(), t.RemoteTopic, cfg.Target, t.Partitions, err))
		}
	}
	return errors.Join(errs...)
}

// describeConfigs returns each topic's config entries (DescribeConfigs).
func describeConfigs(ctx context.Context, adm *kadm.Client, topics ...string) (map[string][]kadm.Config, error) {
	rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]kadm.Config, len(rcs))
	for _, rc := range rcs {
		if rc.Err != nil {
			return nil, fmt.Errorf("topic %s: %w", rc.Name, rc.Err)
		}
		out[rc.Name] = rc.Configs
	}
	return out, nil
}

// targetConfigs applies MM2's config filter (MirrorSourceConnector
// targetConfig, docs/mm2-formats.md §9) to a source topic's entries. An entry is kept
// when it is not sensitive, not a static broker config, and not excluded by
// config.properties.exclude. At creation a default entry is kept only with
// use.defaults.from=source; in the periodic sync every entry qualifies, and a
// default one is returned in del (reset the target to its own default)
// unless use.defaults.from=source. Topic configs are never read-only in
// Kafka, so MM2's read-only test has nothing to act on here.
func targetConfigs(entries []kadm.Config, f filter.ConfigPropertyFilter, creation, defaultsFromSource bool) (set map[string]*string, del []string) {
	set = make(map[string]*string)
	for _, e := range entries {
		if e.Sensitive || e.Source == kmsg.ConfigSourceStaticBrokerConfig || !f.Accept(e.Key) {
			continue
		}
		isDefault := e.Source == kmsg.ConfigSourceDefaultConfig
		switch {
		case creation && isDefault && !defaultsFromSource:
			continue
		case !creation && isDefault && !defaultsFromSource:
			del = append(del, e.Key)
			continue
		}
		if e.Value == nil {
			continue
		}
		v := *e.Value
		set[e.Key] = &v
	}
	sort.Strings(del)
	return set, del
}

// syncConfigs copies the filtered source configs of every replicated topic to
// its remote topic with IncrementalAlterConfigs (KIP-894, MM2 3.5.0+), so
// target-only overrides of other keys survive. Failures are returned joined,
// per topic.
func syncConfigs(ctx context.Context, cfg FlowConfig, plan *Plan, src, tgt *kadm.Client) error {
	topics := plan.Replicated()
	if len(topics) == 0 {
		return nil
	}
	names := make([]string, len(topics))
	for i, t := range topics {
		names[i] = t.Topic
	}
	configs, err := describeConfigs(ctx, src, names...)
	if err != nil {
		return fmt.Errorf("flow %s: describe configs on %s: %w", cfg.Name(), cfg.Source, err)
	}
	var errs []error
	for _, t := range topics {
		set, del := targetConfigs(configs[t.Topic], cfg.ConfigProperties, false, cfg.UseDefaultsFromSource)
		alters := make([]kadm.AlterConfig, 0, len(set)+len(del))
		keys := make([]string, 0, len(set))
		for k := range set {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: set[k]})
		}
		for _, k := range del {
			alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
		}
		if len(alters) == 0 {
			continue
		}
		resps, err := tgt.AlterTopicConfigs(ctx, alters, t.RemoteTopic)
		if err == nil {
			for _, r := range resps {
				if r.Err != nil {
					err = r.Err
				}
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("flow %s: sync configs of %s to %s on %s: %w", cfg.Name(), t.Topic, t.RemoteTopic, cfg.Target, err))
		}
	}
	return errors.Join(errs...)
}

// ensureInternalTopic creates a compacted single-partition topic if it is
// missing (MM2 MirrorUtils.createSinglePartitionCompactedTopic). An existing
// topic, and a broker refusing us the right to create it (KAFKA-15465:
// someone else may have created it), are not errors.
func ensureInternalTopic(ctx context.Context, adm *kadm.Client, topic string, rf int16) error {
	resp, err := adm.CreateTopic(ctx, 1, rf, map[string]*string{"cleanup.policy": ptr("compact")}, topic)
	if err == nil {
		err = resp.Err
	}
	switch {
	case err == nil, errors.Is(err, kerr.TopicAlreadyExists),
		errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.ClusterAuthorizationFailed):
		return nil
	}
	if errors.Is(err, kerr.InvalidTopicException) {
		// Kafka refuses a name that differs from an existing topic's only
		// in '.' against '_' (Topic.hasCollision): typically the internal
		// topics of an earlier run with another replication.policy.separator.
		return fmt.Errorf("create internal topic %s: %w (a topic whose name differs from it only in '.' and '_' may exist: "+
			"check replication.policy.separator against the internal topics already on the cluster)", topic, err)
	}
	return fmt.Errorf("create internal topic %s: %w", topic, err)
}

func ptr[T any](v T) *T { return &v }
