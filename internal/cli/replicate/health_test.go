package replicate_test

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/mirrorctl/mirrorctl/internal/metrics"
	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

// TestStoppedPartitionFailsReadiness: the target refuses a record of
// big[1] (its remote topic allows 2000 bytes). While `replicate` runs, the
// partition is stopped: /readyz answers 503 naming it, its
// mirrorctl_partition_up is 0 (big[0]'s 1) and its mirrorctl_records_behind
// series stays, counting the records after the refused one; the idle
// topic's partition has both series too (up, 0 behind). Before: /readyz 200,
// no per-partition up, no records_behind for either.
func TestStoppedPartitionFailsReadiness(t *testing.T) {
	e := newEnv(t, "sync.topic.configs.enabled = false\n")
	big, idle := testkit.Name("big"), testkit.Name("idle")
	e.CreateTopic(t, testkit.East, big, 2, nil)
	e.CreateTopic(t, testkit.East, idle, 1, nil)
	limit := "2000"
	e.CreateTopic(t, testkit.West, testkit.East+"."+big, 2, map[string]*string{"max.message.bytes": &limit})
	noise := make([]byte, 5000) // incompressible: the producer cannot shrink it under the limit
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := 0; i < 10; i++ {
		recs = append(recs, &kgo.Record{Topic: big, Partition: 0, Value: []byte("a")})
	}
	for i := 0; i < 5; i++ {
		recs = append(recs, &kgo.Record{Topic: big, Partition: 1, Value: []byte("b")})
	}
	recs = append(recs, &kgo.Record{Topic: big, Partition: 1, Value: noise})
	for i := 0; i < 3; i++ {
		recs = append(recs, &kgo.Record{Topic: big, Partition: 1, Value: []byte("c")})
	}
	e.Produce(t, testkit.East, recs...)

	p := startProc(t, e, "replicate")
	get := func(path string) (int, string) {
		if p.metricsAddr() == "" {
			return 0, ""
		}
		cl := http.Client{Timeout: time.Second}
		resp, err := cl.Get("http://" + p.metricsAddr() + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	series := func(name, topic, partition string) string {
		return name + `{partition="` + partition + `",source="us-east",target="eu-west",topic="us-east.` + topic + `"} `
	}
	var ready, body string
	var code int
	testkit.WaitFor(t, "/readyz 503 and the stopped partition's series", func() bool {
		code, ready = get("/readyz")
		_, body = get("/metrics")
		return code == http.StatusServiceUnavailable &&
			strings.Contains(body, series("mirrorctl_partition_up", big, "1")+"0\n") &&
			strings.Contains(body, series("mirrorctl_records_behind", big, "1")+"4\n") &&
			strings.Contains(body, series("mirrorctl_records_behind", idle, "0")+"0\n")
	})
	if !strings.Contains(ready, "1 partitions stopped: us-east."+big+"[1]") {
		t.Errorf("/readyz body %q does not name the stopped partition", ready)
	}
	for _, want := range []string{
		series("mirrorctl_partition_up", big, "0") + "1\n",
		series("mirrorctl_partition_up", idle, "0") + "1\n",
		series("mirrorctl_records_behind", big, "0") + "0\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// The data: big[1] holds the 5 records before the refused one, nothing after.
	if got := e.ReadAll(t, testkit.West, testkit.East+"."+big); len(got[0]) != 10 || len(got[1]) != 5 {
		t.Errorf("target holds %d and %d records, want 10 and 5", len(got[0]), len(got[1]))
	}
	if !strings.Contains(p.stderr.String(), "partition stopped") {
		t.Errorf("no ERROR line for the stopped partition:\n%s", p.stderr)
	}
}

// TestUnreachableTargetFailsReadiness: with
// mirrorctl.health.unreachable.grace.ms = 1000, a target that stops
// answering (every ApiVersions request on eu-west closes the connection)
// makes `replicate`'s /readyz answer 503 naming eu-west, since when and the
// 1 s grace, mirrorctl_cluster_reachable{cluster="eu-west"} 0 (us-east's
// 1), /status list eu-west as unreachable with the error, and the log say
// so once; when it answers again /readyz is 200 and the log gives the
// outage's length. Before: /readyz 200 throughout, no gauge, no log line.
func TestUnreachableTargetFailsReadiness(t *testing.T) {
	e := newEnv(t, "mirrorctl.health.unreachable.grace.ms = 1000\n")
	topic := testkit.Name("reach")
	e.CreateTopic(t, testkit.East, topic, 1, nil)
	e.Produce(t, testkit.East, &kgo.Record{Topic: topic, Value: []byte("a")})
	var down atomic.Bool
	e.West.ControlKey(int16(kmsg.ApiVersions), func(kmsg.Request) (kmsg.Response, error, bool) {
		e.West.KeepControl()
		if down.Load() {
			return nil, errors.New("down"), true
		}
		return nil, nil, false
	})
	p := startProc(t, e, "replicate")
	get := func(path string) (int, string) {
		if p.metricsAddr() == "" {
			return 0, ""
		}
		cl := http.Client{Timeout: time.Second}
		resp, err := cl.Get("http://" + p.metricsAddr() + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const gauge = `mirrorctl_cluster_reachable{cluster="%s"} %d` + "\n"
	testkit.WaitFor(t, "ready, the partition copied, both clusters reachable", func() bool {
		code, _ := get("/readyz")
		_, body := get("/metrics")
		return code == http.StatusOK && strings.Contains(body, fmt.Sprintf(gauge, "eu-west", 1)) && strings.Contains(body, fmt.Sprintf(gauge, "us-east", 1)) &&
			strings.Contains(body, `mirrorctl_records_behind{partition="0",source="us-east",target="eu-west",topic="us-east.`+topic+`"} 0`)
	})
	down.Store(true)
	var ready string
	testkit.WaitFor(t, "/readyz 503 naming eu-west", func() bool {
		var code int
		code, ready = get("/readyz")
		return code == http.StatusServiceUnavailable
	})
	if !strings.Contains(ready, "not ready: cluster eu-west unreachable since ") || !strings.Contains(ready, "over the 1s grace): ") {
		t.Errorf("/readyz body %q", ready)
	}
	if _, body := get("/metrics"); !strings.Contains(body, fmt.Sprintf(gauge, "eu-west", 0)) || !strings.Contains(body, fmt.Sprintf(gauge, "us-east", 1)) {
		t.Errorf("/metrics lacks eu-west's 0 or us-east's 1:\n%s", body)
	}
	_, body := get("/status")
	var st metrics.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("/status %q: %v", body, err)
	}
	if len(st.Clusters) != 2 || st.Clusters[0].Cluster != "eu-west" || st.Clusters[0].Reachable || st.Clusters[0].Error == "" || st.Clusters[0].Since.IsZero() || !st.Clusters[1].Reachable {
		t.Errorf("/status clusters %+v", st.Clusters)
	}
	down.Store(false)
	testkit.WaitFor(t, "/readyz 200 again and the outage's end logged", func() bool {
		var code int
		code, ready = get("/readyz")
		return code == http.StatusOK && strings.Contains(p.stderr.String(), "cluster reachable again cluster=eu-west unreachable_for=")
	})
	if n := strings.Count(p.stderr.String(), "cluster unreachable cluster=eu-west "); n != 1 {
		t.Errorf("%d outage-start lines for eu-west, want 1:\n%s", n, p.stderr)
	}
}
