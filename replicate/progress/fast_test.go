package progress

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// Everything EncodeValue writes without a loss event takes the fast path,
// and decodes to what was encoded.
func TestParseTakesWhatEncodeWrites(t *testing.T) {
	now := time.UnixMilli(1700000000123)
	for _, tt := range []struct {
		k Key
		v Value
	}{
		{Key{"orders", 0}, Value{Next: 0, Time: now}},
		{Key{"us-east.orders_v2", 2147483647}, Value{Next: 9223372036854775807, Time: now}},
		{Key{"a", 7}, Value{Next: 12, Time: now, TopicID: "Vb3k2k1tQuaMp0Uu8Zf1Pw"}},
		{Key{"a", 7}, Value{Next: 12, Time: now, Skipped: 40}},
		{Key{"a", 7}, Value{Next: 12, Time: time.UnixMilli(-5), TopicID: "x", Skipped: 1}},
		{Key{"a", 7}, Value{Next: 12, Time: now, TopicID: "x", Skipped: 1, SourceEnd: 30}},
		{Key{"a", 7}, Value{Next: 12, Time: now, SourceEnd: 12}},
		{Key{"a", 7}, Value{Next: 12, Time: now, TopicID: "x", SourceEnd: 12, Downstream: 9}},
		{Key{"a", 7}, Value{Next: 12, Time: now, Downstream: 1}},
	} {
		key, val := EncodeValue(tt.k, tt.v)
		if _, ok := parseKey(key); !ok {
			t.Errorf("parseKey(%s) fell back", key)
		}
		if _, ok := parseValue(val); !ok {
			t.Errorf("parseValue(%s) fell back", val)
		}
		k, v, err := DecodeValue(key, val)
		if err != nil || k != tt.k || v.Next != tt.v.Next || !v.Time.Equal(tt.v.Time) || v.TopicID != tt.v.TopicID || v.Skipped != tt.v.Skipped || v.SourceEnd != tt.v.SourceEnd || v.Downstream != tt.v.Downstream {
			t.Errorf("DecodeValue(%s, %s) = %+v %+v %v, want %+v %+v", key, val, k, v, err, tt.k, tt.v)
		}
	}
	// A loss event, other spellings and escapes go through encoding/json.
	_, val := EncodeValue(Key{"a", 1}, Value{Next: 3, Time: now, Loss: &Loss{Kind: "gap", From: 1, To: 3, Count: 2}})
	for _, b := range []string{string(val), `{"offset": 3,"time_ms":1}`, `{"time_ms":1,"offset":3}`, `{"offset":3}`} {
		if _, ok := parseValue([]byte(b)); ok {
			t.Errorf("parseValue(%s) took the fast path", b)
		}
	}
	if k, _, err := DecodeValue([]byte(`{"topic":"a\u002eb","partition":1}`), []byte(`{"offset":3}`)); err != nil || k.Topic != "a.b" {
		t.Errorf("escaped key = %+v %v, want topic a.b", k, err)
	}
}

// FuzzParseMatchesJSON: whatever the fast parsers accept, encoding/json
// decodes to the same key and value.
func FuzzParseMatchesJSON(f *testing.F) {
	key, val := EncodeValue(Key{"orders", 3}, Value{Next: 1234, Time: time.UnixMilli(1700000000123), TopicID: "abc", Skipped: 2})
	f.Add(key, val)
	key, val = EncodeValue(Key{"orders", 3}, Value{Next: 1234, Time: time.UnixMilli(1700000000123), SourceEnd: 1300})
	f.Add(key, val)
	f.Add([]byte(`{"topic":"t","partition":-0}`), []byte(`{"offset":01,"time_ms":1}`))
	f.Add([]byte(`{"topic":"t","partition":2147483648}`), []byte(`{"offset":1.5,"time_ms":1e3}`))
	f.Add([]byte(`{"topic":"t","partition":-2147483648}`), []byte(`{"offset":9223372036854775807,"time_ms":-9223372036854775808}`))
	f.Add([]byte(`{"topic":"t","partition":-2147483649}`), []byte(`{"offset":9223372036854775808,"time_ms":-9223372036854775809}`))
	f.Fuzz(func(t *testing.T, key, val []byte) {
		if k, ok := parseKey(key); ok {
			var want Key
			if err := json.Unmarshal(key, &want); err != nil || want != k {
				t.Fatalf("parseKey(%q) = %+v; encoding/json: %+v %v", key, k, want, err)
			}
		}
		if v, ok := parseValue(val); ok {
			var want value
			if err := json.Unmarshal(val, &want); err != nil || !reflect.DeepEqual(want, v) {
				t.Fatalf("parseValue(%q) = %+v; encoding/json: %+v %v", val, v, want, err)
			}
		}
	})
}

func BenchmarkDecodeValue(b *testing.B) {
	key, val := EncodeValue(Key{"us-east.orders", 11}, Value{Next: 123456789, Time: time.UnixMilli(1700000000123), TopicID: "Vb3k2k1tQuaMp0Uu8Zf1Pw"})
	for b.Loop() {
		if _, _, err := DecodeValue(key, val); err != nil {
			b.Fatal(err)
		}
	}
}
