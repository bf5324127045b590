package mm2

import "fmt"

// Record names used in DecodeError.Record and EncodeError.Record.
const (
	recOffsetSync = "offset-sync"
	recCheckpoint = "checkpoint"
	recHeartbeat  = "heartbeat"
)

// OffsetSync is one record of the offset-syncs topic (MM2 class OffsetSync):
// record UpstreamOffset of Topic/Partition on the source was written at
// DownstreamOffset in the same partition of the remote topic. Key: topic STRING,
// partition INT32; value: upstreamOffset INT64, offset INT64; no version header.
type OffsetSync struct {
	// Topic is the source-side (upstream, un-renamed) topic name, e.g. "orders".
	Topic     string
	Partition int32
	// UpstreamOffset is the offset of the replicated record in the source
	// partition (the record itself, not +1).
	UpstreamOffset int64
	// DownstreamOffset is the offset that record got in the target partition
	// (wire field "offset").
	DownstreamOffset int64
}

// MarshalKey encodes the key (topic, partition). It fails with *EncodeError if
// Topic is over MaxStringLen bytes.
func (s OffsetSync) MarshalKey() ([]byte, error) {
	w := newWriter(recOffsetSync, "key", 2+len(s.Topic)+4)
	w.string("topic", s.Topic)
	w.int32(s.Partition)
	return w.bytes()
}

// MarshalValue encodes the 16-byte value (upstreamOffset, offset). It never fails.
func (s OffsetSync) MarshalValue() ([]byte, error) {
	w := newWriter(recOffsetSync, "value", 16)
	w.int64(s.UpstreamOffset)
	w.int64(s.DownstreamOffset)
	return w.bytes()
}

// String returns MM2's formatter form:
// OffsetSync{topicPartition=T-P, upstreamOffset=U, downstreamOffset=D}.
func (s OffsetSync) String() string {
	return fmt.Sprintf("OffsetSync{topicPartition=%s-%d, upstreamOffset=%d, downstreamOffset=%d}",
		s.Topic, s.Partition, s.UpstreamOffset, s.DownstreamOffset)
}

// DecodeOffsetSync decodes an offset-syncs record. Bytes after the last field
// are ignored. On error (always a *DecodeError) the result holds the fields
// decoded before the failure, so callers can say which record they skipped.
func DecodeOffsetSync(key, value []byte) (OffsetSync, error) {
	var s OffsetSync
	k := newReader(recOffsetSync, "key", key)
	s.Topic = k.string("topic")
	s.Partition = k.int32("partition")
	if err := k.error(); err != nil {
		return s, err
	}
	v := newReader(recOffsetSync, "value", value)
	s.UpstreamOffset = v.int64("upstreamOffset")
	s.DownstreamOffset = v.int64("offset")
	return s, v.error()
}

// Checkpoint is one record of <source>.checkpoints.internal on the target (MM2
// class Checkpoint): group Group's committed offset UpstreamOffset on the source
// translates to DownstreamOffset for Topic/Partition on the target. Key: group
// STRING, topic STRING, partition INT32; value: version INT16 (0),
// upstreamOffset INT64, offset INT64, metadata STRING.
type Checkpoint struct {
	// Group is the consumer group id, the same on both clusters.
	Group string
	// Topic is the target-side topic name, e.g. "us-east.orders" under
	// DefaultReplicationPolicy (see MirrorCheckpointTask.renameTopicPartition).
	Topic     string
	Partition int32
	// UpstreamOffset is the group's committed offset on the source.
	UpstreamOffset int64
	// DownstreamOffset is the translated offset a consumer on the target should
	// commit (wire field "offset").
	DownstreamOffset int64
	// Metadata is the source commit's metadata string ("" if none).
	Metadata string
}

// MarshalKey encodes the key (group, topic, partition). It fails with
// *EncodeError if Group or Topic is over MaxStringLen bytes.
func (c Checkpoint) MarshalKey() ([]byte, error) {
	w := newWriter(recCheckpoint, "key", 2+len(c.Group)+2+len(c.Topic)+4)
	w.string("group", c.Group)
	w.string("topic", c.Topic)
	w.int32(c.Partition)
	return w.bytes()
}

// MarshalValue encodes the version-0 value (version, upstreamOffset, offset,
// metadata). It fails with *EncodeError if Metadata is over MaxStringLen bytes.
func (c Checkpoint) MarshalValue() ([]byte, error) {
	w := newWriter(recCheckpoint, "value", 2+8+8+2+len(c.Metadata))
	w.int16(0)
	w.int64(c.UpstreamOffset)
	w.int64(c.DownstreamOffset)
	w.string("metadata", c.Metadata)
	return w.bytes()
}

// String returns MM2's formatter form: Checkpoint{consumerGroupId=G,
// topicPartition=T-P, upstreamOffset=U, downstreamOffset=D, metadata=M}.
func (c Checkpoint) String() string {
	return fmt.Sprintf("Checkpoint{consumerGroupId=%s, topicPartition=%s-%d, upstreamOffset=%d, downstreamOffset=%d, metadata=%s}",
		c.Group, c.Topic, c.Partition, c.UpstreamOffset, c.DownstreamOffset, c.Metadata)
}

// DecodeCheckpoint decodes a checkpoints record. Only value version 0 is
// accepted: another version gives a *DecodeError wrapping ErrUnsupportedVersion
// (MM2 itself would read any version with the v0 layout). Bytes after the last
// field are ignored. On error (always a *DecodeError) the result holds the
// fields decoded before the failure.
func DecodeCheckpoint(key, value []byte) (Checkpoint, error) {
	var c Checkpoint
	k := newReader(recCheckpoint, "key", key)
	c.Group = k.string("group")
	c.Topic = k.string("topic")
	c.Partition = k.int32("partition")
	if err := k.error(); err != nil {
		return c, err
	}
	v := newReader(recCheckpoint, "value", value)
	v.version()
	c.UpstreamOffset = v.int64("upstreamOffset")
	c.DownstreamOffset = v.int64("offset")
	c.Metadata = v.string("metadata")
	return c, v.error()
}

// Heartbeat is one record of the heartbeats topic (MM2 class Heartbeat),
// emitted on the target of flow SourceAlias->TargetAlias. Key:
// sourceClusterAlias STRING, targetClusterAlias STRING; value: version INT16
// (0), timestamp INT64.
type Heartbeat struct {
	SourceAlias string
	TargetAlias string
	// Timestamp is the emission time in epoch milliseconds; MM2 also uses it as
	// the record timestamp.
	Timestamp int64
}

// MarshalKey encodes the key (sourceClusterAlias, targetClusterAlias). It fails
// with *EncodeError if an alias is over MaxStringLen bytes.
func (h Heartbeat) MarshalKey() ([]byte, error) {
	w := newWriter(recHeartbeat, "key", 2+len(h.SourceAlias)+2+len(h.TargetAlias))
	w.string("sourceClusterAlias", h.SourceAlias)
	w.string("targetClusterAlias", h.TargetAlias)
	return w.bytes()
}

// MarshalValue encodes the 10-byte version-0 value (version, timestamp). It
// never fails.
func (h Heartbeat) MarshalValue() ([]byte, error) {
	w := newWriter(recHeartbeat, "value", 10)
	w.int16(0)
	w.int64(h.Timestamp)
	return w.bytes()
}

// String returns MM2's formatter form:
// Heartbeat{sourceClusterAlias=S, targetClusterAlias=T, timestamp=N}.
func (h Heartbeat) String() string {
	return fmt.Sprintf("Heartbeat{sourceClusterAlias=%s, targetClusterAlias=%s, timestamp=%d}",
		h.SourceAlias, h.TargetAlias, h.Timestamp)
}

// DecodeHeartbeat decodes a heartbeats record. Only value version 0 is
// accepted (see DecodeCheckpoint). Bytes after the last field are ignored. On
// error (always a *DecodeError) the result holds the fields decoded before the
// failure.
func DecodeHeartbeat(key, value []byte) (Heartbeat, error) {
	var h Heartbeat
	k := newReader(recHeartbeat, "key", key)
	h.SourceAlias = k.string("sourceClusterAlias")
	h.TargetAlias = k.string("targetClusterAlias")
	if err := k.error(); err != nil {
		return h, err
	}
	v := newReader(recHeartbeat, "value", value)
	v.version()
	h.Timestamp = v.int64("timestamp")
	return h, v.error()
}
