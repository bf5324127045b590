// Package policy implements MirrorMaker 2's replication policies: how a topic
// mirrored from cluster A is named on cluster B, how a remote name is traced
// back to its source cluster, and what MM2's internal topics are called.
//
// The key types are:
//   - [Policy], the ReplicationPolicy interface (org.apache.kafka.connect.mirror.ReplicationPolicy);
//   - [Default], DefaultReplicationPolicy ("us-east.orders");
//   - [Identity], IdentityReplicationPolicy (KAFKA-9726, Kafka 3.0.0; names unchanged).
//
// [FromProps] builds a policy from mm2.properties keys and [IsCycle] is the cycle
// test of MirrorSourceConnector. Topic-name splitting follows Java's
// String.split (trailing empty pieces dropped, a leading empty piece kept), and
// internal topic names follow the separator rules of KIP-690 (3.1.0) and the
// opt-out flag of KIP-949 (3.6.0 / 3.5.2). Readers must use the same separator
// and flag as the MM2 that wrote the topics.
package policy
