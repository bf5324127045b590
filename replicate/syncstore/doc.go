// Package syncstore keeps MirrorMaker 2's offset syncs in memory and
// translates a consumer group's source offsets into target offsets the way
// MM2's OffsetSyncStore does (Kafka 3.6.0+ algorithm with the KAFKA-15202
// promotion fix; 3.8.0+ startup behaviour of KAFKA-15905). See
// docs/mm2-formats.md §6.
//
// The key types are:
//   - [Store], which holds, per source topic-partition, a fixed array of 64
//     offset syncs spaced roughly exponentially back from the newest one, and
//     answers translations from it;
//   - [Result], one translation with its [Reason] when no offset can be given.
//
// A Store is fed every record of the offset-syncs topic in order, decoded with
// package mm2, through [Store.Add]. Once the first read reaches the end of
// that topic the caller calls [Store.ReadToEnd]; until then [Store.Translate]
// declines to answer, exactly as MM2's checkpoint task emits nothing before
// its initial read finishes.
//
// Results equal MM2's: a group at a sync's upstream offset translates to that
// sync's downstream offset, a group past it to the downstream offset plus one.
// The store never extrapolates, so a translated offset is never past the true
// downstream position of the group's next record (re-reads are possible, loss
// is not).
package syncstore
