package replicate

import "github.com/mirrorctl/mirrorctl/replicate/mm2"

// syncState decides when an offset sync is written for one source partition,
// following MM2's OffsetSyncWriter (Kafka 3.7.0+, docs/mm2-formats.md §5).
// It lives as long as the partition's assignment, like MM2's task state.
//
// The delayed sync is always the newest acknowledgement (prevUp, prevDown),
// so none is stored: update runs for every copy, and writing a struct that
// holds a string there costs a GC write barrier per record.
type syncState struct {
	prevUp, prevDown, lastSyncDown int64
	delayed                        bool // a sync (prevUp, prevDown) is waiting for the next flush
}

func newSyncState() syncState { return syncState{prevUp: -1, prevDown: -1, lastSyncDown: -1} }

// update records that the source record at up was acknowledged at down on the
// target, and reports whether a sync must be written now. When it returns
// false the sync is kept as delayed (latest wins) until flush.
//
// A sync is immediate when: it is the first record of the assignment; the
// translation would be stale by lagMax records or more (KAFKA-14797); the
// upstream offsets have a gap (compaction, transaction markers, retention);
// or the downstream offset went backwards (truncation).
func (s *syncState) update(topic string, partition int32, up, down, lagMax int64) (mm2.OffsetSync, bool) {
	sync := mm2.OffsetSync{Topic: topic, Partition: partition, UpstreamOffset: up, DownstreamOffset: down}
	now := s.lastSyncDown == -1 ||
		down-(s.lastSyncDown+1) >= lagMax ||
		up-s.prevUp != 1 ||
		down < s.prevDown
	s.prevUp, s.prevDown = up, down
	if now {
		s.lastSyncDown = down
		s.delayed = false
		return sync, true
	}
	s.delayed = true
	return sync, false
}

// flush returns the delayed sync, if any, and clears it (MM2 promotes delayed
// syncs on every offset flush, KAFKA-15906). Like MM2 it leaves the
// staleness baseline alone: only immediate syncs move lastSyncDown. topic
// and partition name the source partition, as they do for update.
func (s *syncState) flush(topic string, partition int32) (mm2.OffsetSync, bool) {
	if !s.delayed {
		return mm2.OffsetSync{}, false
	}
	s.delayed = false
	return mm2.OffsetSync{Topic: topic, Partition: partition, UpstreamOffset: s.prevUp, DownstreamOffset: s.prevDown}, true
}
