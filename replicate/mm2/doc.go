// Package mm2 encodes and decodes the records MirrorMaker 2 writes to its
// internal topics, byte for byte as MM2 does.
//
// The key types are:
//   - [OffsetSync], a record of mm2-offset-syncs.<alias>.internal (MM2 class OffsetSync);
//   - [Checkpoint], a record of <source>.checkpoints.internal (MM2 class Checkpoint);
//   - [Heartbeat], a record of heartbeats (MM2 class Heartbeat);
//   - [DecodeError], returned by every Decode function.
//
// The records use Kafka's wire-protocol types, not Connect schemas: INT16,
// INT32 and INT64 are big-endian two's complement, and STRING is an INT16 byte
// length followed by that many UTF-8 bytes (non-nullable, at most 32767 bytes).
// Fields are concatenated in order with no framing. Checkpoint and Heartbeat
// values start with an INT16 version; only version 0 exists and only version 0
// is accepted here (MM2's own reader would silently apply the v0 layout to any
// version). Like MM2, decoders ignore bytes after the last field. Decoders never
// panic on malformed input; MM2's readers skip records that fail to decode, and
// callers should do the same (count and skip).
//
// MM2 writes every record of these topics to partition 0, and the topics are
// compacted, so the key identifies a record: never write a tombstone (a null
// value), since MM2's Java readers crash on one.
package mm2
