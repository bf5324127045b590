package connectoffsets

import (
	"errors"
	"strings"
	"testing"
)

func TestDecodeKeyAnyFieldOrderAndExtraFields(t *testing.T) {
	want := Key{Connector: "MirrorSourceConnector", Cluster: "us-east", Topic: "orders", Partition: 3}
	for _, in := range []string{
		`["MirrorSourceConnector",{"cluster":"us-east","partition":3,"topic":"orders"}]`,
		`["MirrorSourceConnector",{"topic":"orders","partition":3,"cluster":"us-east"}]`,
		`["MirrorSourceConnector", {"partition": 3, "cluster": "us-east", "topic": "orders", "extra": [1, {"x": null}]}]`,
		" [\"MirrorSourceConnector\",{\"cluster\":\"us-east\",\"topic\":\"orders\",\"partition\":3.0e0}]\n",
	} {
		got, err := DecodeKey([]byte(in))
		if strings.Contains(in, "3.0e0") {
			// Connect writes integers; a float partition is not one.
			if !errors.Is(err, ErrOtherPartition) {
				t.Errorf("DecodeKey(%s) = %+v, %v; want ErrOtherPartition", in, got, err)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("DecodeKey(%s) = %+v, %v; want %+v", in, got, err, want)
		}
	}
}

func TestDecodeKeyOtherConnectorsAndGarbage(t *testing.T) {
	for _, tc := range []struct {
		in    string
		other bool // a Connect key of another connector, not garbage
	}{
		{`["MirrorHeartbeatConnector",{"sourceClusterAlias":"us-east","targetClusterAlias":"eu-west"}]`, true},
		{`["MirrorCheckpointConnector",{"group":"g","topic":"us-east.orders","partition":0}]`, true},
		{`["MirrorSourceConnector",{"cluster":"us-east","topic":"orders","partition":-1}]`, true},
		{`["MirrorSourceConnector",{"cluster":"us-east","topic":"orders","partition":2147483648}]`, true},
		{`["MirrorSourceConnector",{"cluster":1,"topic":"orders","partition":0}]`, true},
		{`["MirrorSourceConnector",{"cluster":"us-east","topic":"orders","partition":"0"}]`, true},
		{``, false},
		{`null`, false},
		{`{}`, false},
		{`[]`, false},
		{`["MirrorSourceConnector"]`, false},
		{`["MirrorSourceConnector",{"cluster":"a","topic":"b","partition":0},3]`, false},
		{`[1,{"cluster":"a","topic":"b","partition":0}]`, false},
		{`["MirrorSourceConnector",null]`, false},
		{`["MirrorSourceConnector",[1]]`, false},
		{`["MirrorSourceConnector",{"cluster":"a","topic":"b","partition":0}]]`, false},
		{"\x00\x01\x02", false},
	} {
		_, err := DecodeKey([]byte(tc.in))
		var de *DecodeError
		switch {
		case tc.other && !errors.Is(err, ErrOtherPartition):
			t.Errorf("DecodeKey(%q): %v, want ErrOtherPartition", tc.in, err)
		case !tc.other && !errors.As(err, &de):
			t.Errorf("DecodeKey(%q): %v, want a *DecodeError", tc.in, err)
		}
	}
}

func TestDecodeValue(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want int64
		tomb bool
		bad  bool
	}{
		{in: []byte(`{"offset":41}`), want: 41},
		{in: []byte(`{"extra":"x","offset":9223372036854775807}`), want: 9223372036854775807},
		{in: []byte(`{"offset":-1}`), want: -1},
		{in: nil, tomb: true},
		{in: []byte(`{"offset":9223372036854775808}`), bad: true},
		{in: []byte(`{"offset":1.5}`), bad: true},
		{in: []byte(`{"offset":"1"}`), bad: true},
		{in: []byte(`{}`), bad: true},
		{in: []byte(`null`), bad: true},
		{in: []byte(``), bad: true},
		{in: []byte(`[41]`), bad: true},
	} {
		got, tomb, err := DecodeValue(tc.in)
		if tc.bad {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Errorf("DecodeValue(%q) = %d, %v; want a *DecodeError", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want || tomb != tc.tomb {
			t.Errorf("DecodeValue(%q) = %d, %v, %v; want %d, %v", tc.in, got, tomb, err, tc.want, tc.tomb)
		}
	}
}

// The bytes Connect's JsonConverter writes for MM2's partitions: the field
// order of Java's HashMap for "cluster", "partition", "topic" (buckets 1, 3
// and 9 of 16), compact.
func TestEncodeKeyIsConnectsBytes(t *testing.T) {
	k := Key{Connector: DefaultConnector, Cluster: "us-east", Topic: "orders", Partition: 3}
	const want = `["MirrorSourceConnector",{"cluster":"us-east","partition":3,"topic":"orders"}]`
	if got := string(EncodeKey(k)); got != want {
		t.Fatalf("EncodeKey = %s, want %s", got, want)
	}
	if got := string(EncodeValue(41)); got != `{"offset":41}` {
		t.Fatalf("EncodeValue = %s", got)
	}
	odd := Key{Connector: "c\"\\\n\x01", Cluster: "é", Topic: "t", Partition: 0}
	if got, want := string(EncodeKey(odd)), `["c\"\\\n\u0001",{"cluster":"é","partition":0,"topic":"t"}]`; got != want {
		t.Fatalf("EncodeKey(%q) = %s, want %s", odd.Connector, got, want)
	}
	if back, err := DecodeKey(EncodeKey(odd)); err != nil || back != odd {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
}

func TestStoreNewestWinsTombstonesAndCounts(t *testing.T) {
	s := NewStore(DefaultConnector, "us-east")
	key := func(topic string, p int) []byte {
		return EncodeKey(Key{Connector: DefaultConnector, Cluster: "us-east", Topic: topic, Partition: int32(p)})
	}
	s.Add(0, 0, key("orders", 0), EncodeValue(10))
	s.Add(0, 1, key("orders", 0), EncodeValue(20))
	s.Add(1, 0, key("orders", 1), EncodeValue(5))
	s.Add(1, 1, key("orders", 1), nil) // reset
	s.Add(2, 0, key("orders", 2), []byte("{garbage"))
	s.Add(2, 1, []byte("not json"), EncodeValue(1))
	s.Add(2, 2, []byte(`["MirrorHeartbeatConnector",{"sourceClusterAlias":"us-east","targetClusterAlias":"eu-west"}]`), EncodeValue(0))
	s.Add(2, 3, EncodeKey(Key{Connector: DefaultConnector, Cluster: "ap-south", Topic: "orders", Partition: 0}), EncodeValue(99))
	s.Add(2, 4, EncodeKey(Key{Connector: "other-name", Cluster: "us-east", Topic: "orders", Partition: 0}), EncodeValue(99))
	// The same partition under other key bytes: Connect would not find it,
	// so the canonical record stays in force.
	s.Add(3, 0, []byte(`["MirrorSourceConnector",{"topic":"orders","partition":0,"cluster":"us-east"}]`), EncodeValue(7))
	// A partition known only under other bytes is still known.
	s.Add(3, 1, []byte(`["MirrorSourceConnector",{"topic":"orders","partition":3,"cluster":"us-east"}]`), EncodeValue(70))

	if p, ok := s.Get("orders", 0); !ok || p.Offset != 20 || p.RecordPartition != 0 || p.RecordOffset != 1 || string(p.RawKey) != string(key("orders", 0)) {
		t.Errorf("orders-0: %+v %v, want offset 20 from record 0@1", p, ok)
	}
	if p, ok := s.Get("orders", 1); ok {
		t.Errorf("orders-1 after a tombstone: %+v, want none", p)
	}
	if p, ok := s.Get("orders", 3); !ok || p.Offset != 70 {
		t.Errorf("orders-3: %+v %v, want 70", p, ok)
	}
	if s.Records != 11 || s.Other != 3 || s.Tombstones != 1 || s.Skipped != 2 || len(s.SkippedSample) != 2 || s.Len() != 2 {
		t.Errorf("counts: records %d other %d tombstones %d skipped %d (%v) len %d; want 11 3 1 2 2", s.Records, s.Other, s.Tombstones, s.Skipped, s.SkippedSample, s.Len())
	}
	if s.SkippedSample[0].Partition != 2 || s.SkippedSample[0].Offset != 0 || !strings.Contains(s.SkippedSample[0].Reason, "value") {
		t.Errorf("first skipped: %+v, want 2@0 naming the value", s.SkippedSample[0])
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`["MirrorSourceConnector",{"cluster":"us-east","partition":3,"topic":"orders"}]`), []byte(`{"offset":41}`))
	f.Add([]byte(`["MirrorSourceConnector",{"topic":"t","partition":0,"cluster":"c","x":1}]`), []byte(`{"offset":-5,"y":[]}`))
	f.Add([]byte(`[`), []byte(`{`))
	f.Add([]byte(`["a",{}]`), []byte(nil))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		s := NewStore(DefaultConnector, "c")
		s.Add(0, 0, key, value)
		if s.Records != 1 || s.Other+s.Skipped+s.Tombstones+s.Len() > 1 {
			t.Fatalf("one record counted as %+v", s)
		}
		k, err := DecodeKey(key)
		if err != nil {
			return
		}
		back, err := DecodeKey(EncodeKey(k))
		if err != nil || back != k {
			t.Fatalf("re-encoded key %s decodes to %+v, %v; want %+v", EncodeKey(k), back, err, k)
		}
		off, tomb, err := DecodeValue(value)
		if err != nil || tomb {
			return
		}
		if back, _, err := DecodeValue(EncodeValue(off)); err != nil || back != off {
			t.Fatalf("re-encoded value: %d, %v; want %d", back, err, off)
		}
	})
}
