// Package lag measures how far a flow's target is behind its source, from
// what the clusters hold, without writing anything:
//
//   - per replicated partition ([PartitionLag]): the source end offset, the
//     last source offset known to be on the target (from mirrorctl's progress
//     topic, package replicate/progress, else from MM2's newest offset sync
//     extended by what the target holds after it), records behind, and the
//     age of the oldest source record not yet copied;
//   - per flow ([FlowLag]): the age of the newest heartbeat of the flow in
//     the target's heartbeats topic (MM2's MirrorHeartbeatTask format);
//   - per consumer group ([GroupLag]): the age of its newest checkpoint in
//     <source>.checkpoints.internal (MM2's MirrorCheckpointTask format) and an
//     upper estimate of the records a failover now would read again.
//
// [Read] measures one flow; [Evaluate] applies [Thresholds] and returns the
// [Breach]es. The formats and the offset-sync rules are described in
// docs/mm2-formats.md. Rendering is the caller's job (internal/cli/lag).
package lag
