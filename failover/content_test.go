package failover

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/replicate"
)

// A stamped copy (replicate.OriginHeader added by a flow with
// mirrorctl.provenance.header.enabled) matches its original; any other
// header difference does not.
func TestContentIgnoresOriginHeader(t *testing.T) {
	ts := time.UnixMilli(1_700_000_000_000)
	orig := &kgo.Record{Key: []byte("k"), Value: []byte("v"), Timestamp: ts, Headers: []kgo.RecordHeader{{Key: "app", Value: []byte("x")}}}
	stamped := &kgo.Record{Key: []byte("k"), Value: []byte("v"), Timestamp: ts, Offset: 7,
		Headers: []kgo.RecordHeader{{Key: "app", Value: []byte("x")}, {Key: replicate.OriginHeader, Value: []byte("cluster-a")}}}
	other := &kgo.Record{Key: []byte("k"), Value: []byte("v"), Timestamp: ts,
		Headers: []kgo.RecordHeader{{Key: "app", Value: []byte("x")}, {Key: "trace", Value: []byte("1")}}}
	if !ContentOf(orig).Matches(ContentOf(stamped)) {
		t.Error("a stamped copy does not match its original")
	}
	if ContentOf(orig).Matches(ContentOf(other)) {
		t.Error("a copy with another extra header matches")
	}
}
