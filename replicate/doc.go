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
// # The life of a partition
//
// Every process that runs a flow joins the flow's consumer group on the
// source ([FlowConfig].GroupID, cooperative-sticky, never committing an
// offset). The partitions the group assigns to a process are its partition
// tasks; one task copies one source partition, and goes through:
//
//  1. starting ([TaskStarting]): the group gave the partition to this
//     process. The task reads the flow's progress topic up to its current
//     end (so it sees what the previous owner wrote when it let go), takes
//     the stored position as its resume point (else the log start, or the
//     end with auto.offset.reset=latest), waits until the flow leader has
//     created the remote partition, reads its limits, and logs where it
//     resumes and why.
//  2. running ([TaskRunning]): the flow's direct source consumer fetches the
//     partition from the resume point (the fetch gate, gate.go, alone
//     opens, pauses and closes it); each record goes, unchanged, to the
//     same partition of the remote topic, after the checks of the one copy
//     path (datapath.go). At-least-once, the produce promise pops the
//     record's upstream offset from the task's in-flight queue, advances the
//     acknowledged position and feeds MM2's offset-sync rules
//     (offsetsync.go); the position is written to the progress topic every
//     ProgressInterval by the control producer, only ever covering
//     acknowledged copies (control.go).
//  3. draining ([TaskDraining]): the group moves the partition to another
//     member, or the flow stops. Under the dispatch lock the task moves to
//     draining, so no record of it is handed to the producer after that
//     (copies already in the producer still go out; a refused one is
//     still retried on its own, alo.go); its in-flight copies are awaited,
//     its delayed offset sync and its final progress written, and only
//     then the rebalance goes on, so the next owner resumes exactly after
//     the last copy: a graceful handover copies nothing twice. A partition
//     lost without a handover (this process was cut off past its session
//     timeout, or found it had been frozen that long, freeze.go) is
//     dropped without writing progress: the new owner may already be
//     ahead.
//  4. released ([TaskReleased]): everything the task held is given back;
//     the partition's next assignment here gets a new task.
//
// A task that a loss event or a refused record stopped is [TaskStopped];
// one whose transactional id a newer owner fenced is [TaskFenced]. Both
// keep the partition, copy nothing more, and drain and are released like
// any other when the group moves it.
//
// A process that dies (kill -9) writes nothing more; restarted on its host
// it takes its partitions back at once (static membership, membership.go),
// else after its session timeout the group gives them to the others; either
// way the new owner resumes from the last progress written: at most
// ProgressInterval of acknowledged copies, plus what was in flight, is
// copied again (at-least-once). A stop (ctx cancelled) ends within
// [Options].StopBudget, whatever the brokers do (stop.go).
//
// With [FlowConfig].ExactlyOnce each task copies through a transactional
// producer of its own (transactional id GroupID-<topic>-<partition>): its
// copies and the progress covering them commit in one target transaction
// every TransactionInterval, and the next owner of the partition fences the
// previous one before it reads the progress (eos.go). The source is read
// read_committed unless [FlowConfig].ReadUncommitted (committed.go).
//
// Copies and control records go through separate producers: the data
// producer carries only copies; the control producer carries progress and
// the leader's checkpoints (and the offset syncs when their topic is on the
// target), so a control write never waits behind a backlog of copies.
//
// # The flow leader
//
// Flow-level work runs in one process per flow at a time: topic creation and
// partition growth, config and ACL sync, checkpoints and group offset sync,
// and heartbeats (leader.go). The leader is the member of the flow's leader
// group, GroupID+"-leader" on the target, that holds partition 0 of the
// group's one topic (the progress topic, or heartbeats for a pair that only
// emits heartbeats). When it dies the partition, and the work, move to
// another member after the session timeout.
//
// # tasks.max
//
// [FlowConfig].TasksMax (MM2's tasks.max, default 1) is the most processes
// that copy a flow at once. A process that finds that many members waits as
// a standby and joins when a member leaves; when processes starting at the
// same moment exceed it, the members ranked past it by member id step back.
//
// # Once
//
// With [Options].Once each process copies what it is assigned until every
// partition of the flow, in its own tasks or in the progress the others
// write, reached the end offset it had when the process started; then it
// leaves the group. So N processes started by one CI job together copy the
// flow once, and each exits when the flow is copied.
//
// The engine never builds Kafka clients from settings itself: callers hand it
// a [Clients] (mirrorctl's internal/kafka.Factory is one), so a Go program can
// embed the engine with its own client configuration.
//
// Subpackages hold the MM2 pieces shared with the failover engine:
// replicate/policy (ReplicationPolicy), replicate/filter (topic and group
// filters) and replicate/mm2 (OffsetSync, Checkpoint and Heartbeat codecs).
package replicate
