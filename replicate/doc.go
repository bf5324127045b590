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
// # Progress, and where exactly-once and scale-out fit
//
// A partition's position is the next source offset whose copy the target has
// not acknowledged. It is kept in memory per partition (advanced only by
// in-order acknowledgements; a refused record halts it) and written every
// ProgressInterval to the flow's progress topic on the target, by the same
// producer as the data, after the data it covers was acknowledged. So:
//
//   - Exactly-once fits without changing the path: make that producer
//     transactional (one transactional id per flow and assignment) and write
//     each polled batch's copies and the progress records of its partitions
//     in one transaction; read the progress topic read_committed on start.
//     Offset syncs stay outside the transaction, as in MM2 (KIP-618).
//   - Scale-out fits the same way: replace the consumer's direct assignment
//     (kgo.ConsumePartitions) by membership in a consumer group on the source
//     (cooperative-sticky). On assignment, load the progress of the assigned
//     partitions and create their state (what addPartitions does now); on
//     revocation, flush, write their progress and drop their state. Group
//     commits are never used: the position lives on the target, so it is
//     right even when the source is lost.
//
// The engine never builds Kafka clients from settings itself: callers hand it
// a [Clients] (mirrorctl's internal/kafka.Factory is one), so a Go program can
// embed the engine with its own client configuration.
//
// Subpackages hold the MM2 pieces shared with the failover engine:
// replicate/policy (ReplicationPolicy), replicate/filter (topic and group
// filters) and replicate/mm2 (OffsetSync, Checkpoint and Heartbeat codecs).
package replicate
