package replicate

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// reachCall is one ClusterReachable call.
type reachCall struct {
	cluster   string
	reachable bool
	since     time.Time
	err       string
}

type reachRecorder struct {
	nopObserver
	mu    sync.Mutex
	calls []reachCall
}

func (r *reachRecorder) ClusterReachable(cluster string, reachable bool, since time.Time, err error) {
	c := reachCall{cluster: cluster, reachable: reachable, since: since}
	if err != nil {
		c.err = err.Error()
	}
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

// TestReachabilityTransitions: per cluster alias, the first probe sets the
// state; a failure starts an outage from the failed probe's start, with one
// warning naming the cluster and the error; repeated failures (from any
// flow) add nothing; the first success ends it with one warning giving its
// length, measured to that probe's end; the Observer hears each change and
// nothing else. Clusters do not affect each other.
func TestReachabilityTransitions(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	obs := &reachRecorder{}
	r := newReachability(log, obs)
	t0 := time.Date(2026, 12, 4, 21, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	refused := errors.New("dial tcp 127.0.0.1:29092: connect: connection refused")

	r.probed("eu-west", at(0), at(0.01), nil)
	r.probed("us-east", at(0), at(0.02), nil)
	r.probed("eu-west", at(5), at(5.01), nil)
	r.probed("eu-west", at(10), at(15), fmt.Errorf("%w: %w", errProbeTimeout, refused))
	r.probed("eu-west", at(15), at(20), refused) // another flow, or the next tick
	r.probed("us-east", at(15), at(15.01), nil)
	r.probed("eu-west", at(35), at(37.25), nil)
	r.probed("eu-west", at(40), at(40.01), nil)
	r.probed("ap-south", at(40), at(45), refused) // never reachable yet

	want := []reachCall{
		{"eu-west", true, at(0.01), ""},
		{"us-east", true, at(0.02), ""},
		{"eu-west", false, at(10), "no answer within 5s: dial tcp 127.0.0.1:29092: connect: connection refused"},
		{"eu-west", true, at(37.25), ""},
		{"ap-south", false, at(40), refused.Error()},
	}
	if fmt.Sprint(obs.calls) != fmt.Sprint(want) {
		t.Errorf("observer calls:\n%v\nwant\n%v", obs.calls, want)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	wantLines := []string{
		`level=WARN msg="cluster unreachable" cluster=eu-west since=2026-12-04T21:00:10Z error="no answer within 5s: dial tcp 127.0.0.1:29092: connect: connection refused"`,
		`level=WARN msg="cluster reachable again" cluster=eu-west unreachable_for=27.3s`,
		`level=WARN msg="cluster unreachable" cluster=ap-south since=2026-12-04T21:00:40Z error="dial tcp 127.0.0.1:29092: connect: connection refused"`,
	}
	if strings.Join(lines, "\n") != strings.Join(wantLines, "\n") {
		t.Errorf("log:\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(wantLines, "\n"))
	}

	// An Observer without the method, and no tracker at all, are fine.
	newReachability(discard, nopObserver{}).probed("eu-west", at(0), at(1), refused)
	var none *reachability
	none.probed("eu-west", at(0), at(1), refused)
}
