// Package progress is the record format of mirrorctl's progress topic, and
// nothing else: no Kafka client, so every reader (replicate when it resumes,
// lag, failover) and the writer share one encoder and one decoder.
//
// The progress topic (replicate.ProgressTopic) is a compacted,
// single-partition topic on the target. A record's key names a source
// partition and its value the next source offset to copy: every record below
// that offset was acknowledged by the target. Both are JSON, so an operator
// can read them with any console consumer:
//
//	key   {"topic":"orders","partition":3}
//	value {"offset":1234,"time_ms":1700000000000}
//
// A value may carry more, each field optional so that records written before
// it existed still decode (and readers that predate a field ignore it):
//
//	"topic_id"   the source topic's ID (Kafka's Uuid, base64) the offset belongs to
//	"skipped"    source offsets of the partition never copied, in total (records)
//	"source_end" the source partition's end offset (high watermark) the writer
//	             last saw: what the source held then, so that with the source
//	             gone the target still tells how much was not mirrored yet
//	"downstream" the remote partition's offset after the newest copy acknowledged
//	             by the target when the record was written (the target's end of
//	             what was mirrored, target offsets): a remote partition found
//	             to end below it lost mirrored records
//	"loss"      the partition's newest loss event: {"kind","from","to","count",
//	            "stopped","reason","time_ms"}, offsets [from, to) not copied
//
// The newest record per key is the one that counts, as compaction keeps it.
// Nothing writes tombstones. This is mirrorctl's own format: MM2 keeps the
// equivalent in Kafka Connect's source-offsets topic (docs/mm2-formats.md).
package progress

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Key identifies a source partition.
type Key struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// value is the JSON value. Offset is a pointer so that a value without it
// is an error, not offset 0.
type value struct {
	Offset     *int64 `json:"offset"`  // next source offset to copy
	TimeMs     int64  `json:"time_ms"` // when the progress was written, epoch ms
	TopicID    string `json:"topic_id,omitempty"`
	Skipped    int64  `json:"skipped,omitempty"`
	SourceEnd  int64  `json:"source_end,omitempty"`
	Downstream int64  `json:"downstream,omitempty"`
	Loss       *Loss  `json:"loss,omitempty"`
}

// Value is a decoded progress value.
type Value struct {
	// Next is the next source offset to copy: every offset below it was
	// acknowledged by the target, or is counted in Skipped.
	Next int64
	// Time is when the record was written (millisecond precision).
	Time time.Time
	// TopicID is the source topic's ID (base64, as kadm.TopicID prints it)
	// the offsets belong to; "" when the writer did not know it (records
	// written before topic IDs were kept).
	TopicID string
	// Skipped is the number of source offsets of the partition that were
	// never copied (deleted before they were, or given up), in total.
	Skipped int64
	// SourceEnd is the source partition's end offset (high watermark) the
	// writer last saw before Time; 0 when it did not know it.
	SourceEnd int64
	// Downstream is the remote partition's offset after the newest copy
	// the target had acknowledged when the record was written (target
	// offsets; with exactly-once, as of the previous commit, so at most
	// this); 0 when the writer did not know it. Every mirrored record of
	// the partition is below it, so a remote partition ending below it
	// lost mirrored records (the remote topic was deleted or recreated).
	Downstream int64
	// Loss is the partition's newest loss event, nil when none.
	Loss *Loss
}

// Loss is a loss event of one partition, as the progress topic keeps it:
// source offsets [From, To) were not copied (Count of them; 0 when the
// partition stopped before losing any), of Kind ("gap", "recreated",
// "target-recreated", "refused", ...); Stopped says the partition copies
// nothing more until an operator acts. Reason is a sentence for people.
type Loss struct {
	Kind    string `json:"kind"`
	From    int64  `json:"from"`
	To      int64  `json:"to"`
	Count   int64  `json:"count"`
	Stopped bool   `json:"stopped,omitempty"`
	Reason  string `json:"reason,omitempty"`
	TimeMs  int64  `json:"time_ms"` // when the loss was found, epoch ms
	// Gone is, for a "target-recreated" event, the mirrored records the
	// remote partition lost (target offsets; Count of them could not be
	// copied again); 0 otherwise or when unknown.
	Gone int64 `json:"gone,omitempty"`
}

// Encode returns the key and value of the progress record saying that the
// next source offset of k to copy is next (every offset below it is on the
// target), written at now.
func Encode(k Key, next int64, now time.Time) (key, val []byte) {
	return EncodeValue(k, Value{Next: next, Time: now})
}

// EncodeValue is Encode with the optional fields of v (topic ID, skipped
// count, loss event); zero fields are left out, so a value with none of them
// is byte for byte what Encode writes.
func EncodeValue(k Key, v Value) (key, val []byte) {
	key, _ = json.Marshal(k) // a string and an int32 cannot fail
	next := v.Next
	val, _ = json.Marshal(value{Offset: &next, TimeMs: v.Time.UnixMilli(), TopicID: v.TopicID, Skipped: v.Skipped, SourceEnd: v.SourceEnd, Downstream: v.Downstream, Loss: v.Loss})
	return key, val
}

// ErrTombstone is returned by Decode for a record with a null value.
var ErrTombstone = errors.New("value: tombstone")

// Decode parses a progress record. It returns the source partition and the
// next source offset to copy. The error says what is wrong: a key or value
// that is not the JSON above, a tombstone (ErrTombstone), a missing offset,
// an empty topic, or a negative partition or offset.
func Decode(key, val []byte) (Key, int64, error) {
	k, v, err := DecodeValue(key, val)
	return k, v.Next, err
}

// DecodeValue is Decode returning the whole value, optional fields
// included. Besides Decode's errors, a negative skipped count is an error.
//
// Records in the exact form EncodeValue writes are parsed without
// encoding/json (a resume reads one per source partition ever mirrored);
// any other spelling goes through encoding/json, with the same result.
func DecodeValue(key, val []byte) (Key, Value, error) {
	k, ok := parseKey(key)
	if !ok {
		k = Key{}
		if err := json.Unmarshal(key, &k); err != nil {
			return Key{}, Value{}, fmt.Errorf("key: %w", err)
		}
	}
	if val == nil {
		return Key{}, Value{}, ErrTombstone
	}
	v, ok := parseValue(val)
	if !ok {
		v = value{}
		if err := json.Unmarshal(val, &v); err != nil {
			return Key{}, Value{}, fmt.Errorf("value: %w", err)
		}
	}
	switch {
	case v.Offset == nil:
		return Key{}, Value{}, fmt.Errorf("value %s: no offset", val)
	case k.Topic == "" || k.Partition < 0 || *v.Offset < 0 || v.Skipped < 0 || v.SourceEnd < 0 || v.Downstream < 0:
		return Key{}, Value{}, fmt.Errorf("key %s value %s: out of range", key, val)
	}
	return k, Value{Next: *v.Offset, Time: time.UnixMilli(v.TimeMs), TopicID: v.TopicID, Skipped: v.Skipped, SourceEnd: v.SourceEnd, Downstream: v.Downstream, Loss: v.Loss}, nil
}
