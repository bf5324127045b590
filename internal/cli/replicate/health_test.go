package replicate_test

import (
	"crypto/rand"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

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
