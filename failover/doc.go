// Package failover moves consumer groups between clusters that MirrorMaker 2
// (or mirrorctl's replicate engine) mirrors: it translates a group's
// committed offsets from the source cluster to the target cluster, plans the
// commits, applies them with kadm, verifies them, and does the same the other
// way for failback.
//
// The key types:
//
//   - [Engine], built with [New] from a replicate.FlowConfig and the caller's
//     replicate.Clients (the engine never builds Kafka clients itself);
//   - [TranslateResult] / [Translation], one row per group and partition,
//     produced by [Engine.Translate] in one of the [Mode]s: checkpoint (what
//     MM2's RemoteClusterUtils.translateOffsets returns; works while the
//     source is down), exact (content match of the next record the group
//     would read; needs the source, no headers of its own) or auto;
//   - [Plan] / [PartitionPlan] with an [Action] per partition, from
//     [Engine.PlanFailover] and [Engine.PlanFailback]; [Engine.Apply] commits
//     a plan and [Engine.Verify] checks the committed positions.
//
// Safety rules: commits go only to groups that are absent or Empty on the
// cluster being committed to (checked again right before each group's
// commit), never lower an existing committed offset unless asked, carry no
// leader epoch (epochs belong to the other cluster), and every partition's
// outcome is reported, never only the first error. Translation never returns
// a position past the true one: when the exact position cannot be pinned it
// returns the safe, earlier, offset-sync based one (MM2's rule) and says why.
package failover
