package replicate

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/replicate/filter"
	"github.com/mirrorctl/mirrorctl/replicate/policy"
)

// Clients hands the engine Kafka clients for a cluster alias. role
// ([ClientRole]) selects the client overrides that apply (MM2's consumer.*,
// producer.* and admin.* keys). extra options are
// appended after the cluster's own, so the engine's consumption and
// partitioning choices win. mirrorctl's internal/kafka.Factory implements it.
//
// The engine closes every *kgo.Client it obtains from Client; it never closes
// the *kadm.Client returned by Admin (that one belongs to the caller).
type Clients interface {
	Client(alias string, role ClientRole, extra ...kgo.Opt) (*kgo.Client, error)
	Admin(alias string) (*kadm.Client, error)
}

// Offset-syncs topic locations (MM2 offset-syncs.topic.location, KIP-716,
// Kafka 3.0.0).
const (
	LocationSource = "source"
	LocationTarget = "target"
)

// FlowConfig holds the settings of one source->target flow. Field names follow
// MM2's connector keys (MirrorSourceConfig, MirrorHeartbeatConfig); the
// defaults are those of [DefaultFlowConfig].
type FlowConfig struct {
	Source string // source cluster alias, e.g. "us-east"
	Target string // target cluster alias, e.g. "eu-west"

	// Enabled is MM2's "A->B.enabled": when false only heartbeats run for the
	// pair (MM2 runs a heartbeat herder for every pair with heartbeats on).
	Enabled bool

	Policy           policy.Policy               // replication.policy.class and separator
	Topics           filter.TopicFilter          // topics / topics.exclude
	ConfigProperties filter.ConfigPropertyFilter // config.properties.exclude

	// HeartbeatsReplication is heartbeats.replication.enabled (KIP-1089,
	// default true): heartbeat topics bypass the topic filter.
	HeartbeatsReplication bool

	// ReplicationFactor of created remote topics (replication.factor,
	// default 2); -1 defers to the target broker's default (KIP-464).
	ReplicationFactor int16
	// UseDefaultsFromSource is use.defaults.from=source: at creation, copy
	// source configs even when they are the source broker's defaults.
	UseDefaultsFromSource bool

	RefreshTopics         bool          // refresh.topics.enabled, default true
	RefreshTopicsInterval time.Duration // refresh.topics.interval.seconds, default 600s

	SyncTopicConfigs         bool          // sync.topic.configs.enabled, default true
	SyncTopicConfigsInterval time.Duration // sync.topic.configs.interval.seconds, default 600s

	// SyncTopicACLs is sync.topic.acls.enabled (default true): copy the
	// source's topic ACLs to the remote topics ([SyncTopicACLs]).
	SyncTopicACLs         bool
	SyncTopicACLsInterval time.Duration // sync.topic.acls.interval.seconds, default 600s
	// SyncTopicACLsPrune is sync.topic.acls.prune (mirrorctl's own,
	// default false): delete the target bindings the ACL sync created
	// whose source binding is gone ([SyncTopicACLs]).
	SyncTopicACLsPrune bool

	EmitOffsetSyncs              bool   // emit.offset-syncs.enabled, default true
	OffsetSyncsTopicLocation     string // offset-syncs.topic.location: LocationSource (default) or LocationTarget
	OffsetSyncsReplicationFactor int16  // offset-syncs.topic.replication.factor, default 3
	// OffsetLagMax is offset.lag.max in records (default 100): an offset
	// sync is emitted at once when translation would otherwise be stale by
	// this many records (KAFKA-14797).
	OffsetLagMax int64
	// OffsetFlushInterval is how often delayed offset syncs are written
	// (MM2 promotes them on each Connect offset flush,
	// offset.flush.interval.ms, default 60s; KAFKA-15906).
	OffsetFlushInterval time.Duration

	EmitHeartbeats              bool          // emit.heartbeats.enabled, default true
	HeartbeatsInterval          time.Duration // emit.heartbeats.interval.seconds, default 1s
	HeartbeatsReplicationFactor int16         // heartbeats.topic.replication.factor, default 3

	// ProgressReplicationFactor of mirrorctl's progress topic on the target
	// (default 3, like MM2's internal topics).
	ProgressReplicationFactor int16
	// ProgressInterval is how often acknowledged positions are written to
	// the progress topic (default 1s). A crash re-copies at most the records
	// acknowledged since the last write.
	ProgressInterval time.Duration

	// Groups is groups / groups.exclude: the consumer groups checkpointed.
	Groups filter.GroupFilter
	// EmitCheckpoints is emit.checkpoints.enabled (default true):
	// translate the source groups' commits and write MM2 checkpoints to
	// <source>.checkpoints.internal on the target.
	EmitCheckpoints              bool
	CheckpointsInterval          time.Duration // emit.checkpoints.interval.seconds, default 60s
	CheckpointsReplicationFactor int16         // checkpoints.topic.replication.factor, default 3
	// SyncGroupOffsets is sync.group.offsets.enabled (KIP-545, default
	// false): commit checkpointed offsets to the same group on the target
	// when that group is absent or empty there, never moving it backwards.
	SyncGroupOffsets         bool
	SyncGroupOffsetsInterval time.Duration // sync.group.offsets.interval.seconds, default 60s
	// ReverseCheckpoints is mirrorctl.reverse.checkpoints.enabled (mirrorctl's
	// key, default false; the intent of KIP-1098, which MM2 does not ship):
	// the flow leader also checkpoints the groups that consume the remote
	// topics on the target back to the source, into
	// [FlowConfig.ReverseCheckpointsTopic], so failback can translate with
	// the target down (reverse.go). Needs EmitCheckpoints.
	ReverseCheckpoints bool

	// ProvenanceHeader is mirrorctl.provenance.header.enabled (mirrorctl's
	// key, default false: copies stay byte for byte their source records):
	// every copy carries [OriginHeader], the cluster ID the record was
	// first written on, so that a ring closed by another configuration is
	// stopped where it closes (ring.go).
	ProvenanceHeader bool

	// GroupID is the consumer group on the source through which the
	// processes running this flow share its partitions (mirrorctl key
	// mirrorctl.group.id; default "mirrorctl-<source>-<target>"). The flow
	// leader is chosen through the group GroupID+"-leader" on the target.
	GroupID string
	// TasksMax is MM2's tasks.max (default 1): the most processes that copy
	// the flow's partitions at once. Further processes wait as standbys and
	// take over when a member leaves. 0 admits any number.
	TasksMax int
	// SessionTimeout of this process's membership in the flow's groups
	// (the source consumer's session.timeout.ms; default 10 s, as Connect
	// workers): how long after a process dies its partitions and, if it
	// led, the leadership move to the others.
	SessionTimeout time.Duration
	// HeartbeatInterval of those memberships (the source consumer's
	// heartbeat.interval.ms); 0 is a third of SessionTimeout, at most
	// DefaultMaxHeartbeatInterval. A member hears of a rebalance at its next
	// heartbeat, and a cooperative rebalance that moves partitions takes two
	// (revoke, then assign), so a partition moved when a process joins or
	// leaves waits up to about two intervals. Must be below SessionTimeout.
	HeartbeatInterval time.Duration

	// StartFromLatest starts partitions that have no stored progress at the
	// log end instead of the log start (MM2: consumer auto.offset.reset,
	// KAFKA-13988). Default false: copy everything.
	StartFromLatest bool

	// ReadUncommitted is the source consumer's isolation.level =
	// read_uncommitted: records of open and aborted source transactions
	// are copied as if committed (MM2's behaviour, which its exactly-once
	// mode also changes). Default false: the source is read read_committed
	// (KIP-98), so records of aborted transactions are never copied; their
	// offsets and the transaction markers are upstream gaps that offset
	// syncs already step over. Readers of the target and of internal topics
	// read committed data whatever this says.
	ReadUncommitted bool

	// ExactlyOnce is MM2's <target>.exactly.once.source.support = enabled
	// (KIP-618): every partition task copies through a transactional
	// producer of its own, and the copies and the progress that covers them
	// commit in one target transaction every TransactionInterval (eos.go).
	// A read_committed consumer of the target then holds every source
	// record exactly once, in order, whatever crashes. Needs a target with
	// transactions (Kafka 0.11+, and the principal's WRITE and DESCRIBE on
	// the TRANSACTIONAL_ID GroupID-*).
	ExactlyOnce bool
	// TransactionInterval is how often an exactly-once task commits
	// (mirrorctl.transaction.interval.ms, default 200 ms): what a
	// read_committed consumer of the target waits, at most, past the copy.
	TransactionInterval time.Duration
	// TransactionProducersMax is the most transactional producers the
	// flow's exactly-once tasks hold open at once in this process
	// (mirrorctl.transaction.producers.max, default 1000; 0 is the
	// default). Tasks beyond it take turns (txpool.go).
	TransactionProducersMax int
	// TaskMetricsPush lets the exactly-once tasks' transactional producers
	// push client metrics to the target (KIP-714). Default false: there is
	// one such producer per partition, and on a broker that subscribes
	// clients to metrics each would keep its own compressor and push on its
	// own schedule (at 1,000 partitions on the embedded broker, two thirds
	// of the process's memory and 40% of its time). The flow's other
	// clients push as the cluster's settings say. Set from the target's
	// producer enable.metrics.push = true, stated explicitly.
	TaskMetricsPush bool

	// StopOnGap (source consumer auto.offset.reset=none) stops a partition
	// whose next records were deleted before they were copied (retention,
	// DeleteRecords), with a [LossEvent] naming the missing offsets,
	// instead of copying on from the log start (the default, also with
	// latest: what the source still holds is copied). Either way the gap is
	// reported (loss.go).
	StopOnGap bool

	// CopyRecreatedSource (mirrorctl.source.recreated = copy-from-start)
	// copies a source topic whose ID changed since its progress was written
	// from the new topic's log start, appended to the remote topic, instead
	// of stopping its partitions (the default; topicid.go).
	CopyRecreatedSource bool
	// MM2 says where the flow finds what MirrorMaker 2 copied before
	// mirrorctl took over, and what to do when nothing is known
	// (mm2resume.go).
	MM2 MM2Takeover
}

// DefaultFlowConfig returns the settings MM2 4.0 uses for a flow when
// mm2.properties sets nothing but the aliases (MirrorMakerConfig and the connector configs; docs/config-keys.md).
func DefaultFlowConfig(source, target string) FlowConfig {
	inc, _ := filter.CompileList("topics", filter.DefaultTopics)
	exc, _ := filter.CompileList("topics.exclude", filter.DefaultTopicsExclude)
	cfgExc, _ := filter.CompileList("config.properties.exclude", filter.DefaultConfigPropertiesExclude)
	ginc, _ := filter.CompileList("groups", filter.DefaultGroups)
	gexc, _ := filter.CompileList("groups.exclude", filter.DefaultGroupsExclude)
	return FlowConfig{
		Source:                       source,
		Target:                       target,
		Enabled:                      true,
		Policy:                       policy.NewDefault(".", true),
		Topics:                       filter.TopicFilter{Include: inc, Exclude: exc},
		ConfigProperties:             filter.ConfigPropertyFilter{Exclude: cfgExc},
		HeartbeatsReplication:        true,
		ReplicationFactor:            2,
		RefreshTopics:                true,
		RefreshTopicsInterval:        600 * time.Second,
		SyncTopicConfigs:             true,
		SyncTopicConfigsInterval:     600 * time.Second,
		SyncTopicACLs:                true,
		SyncTopicACLsInterval:        600 * time.Second,
		EmitOffsetSyncs:              true,
		OffsetSyncsTopicLocation:     LocationSource,
		OffsetSyncsReplicationFactor: 3,
		OffsetLagMax:                 100,
		OffsetFlushInterval:          60 * time.Second,
		EmitHeartbeats:               true,
		HeartbeatsInterval:           time.Second,
		HeartbeatsReplicationFactor:  3,
		ProgressReplicationFactor:    3,
		ProgressInterval:             time.Second,
		Groups:                       filter.GroupFilter{Include: ginc, Exclude: gexc},
		EmitCheckpoints:              true,
		CheckpointsInterval:          60 * time.Second,
		CheckpointsReplicationFactor: 3,
		SyncGroupOffsetsInterval:     60 * time.Second,
		GroupID:                      DefaultGroupID(source, target),
		TasksMax:                     1,
		SessionTimeout:               10 * time.Second,
		TransactionInterval:          200 * time.Millisecond,
		TransactionProducersMax:      DefaultTransactionProducersMax,
		MM2:                          DefaultMM2Takeover(source),
	}
}

// DefaultMaxHeartbeatInterval caps the default heartbeat of the flow's
// group memberships (FlowConfig.HeartbeatInterval): Kafka's consumers and
// Connect default to 3 s, which leaves a partition moved by a join or a
// leave uncopied for up to about 6 s; a heartbeat a second costs each member
// one small request per group.
const DefaultMaxHeartbeatInterval = time.Second

// heartbeatInterval is FlowConfig.HeartbeatInterval with its default.
func (f FlowConfig) heartbeatInterval() time.Duration {
	if f.HeartbeatInterval > 0 {
		return f.HeartbeatInterval
	}
	return max(min(f.SessionTimeout/3, DefaultMaxHeartbeatInterval), 100*time.Millisecond)
}

// DefaultGroupID returns the default consumer group of the flow
// source->target: "mirrorctl-<source>-<target>".
func DefaultGroupID(source, target string) string { return "mirrorctl-" + source + "-" + target }

// Name returns "source->target", MM2's flow notation.
func (f FlowConfig) Name() string { return f.Source + "->" + f.Target }

// Validate reports settings the engine cannot run with.
func (f FlowConfig) Validate() error {
	var errs []error
	if f.Source == "" || f.Target == "" {
		errs = append(errs, errors.New("source and target aliases are required"))
	}
	if f.Source == f.Target && f.Source != "" {
		errs = append(errs, fmt.Errorf("flow %s: source and target are the same cluster", f.Name()))
	}
	if f.Policy == nil {
		errs = append(errs, fmt.Errorf("flow %s: no replication policy", f.Name()))
	}
	if f.OffsetSyncsTopicLocation != LocationSource && f.OffsetSyncsTopicLocation != LocationTarget {
		errs = append(errs, fmt.Errorf("flow %s: offset-syncs.topic.location %q: want source or target", f.Name(), f.OffsetSyncsTopicLocation))
	}
	if (f.Enabled || f.EmitHeartbeats) && f.GroupID == "" {
		errs = append(errs, fmt.Errorf("flow %s: mirrorctl.group.id must not be empty", f.Name()))
	}
	if (f.Enabled || f.EmitHeartbeats) && f.SessionTimeout <= 0 {
		errs = append(errs, fmt.Errorf("flow %s: session.timeout.ms must be positive", f.Name()))
	}
	if f.HeartbeatInterval < 0 || (f.HeartbeatInterval > 0 && f.HeartbeatInterval >= f.SessionTimeout) {
		errs = append(errs, fmt.Errorf("flow %s: the source consumer's heartbeat.interval.ms must be a positive number of ms below its session.timeout.ms (%d)",
			f.Name(), f.SessionTimeout.Milliseconds()))
	}
	if f.TasksMax < 0 {
		errs = append(errs, fmt.Errorf("flow %s: tasks.max %d: must not be negative", f.Name(), f.TasksMax))
	}
	if f.TransactionProducersMax < 0 {
		errs = append(errs, fmt.Errorf("flow %s: mirrorctl.transaction.producers.max %d: must not be negative", f.Name(), f.TransactionProducersMax))
	}
	if f.OffsetLagMax < 0 {
		errs = append(errs, fmt.Errorf("flow %s: offset.lag.max %d: must not be negative", f.Name(), f.OffsetLagMax))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
		on   bool
	}{
		{"refresh.topics.interval.seconds", f.RefreshTopicsInterval, f.RefreshTopics},
		{"sync.topic.configs.interval.seconds", f.SyncTopicConfigsInterval, f.SyncTopicConfigs},
		{"sync.topic.acls.interval.seconds", f.SyncTopicACLsInterval, f.SyncTopicACLs},
		{"emit.heartbeats.interval.seconds", f.HeartbeatsInterval, f.EmitHeartbeats},
		{"offset.flush.interval.ms", f.OffsetFlushInterval, f.EmitOffsetSyncs},
		{"progress interval", f.ProgressInterval, f.Enabled},
		{"mirrorctl.transaction.interval.ms", f.TransactionInterval, f.Enabled && f.ExactlyOnce},
		{"emit.checkpoints.interval.seconds", f.CheckpointsInterval, f.Enabled && f.EmitCheckpoints},
		{"sync.group.offsets.interval.seconds", f.SyncGroupOffsetsInterval, f.Enabled && f.SyncGroupOffsets},
	} {
		if d.on && d.v <= 0 {
			errs = append(errs, fmt.Errorf("flow %s: %s must be positive", f.Name(), d.name))
		}
	}
	if f.Enabled && f.EmitCheckpoints && !f.EmitOffsetSyncs {
		errs = append(errs, fmt.Errorf("flow %s: emit.checkpoints.enabled needs emit.offset-syncs.enabled: checkpoints are translated through offset syncs", f.Name()))
	}
	if f.Enabled && f.ExactlyOnce && f.ReadUncommitted {
		errs = append(errs, &SettingError{Cluster: f.Source, Key: f.Source + ".consumer.isolation.level",
			Msg: "read_uncommitted copies records of transactions the source may abort; exactly-once (" + f.Target +
				".exactly.once.source.support = enabled) needs the source read read_committed"})
	}
	if f.Enabled && f.SyncGroupOffsets && !f.EmitCheckpoints {
		errs = append(errs, fmt.Errorf("flow %s: sync.group.offsets.enabled needs emit.checkpoints.enabled", f.Name()))
	}
	if f.Enabled && f.ReverseCheckpoints && !f.EmitCheckpoints {
		errs = append(errs, fmt.Errorf("flow %s: mirrorctl.reverse.checkpoints.enabled needs emit.checkpoints.enabled: reverse checkpoints are emitted with the checkpoints, through the same offset syncs", f.Name()))
	}
	return errors.Join(errs...)
}

// offsetSyncsCluster returns the alias of the cluster holding the flow's
// offset-syncs topic, and the topic's name (MM2 MirrorSourceConfig
// offsetSyncsTopic: the alias in the name is the other cluster).
func (f FlowConfig) offsetSyncsCluster() (alias, topic string) {
	if f.OffsetSyncsTopicLocation == LocationTarget {
		return f.Target, f.Policy.OffsetSyncsTopic(f.Source)
	}
	return f.Source, f.Policy.OffsetSyncsTopic(f.Target)
}

// OffsetSyncsTopic returns the cluster alias and name of the flow's
// offset-syncs topic, e.g. ("us-east", "mm2-offset-syncs.eu-west.internal")
// for the default location.
func (f FlowConfig) OffsetSyncsTopic() (alias, topic string) { return f.offsetSyncsCluster() }

// ProgressTopic returns the name of mirrorctl's progress topic for flows from
// source, on the target cluster: "mirrorctl-progress.<source>.internal" with
// the default separator. The policy treats it as internal, so no flow ever
// mirrors it.
func ProgressTopic(p policy.Policy, source string) string {
	suffix := p.InternalSuffix() // ".internal" or e.g. "_internal"
	sep := suffix[:len(suffix)-len("internal")]
	return "mirrorctl-progress" + sep + source + suffix
}

// discard is the engine's default logger.
var discard = slog.New(slog.DiscardHandler)
