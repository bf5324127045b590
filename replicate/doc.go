// Package replicate is mirrorctl's mirror engine: it copies topics from a
// source cluster to a target cluster the way MirrorMaker 2's
// MirrorSourceConnector and MirrorHeartbeatConnector do, and writes MM2's
// internal topics byte for byte.
//
// The key types:
//
//   - [FlowConfig] describes one source->target flow (MM2's connector
//     settings, with MM2's defaults from [DefaultFlowConfig]).
//   - [Mirror] runs flows: topic sync (creation, partition growth, config
//     sync), the data path (partition N to partition N, bytes unchanged),
//     offset syncs by MM2's emission rules, heartbeats, and the progress store
//     that makes a restart resume where the target acknowledged.
//   - [Plan] is what a flow would do at start: topics to create or grow and
//     every topic left out with its reason ([PlanFlow]).
//
// The engine never builds Kafka clients from settings itself: callers hand it
// a [Clients] (mirrorctl's internal/kafka.Factory is one), so a Go program can
// embed the engine with its own client configuration.
//
// Subpackages hold the MM2 pieces shared with the failover engine:
// replicate/policy (ReplicationPolicy), replicate/filter (topic and group
// filters) and replicate/mm2 (OffsetSync, Checkpoint and Heartbeat codecs).
package replicate
