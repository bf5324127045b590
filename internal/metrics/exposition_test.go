package metrics

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/mirrorctl/mirrorctl/replicate"
)

// richObserver returns an Observer with every kind of series: partitions of
// two flows (one stopped by a loss event, one behind, label values with a
// quote, a backslash and a newline), checkpoints, flows, a leader,
// rebalances, invalid records, transactions, an unreachable cluster and
// revoked ACL bindings.
func richObserver(t testing.TB, partitions int) *Observer {
	t.Helper()
	now := time.Unix(1_700_000_000, 0)
	o := New(func() time.Time { return now })
	for i := 0; i < partitions; i++ {
		p := o.Partition("us-east", "eu-west", fmt.Sprintf("us-east.t-%d", i/10), int32(i%10)).(*Partition)
		p.Fetched(int64(100 + i))
		p.Polled(100, time.Duration(i)*time.Millisecond)
		p.Acked(100, 3*time.Millisecond, int64(i))
		p.Position(int64(i), int64(100+i))
	}
	odd := o.Partition("eu-west", "us-east", "eu-west.we\"ird\\na\nme", 2)
	odd.Polled(5, time.Second)
	stopped := o.Partition("us-east", "eu-west", "us-east.lost", 0).(*Partition)
	stopped.Loss(replicate.LossEvent{Kind: replicate.LossGap, From: 10, To: 20, Count: 10, Stopped: true})
	o.CheckpointWritten("us-east", "eu-west", "g1", "us-east.t-0", 0, 20*time.Millisecond)
	o.CheckpointWritten("us-east", "eu-west", "g2", "us-east.t-0", 1, 40*time.Millisecond)
	o.CheckpointConfirmed("us-east", "eu-west", "g1", now.Add(-time.Minute))
	o.FlowState("us-east", "eu-west", true)
	o.FlowState("eu-west", "us-east", false)
	o.Leader("us-east", "eu-west", true)
	o.Rebalance("us-east", "eu-west", 3, 1, 0)
	o.InvalidInternalRecord("us-east", "eu-west", "checkpoint")
	o.TransactionEnded("us-east", "eu-west", true)
	o.TransactionEnded("us-east", "eu-west", false)
	o.ClusterReachable("eu-west", false, now.Add(-time.Minute), fmt.Errorf("dial tcp: refused"))
	o.ClusterReachable("us-east", true, now, nil)
	o.ACLSync("us-east", "eu-west", replicate.ACLSyncReport{Tracked: true, Revoked: make([]replicate.ACLBinding, 2)})
	return o
}

// TestTextMatchesClientLibrary checks the /metrics writer against the client
// library: the same Observer, gathered by a registry and encoded by expfmt,
// gives the same bytes.
func TestTextMatchesClientLibrary(t *testing.T) {
	o := richObserver(t, 25)
	reg := prometheus.NewRegistry()
	reg.MustRegister(o)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	enc := expfmt.NewEncoder(&want, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range fams {
		if err := enc.Encode(f); err != nil {
			t.Fatal(err)
		}
	}
	var got bytes.Buffer
	if err := o.writeText(&got, nil); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		gl, wl := strings.Split(got.String(), "\n"), strings.Split(want.String(), "\n")
		for i := 0; i < min(len(gl), len(wl)); i++ {
			if gl[i] != wl[i] {
				t.Fatalf("line %d differs:\n got %q\nwant %q\n(%d lines against %d)", i+1, gl[i], wl[i], len(gl), len(wl))
			}
		}
		t.Fatalf("%d lines, want %d", len(gl), len(wl))
	}
	if !strings.Contains(got.String(), `mirrorctl_acl_revoked_bindings{source="us-east",target="eu-west"} 2`) {
		t.Errorf("the revoked ACL bindings' series is missing:\n%s", got.String())
	}
	if !strings.Contains(got.String(), `mirrorctl_partition_up{partition="0",source="us-east",target="eu-west",topic="us-east.lost"} 0`) {
		t.Errorf("the stopped partition's series is missing:\n%s", got.String())
	}
}

// TestMetricsEndpointServesBothParts checks GET /metrics: the Observer's
// series and the go_* collector's, in name order, gzip when asked for.
func TestMetricsEndpointServesBothParts(t *testing.T) {
	h, err := Handler(richObserver(t, 3))
	if err != nil {
		t.Fatal(err)
	}
	for _, gz := range []bool{false, true} {
		req := httptest.NewRequest("GET", "/metrics", nil)
		if gz {
			req.Header.Set("Accept-Encoding", "gzip")
		}
		rr := httptest.NewRecorder()
		h.ServeHTTP(rr, req)
		body := rr.Body.Bytes()
		if gz {
			if rr.Header().Get("Content-Encoding") != "gzip" {
				t.Fatalf("Content-Encoding %q, want gzip", rr.Header().Get("Content-Encoding"))
			}
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if body, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		}
		text := string(body)
		if ct := rr.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
			t.Errorf("Content-Type %q", ct)
		}
		goAt, kcAt, mcAt := strings.Index(text, "# HELP go_goroutines "), strings.Index(text, "# HELP "+RecordCount+" "), strings.Index(text, "# HELP "+PartitionUp+" ")
		if goAt < 0 || kcAt < 0 || mcAt < 0 || !(goAt < kcAt && kcAt < mcAt) {
			t.Errorf("families go_goroutines at %d, %s at %d, %s at %d: want all, in name order", goAt, RecordCount, kcAt, PartitionUp, mcAt)
		}
	}
}

// BenchmarkMetricsScrape10k is one GET /metrics at 10,000 partitions.
func BenchmarkMetricsScrape10k(b *testing.B) {
	h, err := Handler(richObserver(b, 10_000))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rr := httptest.NewRecorder()
		h.ServeHTTP(rr, httptest.NewRequest("GET", "/metrics", nil))
	}
}
