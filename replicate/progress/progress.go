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
	Offset *int64 `json:"offset"`  // next source offset to copy
	TimeMs int64  `json:"time_ms"` // when the progress was written, epoch ms
}

// Encode returns the key and value of the progress record saying that the
// next source offset of k to copy is next (every offset below it is on the
// target), written at now.
func Encode(k Key, next int64, now time.Time) (key, val []byte) {
	key, _ = json.Marshal(k) // a string and an int32 cannot fail
	val, _ = json.Marshal(value{Offset: &next, TimeMs: now.UnixMilli()})
	return key, val
}

// ErrTombstone is returned by Decode for a record with a null value.
var ErrTombstone = errors.New("value: tombstone")

// Decode parses a progress record. It returns the source partition and the
// next source offset to copy. The error says what is wrong: a key or value
// that is not the JSON above, a tombstone (ErrTombstone), a missing offset,
// an empty topic, or a negative partition or offset.
func Decode(key, val []byte) (Key, int64, error) {
	var k Key
	if err := json.Unmarshal(key, &k); err != nil {
		return Key{}, 0, fmt.Errorf("key: %w", err)
	}
	if val == nil {
		return Key{}, 0, ErrTombstone
	}
	var v value
	if err := json.Unmarshal(val, &v); err != nil {
		return Key{}, 0, fmt.Errorf("value: %w", err)
	}
	switch {
	case v.Offset == nil:
		return Key{}, 0, fmt.Errorf("value %s: no offset", val)
	case k.Topic == "" || k.Partition < 0 || *v.Offset < 0:
		return Key{}, 0, fmt.Errorf("key %s value %s: out of range", key, val)
	}
	return k, *v.Offset, nil
}
