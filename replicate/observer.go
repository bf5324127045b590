package replicate

import "time"

// Observer receives the engine's measurements, for metrics. The engine asks
// for one PartitionObserver per copied partition when it starts copying it
// and calls that in the hot path, so an implementation resolves its labels
// once there (e.g. Prometheus WithLabelValues) and keeps per-record calls
// cheap. Methods may be called from several goroutines at once. Names follow
// MM2's MirrorSourceMetrics and MirrorCheckpointMetrics (docs/mm2-formats.md §11).
type Observer interface {
	// Partition returns the observer of one copied partition: source and
	// target aliases, the remote topic name and the partition number.
	Partition(source, target, remoteTopic string, partition int32) PartitionObserver
	// CheckpointWritten reports a checkpoint the target acknowledged;
	// latency is from listing the source group's offsets to the
	// acknowledgement (MM2 checkpoint-latency-ms). topic is the target-side
	// name.
	CheckpointWritten(source, target, group, topic string, partition int32, latency time.Duration)
	// FlowState reports a flow starting (up) and stopping (not up).
	FlowState(source, target string, up bool)
	// Rebalance reports a change of this process's share of a flow's
	// partitions: how many were assigned, revoked (handed over with their
	// progress written) or lost (taken away by the group without a
	// handover).
	Rebalance(source, target string, assigned, revoked, lost int)
	// Leader reports this process becoming (true) or ceasing to be (false)
	// the flow leader.
	Leader(source, target string, leading bool)
}

// PartitionObserver receives one copied partition's measurements.
type PartitionObserver interface {
	// Fetched reports the source partition's high watermark (the offset
	// after its last record) as of the latest fetch.
	Fetched(highWatermark int64)
	// Polled reports a source record handed to the producer: its value
	// size in bytes (MM2 byte-count counts values only) and its age (now
	// minus the record timestamp; MM2 record-age-ms).
	Polled(valueBytes int, age time.Duration)
	// Acked reports the target acknowledging a copy: value bytes, the
	// replication latency (now minus the source timestamp; MM2
	// replication-latency-ms), and the next source offset now safe on the
	// target.
	Acked(valueBytes int, latency time.Duration, next int64)
}

type nopObserver struct{}

func (nopObserver) Partition(string, string, string, int32) PartitionObserver { return nopObserver{} }
func (nopObserver) CheckpointWritten(string, string, string, string, int32, time.Duration) {
}
func (nopObserver) FlowState(string, string, bool)          {}
func (nopObserver) Rebalance(string, string, int, int, int) {}
func (nopObserver) Leader(string, string, bool)             {}
func (nopObserver) Fetched(int64)                           {}
func (nopObserver) Polled(int, time.Duration)               {}
func (nopObserver) Acked(int, time.Duration, int64)         {}
