package replicate

import (
	"testing"
	"time"
)

// TestHeartbeatIntervalDefault: a third of the session timeout, at most a
// second and at least 100 ms; a set interval is kept as it is.
func TestHeartbeatIntervalDefault(t *testing.T) {
	for _, c := range []struct {
		session, set, want time.Duration
	}{
		{10 * time.Second, 0, time.Second},
		{45 * time.Second, 0, time.Second},
		{2 * time.Second, 0, 2 * time.Second / 3},
		{150 * time.Millisecond, 0, 100 * time.Millisecond},
		{10 * time.Second, 3 * time.Second, 3 * time.Second},
		{10 * time.Second, 50 * time.Millisecond, 50 * time.Millisecond},
	} {
		f := DefaultFlowConfig("a", "b")
		f.SessionTimeout, f.HeartbeatInterval = c.session, c.set
		if got := f.heartbeatInterval(); got != c.want {
			t.Errorf("session %v, heartbeat %v: got %v, want %v", c.session, c.set, got, c.want)
		}
	}
}
