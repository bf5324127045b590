package lag_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/cli/lag"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/testkit"
	lagengine "github.com/mirrorctl/mirrorctl/lag"
	"github.com/mirrorctl/mirrorctl/replicate"
	"github.com/mirrorctl/mirrorctl/replicate/policy"
	"github.com/mirrorctl/mirrorctl/replicate/progress"
)

// TestTrailingTransactionMarkerIsNotBehind: the source partition holds a
// committed transaction, two records and its commit marker (end offset 3);
// the progress says offsets 0..1 are on the target (next 2). The marker is no
// record to copy: lag reports 0 records and 0 ms behind, and gates with
// --max-records 0 --max-latency 1s pass (before: 1 behind, time behind
// unknown after the fetch timeout, both gates breached).
func TestTrailingTransactionMarkerIsNotBehind(t *testing.T) {
	e := newEnv(t, "")
	topic := testkit.Name("orders")
	e.CreateTopic(t, testkit.East, topic, 1, nil)
	e.CreateTopic(t, testkit.West, testkit.East+"."+topic, 1, nil)
	ptopic := replicate.ProgressTopic(policy.NewDefault(".", true), testkit.East)
	e.CreateTopic(t, testkit.West, ptopic, 1, nil)

	txn := e.Client(t, testkit.East, kgo.TransactionalID(testkit.Name("txn")), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := testkit.Context(t)
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"a1", "a2"} {
		if err := txn.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	e.Produce(t, testkit.West, &kgo.Record{Topic: testkit.East + "." + topic, Value: []byte("a1")}, &kgo.Record{Topic: testkit.East + "." + topic, Value: []byte("a2")})
	k, v := progress.Encode(progress.Key{Topic: topic, Partition: 0}, 2, time.Now())
	e.Produce(t, testkit.West, &kgo.Record{Topic: ptopic, Key: k, Value: v})

	opts, _ := e.options(t, time.Now())
	opts.FetchTimeout = 2 * time.Second
	opts.MaxRecords, opts.MaxLatency = 0, time.Second
	clients, _ := opts.Clients()
	cfg, _ := opts.Config()
	res, err := lag.Collect(context.Background(), opts, clients, flowsOf(cfg))
	if err != nil {
		t.Fatal(err)
	}
	var p *lagengine.PartitionLag
	for i := range res.Flows[0].Partitions {
		if res.Flows[0].Partitions[i].SourceTopic == topic {
			p = &res.Flows[0].Partitions[i]
		}
	}
	if p == nil {
		t.Fatalf("no partition of %s in %+v", topic, res.Flows[0].Partitions)
	}
	if p.SourceEndOffset != 3 || p.ReplicatedOffset != 1 || p.RecordsBehind != 0 || p.TimeBehindMs == nil || *p.TimeBehindMs != 0 {
		t.Errorf("partition %+v: want end 3, replicated 1, 0 records and 0 ms behind", *p)
	}
	if len(res.Breaches) != 0 {
		t.Errorf("breaches %+v, want none", res.Breaches)
	}
}

// TestLagWithTheSourceDown: replicate --once copied a topic with heartbeats
// and a checkpointed group; then the source goes away. lag still reports
// the heartbeat age and the group's checkpoint from the target, lists the
// copied partition from the progress topic with its source-side figures
// unknown, warns naming the source, and exits 3 with --max-latency or
// --max-records (0 without thresholds), instead of failing outright.
func TestLagWithTheSourceDown(t *testing.T) {
	e := newEnv(t, "us-east->eu-west.emit.heartbeats.enabled = true\nemit.checkpoints.interval.seconds = 1\n")
	topic, group := testkit.Name("orders"), testkit.Name("billing")
	e.CreateTopic(t, testkit.East, topic, 1, nil)
	for i := 0; i < 5; i++ {
		e.Produce(t, testkit.East, &kgo.Record{Topic: topic, Value: []byte("v")})
	}
	e.Commit(t, testkit.East, group, map[string]map[int32]int64{topic: {0: 3}})
	if code, _, stderr := run(t, "replicate", "-c", e.config, "--once"); code != 0 {
		t.Fatalf("replicate exit %d: %s", code, stderr)
	}
	e.East.Close()

	for _, tc := range []struct {
		name     string
		set      func(*lag.Options)
		wantExit error
		checks   []string
	}{
		{"no thresholds", func(*lag.Options) {}, nil, nil},
		{"max-latency", func(o *lag.Options) { o.MaxLatency = time.Minute }, cmdutil.ErrCheckFailed, []string{lagengine.CheckMaxLatency}},
		{"max-records", func(o *lag.Options) { o.MaxRecords = 0 }, cmdutil.ErrCheckFailed, []string{lagengine.CheckMaxRecords}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, _ := e.options(t, time.Now())
			opts.FetchTimeout = 2 * time.Second
			tc.set(opts)
			ios, _, out, errOut := iostreams.Test()
			opts.IO = ios
			start := time.Now()
			err := lag.Run(context.Background(), opts)
			if !errors.Is(err, tc.wantExit) || (tc.wantExit == nil && err != nil) {
				t.Fatalf("Run = %v, want %v; stderr %s", err, tc.wantExit, errOut)
			}
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("lag took %s with the source down", took)
			}
			res := decode(t, out.String())
			fl := res.Flows[0]
			if !strings.Contains(fl.SourceError, "source us-east does not answer") {
				t.Errorf("source_error %q", fl.SourceError)
			}
			if fl.HeartbeatAgeMs == nil {
				t.Error("no heartbeat age although eu-west holds the flow's heartbeat")
			}
			var p *lagengine.PartitionLag
			for i := range fl.Partitions {
				if fl.Partitions[i].SourceTopic == topic {
					p = &fl.Partitions[i]
				}
			}
			if p == nil || !p.SourceUnknown || p.SourceEndOffset != -1 || p.RecordsBehind != -1 || p.TimeBehindMs != nil ||
				p.ReplicatedOffset != 4 || p.TargetEndOffset != 5 || p.From != lagengine.FromProgress {
				t.Errorf("partition %+v: want from progress, replicated 4, target end 5, source figures unknown", p)
			}
			if len(fl.Groups) != 1 || fl.Groups[0].Group != group || fl.Groups[0].CheckpointAgeMs == nil ||
				len(fl.Groups[0].Partitions) != 1 || fl.Groups[0].Partitions[0].CommittedOffset != -1 || fl.Groups[0].Partitions[0].UpstreamOffset != 3 {
				t.Errorf("groups %+v: want %s's checkpoint at 3 with the commit unknown", fl.Groups, group)
			}
			var got []string
			for _, b := range res.Breaches {
				if b.Subject == p.Topic+"[0]" && b.Value == -1 {
					got = append(got, b.Check)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.checks, ",") {
				t.Errorf("breaches %+v, want %v on %s[0] with value -1", res.Breaches, tc.checks, p.Topic)
			}
			if !strings.Contains(errOut.String(), "warning: flow us-east->eu-west: source us-east does not answer") {
				t.Errorf("stderr %q lacks the warning naming the source", errOut)
			}
		})
	}
}
