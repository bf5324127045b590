package freshness

import (
	"strings"
	"testing"
	"time"
)

func TestJudge(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	hourOld := Checkpoint{Upstream: 40, Written: now.Add(-time.Hour)}
	fresh := Checkpoint{Upstream: 40, Written: now.Add(-5 * time.Second)}
	c := func(v int64) *int64 { return &v }
	tests := []struct {
		name     string
		ck       Checkpoint
		src      Source
		liveness time.Time
		current  bool
		reason   string
	}{
		{"idle group, old checkpoint", hourOld, Source{Up: true, Commit: c(40), Alias: "us-east"}, time.Time{}, true, "matches the group's commit 40 on us-east"},
		{"moved, old checkpoint", hourOld, Source{Up: true, Commit: c(52), Alias: "us-east"}, time.Time{}, false, "the group moved to 52 on us-east; the checkpoint at 40 is 1h0m0s old, not under 15s"},
		{"moved, fresh checkpoint", fresh, Source{Up: true, Commit: c(52), Alias: "us-east"}, time.Time{}, true, "the group moved to 52"},
		{"rewound", fresh, Source{Up: true, Commit: c(30), Alias: "us-east"}, time.Time{}, false, "ahead of the group's commit 30"},
		{"no commit", fresh, Source{Up: true, Alias: "us-east"}, time.Time{}, false, "no commit on us-east"},
		{"source down, mirror live", hourOld, Source{}, now.Add(-3 * time.Second), true, "the mirror was live 3s ago"},
		{"source down, mirror silent", fresh, Source{}, now.Add(-time.Minute), false, "newest heartbeat or checkpoint is 1m0s old, not under 15s"},
		{"source down, nothing to judge by", fresh, Source{}, time.Time{}, false, "no heartbeat or checkpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Judge(tt.ck, tt.src, tt.liveness, now, 15*time.Second)
			if v.Current != tt.current || !strings.Contains(v.Reason, tt.reason) {
				t.Fatalf("Judge = %+v, want current %v and %q", v, tt.current, tt.reason)
			}
		})
	}
}
