package lag

import (
	"fmt"
	"testing"
	"time"

	"github.com/mirrorctl/mirrorctl/replicate"
)

func ms(v int64) *int64 { return &v }

func TestEvaluate(t *testing.T) {
	fc := replicate.FlowConfig{Source: "a", Target: "b", EmitHeartbeats: true}
	read := func() FlowLag {
		return FlowLag{Source: "a", Target: "b", HeartbeatAgeMs: ms(5000),
			Partitions: []PartitionLag{
				{Topic: "a.t", Partition: 0, RecordsBehind: 0, TimeBehindMs: ms(0)},
				{Topic: "a.t", Partition: 1, RecordsBehind: 7, TimeBehindMs: ms(2000)},
				{Topic: "a.t", Partition: 2, RecordsBehind: 3, TimeBehindMs: nil},
			},
			Groups: []GroupLag{{Group: "g1", CheckpointAgeMs: ms(100)}, {Group: "g2"}},
		}
	}
	tests := []struct {
		name string
		th   Thresholds
		want string
	}{
		{"all off", Thresholds{MaxRecords: -1}, "[]"},
		{"max-records 3", Thresholds{MaxRecords: 3}, "[{a->b max-records a.t[1] 7 3 }]"},
		{"max-records 0", Thresholds{MaxRecords: 0}, "[{a->b max-records a.t[1] 7 0 } {a->b max-records a.t[2] 3 0 }]"},
		{"max-latency 1s: over, and unknown", Thresholds{MaxRecords: -1, MaxLatency: time.Second},
			"[{a->b max-latency a.t[1] 2000 1000 } {a->b max-latency a.t[2] -1 1000 }]"},
		{"stale-after 1s: old heartbeat, missing checkpoint", Thresholds{MaxRecords: -1, StaleAfter: time.Second},
			"[{a->b stale-after heartbeat 5000 1000 } {a->b stale-after group g2 -1 1000 }]"},
	}
	for _, tt := range tests {
		fl := read()
		got := Evaluate(fc, &fl, tt.th)
		if s := fmt.Sprint(got); s != tt.want && !(tt.want == "[]" && len(got) == 0) {
			t.Errorf("%s: %s, want %s", tt.name, s, tt.want)
		}
		for _, b := range got {
			if b.Subject == "a.t[1]" && !fl.Partitions[1].Breach {
				t.Errorf("%s: partition 1 breached but not marked", tt.name)
			}
			if b.Subject == "group g2" && !fl.Groups[1].Breach {
				t.Errorf("%s: group g2 breached but not marked", tt.name)
			}
		}
		if fl.Partitions[0].Breach || fl.Groups[0].Breach {
			t.Errorf("%s: a healthy row is marked", tt.name)
		}
	}
	// Without heartbeats emitted and none found, no heartbeat breach.
	fl := read()
	fl.HeartbeatAgeMs = nil
	if got := Evaluate(replicate.FlowConfig{Source: "a", Target: "b"}, &fl, Thresholds{MaxRecords: -1, StaleAfter: time.Hour}); fmt.Sprint(got) != "[{a->b stale-after group g2 -1 3600000 }]" {
		t.Errorf("no heartbeats: %v", got)
	}
	// A stopped partition breaches with every threshold off, beside the
	// thresholds it breaches too.
	for _, th := range []Thresholds{{MaxRecords: -1}, {MaxRecords: 3}} {
		fl = read()
		fl.Partitions[0].Stopped, fl.Partitions[0].StopReason, fl.Partitions[0].RecordsBehind = true, "recreated: why", 300
		got := Evaluate(fc, &fl, th)
		if len(got) == 0 || got[0] != (Breach{"a->b", CheckStopped, "a.t[0]", 300, 0, "recreated: why"}) || !fl.Partitions[0].Breach {
			t.Errorf("stopped, %+v: %+v", th, got)
		}
	}
}
