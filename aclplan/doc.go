// Package aclplan derives the least-privilege Kafka ACLs a mirrorctl (or
// MirrorMaker 2) deployment needs from its flow settings, and compares them
// with, or adds them to, the ACLs a cluster holds.
//
// [Build] walks each flow's enabled features (replicate, offset syncs,
// checkpoints, sync.group.offsets, sync.topic.configs, sync.topic.acls,
// heartbeats, mirrorctl's progress topic, and optionally what a failover
// principal needs for translate, failover and lag) and, for each Kafka API the
// replicate engine calls, adds the binding Kafka's authorizer checks
// (e.g. Fetch -> READ on the topic, CreatePartitions -> ALTER,
// IncrementalAlterConfigs -> ALTER_CONFIGS, OffsetCommit -> READ on the
// group and the topic, CreateAcls -> ALTER on the cluster). Bindings that
// another one already grants are folded into it (READ, WRITE, ALTER and
// DELETE imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS; a PREFIXED
// or wildcard grant covers the names under it), so removing any binding of
// a plan breaks some feature.
//
// Name patterns follow the topics and groups lists: a literal item is a
// LITERAL binding, "<literal>.*" one PREFIXED binding, ".*" the LITERAL "*"
// wildcard (with a warning note), and any other regex LITERAL bindings for
// the names it matches now (with a note). Remote topics map through the
// replication policy ("us-east." + the source prefix by default).
//
// [WriteKafkaACLs] prints kafka-acls.sh command lines; [Describe], [Diff]
// and [Create] compare with and add to a cluster's ACLs through kadm.
package aclplan
