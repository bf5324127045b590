package lag_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/cli"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/cli/lag"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/kafka"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/internal/testkit"
	lagengine "github.com/mirrorctl/mirrorctl/lag"
	"github.com/mirrorctl/mirrorctl/replicate"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// env is the shared kfake pair (us-east, eu-west) and an mm2.properties
// (testkit's, plus the test's extra lines) that points at it.
type env struct {
	*testkit.Pair
	config string
}

func newEnv(t *testing.T, extra string) *env {
	t.Helper()
	p := testkit.NewPair(t)
	return &env{Pair: p, config: p.WriteConfig(t, extra)}
}

// options returns lag lag.Options on e's config with a pinned clock.
func (e *env) options(t *testing.T, now time.Time) (*lag.Options, *iostreams.IOStreams) {
	t.Helper()
	cfg, err := config.Load(e.config)
	if err != nil {
		t.Fatal(err)
	}
	kf := kafka.NewFactory(func(alias string, _ replicate.ClientRole) (map[string]string, error) {
		return map[string]string{"bootstrap.servers": strings.Join(e.Addrs(alias), ",")}, nil
	}, nil)
	t.Cleanup(kf.Close)
	ios, _, _, _ := iostreams.Test()
	return &lag.Options{
		IO: ios, Output: func() output.Format { return output.FormatJSON },
		Config:     func() (*config.Config, error) { return cfg, nil },
		Clients:    func() (replicate.Clients, error) { return kf, nil },
		Now:        func() time.Time { return now },
		MaxRecords: -1, Interval: time.Second, FetchTimeout: 10 * time.Second,
	}, ios
}

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := cli.Run(ctx, ios, args, nil)
	return code, out.String(), errOut.String()
}

func decode(t *testing.T, s string) lag.Result {
	t.Helper()
	var r lag.Result
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		t.Fatalf("%v in %q", err, s)
	}
	return r
}

// TestRecordsAndTimeBehindAfterReplicateStops: replicate copies 10 records
// per partition and stops; 7 more arrive, the oldest 90 s old. lag reports
// exactly 7 behind per partition and about 90 s behind, from the progress
// topic, and the thresholds decide the exit code.
func TestRecordsAndTimeBehindAfterReplicateStops(t *testing.T) {
	e := newEnv(t, "")
	topic := testkit.Name("orders")
	e.CreateTopic(t, "us-east", topic, 2, nil)
	var recs []*kgo.Record
	for p := int32(0); p < 2; p++ {
		for i := 0; i < 10; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("v%d", i))})
		}
	}
	e.Produce(t, "us-east", recs...)
	if code, _, stderr := run(t, "replicate", "-c", e.config, "--once"); code != 0 {
		t.Fatalf("replicate exit %d: %s", code, stderr)
	}
	oldest := time.Now().Add(-90 * time.Second)
	recs = recs[:0]
	for p := int32(0); p < 2; p++ {
		for i := 0; i < 7; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte("late"), Timestamp: oldest.Add(time.Duration(i) * time.Second)})
		}
	}
	e.Produce(t, "us-east", recs...)

	code, stdout, stderr := run(t, "lag", "-c", e.config, "-o", "json")
	if code != 0 {
		t.Fatalf("lag exit %d: %s", code, stderr)
	}
	res := decode(t, stdout)
	if len(res.Flows) != 1 || len(res.Flows[0].Partitions) != 2 || len(res.Breaches) != 0 {
		t.Fatalf("result %s", stdout)
	}
	for _, p := range res.Flows[0].Partitions {
		if p.SourceTopic != topic || p.Topic != "us-east."+topic || p.SourceEndOffset != 17 || p.ReplicatedOffset != 9 ||
			p.RecordsBehind != 7 || p.TargetEndOffset != 10 || p.From != lagengine.FromProgress {
			t.Errorf("partition %+v; want end 17, replicated 9, behind 7, target end 10, from progress", p)
		}
		if p.TimeBehindMs == nil || *p.TimeBehindMs < 90_000 || *p.TimeBehindMs > 100_000 {
			t.Errorf("partition %d time behind %v ms, want about 90000", p.Partition, p.TimeBehindMs)
		}
	}

	tests := []struct {
		flags  string
		code   int
		checks []string
	}{
		{"--max-records 7", 0, nil},
		{"--max-records 6", 3, []string{lagengine.CheckMaxRecords, lagengine.CheckMaxRecords}},
		{"--max-latency 5m", 0, nil},
		{"--max-latency 60s", 3, []string{lagengine.CheckMaxLatency, lagengine.CheckMaxLatency}},
		{"--max-latency 60s --max-records 100", 3, []string{lagengine.CheckMaxLatency, lagengine.CheckMaxLatency}},
	}
	for _, tt := range tests {
		t.Run(tt.flags, func(t *testing.T) {
			code, stdout, stderr := run(t, append([]string{"lag", "-c", e.config, "-o", "json"}, strings.Fields(tt.flags)...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d", code, tt.code)
			}
			res := decode(t, stdout)
			var got []string
			for _, b := range res.Breaches {
				got = append(got, b.Check)
				// Off a terminal each breach is also said on stderr.
				unit := " ms"
				if b.Check == lagengine.CheckMaxRecords {
					unit = " records"
				}
				line := fmt.Sprintf("flow %s: %s breaches --%s: %d%s, limit %d%s", b.Flow, b.Subject, b.Check, b.Value, unit, b.Limit, unit)
				if !strings.Contains(stderr, line) {
					t.Errorf("stderr does not say %q:\n%s", line, stderr)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.checks) {
				t.Fatalf("breaches %+v, want checks %v", res.Breaches, tt.checks)
			}
			if n := strings.Count(stderr, " breaches --"); n != len(tt.checks) {
				t.Errorf("stderr names %d breaches, want %d:\n%s", n, len(tt.checks), stderr)
			}
			for _, p := range res.Flows[0].Partitions {
				if p.Breach != (tt.code == 3) {
					t.Errorf("partition %d breach mark %v", p.Partition, p.Breach)
				}
			}
		})
	}

	// Replicate again: caught up, time behind 0.
	if code, _, stderr := run(t, "replicate", "-c", e.config, "--once"); code != 0 {
		t.Fatalf("replicate exit %d: %s", code, stderr)
	}
	code, stdout, _ = run(t, "lag", "-c", e.config, "-o", "json", "--max-records", "0", "--max-latency", "1s")
	res = decode(t, stdout)
	for _, p := range res.Flows[0].Partitions {
		if p.RecordsBehind != 0 || p.TimeBehindMs == nil || *p.TimeBehindMs != 0 || p.ReplicatedOffset != 16 {
			t.Errorf("caught up partition %+v", p)
		}
	}
	if code != 0 {
		t.Fatalf("caught up: exit %d, want 0: %s", code, stdout)
	}
}

// TestMM2FlowFromOffsetSyncsHeartbeatsAndCheckpoints lays out what MM2
// leaves behind (no mirrorctl progress): remote records, an offset sync, a
// heartbeat and a checkpoint, and checks every figure with a pinned clock.
func TestMM2FlowFromOffsetSyncsHeartbeatsAndCheckpoints(t *testing.T) {
	e := newEnv(t, "")
	topic := testkit.Name("payments")
	remote := "us-east." + topic
	group := testkit.Name("billing")
	now := time.Now().Truncate(time.Millisecond)
	e.CreateTopic(t, "us-east", topic, 1, nil)
	e.CreateTopic(t, "eu-west", remote, 1, nil)
	e.CreateTopic(t, "us-east", "mm2-offset-syncs.eu-west.internal", 1, nil)
	e.CreateTopic(t, "eu-west", "heartbeats", 1, nil)
	e.CreateTopic(t, "eu-west", "us-east.checkpoints.internal", 1, nil)
	var src, dst []*kgo.Record
	for i := 0; i < 20; i++ {
		src = append(src, &kgo.Record{Topic: topic, Value: []byte("x"), Timestamp: now.Add(time.Duration(i-100) * time.Second)})
	}
	for i := 0; i < 12; i++ { // MM2 copied source offsets 0..11
		dst = append(dst, &kgo.Record{Topic: remote, Value: []byte("x")})
	}
	e.Produce(t, "us-east", src...)
	e.Produce(t, "eu-west", dst...)
	sync := mm2.OffsetSync{Topic: topic, Partition: 0, UpstreamOffset: 4, DownstreamOffset: 4}
	k, _ := sync.MarshalKey()
	v, _ := sync.MarshalValue()
	e.Produce(t, "us-east", &kgo.Record{Topic: "mm2-offset-syncs.eu-west.internal", Key: k, Value: v})
	for _, age := range []time.Duration{9 * time.Second, 3 * time.Second} {
		hb := mm2.Heartbeat{SourceAlias: "us-east", TargetAlias: "eu-west", Timestamp: now.Add(-age).UnixMilli()}
		k, _ := hb.MarshalKey()
		v, _ := hb.MarshalValue()
		e.Produce(t, "eu-west", &kgo.Record{Topic: "heartbeats", Key: k, Value: v, Timestamp: now.Add(-age)})
	}
	other := mm2.Heartbeat{SourceAlias: "ap-south", TargetAlias: "eu-west", Timestamp: now.UnixMilli()}
	k, _ = other.MarshalKey()
	v, _ = other.MarshalValue()
	e.Produce(t, "eu-west", &kgo.Record{Topic: "heartbeats", Key: k, Value: v})
	ck := mm2.Checkpoint{Group: group, Topic: remote, Partition: 0, UpstreamOffset: 8, DownstreamOffset: 6}
	k, _ = ck.MarshalKey()
	v, _ = ck.MarshalValue()
	e.Produce(t, "eu-west", &kgo.Record{Topic: "us-east.checkpoints.internal", Key: k, Value: v, Timestamp: now.Add(-4 * time.Second)})
	if _, err := kadm.NewClient(e.Client(t, "us-east")).CommitOffsets(context.Background(), group, kadm.OffsetsFromRecords(kgo.Record{Topic: topic, Partition: 0, Offset: 11})); err != nil {
		t.Fatal(err)
	}

	opts, _ := e.options(t, now)
	opts.Groups = []string{group, "never-checkpointed"}
	opts.StaleAfter = 3500 * time.Millisecond
	clients, _ := opts.Clients()
	cfg, _ := opts.Config()
	flows := flowsOf(cfg)
	res, err := lag.Collect(context.Background(), opts, clients, flows)
	if err != nil {
		t.Fatal(err)
	}
	fl := res.Flows[0]
	if len(fl.Partitions) != 1 {
		t.Fatalf("partitions %+v", fl.Partitions)
	}
	p := fl.Partitions[0]
	// Newest sync 4->4 and 12 records on the target: offsets 5..11 follow.
	if p.From != lagengine.FromOffsetSyncs || p.ReplicatedOffset != 11 || p.RecordsBehind != 8 || p.SourceEndOffset != 20 || p.TargetEndOffset != 12 {
		t.Errorf("partition %+v; want from offset-syncs, replicated 11, behind 8", p)
	}
	// The oldest uncopied record is source offset 12, stamped now-88s.
	if p.TimeBehindMs == nil || *p.TimeBehindMs != 88_000 {
		t.Errorf("time behind %v, want 88000", p.TimeBehindMs)
	}
	if fl.HeartbeatAgeMs == nil || *fl.HeartbeatAgeMs != 3000 {
		t.Errorf("heartbeat age %v, want 3000 (the newest keyed us-east->eu-west)", fl.HeartbeatAgeMs)
	}
	if len(fl.Groups) != 2 {
		t.Fatalf("groups %+v", fl.Groups)
	}
	g := fl.Groups[0]
	// Committed 12 vs checkpoint upstream 8: 4; downstream 6 maps back to
	// upstream 5 by the 4->4 sync: 3 more.
	if g.Group != group || g.CheckpointAgeMs == nil || *g.CheckpointAgeMs != 4000 || g.RereadsOnFailover != 7 || !g.Breach ||
		len(g.Partitions) != 1 || g.Partitions[0].CommittedOffset != 12 || g.Partitions[0].Rereads != 7 {
		t.Errorf("group %+v, partitions %+v; want age 4000, rereads 7 (4 + 3), breach", g, g.Partitions)
	}
	if ng := fl.Groups[1]; ng.Group != "never-checkpointed" || ng.CheckpointAgeMs != nil || !ng.Breach {
		t.Errorf("group without checkpoints %+v", ng)
	}
	want := []lagengine.Breach{
		{Flow: "us-east->eu-west", Check: lagengine.CheckStaleAfter, Subject: "group " + group, Value: 4000, Limit: 3500},
		{Flow: "us-east->eu-west", Check: lagengine.CheckStaleAfter, Subject: "group never-checkpointed", Value: -1, Limit: 3500},
	}
	if fmt.Sprint(res.Breaches) != fmt.Sprint(want) {
		t.Errorf("breaches %+v, want %+v", res.Breaches, want)
	}

	// Checkpoints stopped: 10 s later the checkpoint is 10 s older, and the
	// heartbeat too.
	later := now.Add(10 * time.Second)
	opts.Now = func() time.Time { return later }
	res, err = lag.Collect(context.Background(), opts, clients, flows)
	if err != nil {
		t.Fatal(err)
	}
	if a := res.Flows[0].Groups[0].CheckpointAgeMs; a == nil || *a != 14_000 {
		t.Errorf("checkpoint age 10s later %v, want 14000", a)
	}
	if a := res.Flows[0].HeartbeatAgeMs; a == nil || *a != 13_000 {
		t.Errorf("heartbeat age 10s later %v, want 13000", a)
	}
}

// TestCheckpointAgeGrowsWhileCheckpointsStop runs replicate --once with a
// committed group, so mirrorctl writes a checkpoint, then reads lag as time
// passes.
func TestCheckpointAgeGrowsWhileCheckpointsStop(t *testing.T) {
	e := newEnv(t, "")
	topic := testkit.Name("events")
	group := testkit.Name("g")
	e.CreateTopic(t, "us-east", topic, 1, nil)
	var recs []*kgo.Record
	for i := 0; i < 30; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte("e")})
	}
	e.Produce(t, "us-east", recs...)
	if _, err := kadm.NewClient(e.Client(t, "us-east")).CommitOffsets(context.Background(), group, kadm.OffsetsFromRecords(kgo.Record{Topic: topic, Partition: 0, Offset: 19})); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := run(t, "replicate", "-c", e.config, "--once"); code != 0 {
		t.Fatalf("replicate exit %d: %s", code, stderr)
	}
	start := time.Now()
	var ages []int64
	for _, after := range []time.Duration{0, 30 * time.Second, 90 * time.Second} {
		opts, _ := e.options(t, start.Add(after))
		clients, _ := opts.Clients()
		cfg, _ := opts.Config()
		flows := flowsOf(cfg)
		res, err := lag.Collect(context.Background(), opts, clients, flows)
		if err != nil {
			t.Fatal(err)
		}
		gs := res.Flows[0].Groups
		if len(gs) != 1 || gs[0].Group != group || gs[0].CheckpointAgeMs == nil {
			t.Fatalf("groups %+v", gs)
		}
		// Committed at 20; the syncs are 0->0 (first record) and 29->29
		// (flushed at stop), so MM2's translation of 20 is the 0->0 sync
		// plus one: downstream 1, and a failover re-reads 1..19.
		if p := gs[0].Partitions; gs[0].RereadsOnFailover != 19 || len(p) != 1 || p[0].UpstreamOffset != 20 || p[0].DownstreamOffset != 1 || p[0].CommittedOffset != 20 {
			t.Errorf("group %+v partitions %+v; want 19 re-reads (checkpoint 20->1)", gs[0], p)
		}
		ages = append(ages, *gs[0].CheckpointAgeMs)
	}
	if ages[1]-ages[0] != 30_000 || ages[2]-ages[0] != 90_000 || ages[0] < 0 || ages[0] > 10_000 {
		t.Fatalf("checkpoint ages %v; want a fresh one growing by 30000 and 90000", ages)
	}
	code, _, _ := run(t, "lag", "-c", e.config, "-o", "json", "--stale-after", "1h")
	if code != 0 {
		t.Fatalf("--stale-after 1h: exit %d, want 0", code)
	}
}

func TestWatchWritesJSONLines(t *testing.T) {
	e := newEnv(t, "")
	topic := testkit.Name("w")
	e.CreateTopic(t, "us-east", topic, 1, nil)
	e.Produce(t, "us-east", &kgo.Record{Topic: topic, Value: []byte("a")}, &kgo.Record{Topic: topic, Value: []byte("b")})
	code, stdout, stderr := run(t, "lag", "-c", e.config, "--watch", "--interval", "10ms", "--count", "3", "--max-records", "1")
	if code != 3 {
		t.Fatalf("exit %d, want 3 (2 behind > 1): %s", code, stderr)
	}
	sc := bufio.NewScanner(strings.NewReader(stdout))
	n := 0
	for sc.Scan() {
		n++
		res := decode(t, sc.Text())
		if res.SchemaVersion != 1 || len(res.Flows) != 1 || res.Flows[0].Partitions[0].RecordsBehind != 2 || res.Flows[0].Partitions[0].From != lagengine.FromNone || len(res.Breaches) != 1 {
			t.Errorf("line %d: %s", n, sc.Text())
		}
	}
	if n != 3 {
		t.Fatalf("%d JSON lines, want 3:\n%s", n, stdout)
	}
}

func TestFlags(t *testing.T) {
	tests := []struct {
		args    string
		wantErr string
		check   func(*lag.Options) bool
	}{
		{args: "", check: func(o *lag.Options) bool { return o.MaxRecords == -1 && o.Interval == 2*time.Second && !o.Watch }},
		{args: "--max-records 0 --max-latency 30s --stale-after 2m --group a --group b --source us-east --target eu-west",
			check: func(o *lag.Options) bool {
				return o.MaxRecords == 0 && o.MaxLatency == 30*time.Second && o.StaleAfter == 2*time.Minute && fmt.Sprint(o.Groups) == "[a b]" && o.Source == "us-east"
			}},
		{args: "--watch --interval 5s --count 2", check: func(o *lag.Options) bool { return o.Watch && o.Interval == 5*time.Second && o.Count == 2 }},
		{args: "--max-records -1", wantErr: "--max-records -1: must be 0 or more"},
		{args: "--max-latency 0s", wantErr: "--max-latency 0s: must be positive"},
		{args: "--interval 1s", wantErr: "--interval and --count need --watch"},
		{args: "--watch --interval 0s", wantErr: "--interval 0s: must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			ios, _, _, _ := iostreams.Test()
			var got *lag.Options
			cmd := lag.NewCmdLag(&cmdutil.Factory{IO: ios}, func(o *lag.Options) error { got = o; return nil })
			cmd.SetArgs(strings.Fields(tt.args))
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			err := cmd.Execute()
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !tt.check(got) {
				t.Fatalf("error %v, options %+v", err, got)
			}
		})
	}
}

func TestTableOutput(t *testing.T) {
	e := newEnv(t, "")
	topic := testkit.Name("t")
	e.CreateTopic(t, "us-east", topic, 1, nil)
	e.Produce(t, "us-east", &kgo.Record{Topic: topic, Value: []byte("a")})
	code, stdout, _ := run(t, "lag", "-c", e.config, "--max-records", "0")
	if code != 3 {
		t.Fatalf("exit %d, want 3", code)
	}
	want := "us-east->eu-west\tus-east." + topic + "\t0\t1\t-1\t1\t"
	if !strings.HasPrefix(stdout, want) || !strings.Contains(stdout, "\tnone\tBREACH\t\n") {
		t.Fatalf("table output %q, want a row starting %q ending none BREACH", stdout, want)
	}
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestMetricsEndpointDuringReplicate scrapes replicate --metrics-addr over
// HTTP while it runs: readiness, then the MM2 names and labels with values
// matching the records copied.
func TestMetricsEndpointDuringReplicate(t *testing.T) {
	e := newEnv(t, "emit.checkpoints.enabled = false\n")
	topic := testkit.Name("m")
	e.CreateTopic(t, "us-east", topic, 2, nil)
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		ios, _, _, _ := iostreams.Test()
		done <- cli.Run(ctx, ios, []string{"replicate", "-c", e.config, "--metrics-addr", addr}, nil)
	}()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("/readyz", func() bool { c, _ := get("/readyz"); return c == 200 })
	if c, body := get("/healthz"); c != 200 || body != "ok\n" {
		t.Fatalf("/healthz %d %q", c, body)
	}
	var recs []*kgo.Record
	bytes := map[int32]int{}
	for p := int32(0); p < 2; p++ {
		for i := 0; i < 25+int(p)*5; i++ {
			v := strings.Repeat("v", i+1)
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: []byte("key"), Value: []byte(v), Timestamp: time.Now().Add(-2 * time.Second)})
			bytes[p] += len(v)
		}
	}
	e.Produce(t, "us-east", recs...)
	labels := func(p int) string {
		return fmt.Sprintf(`{partition="%d",source="us-east",target="eu-west",topic="us-east.%s"}`, p, topic)
	}
	var body string
	waitFor("record counts", func() bool {
		_, body = get("/metrics")
		return strings.Contains(body, "kafka_connect_mirror_record_count"+labels(0)+" 25\n") &&
			strings.Contains(body, "kafka_connect_mirror_record_count"+labels(1)+" 30\n")
	})
	for p := 0; p < 2; p++ {
		for _, line := range []string{
			fmt.Sprintf("kafka_connect_mirror_byte_count%s %d\n", labels(p), bytes[int32(p)]),
			fmt.Sprintf("mirrorctl_records_behind%s 0\n", labels(p)),
		} {
			if !strings.Contains(body, line) {
				t.Errorf("/metrics lacks %q", line)
			}
		}
		for _, n := range []string{"kafka_connect_mirror_record_rate", "kafka_connect_mirror_byte_rate",
			"kafka_connect_mirror_record_age_ms", "kafka_connect_mirror_record_age_ms_min", "kafka_connect_mirror_record_age_ms_max", "kafka_connect_mirror_record_age_ms_avg",
			"kafka_connect_mirror_replication_latency_ms", "kafka_connect_mirror_replication_latency_ms_min",
			"kafka_connect_mirror_replication_latency_ms_max", "kafka_connect_mirror_replication_latency_ms_avg"} {
			v := seriesValue(body, n+labels(p))
			if v == "" {
				t.Errorf("/metrics lacks %s%s", n, labels(p))
			}
			// Records were stamped 2 s ago: ages and latencies are at least 2000 ms.
			if strings.Contains(n, "_ms") {
				var f float64
				fmt.Sscan(v, &f)
				if f < 2000 || f > 60000 {
					t.Errorf("%s%s = %s, want 2000..60000", n, labels(p), v)
				}
			}
		}
	}
	if !strings.Contains(body, `mirrorctl_flow_up{source="us-east",target="eu-west"} 1`) {
		t.Errorf("/metrics lacks mirrorctl_flow_up 1")
	}
	c, status := get("/status")
	if c != 200 || !strings.Contains(status, `"ready": true`) || !strings.Contains(status, `"records": 30`) {
		t.Errorf("/status %d %s", c, status)
	}
	cancel()
	select {
	case code := <-done:
		if code != 130 {
			t.Errorf("replicate exit %d, want 130", code)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("replicate did not stop")
	}
}

func seriesValue(body, series string) string {
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, series+" ") {
			return strings.TrimPrefix(line, series+" ")
		}
	}
	return ""
}

func flowsOf(cfg *config.Config) []replicate.FlowConfig {
	var out []replicate.FlowConfig
	for _, f := range cfg.EnabledFlows() {
		out = append(out, cmdutil.FlowConfig(cfg, f))
	}
	return out
}

// An idle group (its checkpoint matches its source commit) never breaches
// --stale-after however old its checkpoint is; a group that moved past its
// checkpoint does once the move is older than the bound; an unknown
// --group exits 3.
func TestStaleAfterJudgesWhatCheckpointsReflect(t *testing.T) {
	e := newEnv(t, "")
	topic := testkit.Name("events")
	idle, moved := testkit.Name("g-idle"), testkit.Name("g-moved")
	e.CreateTopic(t, "us-east", topic, 1, nil)
	var recs []*kgo.Record
	for i := 0; i < 30; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte("e")})
	}
	e.Produce(t, "us-east", recs...)
	east := kadm.NewClient(e.Client(t, "us-east"))
	for _, g := range []string{idle, moved} {
		if _, err := east.CommitOffsets(context.Background(), g, kadm.OffsetsFromRecords(kgo.Record{Topic: topic, Partition: 0, Offset: 19})); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, stderr := run(t, "replicate", "-c", e.config, "--once"); code != 0 {
		t.Fatalf("replicate exit %d: %s", code, stderr)
	}
	if _, err := east.CommitOffsets(context.Background(), moved, kadm.OffsetsFromRecords(kgo.Record{Topic: topic, Partition: 0, Offset: 24})); err != nil {
		t.Fatal(err)
	}
	opts, _ := e.options(t, time.Now().Add(time.Hour))
	opts.StaleAfter = time.Minute
	clients, _ := opts.Clients()
	cfg, _ := opts.Config()
	res, err := lag.Collect(context.Background(), opts, clients, flowsOf(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Breaches) != 1 || res.Breaches[0].Subject != "group "+moved || res.Breaches[0].Check != lagengine.CheckStaleAfter {
		t.Fatalf("breaches %+v; want only the group that moved past its hour-old checkpoint", res.Breaches)
	}
	if res.Flows[0].NewestCheckpointAgeMs == nil || *res.Flows[0].NewestCheckpointAgeMs < 3_000_000 {
		t.Fatalf("newest checkpoint age %v", res.Flows[0].NewestCheckpointAgeMs)
	}
	code, stdout, stderr := run(t, "lag", "-c", e.config, "--group", "no-such-group")
	if code != 3 || !strings.Contains(stderr, "group no-such-group has no checkpoint in flow us-east->eu-west") {
		t.Fatalf("unknown group: exit %d %s", code, stderr)
	}
	// Its row says so: never "ok" beside an exit of 3.
	if !strings.Contains(stdout, "\tno-such-group\t-\t0\tno checkpoint\n") {
		t.Fatalf("unknown group's row:\n%s", stdout)
	}
	if _, stdout, _ := run(t, "lag", "-c", e.config, "--group", "no-such-group", "--stale-after", "5m"); !strings.Contains(stdout, "\tno-such-group\t-\t0\tno checkpoint, BREACH\n") {
		t.Fatalf("unknown group's row with --stale-after:\n%s", stdout)
	}
	if code, _, stderr := run(t, "lag", "-c", e.config, "--group", idle); code != 0 {
		t.Fatalf("known group: exit %d %s", code, stderr)
	}
}
