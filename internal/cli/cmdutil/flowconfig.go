package cmdutil

import (
	"strconv"
	"strings"
	"time"

	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// FlowConfig maps one mm2.properties flow onto the engine's settings, key by
// key, after MM2's precedence (flow > top-level > default). The progress
// topic, an internal topic like MM2's, takes
// offset-syncs.topic.replication.factor. A source consumer override
// auto.offset.reset=latest makes partitions without progress start at the
// log end, as MM2 3.7+ does (KAFKA-13988); auto.offset.reset=none stops a
// partition whose next records were deleted before they were copied
// (replicate.FlowConfig.StopOnGap) instead of copying on from the log
// start. A source consumer override isolation.level=read_uncommitted makes
// the data path copy uncommitted records (the default is read_committed).
// The target's producer enable.metrics.push = true, stated, makes the
// exactly-once tasks' producers push client metrics too
// (replicate.FlowConfig.TaskMetricsPush).
func FlowConfig(cfg *config.Config, f *config.Flow) replicate.FlowConfig {
	seconds := func(key string) time.Duration { return time.Duration(f.Int(key)) * time.Second }
	fc := replicate.DefaultFlowConfig(f.Source, f.Target)
	fc.Enabled = f.Enabled
	fc.Policy = f.Policy()
	fc.Topics = f.TopicFilter()
	fc.ConfigProperties = f.ConfigPropertyFilter()
	fc.HeartbeatsReplication = f.Bool("heartbeats.replication.enabled")
	fc.ReplicationFactor = int16(f.Int("replication.factor"))
	fc.UseDefaultsFromSource = strings.EqualFold(f.String("use.defaults.from"), "source")
	fc.RefreshTopics = f.Bool("refresh.topics.enabled")
	fc.RefreshTopicsInterval = seconds("refresh.topics.interval.seconds")
	fc.SyncTopicConfigs = f.Bool("sync.topic.configs.enabled")
	fc.SyncTopicConfigsInterval = seconds("sync.topic.configs.interval.seconds")
	fc.SyncTopicACLs = f.Bool("sync.topic.acls.enabled")
	fc.SyncTopicACLsInterval = seconds("sync.topic.acls.interval.seconds")
	fc.SyncTopicACLsPrune = f.Bool(config.KeySyncTopicACLsPrune)
	fc.EmitOffsetSyncs = f.Bool("emit.offset-syncs.enabled")
	fc.OffsetSyncsTopicLocation = strings.ToLower(f.String("offset-syncs.topic.location"))
	fc.OffsetSyncsReplicationFactor = int16(f.Int("offset-syncs.topic.replication.factor"))
	fc.OffsetLagMax = f.Int("offset.lag.max")
	fc.OffsetFlushInterval = time.Duration(f.Int("offset.flush.interval.ms")) * time.Millisecond
	fc.EmitHeartbeats = f.Bool("emit.heartbeats.enabled")
	fc.HeartbeatsInterval = seconds("emit.heartbeats.interval.seconds")
	fc.HeartbeatsReplicationFactor = int16(f.Int("heartbeats.topic.replication.factor"))
	fc.ProgressReplicationFactor = fc.OffsetSyncsReplicationFactor
	fc.Groups = f.GroupFilter()
	fc.EmitCheckpoints = f.Bool("emit.checkpoints.enabled")
	fc.CheckpointsInterval = seconds("emit.checkpoints.interval.seconds")
	fc.CheckpointsReplicationFactor = int16(f.Int("checkpoints.topic.replication.factor"))
	fc.SyncGroupOffsets = f.Bool("sync.group.offsets.enabled")
	fc.SyncGroupOffsetsInterval = seconds("sync.group.offsets.interval.seconds")
	fc.ReverseCheckpoints = f.Bool(config.KeyReverseCheckpoints)
	fc.ProvenanceHeader = f.Bool(config.KeyProvenanceHeader)
	fc.GroupID = f.String(config.KeyGroupID)
	fc.TasksMax = int(f.Int("tasks.max"))
	fc.ProgressInterval = time.Duration(f.Int(config.KeyProgressInterval)) * time.Millisecond
	fc.CopyRecreatedSource = strings.EqualFold(f.String(config.KeySourceRecreated), "copy-from-start")
	fc.ExactlyOnce = strings.EqualFold(f.String(config.KeyExactlyOnce), "enabled")
	fc.TransactionInterval = time.Duration(f.Int(config.KeyTransactionInterval)) * time.Millisecond
	fc.TransactionProducersMax = int(f.Int(config.KeyTransactionProducersMax))
	// Where MM2 stopped: its dedicated mode's offsets topic (the worker's
	// offset.storage.topic), overridden for a Connect cluster by
	// mirrorctl.mm2.* (defaults filled in by internal/config).
	if v := f.String(config.KeyMM2OffsetsTopic); v != "" {
		fc.MM2.OffsetsTopic = v
	}
	if v := f.String(config.KeyMM2Connector); v != "" {
		fc.MM2.Connector = v
	}
	if v := f.String(config.KeyMM2ConnectGroup); v != "" {
		fc.MM2.ConnectGroup = v
	}
	if v := f.String(config.KeyResumeUnknown); v != "" {
		fc.MM2.WhenUnknown = v
	}
	if cl, ok := cfg.Cluster(f.Target); ok {
		push := strings.TrimSpace(cl.ClientProps(config.RoleProducer)["enable.metrics.push"])
		fc.TaskMetricsPush = strings.EqualFold(push, "true")
	}
	if cl, ok := cfg.Cluster(f.Source); ok {
		if ms, err := strconv.Atoi(cl.ClientProps(config.RoleConsumer)["session.timeout.ms"]); err == nil && ms > 0 {
			fc.SessionTimeout = time.Duration(ms) * time.Millisecond
		}
		if v, ok := cl.ClientProps(config.RoleConsumer)["heartbeat.interval.ms"]; ok {
			// Not a number reaches Validate as -1 ms: refused there, by key.
			ms, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || ms <= 0 {
				ms = -1
			}
			fc.HeartbeatInterval = time.Duration(ms) * time.Millisecond
		}
		reset := cl.ClientProps(config.RoleConsumer)["auto.offset.reset"]
		fc.StartFromLatest = strings.EqualFold(reset, "latest")
		fc.StopOnGap = strings.EqualFold(reset, "none")
		fc.ReadUncommitted = strings.EqualFold(strings.TrimSpace(cl.ClientProps(config.RoleConsumer)["isolation.level"]), "read_uncommitted")
	}
	return fc
}
