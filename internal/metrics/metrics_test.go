package metrics

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/mirrorctl/mirrorctl/replicate"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time               { return c.t }
func (c *clock) add(d time.Duration)          { c.t = c.t.Add(d) }
func newClock() *clock                        { return &clock{time.Unix(1_700_000_000, 0)} }
func isNaN(v float64) bool                    { return math.IsNaN(v) }
func approx(a, b float64) bool                { return math.Abs(a-b) < 1e-9 }
func sec(n int) time.Duration                 { return time.Duration(n) * time.Second }
func nowNS(c *clock) int64                    { return c.t.UnixNano() }
func recordAt(w *window, c *clock, v float64) { w.record(v, nowNS(c)) }

func TestWindow(t *testing.T) {
	tests := []struct {
		name  string
		steps []struct {
			at time.Duration
			v  float64
		} // offsets from the start
		at    time.Duration // measurement time
		count int64
		min   float64
		max   float64
		avg   float64
		rate  float64
	}{
		{name: "empty", at: sec(5), min: math.NaN(), max: math.NaN(), avg: math.NaN(), rate: 0},
		{name: "one young window: rate over one full window",
			steps: []struct {
				at time.Duration
				v  float64
			}{{0, 10}, {sec(1), 20}, {sec(2), 30}},
			at: sec(10), count: 3, min: 10, max: 30, avg: 20, rate: 60.0 / 40},
		{name: "two samples", steps: []struct {
			at time.Duration
			v  float64
		}{{0, 100}, {sec(31), 1}},
			at: sec(40), count: 2, min: 1, max: 100, avg: 50.5, rate: 101.0 / 40}, // 40s since the oldest sample began
		{name: "old sample dropped after 60s", steps: []struct {
			at time.Duration
			v  float64
		}{{0, 100}, {sec(31), 1}},
			at: sec(61), count: 1, min: 1, max: 1, avg: 1, rate: 1.0 / 30}, // the purged sample restarts at 61s
		{name: "all dropped", steps: []struct {
			at time.Duration
			v  float64
		}{{0, 100}},
			at: sec(90), min: math.NaN(), max: math.NaN(), avg: math.NaN(), rate: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClock()
			start := c.t
			w := newWindow()
			for _, s := range tt.steps {
				c.t = start.Add(s.at)
				recordAt(&w, c, s.v)
			}
			c.t = start.Add(tt.at)
			st := w.measure(nowNS(c))
			same := func(a, b float64) bool { return (isNaN(a) && isNaN(b)) || approx(a, b) }
			if st.count != tt.count || !same(st.min, tt.min) || !same(st.max, tt.max) || !same(st.avg, tt.avg) || !same(st.rate, tt.rate) {
				t.Fatalf("got count %d min %v max %v avg %v rate %v; want %d %v %v %v %v", st.count, st.min, st.max, st.avg, st.rate, tt.count, tt.min, tt.max, tt.avg, tt.rate)
			}
		})
	}
}

func TestHotPathDoesNotAllocate(t *testing.T) {
	o := New(nil)
	p := o.Partition("us-east", "eu-west", "us-east.orders", 0)
	next := int64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		p.Fetched(next + 10)
		p.Polled(100, time.Millisecond)
		next++
		p.Acked(100, 2*time.Millisecond, next)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per record, want 0", allocs)
	}
}

// alertValue evaluates max(kafka_connect_mirror_replication_latency_ms_max{target="eu-west"}).
func alertValue(t *testing.T, o *Observer) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(o)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	best := math.NaN()
	for _, mf := range mfs {
		if mf.GetName() != ReplicationLatency+"_max" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "target" && l.GetValue() == "eu-west" {
					v := m.GetGauge().GetValue()
					if isNaN(best) || v > best {
						best = v
					}
				}
			}
		}
	}
	return best
}

// TestOperatorAlertRule checks the rule
// max(kafka_connect_mirror_replication_latency_ms_max{target="eu-west"}) > 30000
// fires when lag passes 30 s and stays quiet otherwise.
func TestOperatorAlertRule(t *testing.T) {
	tests := []struct {
		name string
		run  func(c *clock, p0, p1 interface {
			Polled(int, time.Duration)
			Acked(int, time.Duration, int64)
		})
		fires bool
	}{
		{"healthy: 2s latency", func(c *clock, p0, p1 interface {
			Polled(int, time.Duration)
			Acked(int, time.Duration, int64)
		}) {
			for i := int64(1); i <= 100; i++ {
				p0.Polled(10, time.Second)
				p0.Acked(10, 2*time.Second, i)
				p1.Polled(10, time.Second)
				p1.Acked(10, 1500*time.Millisecond, i)
				c.add(100 * time.Millisecond)
			}
		}, false},
		{"one partition 31s behind", func(c *clock, p0, p1 interface {
			Polled(int, time.Duration)
			Acked(int, time.Duration, int64)
		}) {
			p0.Polled(10, time.Second)
			p0.Acked(10, 2*time.Second, 1)
			p1.Polled(10, 30*time.Second)
			p1.Acked(10, 31*time.Second, 1)
		}, true},
		{"exactly 30s is not over", func(c *clock, p0, p1 interface {
			Polled(int, time.Duration)
			Acked(int, time.Duration, int64)
		}) {
			p1.Polled(10, 29*time.Second)
			p1.Acked(10, 30*time.Second, 1)
		}, false},
		{"target stalled 40s with a record in flight", func(c *clock, p0, p1 interface {
			Polled(int, time.Duration)
			Acked(int, time.Duration, int64)
		}) {
			p0.Polled(10, time.Second)
			p0.Acked(10, 2*time.Second, 1)
			p0.Polled(10, 0)
			c.add(40 * time.Second)
		}, true},
		{"recovered: a 45s spike ages out after the 60s window", func(c *clock, p0, p1 interface {
			Polled(int, time.Duration)
			Acked(int, time.Duration, int64)
		}) {
			p0.Polled(10, 44*time.Second)
			p0.Acked(10, 45*time.Second, 1)
			for i := int64(2); i <= 80; i++ {
				c.add(time.Second)
				p0.Polled(10, 0)
				p0.Acked(10, 50*time.Millisecond, i)
			}
		}, false},
		{"idle, nothing copied", func(*clock, interface {
			Polled(int, time.Duration)
			Acked(int, time.Duration, int64)
		}, interface {
			Polled(int, time.Duration)
			Acked(int, time.Duration, int64)
		}) {
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClock()
			o := New(c.now)
			p0 := o.Partition("us-east", "eu-west", "us-east.orders", 0)
			p1 := o.Partition("us-east", "eu-west", "us-east.orders", 1)
			other := o.Partition("eu-west", "us-east", "eu-west.orders", 0)
			other.Polled(1, time.Hour) // another target's latency must not count
			other.Acked(1, time.Hour, 1)
			tt.run(c, p0, p1)
			v := alertValue(t, o)
			if fired := v > 30000; fired != tt.fires {
				t.Fatalf("rule value %v: fired %v, want %v", v, fired, tt.fires)
			}
		})
	}
}

func TestExposition(t *testing.T) {
	c := newClock()
	o := New(c.now)
	o.FlowState("us-east", "eu-west", true)
	p := o.Partition("us-east", "eu-west", "us-east.orders", 3)
	p.Fetched(10)
	for i, lat := range []time.Duration{100 * time.Millisecond, 300 * time.Millisecond} {
		p.Polled(5+i, lat/2)
		p.Acked(5+i, lat, int64(i+1))
	}
	o.CheckpointWritten("us-east", "eu-west", "billing", "us-east.orders", 3, 40*time.Millisecond)
	c.add(2 * time.Second)
	o.CheckpointWritten("us-east", "eu-west", "billing", "us-east.orders", 3, 60*time.Millisecond)
	c.add(500 * time.Millisecond)

	want := `
# HELP kafka_connect_mirror_byte_count Value bytes of polled source records (MM2 byte-count)
# TYPE kafka_connect_mirror_byte_count gauge
kafka_connect_mirror_byte_count{partition="3",source="us-east",target="eu-west",topic="us-east.orders"} 11
# HELP kafka_connect_mirror_record_count Records acknowledged by the target (MM2 record-count)
# TYPE kafka_connect_mirror_record_count gauge
kafka_connect_mirror_record_count{partition="3",source="us-east",target="eu-west",topic="us-east.orders"} 2
# HELP kafka_connect_mirror_replication_latency_ms_max Milliseconds from the source record timestamp to the target's acknowledgement (MM2 replication-latency-ms); _max includes records still unacknowledged, maximum (Kafka Metrics window: 2 samples x 30 s)
# TYPE kafka_connect_mirror_replication_latency_ms_max gauge
kafka_connect_mirror_replication_latency_ms_max{partition="3",source="us-east",target="eu-west",topic="us-east.orders"} 300
# HELP kafka_connect_mirror_replication_latency_ms_avg Milliseconds from the source record timestamp to the target's acknowledgement (MM2 replication-latency-ms); _max includes records still unacknowledged, average (Kafka Metrics window: 2 samples x 30 s)
# TYPE kafka_connect_mirror_replication_latency_ms_avg gauge
kafka_connect_mirror_replication_latency_ms_avg{partition="3",source="us-east",target="eu-west",topic="us-east.orders"} 200
# HELP kafka_connect_mirror_record_age_ms_min Milliseconds from the source record timestamp to its poll (MM2 record-age-ms), minimum (Kafka Metrics window: 2 samples x 30 s)
# TYPE kafka_connect_mirror_record_age_ms_min gauge
kafka_connect_mirror_record_age_ms_min{partition="3",source="us-east",target="eu-west",topic="us-east.orders"} 50
# HELP kafka_connect_mirror_record_rate Records acknowledged by the target per second (MM2 record-rate) (Kafka Metrics window: 2 samples x 30 s)
# TYPE kafka_connect_mirror_record_rate gauge
kafka_connect_mirror_record_rate{partition="3",source="us-east",target="eu-west",topic="us-east.orders"} 0.06153846153846154
# HELP kafka_connect_mirror_checkpoint_latency_ms_max Milliseconds from listing the source group offsets to the checkpoint's acknowledgement (MM2 checkpoint-latency-ms), maximum (Kafka Metrics window: 2 samples x 30 s)
# TYPE kafka_connect_mirror_checkpoint_latency_ms_max gauge
kafka_connect_mirror_checkpoint_latency_ms_max{group="billing",partition="3",source="us-east",target="eu-west",topic="us-east.orders"} 60
# HELP kafka_connect_mirror_checkpoint_latency_ms Milliseconds from listing the source group offsets to the checkpoint's acknowledgement (MM2 checkpoint-latency-ms), last value
# TYPE kafka_connect_mirror_checkpoint_latency_ms gauge
kafka_connect_mirror_checkpoint_latency_ms{group="billing",partition="3",source="us-east",target="eu-west",topic="us-east.orders"} 60
# HELP mirrorctl_records_behind Source high watermark minus the next source offset acknowledged by the target, in records
# TYPE mirrorctl_records_behind gauge
mirrorctl_records_behind{partition="3",source="us-east",target="eu-west",topic="us-east.orders"} 8
# HELP mirrorctl_checkpoint_age_seconds Seconds since the last listing of the source group offsets at which the group's checkpoint was written or found current (idle groups stay fresh while the mirror runs)
# TYPE mirrorctl_checkpoint_age_seconds gauge
mirrorctl_checkpoint_age_seconds{group="billing",source="us-east",target="eu-west"} 0.56
# HELP mirrorctl_flow_up 1 while the flow copies records, 0 once it stopped
# TYPE mirrorctl_flow_up gauge
mirrorctl_flow_up{source="us-east",target="eu-west"} 1
`
	names := []string{ByteCount, RecordCount, ReplicationLatency + "_max", ReplicationLatency + "_avg", RecordAge + "_min", RecordRate,
		CheckpointLatency + "_max", CheckpointLatency, RecordsBehind, CheckpointAgeSeconds, FlowUp}
	if err := testutil.CollectAndCompare(o, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	// partition: 4 counts/rates + 4 age + 4 latency + records_behind + partition_up + skipped and loss events per loss kind;
	// checkpoint: 4; group age; flow up and its two invalid-internal-record counters.
	if n, want := testutil.CollectAndCount(o), 4+4+4+1+1+2*len(replicate.LossKinds)+4+1+1+2; n != want {
		t.Fatalf("%d series, want %d", n, want)
	}
}

func TestHandler(t *testing.T) {
	c := newClock()
	o := New(c.now)
	h, err := Handler(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	if code, _ := get("/readyz"); code != 503 {
		t.Errorf("/readyz before any flow = %d, want 503", code)
	}
	o.FlowState("us-east", "eu-west", true)
	p := o.Partition("us-east", "eu-west", "us-east.orders", 0)
	p.Fetched(7)
	p.Polled(3, time.Millisecond)
	p.Acked(3, 2*time.Millisecond, 5)
	if code, body := get("/readyz"); code != 200 || body != "ready\n" {
		t.Errorf("/readyz with the flow up = %d %q", code, body)
	}
	code, body := get("/status")
	var st Status
	if err := json.Unmarshal([]byte(body), &st); err != nil || code != 200 {
		t.Fatalf("/status = %d %q: %v", code, body, err)
	}
	if len(st.Flows) != 1 || len(st.Flows[0].Partitions) != 1 || !st.Ready {
		t.Fatalf("/status = %+v", st)
	}
	ps := st.Flows[0].Partitions[0]
	if ps.Topic != "us-east.orders" || ps.HighWatermark != 7 || ps.Next != 5 || ps.RecordsBehind != 2 || ps.Records != 1 || ps.Bytes != 3 || ps.LatencyMaxMs == nil || *ps.LatencyMaxMs != 2 {
		t.Fatalf("/status partition = %+v", ps)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, `mirrorctl_records_behind{partition="0",source="us-east",target="eu-west",topic="us-east.orders"} 2`) || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("/metrics = %d, body lacks the records_behind series or go collector:\n%s", code, body)
	}
	o.FlowState("us-east", "eu-west", false)
	if code, _ := get("/readyz"); code != 503 {
		t.Errorf("/readyz after the flow stopped = %d, want 503", code)
	}
}

// A loss event counts the skipped offsets by reason, from a series that
// existed at 0 before it, and shows in /status as the partition's state.
func TestLossSeries(t *testing.T) {
	o := New(newClock().now)
	o.FlowState("us-east", "eu-west", true)
	p := o.Partition("us-east", "eu-west", "us-east.orders", 2)
	zero := `
# HELP mirrorctl_records_skipped_total Source offsets of the partition that will not reach the target (deleted before they were copied, topic recreated, ...), by reason
# TYPE mirrorctl_records_skipped_total counter
mirrorctl_records_skipped_total{partition="2",reason="gap",source="us-east",target="eu-west",topic="us-east.orders"} 0
mirrorctl_records_skipped_total{partition="2",reason="recreated",source="us-east",target="eu-west",topic="us-east.orders"} 0
mirrorctl_records_skipped_total{partition="2",reason="refused",source="us-east",target="eu-west",topic="us-east.orders"} 0
mirrorctl_records_skipped_total{partition="2",reason="ring",source="us-east",target="eu-west",topic="us-east.orders"} 0
mirrorctl_records_skipped_total{partition="2",reason="target-recreated",source="us-east",target="eu-west",topic="us-east.orders"} 0
`
	if err := testutil.CollectAndCompare(o, strings.NewReader(zero), RecordsSkipped); err != nil {
		t.Fatal(err)
	}
	if st := o.Status(); st.Flows[0].Partitions[0].State != "ok" {
		t.Fatalf("state before any loss = %q", st.Flows[0].Partitions[0].State)
	}
	p.(replicate.LossObserver).Loss(replicate.LossEvent{Kind: replicate.LossGap, Topic: "orders", Partition: 2, From: 10, To: 25, Count: 15})
	p.(replicate.LossObserver).Loss(replicate.LossEvent{Kind: replicate.LossGap, Topic: "orders", Partition: 2, From: 40, To: 45, Count: 5})
	want := `
# HELP mirrorctl_records_skipped_total Source offsets of the partition that will not reach the target (deleted before they were copied, topic recreated, ...), by reason
# TYPE mirrorctl_records_skipped_total counter
mirrorctl_records_skipped_total{partition="2",reason="gap",source="us-east",target="eu-west",topic="us-east.orders"} 20
mirrorctl_records_skipped_total{partition="2",reason="recreated",source="us-east",target="eu-west",topic="us-east.orders"} 0
mirrorctl_records_skipped_total{partition="2",reason="refused",source="us-east",target="eu-west",topic="us-east.orders"} 0
mirrorctl_records_skipped_total{partition="2",reason="ring",source="us-east",target="eu-west",topic="us-east.orders"} 0
mirrorctl_records_skipped_total{partition="2",reason="target-recreated",source="us-east",target="eu-west",topic="us-east.orders"} 0
# HELP mirrorctl_loss_events_total Loss events of the partition (records that will not reach the target, or a stop), by reason
# TYPE mirrorctl_loss_events_total counter
mirrorctl_loss_events_total{partition="2",reason="gap",source="us-east",target="eu-west",topic="us-east.orders"} 2
mirrorctl_loss_events_total{partition="2",reason="recreated",source="us-east",target="eu-west",topic="us-east.orders"} 0
mirrorctl_loss_events_total{partition="2",reason="refused",source="us-east",target="eu-west",topic="us-east.orders"} 0
mirrorctl_loss_events_total{partition="2",reason="ring",source="us-east",target="eu-west",topic="us-east.orders"} 0
mirrorctl_loss_events_total{partition="2",reason="target-recreated",source="us-east",target="eu-west",topic="us-east.orders"} 0
`
	if err := testutil.CollectAndCompare(o, strings.NewReader(want), RecordsSkipped, LossEvents); err != nil {
		t.Fatal(err)
	}
	ps := o.Status().Flows[0].Partitions[0]
	if ps.State != "gap" || ps.Skipped != 20 || len(ps.Losses) != 2 || ps.Losses[1].From != 40 {
		t.Fatalf("/status partition after two gaps: %+v", ps)
	}
	o.InvalidInternalRecord("us-east", "eu-west", "group-offset")
	inval := `
# HELP mirrorctl_invalid_internal_records_total Internal records (checkpoints, group offsets from them) whose target offset the remote partition cannot hold; counted, never acted on
# TYPE mirrorctl_invalid_internal_records_total counter
mirrorctl_invalid_internal_records_total{kind="checkpoint",source="us-east",target="eu-west"} 0
mirrorctl_invalid_internal_records_total{kind="group-offset",source="us-east",target="eu-west"} 1
`
	if err := testutil.CollectAndCompare(o, strings.NewReader(inval), InvalidInternal); err != nil {
		t.Fatal(err)
	}
	p.(replicate.LossObserver).Loss(replicate.LossEvent{Kind: replicate.LossSourceRecreated, Topic: "orders", Partition: 2, Stopped: true})
	if ps := o.Status().Flows[0].Partitions[0]; ps.State != "stopped" {
		t.Fatalf("state after a stop = %q", ps.State)
	}
}

func TestTransactionsCounted(t *testing.T) {
	o := New(nil)
	o.TransactionEnded("us-east", "eu-west", true)
	o.TransactionEnded("us-east", "eu-west", true)
	o.TransactionEnded("us-east", "eu-west", false)
	want := `
# HELP mirrorctl_transactions_total Exactly-once target transactions this process's partition tasks ended, committed or aborted (fenced ones included)
# TYPE mirrorctl_transactions_total counter
mirrorctl_transactions_total{result="aborted",source="us-east",target="eu-west"} 1
mirrorctl_transactions_total{result="committed",source="us-east",target="eu-west"} 2
`
	if err := testutil.CollectAndCompare(o, strings.NewReader(want), Transactions); err != nil {
		t.Fatal(err)
	}
}

// A revoked grant shows in mirrorctl_acl_revoked_bindings and in /status
// with the binding; a sync that could not read the target leaves the gauge
// absent (unknown), never 0.
func TestACLSyncReported(t *testing.T) {
	o := New(nil)
	o.FlowState("us-east", "eu-west", true)
	o.FlowState("us-east", "ap-south", true)
	revoked := replicate.ACLBinding{ResourceType: kmsg.ACLResourceTypeTopic, Pattern: kmsg.ACLResourcePatternTypeLiteral,
		Name: "us-east.orders", Principal: "User:alice", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}
	skip := replicate.ACLSkip{Binding: revoked, Reason: replicate.ACLSkipAllowWrite, Detail: "ALLOW WRITE is never synced"}
	o.ACLSync("us-east", "eu-west", replicate.ACLSyncReport{Flow: "us-east->eu-west", Tracked: true, Revoked: []replicate.ACLBinding{revoked}, Skipped: []replicate.ACLSkip{skip}})
	o.ACLSync("us-east", "ap-south", replicate.ACLSyncReport{Flow: "us-east->ap-south", TrackingError: "describe ACLs on ap-south: CLUSTER_AUTHORIZATION_FAILED"})
	want := `
# HELP mirrorctl_acl_revoked_bindings Target topic ACL bindings mirrorctl's ACL sync created whose source binding is gone, still on the target at the last sync (sync.topic.acls.prune = true removes them)
# TYPE mirrorctl_acl_revoked_bindings gauge
mirrorctl_acl_revoked_bindings{source="us-east",target="eu-west"} 1
`
	if err := testutil.CollectAndCompare(o, strings.NewReader(want), ACLRevokedBindings); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(o.Status())
	if err != nil {
		t.Fatal(err)
	}
	alice := `{"resource_type":"TOPIC","pattern_type":"LITERAL","name":"us-east.orders","principal":"User:alice","host":"*","operation":"READ","permission":"ALLOW"}`
	for _, s := range []string{
		`"acl_sync":{"flow":"us-east-\u003eeu-west","planned":null,"created":null,"skipped":[{"binding":` + alice + `,"reason":"allow-write","detail":"ALLOW WRITE is never synced"}],"tracked":true,"revoked":[` + alice + `],"pruned":null}`,
		`"tracked":false,"tracking_error":"describe ACLs on ap-south: CLUSTER_AUTHORIZATION_FAILED"`,
	} {
		if !strings.Contains(string(b), s) {
			t.Errorf("/status lacks %s:\n%s", s, b)
		}
	}
	// Leadership lost: the report is another process's now.
	o.Leader("us-east", "eu-west", false)
	if n := testutil.CollectAndCount(o, ACLRevokedBindings); n != 0 {
		t.Fatalf("%d revoked-bindings series after leadership was lost, want none", n)
	}
}
