// Package connectoffsets reads and writes the Kafka Connect source offsets
// of MirrorMaker 2's MirrorSourceConnector: where MM2 stopped copying each
// source partition, and where a restarted MM2 resumes.
//
// Connect keeps a source task's offsets in its offsets topic
// (offset.storage.topic; in MM2's dedicated mode mm2-offsets.<source>.internal
// on the flow's target cluster, Kafka MirrorMakerConfig). Connect's internal
// JsonConverter writes them with schemas off (Connect OffsetStorageWriter):
//
//	key   ["MirrorSourceConnector",{"cluster":"us-east","partition":3,"topic":"orders"}]
//	value {"offset":41}
//
// The key is a JSON array of the connector's name and its source partition
// (MM2 MirrorUtils.wrapPartition: source cluster alias, topic, partition); the
// value is the source offset (MirrorUtils.wrapOffset): the upstream offset of
// the LAST record MM2 copied. MirrorSourceTask seeks to offset+1 on start. A
// null value (tombstone) removes the partition's offset (Connect's offset
// reset, KIP-875). The topic has several partitions (offset.storage.partitions,
// default 25); Connect's producer places a key by its bytes (murmur2, the Java
// client's default partitioner), and the newest record per key wins.
//
// Connect looks keys up by their serialized bytes, so a record that is to be
// read by MM2 must carry exactly the bytes Connect's converter writes:
// [EncodeKey] writes the field order of Java's HashMap for these three keys
// (cluster, partition, topic) and compact JSON, as Jackson does.
//
// Decoding accepts any field order and ignores extra fields; it never panics.
package connectoffsets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// DefaultConnector is the name of MM2's source connector in dedicated mode
// (MirrorMaker names each connector after its class).
const DefaultConnector = "MirrorSourceConnector"

// DedicatedTopic returns the offsets topic of MM2's dedicated-mode herder
// source->target, which lives on the target: "mm2-offsets.<source>.internal"
// (Kafka MirrorMakerConfig.workerConfig; always with dots).
func DedicatedTopic(source string) string { return "mm2-offsets." + source + ".internal" }

// Key is the Connect offsets key of one source partition of a
// MirrorSourceConnector.
type Key struct {
	Connector string // the connector's name, e.g. "MirrorSourceConnector"
	Cluster   string // the source cluster alias
	Topic     string // the source topic
	Partition int32  // the source partition
}

// ErrOtherPartition is returned (wrapped) by [DecodeKey] for a well-formed
// Connect offsets key that is not a MirrorSourceConnector partition, such as
// the heartbeat connector's {sourceClusterAlias, targetClusterAlias} or the
// checkpoint connector's {group, topic, partition}: such records belong to
// another connector and are not errors.
var ErrOtherPartition = errors.New("not a MirrorSourceConnector source partition")

// DecodeError says why a record is not a Connect source offset.
type DecodeError struct {
	Part string // "key" or "value"
	Msg  string
}

func (e *DecodeError) Error() string { return "connect offset " + e.Part + ": " + e.Msg }

// DecodeKey parses a Connect offsets key. It returns a *DecodeError for bytes
// that are not a Connect key (not a JSON array of a string and an object),
// and an error wrapping [ErrOtherPartition] for a Connect key whose partition
// lacks a string "cluster", a string "topic" or an integer "partition".
func DecodeKey(b []byte) (Key, error) {
	var arr []json.RawMessage
	if err := strictUnmarshal(b, &arr); err != nil {
		return Key{}, &DecodeError{Part: "key", Msg: "not a JSON array: " + err.Error()}
	}
	if len(arr) != 2 {
		return Key{}, &DecodeError{Part: "key", Msg: fmt.Sprintf("array of %d elements, want [connector, partition]", len(arr))}
	}
	var k Key
	if err := strictUnmarshal(arr[0], &k.Connector); err != nil {
		return Key{}, &DecodeError{Part: "key", Msg: "connector name is not a string"}
	}
	var part map[string]json.RawMessage
	if err := strictUnmarshal(arr[1], &part); err != nil || part == nil {
		return Key{}, &DecodeError{Part: "key", Msg: "source partition is not a JSON object"}
	}
	cl, okC := part["cluster"]
	tp, okT := part["topic"]
	pp, okP := part["partition"]
	if !okC || !okT || !okP {
		return k, fmt.Errorf("connector %q: %w", k.Connector, ErrOtherPartition)
	}
	if strictUnmarshal(cl, &k.Cluster) != nil || strictUnmarshal(tp, &k.Topic) != nil {
		return k, fmt.Errorf("connector %q: cluster or topic is not a string: %w", k.Connector, ErrOtherPartition)
	}
	n, err := integer(pp)
	if err != nil || n < 0 || n > math.MaxInt32 {
		return k, fmt.Errorf("connector %q: partition %s is not a partition number: %w", k.Connector, pp, ErrOtherPartition)
	}
	k.Partition = int32(n)
	return k, nil
}

// DecodeValue parses a Connect offsets value. A nil value is a tombstone
// (tombstone true, no error). It returns a *DecodeError when the value is not
// a JSON object with an integer "offset"; other fields are ignored.
func DecodeValue(b []byte) (offset int64, tombstone bool, err error) {
	if b == nil {
		return 0, true, nil
	}
	var obj map[string]json.RawMessage
	if err := strictUnmarshal(b, &obj); err != nil || obj == nil {
		return 0, false, &DecodeError{Part: "value", Msg: "not a JSON object"}
	}
	raw, ok := obj["offset"]
	if !ok {
		return 0, false, &DecodeError{Part: "value", Msg: `no "offset" field`}
	}
	n, err := integer(raw)
	if err != nil {
		return 0, false, &DecodeError{Part: "value", Msg: fmt.Sprintf("offset %s is not an integer", raw)}
	}
	return n, false, nil
}

// integer parses a JSON number that is an integer in int64 range.
func integer(raw json.RawMessage) (int64, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] == '"' {
		return 0, errors.New("not a JSON number")
	}
	var num json.Number
	if err := strictUnmarshal(raw, &num); err != nil {
		return 0, err
	}
	return strconv.ParseInt(num.String(), 10, 64)
}

// strictUnmarshal decodes exactly one JSON value, numbers kept as
// json.Number.
func strictUnmarshal(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if len(bytes.TrimSpace(b[d.InputOffset():])) > 0 {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// EncodeKey returns k as Connect's JsonConverter serializes it:
// ["<connector>",{"cluster":"<cluster>","partition":<n>,"topic":"<topic>"}].
func EncodeKey(k Key) []byte {
	var b strings.Builder
	b.WriteByte('[')
	writeString(&b, k.Connector)
	b.WriteString(`,{"cluster":`)
	writeString(&b, k.Cluster)
	b.WriteString(`,"partition":`)
	b.WriteString(strconv.FormatInt(int64(k.Partition), 10))
	b.WriteString(`,"topic":`)
	writeString(&b, k.Topic)
	b.WriteString("}]")
	return []byte(b.String())
}

// EncodeValue returns {"offset":<last copied upstream offset>}.
func EncodeValue(offset int64) []byte {
	return []byte(`{"offset":` + strconv.FormatInt(offset, 10) + `}`)
}

// writeString writes s as a JSON string the way Jackson does by default:
// '"' and '\' escaped, the control characters below 0x20 as \b \t \n \f \r
// or \u00XX, everything else (non-ASCII included) as UTF-8.
func writeString(b *strings.Builder, s string) {
	const hex = "0123456789ABCDEF"
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\b':
			b.WriteString(`\b`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\f':
			b.WriteString(`\f`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}

// Position is the newest stored offset of one source partition.
type Position struct {
	Key
	// Offset is the upstream offset of the last record MM2 copied: MM2
	// resumes at Offset+1.
	Offset int64
	// RawKey is the key's bytes as stored, which a record meant to replace
	// this one must repeat (Connect compares keys by their bytes).
	RawKey []byte
	// Where the record sits in the offsets topic.
	RecordPartition int32
	RecordOffset    int64
}

// SkippedRecord is a record of the offsets topic that is not a source offset.
type SkippedRecord struct {
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Reason    string `json:"reason"`
}

// Store collects the newest source offset per partition of one connector and
// source cluster from the records of an offsets topic, fed in log order per
// topic partition ([Store.Add]).
type Store struct {
	connector, cluster string
	// pos holds the newest position per partition, under the key bytes
	// Connect itself writes (canonical) or under other bytes for the same
	// partition (a key written by another JSON writer), which Connect's
	// byte-wise lookup never finds: those count only without a canonical one.
	pos map[posKey]Position

	// Records counts every record added; Other those of other connectors
	// or source clusters; Tombstones the null values that removed a
	// position of this connector; Skipped the records that are not Connect
	// source offsets at all (garbage), of which the first few are kept.
	Records, Other, Tombstones int
	Skipped                    int
	SkippedSample              []SkippedRecord
}

// maxSample bounds Store.SkippedSample.
const maxSample = 10

// NewStore returns a Store for connector's partitions of source cluster
// alias cluster.
func NewStore(connector, cluster string) *Store {
	return &Store{connector: connector, cluster: cluster, pos: map[posKey]Position{}}
}

// Add takes one record of the offsets topic (at partition, offset). A record
// that does not decode is counted in Skipped and otherwise ignored, as
// Connect's offset store ignores what its converter cannot read.
func (s *Store) Add(partition int32, offset int64, key, value []byte) {
	s.Records++
	skip := func(err error) {
		s.Skipped++
		if len(s.SkippedSample) < maxSample {
			s.SkippedSample = append(s.SkippedSample, SkippedRecord{Partition: partition, Offset: offset, Reason: err.Error()})
		}
	}
	k, err := DecodeKey(key)
	switch {
	case errors.Is(err, ErrOtherPartition):
		s.Other++
		return
	case err != nil:
		skip(err)
		return
	case k.Connector != s.connector || k.Cluster != s.cluster:
		s.Other++
		return
	}
	off, tomb, err := DecodeValue(value)
	if err != nil {
		skip(err)
		return
	}
	id := posKey{topic: k.Topic, partition: k.Partition, canonical: bytes.Equal(key, EncodeKey(k))}
	if tomb {
		s.Tombstones++
		delete(s.pos, id)
		return
	}
	s.pos[id] = Position{Key: k, Offset: off, RawKey: append([]byte(nil), key...), RecordPartition: partition, RecordOffset: offset}
}

type posKey struct {
	topic     string
	partition int32
	canonical bool
}

// Get returns the newest stored position of topic's partition: the one
// under the key bytes Connect writes, else one under other bytes.
func (s *Store) Get(topic string, partition int32) (Position, bool) {
	if p, ok := s.pos[posKey{topic, partition, true}]; ok {
		return p, true
	}
	p, ok := s.pos[posKey{topic, partition, false}]
	return p, ok
}

// Positions returns every partition's position (as [Store.Get] chooses),
// in no particular order.
func (s *Store) Positions() []Position {
	var out []Position
	for id, p := range s.pos {
		if !id.canonical {
			if _, ok := s.pos[posKey{id.topic, id.partition, true}]; ok {
				continue
			}
		}
		out = append(out, p)
	}
	return out
}

// Len returns how many partitions have a stored position.
func (s *Store) Len() int { return len(s.Positions()) }
