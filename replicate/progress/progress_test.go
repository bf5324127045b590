package progress

import (
	"errors"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	now := time.UnixMilli(1700000000123)
	k, v := Encode(Key{Topic: "orders", Partition: 3}, 1234, now)
	if string(k) != `{"topic":"orders","partition":3}` || string(v) != `{"offset":1234,"time_ms":1700000000123}` {
		t.Fatalf("Encode = %s %s", k, v)
	}
	got, next, err := Decode(k, v)
	if err != nil || got != (Key{"orders", 3}) || next != 1234 {
		t.Fatalf("Decode = %+v %d %v", got, next, err)
	}
}

func TestDecodeRejects(t *testing.T) {
	good := `{"topic":"orders","partition":3}`
	for _, tt := range []struct {
		name       string
		key, value []byte
	}{
		{"key not JSON", []byte("orders-3"), []byte(`{"offset":1}`)},
		{"tombstone", []byte(good), nil},
		{"value not JSON", []byte(good), []byte("1")},
		{"no offset", []byte(good), []byte(`{"time_ms":1}`)},
		{"negative offset", []byte(good), []byte(`{"offset":-1}`)},
		{"empty topic", []byte(`{"topic":"","partition":0}`), []byte(`{"offset":1}`)},
		{"negative partition", []byte(`{"topic":"t","partition":-1}`), []byte(`{"offset":1}`)},
	} {
		if k, n, err := Decode(tt.key, tt.value); err == nil {
			t.Errorf("%s: Decode = %+v %d, want an error", tt.name, k, n)
		}
	}
	if _, _, err := Decode([]byte(good), nil); !errors.Is(err, ErrTombstone) {
		t.Errorf("tombstone: %v, want ErrTombstone", err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"topic":"orders","partition":3}`), []byte(`{"offset":1234,"time_ms":1}`))
	f.Fuzz(func(t *testing.T, key, val []byte) {
		k, next, err := Decode(key, val)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes to something that decodes the same.
		k2, v2 := Encode(k, next, time.UnixMilli(0))
		got, n2, err := Decode(k2, v2)
		if err != nil || got != k || n2 != next {
			t.Fatalf("re-decode of %+v %d: %+v %d %v", k, next, got, n2, err)
		}
	})
}

// Records written before the optional fields existed decode as before, and
// the optional fields round-trip; a value without them is what Encode wrote.
func TestValueCompatible(t *testing.T) {
	now := time.UnixMilli(1700000000123)
	k := Key{Topic: "orders", Partition: 3}
	_, plain := Encode(k, 7, now)
	_, same := EncodeValue(k, Value{Next: 7, Time: now})
	if string(plain) != string(same) {
		t.Fatalf("EncodeValue without extras = %s, want %s", same, plain)
	}
	old := []byte(`{"offset":7,"time_ms":1700000000123}`)
	_, v, err := DecodeValue([]byte(`{"topic":"orders","partition":3}`), old)
	if err != nil || v.Next != 7 || v.TopicID != "" || v.Loss != nil || v.Skipped != 0 {
		t.Fatalf("old record: %+v %v", v, err)
	}
	loss := &Loss{Kind: "gap", From: 10, To: 25, Count: 15, Reason: "deleted by retention", TimeMs: 1700000000000}
	kb, vb := EncodeValue(k, Value{Next: 30, Time: now, TopicID: "AAECAwQFBgcICQoLDA0ODw==", Skipped: 15, Loss: loss})
	gk, got, err := DecodeValue(kb, vb)
	if err != nil || gk != k || got.Next != 30 || got.TopicID != "AAECAwQFBgcICQoLDA0ODw==" || got.Skipped != 15 || got.Loss == nil || *got.Loss != *loss {
		t.Fatalf("round trip: %+v %+v %v (%s)", gk, got, err, vb)
	}
	// An old reader (Decode) reads the new record's offset.
	if _, n, err := Decode(kb, vb); err != nil || n != 30 {
		t.Fatalf("Decode of a new record = %d %v", n, err)
	}
	if _, _, err := DecodeValue(kb, []byte(`{"offset":1,"skipped":-2}`)); err == nil {
		t.Fatal("negative skipped decoded")
	}
}
