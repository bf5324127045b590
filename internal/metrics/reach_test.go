package metrics

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mirrorctl/mirrorctl/replicate"
)

// TestClusterReachability plays, on a pinned clock with a 3 s grace, the
// target eu-west unreachable for 10 s, then the source us-east: the gauge
// turns 0 at once; /readyz stays 200 within the grace and then answers 503
// naming the cluster, since when and the probe's error; records_behind of
// the flow's partition is absent (not a stale figure) while the source is
// unreachable only, and /status says records_behind -1 and each cluster's
// reachable and since. A probe that succeeds again brings everything back.
// Before: /readyz 200 throughout, records_behind 0 during the source outage.
func TestClusterReachability(t *testing.T) {
	c := newClock()
	o := New(c.now)
	o.SetUnreachableGrace(3 * time.Second)
	h, err := Handler(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status := func() Status {
		t.Helper()
		_, body := get("/status")
		var st Status
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Fatalf("/status %q: %v", body, err)
		}
		return st
	}
	reachable := func(cluster string) float64 {
		t.Helper()
		_, body := get("/metrics")
		want := `mirrorctl_cluster_reachable{cluster="` + cluster + `"} `
		for _, l := range strings.Split(body, "\n") {
			if v, ok := strings.CutPrefix(l, want); ok {
				switch v {
				case "1":
					return 1
				case "0":
					return 0
				}
				t.Fatalf("%s%s", want, v)
			}
		}
		t.Fatalf("no %s series in /metrics", want)
		return -1
	}
	const behindSeries = `mirrorctl_records_behind{partition="0",source="us-east",target="eu-west",topic="us-east.orders"} 4`
	behindShown := func() bool {
		_, body := get("/metrics")
		return strings.Contains(body, behindSeries)
	}

	o.FlowState("us-east", "eu-west", true)
	p := o.Partition("us-east", "eu-west", "us-east.orders", 0)
	p.(replicate.PositionObserver).Position(6, 10)
	o.ClusterReachable("us-east", true, c.now(), nil)
	o.ClusterReachable("eu-west", true, c.now(), nil)
	if code, body := get("/readyz"); code != 200 {
		t.Fatalf("/readyz with both clusters reachable = %d %q", code, body)
	}
	if reachable("us-east") != 1 || reachable("eu-west") != 1 || !behindShown() {
		t.Fatal("reachable gauges or records_behind wrong with both clusters reachable")
	}

	// The target stops answering.
	down := c.now()
	o.ClusterReachable("eu-west", false, down, errors.New("no answer within 5s: context deadline exceeded"))
	c.add(2 * time.Second)
	if code, body := get("/readyz"); code != 200 {
		t.Errorf("/readyz 2 s into the target's outage (grace 3 s) = %d %q, want 200", code, body)
	}
	if reachable("eu-west") != 0 || reachable("us-east") != 1 {
		t.Error("eu-west's gauge is not 0 (or us-east's not 1) at once")
	}
	if !behindShown() {
		t.Error("records_behind went away with the target unreachable: its source end offsets are still known")
	}
	c.add(2 * time.Second)
	code, body := get("/readyz")
	want := "not ready: cluster eu-west unreachable since " + down.UTC().Format(time.RFC3339) + " (4s, over the 3s grace): no answer within 5s: context deadline exceeded\n"
	if code != 503 || body != want {
		t.Errorf("/readyz 4 s into the outage = %d %q, want 503 %q", code, body, want)
	}
	st := status()
	if st.Ready || len(st.NotReady) != 1 || len(st.Clusters) != 2 || st.Clusters[0].Cluster != "eu-west" || st.Clusters[0].Reachable || !st.Clusters[0].Since.Equal(down) || !strings.Contains(st.Clusters[0].Error, "deadline") || !st.Clusters[1].Reachable {
		t.Errorf("/status during the target's outage: %+v", st)
	}
	c.add(6 * time.Second)
	o.ClusterReachable("eu-west", true, c.now(), nil)
	if code, body := get("/readyz"); code != 200 || reachable("eu-west") != 1 {
		t.Errorf("/readyz after the target answered again = %d %q (gauge %v)", code, body, reachable("eu-west"))
	}

	// The source stops answering: records_behind is unknown at once.
	down = c.now()
	o.ClusterReachable("us-east", false, down, errors.New("list end offsets: dial tcp 127.0.0.1:19092: connect: connection refused"))
	if behindShown() || strings.Contains(func() string { _, b := get("/metrics"); return b }(), "mirrorctl_records_behind{") {
		t.Error("records_behind is still exported with the source unreachable")
	}
	if got := status().Flows[0].Partitions[0].RecordsBehind; got != -1 {
		t.Errorf("/status records_behind with the source unreachable = %d, want -1", got)
	}
	if n := testutil.CollectAndCount(o, RecordsBehind); n != 0 {
		t.Errorf("%d records_behind series collected with the source unreachable, want none", n)
	}
	c.add(10 * time.Second)
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "cluster us-east unreachable since "+down.UTC().Format(time.RFC3339)+" (10s, over the 3s grace): list end offsets: dial tcp") {
		t.Errorf("/readyz 10 s into the source's outage = %d %q", code, body)
	}
	// Back: the next listing reports the position again.
	p.(replicate.PositionObserver).Position(6, 10)
	o.ClusterReachable("us-east", true, c.now(), nil)
	if code, body := get("/readyz"); code != 200 || !behindShown() || status().Flows[0].Partitions[0].RecordsBehind != 4 {
		t.Errorf("after the source answered again: /readyz %d %q, records_behind shown %v", code, body, behindShown())
	}
}

// TestReadinessReasonsJoined: every reason is in the 503 body, joined by
// "; ", and a zero grace fails readiness at the first failed probe.
func TestReadinessReasonsJoined(t *testing.T) {
	c := newClock()
	o := New(c.now)
	o.SetUnreachableGrace(0)
	o.FlowState("us-east", "eu-west", true)
	o.FlowState("eu-west", "us-east", false)
	p := o.Partition("us-east", "eu-west", "us-east.orders", 3)
	p.(replicate.LossObserver).Loss(replicate.LossEvent{Kind: replicate.LossRefused, Stopped: true})
	since := c.now().Add(-time.Millisecond)
	o.ClusterReachable("eu-west", false, since, errors.New("boom"))
	got := strings.Join(o.NotReady(), "; ")
	want := "flow eu-west->us-east down; cluster eu-west unreachable since " + since.UTC().Format(time.RFC3339) + " (0s, over the 0s grace): boom; 1 partitions stopped: us-east.orders[3]"
	if got != want {
		t.Errorf("NotReady = %q\nwant       %q", got, want)
	}
	if o.Ready() {
		t.Error("Ready with three reasons not to be")
	}
}
