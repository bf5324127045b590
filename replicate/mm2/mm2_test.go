package mm2

import (
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Golden vectors encoded with Kafka's own Checkpoint, Heartbeat and
// OffsetSync classes (docs/mm2-formats.md §1).
const (
	ckKeyRemote  = "000f6f726465722d70726f636573736f72000e75732d656173742e6f726465727300000003"
	ckKeyLocal   = "000f6f726465722d70726f636573736f7200066f726465727300000003"
	ckValEmpty   = "000000000000000004d200000000000004b00000"
	ckValM       = "00000000000000000005000000000000000400016d"
	osKey        = "00066f726465727300000003"
	osVal        = "00000000000004d200000000000004b0"
	hbKey        = "000775732d65617374000775732d77657374"
	hbVal        = "00000000018bcfe56800"
	hbTimestamp  = int64(1700000000000)
	ckGroup      = "order-processor"
	ckTopicLocal = "orders"
)

func TestCheckpointVectors(t *testing.T) {
	tests := []struct {
		key, value string
		keyLen     int
		valLen     int
		c          Checkpoint
	}{
		{ckKeyRemote, ckValEmpty, 37, 20, Checkpoint{Group: ckGroup, Topic: "us-east.orders", Partition: 3, UpstreamOffset: 1234, DownstreamOffset: 1200}},
		{ckKeyLocal, ckValM, 29, 21, Checkpoint{Group: ckGroup, Topic: ckTopicLocal, Partition: 3, UpstreamOffset: 5, DownstreamOffset: 4, Metadata: "m"}},
	}
	for _, tt := range tests {
		t.Run(tt.c.Topic, func(t *testing.T) {
			k, err := tt.c.MarshalKey()
			if err != nil {
				t.Fatal(err)
			}
			v, err := tt.c.MarshalValue()
			if err != nil {
				t.Fatal(err)
			}
			if hex.EncodeToString(k) != tt.key || len(k) != tt.keyLen {
				t.Errorf("key = %x (%d bytes), want %s (%d)", k, len(k), tt.key, tt.keyLen)
			}
			if hex.EncodeToString(v) != tt.value || len(v) != tt.valLen {
				t.Errorf("value = %x (%d bytes), want %s (%d)", v, len(v), tt.value, tt.valLen)
			}
			got, err := DecodeCheckpoint(unhex(t, tt.key), unhex(t, tt.value))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.c {
				t.Errorf("decoded %+v, want %+v", got, tt.c)
			}
		})
	}
}

func TestOffsetSyncVector(t *testing.T) {
	s := OffsetSync{Topic: "orders", Partition: 3, UpstreamOffset: 1234, DownstreamOffset: 1200}
	k, err := s.MarshalKey()
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.MarshalValue()
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(k) != osKey || len(k) != 12 {
		t.Errorf("key = %x, want %s", k, osKey)
	}
	if hex.EncodeToString(v) != osVal || len(v) != 16 {
		t.Errorf("value = %x, want %s", v, osVal)
	}
	got, err := DecodeOffsetSync(unhex(t, osKey), unhex(t, osVal))
	if err != nil || got != s {
		t.Errorf("decoded %+v, %v; want %+v", got, err, s)
	}
}

func TestHeartbeatVector(t *testing.T) {
	h := Heartbeat{SourceAlias: "us-east", TargetAlias: "us-west", Timestamp: hbTimestamp}
	k, err := h.MarshalKey()
	if err != nil {
		t.Fatal(err)
	}
	v, err := h.MarshalValue()
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(k) != hbKey || len(k) != 18 {
		t.Errorf("key = %x, want %s", k, hbKey)
	}
	if hex.EncodeToString(v) != hbVal || len(v) != 10 {
		t.Errorf("value = %x, want %s", v, hbVal)
	}
	got, err := DecodeHeartbeat(unhex(t, hbKey), unhex(t, hbVal))
	if err != nil || got != h {
		t.Errorf("decoded %+v, %v; want %+v", got, err, h)
	}
}

// Like MM2's Schema.read, decoders ignore bytes after the last field.
func TestTrailingBytesIgnored(t *testing.T) {
	extra := "abcdef"
	c, err := DecodeCheckpoint(unhex(t, ckKeyLocal+extra), unhex(t, ckValM+extra))
	if err != nil || c != (Checkpoint{Group: ckGroup, Topic: "orders", Partition: 3, UpstreamOffset: 5, DownstreamOffset: 4, Metadata: "m"}) {
		t.Errorf("checkpoint: %+v, %v", c, err)
	}
	s, err := DecodeOffsetSync(unhex(t, osKey+extra), unhex(t, osVal+extra))
	if err != nil || s != (OffsetSync{Topic: "orders", Partition: 3, UpstreamOffset: 1234, DownstreamOffset: 1200}) {
		t.Errorf("offset sync: %+v, %v", s, err)
	}
	h, err := DecodeHeartbeat(unhex(t, hbKey+extra), unhex(t, hbVal+extra))
	if err != nil || h != (Heartbeat{SourceAlias: "us-east", TargetAlias: "us-west", Timestamp: hbTimestamp}) {
		t.Errorf("heartbeat: %+v, %v", h, err)
	}
}

type decodeFunc func(key, value []byte) error

var decoders = map[string]struct {
	decode     decodeFunc
	key, value string
}{
	"checkpoint":  {func(k, v []byte) error { _, err := DecodeCheckpoint(k, v); return err }, ckKeyRemote, ckValM},
	"offset-sync": {func(k, v []byte) error { _, err := DecodeOffsetSync(k, v); return err }, osKey, osVal},
	"heartbeat":   {func(k, v []byte) error { _, err := DecodeHeartbeat(k, v); return err }, hbKey, hbVal},
}

// Every proper prefix of a valid key or value is an io.ErrUnexpectedEOF
// DecodeError naming the record and part; nothing panics.
func TestTruncationAtEveryLength(t *testing.T) {
	for name, d := range decoders {
		key, value := unhex(t, d.key), unhex(t, d.value)
		for n := 0; n < len(key); n++ {
			checkShort(t, name, "key", d.decode(key[:n], value))
		}
		for n := 0; n < len(value); n++ {
			checkShort(t, name, "value", d.decode(key, value[:n]))
		}
	}
}

func checkShort(t *testing.T, record, part string, err error) {
	t.Helper()
	var de *DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("%s %s: err = %v, want *DecodeError", record, part, err)
	}
	var se *ShortError
	if de.Record != record || de.Part != part || de.Field == "" || !errors.Is(err, io.ErrUnexpectedEOF) || !errors.As(err, &se) || se.Have >= se.Need {
		t.Errorf("%s %s: got %#v (%v)", record, part, de, err)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name    string
		err     func() error
		is      error
		message string
	}{
		{"short offset", func() error {
			_, err := DecodeCheckpoint(unhex(t, ckKeyLocal), unhex(t, "0000"+"0000000000000005"+"000000"))
			return err
		}, io.ErrUnexpectedEOF, `checkpoint value: field "offset": need 8 bytes, have 3`},
		{"short string body", func() error {
			_, err := DecodeCheckpoint(unhex(t, "000f6f72"), unhex(t, ckValM))
			return err
		}, io.ErrUnexpectedEOF, `checkpoint key: field "group": need 15 bytes, have 2`},
		{"negative string length", func() error {
			_, err := DecodeOffsetSync(unhex(t, "ffff00000003"), unhex(t, osVal))
			return err
		}, ErrNegativeLength, `offset-sync key: field "topic": negative string length -1`},
		{"negative metadata length", func() error {
			_, err := DecodeCheckpoint(unhex(t, ckKeyLocal), unhex(t, "0000"+"0000000000000005"+"0000000000000004"+"8000"))
			return err
		}, ErrNegativeLength, `checkpoint value: field "metadata": negative string length -32768`},
		{"checkpoint version 1", func() error {
			_, err := DecodeCheckpoint(unhex(t, ckKeyLocal), unhex(t, "0001"+ckValM[4:]))
			return err
		}, ErrUnsupportedVersion, `checkpoint value: field "version": unsupported value version 1 (only version 0 is understood)`},
		{"heartbeat version -1", func() error {
			_, err := DecodeHeartbeat(unhex(t, hbKey), unhex(t, "ffff"+hbVal[4:]))
			return err
		}, ErrUnsupportedVersion, `heartbeat value: field "version": unsupported value version -1 (only version 0 is understood)`},
		{"checkpoint tombstone", func() error {
			_, err := DecodeCheckpoint(unhex(t, ckKeyLocal), nil)
			return err
		}, ErrTombstone, `checkpoint value: null (tombstone)`},
		{"offset-sync tombstone", func() error {
			_, err := DecodeOffsetSync(unhex(t, osKey), nil)
			return err
		}, ErrTombstone, `offset-sync value: null (tombstone)`},
		{"heartbeat null key", func() error {
			_, err := DecodeHeartbeat(nil, unhex(t, hbVal))
			return err
		}, ErrTombstone, `heartbeat key: null (tombstone)`},
		{"empty (non-null) value", func() error {
			_, err := DecodeHeartbeat(unhex(t, hbKey), []byte{})
			return err
		}, io.ErrUnexpectedEOF, `heartbeat value: field "version": need 2 bytes, have 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err()
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("err = %v (%T), want *DecodeError", err, err)
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("err = %v, want errors.Is %v", err, tt.is)
			}
			if err.Error() != tt.message {
				t.Errorf("message = %q, want %q", err.Error(), tt.message)
			}
		})
	}
}

// On a value error the key fields are still returned, so a caller can name
// the record it skips.
func TestPartialResultOnValueError(t *testing.T) {
	c, err := DecodeCheckpoint(unhex(t, ckKeyRemote), unhex(t, "0002"))
	if !errors.Is(err, ErrUnsupportedVersion) {
		t.Fatalf("err = %v", err)
	}
	if c.Group != ckGroup || c.Topic != "us-east.orders" || c.Partition != 3 {
		t.Errorf("partial checkpoint = %+v", c)
	}
}

func TestStringLimits(t *testing.T) {
	maxStr := strings.Repeat("x", MaxStringLen)
	over := maxStr + "x"

	k, err := Checkpoint{Group: maxStr, Topic: "t"}.MarshalKey()
	if err != nil || len(k) != 2+MaxStringLen+2+1+4 || k[0] != 0x7f || k[1] != 0xff {
		t.Errorf("max-length group: len %d, err %v", len(k), err)
	}
	c, err := DecodeCheckpoint(k, unhex(t, ckValEmpty))
	if err != nil || c.Group != maxStr {
		t.Errorf("decode max-length group: %v", err)
	}

	tests := []struct {
		name    string
		marshal func() ([]byte, error)
		message string
	}{
		{"checkpoint group", Checkpoint{Group: over}.MarshalKey, `checkpoint key: field "group": string is 32768 bytes, the maximum is 32767`},
		{"checkpoint topic", Checkpoint{Topic: over}.MarshalKey, `checkpoint key: field "topic": string is 32768 bytes, the maximum is 32767`},
		{"checkpoint metadata", Checkpoint{Metadata: over}.MarshalValue, `checkpoint value: field "metadata": string is 32768 bytes, the maximum is 32767`},
		{"offset-sync topic", OffsetSync{Topic: over}.MarshalKey, `offset-sync key: field "topic": string is 32768 bytes, the maximum is 32767`},
		{"heartbeat source", Heartbeat{SourceAlias: over}.MarshalKey, `heartbeat key: field "sourceClusterAlias": string is 32768 bytes, the maximum is 32767`},
		{"heartbeat target", Heartbeat{TargetAlias: over}.MarshalKey, `heartbeat key: field "targetClusterAlias": string is 32768 bytes, the maximum is 32767`},
	}
	for _, tt := range tests {
		b, err := tt.marshal()
		var ee *EncodeError
		if b != nil || !errors.As(err, &ee) || err.Error() != tt.message {
			t.Errorf("%s: got %d bytes, err %v; want %q", tt.name, len(b), err, tt.message)
		}
	}
}

func TestStringForms(t *testing.T) {
	tests := []struct {
		v    interface{ String() string }
		want string
	}{
		{Checkpoint{Group: ckGroup, Topic: "us-east.orders", Partition: 3, UpstreamOffset: 1234, DownstreamOffset: 1200},
			"Checkpoint{consumerGroupId=order-processor, topicPartition=us-east.orders-3, upstreamOffset=1234, downstreamOffset=1200, metadata=}"},
		{Checkpoint{Group: "g", Topic: "t", Partition: 0, UpstreamOffset: 5, DownstreamOffset: 4, Metadata: "m"},
			"Checkpoint{consumerGroupId=g, topicPartition=t-0, upstreamOffset=5, downstreamOffset=4, metadata=m}"},
		{OffsetSync{Topic: "orders", Partition: 3, UpstreamOffset: 1234, DownstreamOffset: 1200},
			"OffsetSync{topicPartition=orders-3, upstreamOffset=1234, downstreamOffset=1200}"},
		{Heartbeat{SourceAlias: "us-east", TargetAlias: "us-west", Timestamp: hbTimestamp},
			"Heartbeat{sourceClusterAlias=us-east, targetClusterAlias=us-west, timestamp=1700000000000}"},
	}
	for _, tt := range tests {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

// Negative and extreme numbers survive a round trip (two's complement).
func TestExtremeNumbersRoundTrip(t *testing.T) {
	c := Checkpoint{Group: "g", Topic: "t", Partition: -1, UpstreamOffset: -1, DownstreamOffset: 1<<63 - 1, Metadata: "\xff\xfe not utf-8"}
	k, _ := c.MarshalKey()
	v, _ := c.MarshalValue()
	got, err := DecodeCheckpoint(k, v)
	if err != nil || got != c {
		t.Errorf("round trip: %+v, %v; want %+v", got, err, c)
	}
	if hex.EncodeToString(k[len(k)-4:]) != "ffffffff" {
		t.Errorf("partition -1 encoded as %x", k[len(k)-4:])
	}
}
