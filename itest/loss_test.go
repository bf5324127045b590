//go:build kafka

package itest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/cli"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	lagengine "github.com/mirrorctl/mirrorctl/lag"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// The loss cases of the data-integrity issue, on the real brokers, where the
// broker's behaviour matters (DeleteRecords, topic IDs, partition growth,
// max.message.bytes). Each checks the records on the target and the report:
// exit code, the line naming topic, partition and offsets, and `lag`.

// lossFlow writes a config mirroring only topic, in its own group.
func lossFlow(t *testing.T, topic, extra string) string {
	t.Helper()
	return plainConfig(t, fmt.Sprintf(`us-east->eu-west.topics = %[1]s
us-east->eu-west.mirrorctl.group.id = mirrorctl-%[1]s
emit.heartbeats.enabled = false
emit.checkpoints.enabled = false
%[2]s`, topic, extra))
}

// numberedRecs returns records v<from>..v<to-1> for one partition.
func numberedRecs(topic string, partition int32, from, to int) []*kgo.Record {
	out := make([]*kgo.Record, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, &kgo.Record{Topic: topic, Partition: partition, Value: []byte(fmt.Sprintf("v%06d", i))})
	}
	return out
}

// valuesOf reads topic's partition p on bootstrap (read_committed) and
// returns its values, large ones as "big".
func valuesOf(ctx context.Context, t *testing.T, bootstrap, topic string, p int32) []string {
	t.Helper()
	recs, err := readAll(ctx, bootstrap, topic)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, r := range byPartition(recs)[p] {
		if len(r.Value) > 64 {
			out = append(out, "big")
		} else {
			out = append(out, string(r.Value))
		}
	}
	return out
}

// want returns the values v<from>..v<to-1>.
func want(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("v%06d", i))
	}
	return out
}

func assertValues(ctx context.Context, t *testing.T, bootstrap, topic string, p int32, wantVals []string) {
	t.Helper()
	got := valuesOf(ctx, t, bootstrap, topic, p)
	if strings.Join(got, ",") != strings.Join(wantVals, ",") {
		t.Fatalf("%s[%d] holds %d records %s, want %d %s", topic, p, len(got), abbrev(got), len(wantVals), abbrev(wantVals))
	}
}

func abbrev(vals []string) string {
	if len(vals) <= 6 {
		return fmt.Sprint(vals)
	}
	return fmt.Sprintf("[%s ... %s]", strings.Join(vals[:3], " "), strings.Join(vals[len(vals)-3:], " "))
}

// lagPartition runs `lag -o json` and returns the partition's row.
func lagPartition(t *testing.T, cfg, topic string, p int32) lagengine.PartitionLag {
	t.Helper()
	_, out, stderr := mirrorctl(t, "lag", "-c", cfg, "-o", "json")
	var doc struct {
		Flows []lagengine.FlowLag `json:"flows"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("lag -o json: %v\n%s\n%s", err, out, stderr)
	}
	for _, f := range doc.Flows {
		for _, pl := range f.Partitions {
			if pl.SourceTopic == topic && pl.Partition == p {
				return pl
			}
		}
	}
	t.Fatalf("lag lists no %s[%d]:\n%s", topic, p, out)
	return lagengine.PartitionLag{}
}

// background runs `mirrorctl replicate` in-process until the returned stop
// is called; stop returns its exit code and stderr.
func background(t *testing.T, args ...string) (stop func() (int, string)) {
	t.Helper()
	ios, _, _, errOut := iostreams.Test()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- cli.Run(ctx, ios, args, nil) }()
	stopped, code := false, 0
	stop = func() (int, string) {
		if !stopped {
			stopped = true
			cancel()
			select {
			case code = <-done:
			case <-time.After(time.Minute):
				t.Errorf("replicate did not stop within a minute")
				code = -1
			}
		}
		return code, errOut.String()
	}
	t.Cleanup(func() { stop() })
	return stop
}

// lossCase is one loss test's setting: a fresh source topic on us-east
// (partitions, topic configs), the name of its remote topic, a producer
// (manual partitioner) and admin on us-east, and the clusters' addresses.
type lossCase struct {
	ctx           context.Context
	east, west    string
	topic, remote string
	cl            *kgo.Client
	adm           *kadm.Client
}

func newLossCase(t *testing.T, prefix string, partitions int32, configs map[string]*string, opts ...kgo.Opt) lossCase {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	c := lossCase{ctx: ctx, east: mustEnv(t, "MIRRORCTL_KAFKA_US_EAST"), west: mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST"), topic: prefix + "-" + uniq(t)}
	c.remote = usEast + "." + c.topic
	c.cl = newClient(t, c.east, append([]kgo.Opt{kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
	c.adm = kadm.NewClient(c.cl)
	if _, err := c.adm.CreateTopic(ctx, partitions, 1, configs, c.topic); err != nil {
		t.Fatal(err)
	}
	return c
}

// Records deleted on the source (DeleteRecords, as retention does) before
// they were copied: `--once` exits 3 naming the missing range, copies on from
// the new log start, and `lag` says gap with the count.
func TestRetentionGapOnRealKafka(t *testing.T) {
	c := newLossCase(t, "gap", 1, nil)
	ctx, west, topic, remote, cl, adm := c.ctx, c.west, c.topic, c.remote, c.cl, c.adm
	cfg := lossFlow(t, topic, "")
	produceAll(ctx, t, cl, numberedRecs(topic, 0, 0, 100))
	if code, _, stderr := mirrorctl(t, "replicate", "--once", "-c", cfg); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	produceAll(ctx, t, cl, numberedRecs(topic, 0, 100, 300))
	var o kadm.Offsets
	o.Add(kadm.Offset{Topic: topic, Partition: 0, At: 250})
	res, err := adm.DeleteRecords(ctx, o)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("DeleteRecords: %v", err)
	}
	code, _, stderr := mirrorctl(t, "replicate", "--once", "-c", cfg)
	line := fmt.Sprintf("%s[0]: gap: source offsets 100 to 249 (150 records) not copied", topic)
	if code != 3 || !strings.Contains(stderr, line) {
		t.Fatalf("exit %d, want 3 with %q:\n%s", code, line, stderr)
	}
	assertValues(ctx, t, west, remote, 0, append(want(0, 100), want(250, 300)...))
	pl := lagPartition(t, cfg, topic, 0)
	if pl.State != lagengine.StateGap || pl.Skipped != 150 || pl.Loss == nil || pl.Loss.From != 100 || pl.Loss.To != 250 || pl.RecordsBehind != 0 {
		t.Fatalf("lag %+v, want state gap, 150 skipped (100 to 250), none behind", pl)
	}
	t.Logf("reported: %s; lag state %s, skipped %d", line, pl.State, pl.Skipped)
}

// A source topic deleted and created again (a new topic ID): the next run
// stops the partition naming the old ID and the way out, copies nothing of
// the new topic (its first records are not skipped as "already copied");
// with mirrorctl.source.recreated = copy-from-start the new topic is
// appended from its start.
func TestSourceTopicRecreatedOnRealKafka(t *testing.T) {
	c := newLossCase(t, "recreate", 1, nil)
	ctx, east, west, topic, remote, cl, adm := c.ctx, c.east, c.west, c.topic, c.remote, c.cl, c.adm
	cfg := lossFlow(t, topic, "")
	produceAll(ctx, t, cl, numberedRecs(topic, 0, 0, 50))
	if code, _, stderr := mirrorctl(t, "replicate", "--once", "-c", cfg); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	td, err := adm.ListTopics(ctx, topic)
	if err != nil || td[topic].Err != nil {
		t.Fatalf("describe %s: %v %v", topic, err, td[topic].Err)
	}
	oldID := td[topic].ID.String()
	if _, err := adm.DeleteTopics(ctx, topic); err != nil {
		t.Fatal(err)
	}
	pollUntil(ctx, t, time.Minute, "the topic created again", func(ctx context.Context) (bool, string) {
		r, err := adm.CreateTopic(ctx, 1, 1, nil, topic)
		if err == nil {
			err = r.Err
		}
		return err == nil, fmt.Sprint(err)
	})
	// 80 records: more than the saved position (50), so a mirror that only
	// compared offsets would skip the first 50 of them. (A fresh producer:
	// kgo keeps a topic's first ID for good.)
	produceAll(ctx, t, newClient(t, east, kgo.RecordPartitioner(kgo.ManualPartitioner())), numberedRecs(topic, 0, 100, 180))
	code, _, stderr := mirrorctl(t, "replicate", "--once", "-c", cfg)
	if code != 3 || !strings.Contains(stderr, topic+"[0]") || !strings.Contains(stderr, oldID) || !strings.Contains(stderr, "mirrorctl.source.recreated = copy-from-start") {
		t.Fatalf("run after the recreation: exit %d, want 3 naming %s[0], the old ID %s and the way out:\n%s", code, topic, oldID, stderr)
	}
	assertValues(ctx, t, west, remote, 0, want(0, 50))
	if pl := lagPartition(t, cfg, topic, 0); pl.State != lagengine.StateStopped {
		t.Fatalf("lag %+v, want state stopped", pl)
	}
	cfg = lossFlow(t, topic, "mirrorctl.source.recreated = copy-from-start\n")
	if code, _, stderr := mirrorctl(t, "replicate", "--once", "-c", cfg); code != 0 {
		t.Fatalf("copy-from-start run: exit %d: %s", code, stderr)
	}
	assertValues(ctx, t, west, remote, 0, append(want(0, 50), want(100, 180)...))
}

// Partitions added to a source topic while replicate runs are created on the
// target and copied without a restart, in order, once.
func TestPartitionGrowthOnRealKafka(t *testing.T) {
	c := newLossCase(t, "grow", 2, nil)
	ctx, east, west, topic, remote, cl, adm := c.ctx, c.east, c.west, c.topic, c.remote, c.cl, c.adm
	cfg := lossFlow(t, topic, "refresh.topics.interval.seconds = 1\n")
	produceAll(ctx, t, cl, append(numberedRecs(topic, 0, 0, 100), numberedRecs(topic, 1, 0, 100)...))
	stop := background(t, "replicate", "-c", cfg)
	wcl := kadm.NewClient(newClient(t, west))
	ends := func(ctx context.Context) map[int32]int64 {
		out := map[int32]int64{}
		if l, err := wcl.ListEndOffsets(ctx, remote); err == nil {
			l.Each(func(o kadm.ListedOffset) {
				if o.Err == nil {
					out[o.Partition] = o.Offset
				}
			})
		}
		return out
	}
	pollUntil(ctx, t, time.Minute, "the first records copied", func(ctx context.Context) (bool, string) {
		e := ends(ctx)
		return e[0] == 100 && e[1] == 100, fmt.Sprint(e)
	})
	if _, err := adm.CreatePartitions(ctx, 2, topic); err != nil {
		t.Fatal(err)
	}
	grown := time.Now()
	// kgo learns of new partitions only at its periodic metadata refresh:
	// a fresh producer, once the broker's metadata lists them.
	var grownCl *kgo.Client
	pollUntil(ctx, t, time.Minute, "a producer sees 4 partitions", func(ctx context.Context) (bool, string) {
		c, err := kgo.NewClient(kgo.SeedBrokers(east), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err == nil {
			if err = c.ProduceSync(ctx, numberedRecs(topic, 2, 0, 1)...).FirstErr(); err == nil {
				grownCl = c
				t.Cleanup(c.Close)
				return true, ""
			}
			c.Close()
		}
		return false, fmt.Sprint(err)
	})
	produceAll(ctx, t, grownCl, append(append(numberedRecs(topic, 2, 1, 50), numberedRecs(topic, 3, 0, 30)...), numberedRecs(topic, 0, 100, 120)...))
	pollUntil(ctx, t, 2*time.Minute, "the new partitions copied", func(ctx context.Context) (bool, string) {
		e := ends(ctx)
		return e[0] == 120 && e[1] == 100 && e[2] == 50 && e[3] == 30, fmt.Sprint(e)
	})
	t.Logf("new partitions copied %v after they were added (refresh.topics.interval.seconds 1)", time.Since(grown).Round(10*time.Millisecond))
	code, stderr := stop()
	if code != 130 && code != 0 {
		t.Fatalf("replicate: exit %d: %s", code, stderr)
	}
	if strings.Contains(stderr, "invalid record partitioning") || strings.Contains(stderr, "stopped") {
		t.Fatalf("a partition stopped:\n%s", stderr)
	}
	for p, n := range map[int32]int{0: 120, 1: 100, 2: 50, 3: 30} {
		assertValues(ctx, t, west, remote, p, want(0, n))
	}
}

// A record over the remote topic's max.message.bytes: the partition stops at
// it before anything after it is sent (the target holds what came before),
// `--once` exits 3 naming the record; once the limit is raised the next run
// resumes at the refused record: order kept, nothing twice.
func TestRefusedRecordOnRealKafka(t *testing.T) {
	big := "4000000"
	c := newLossCase(t, "refused", 1, map[string]*string{"max.message.bytes": &big}, kgo.ProducerBatchMaxBytes(4_000_000))
	ctx, west, topic, remote, cl := c.ctx, c.west, c.topic, c.remote, c.cl
	small := "100000"
	wadm := kadm.NewClient(newClient(t, west))
	if _, err := wadm.CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": &small}, remote); err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 1_500_000) // incompressible
	if _, err := rand.Read(payload); err != nil {
		t.Fatal(err)
	}
	for _, v := range [][]byte{[]byte("a0"), payload, []byte("a1"), []byte("a2"), []byte("a3")} {
		produceAll(ctx, t, cl, []*kgo.Record{{Topic: topic, Value: bytes.Clone(v)}})
	}
	cfg := lossFlow(t, topic, "sync.topic.configs.enabled = false\n")
	code, _, stderr := mirrorctl(t, "replicate", "--once", "-c", cfg)
	if code != 3 || !strings.Contains(stderr, topic+"[0] offset 1") || !strings.Contains(stderr, "max.message.bytes") {
		t.Fatalf("exit %d, want 3 naming %s[0] offset 1 and the limit:\n%s", code, topic, stderr)
	}
	assertValues(ctx, t, west, remote, 0, []string{"a0"})
	if pl := lagPartition(t, cfg, topic, 0); pl.State != lagengine.StateStopped || pl.Loss == nil || pl.Loss.From != 1 {
		t.Fatalf("lag %+v, want stopped at offset 1", pl)
	}
	if _, err := wadm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: &big}}, remote); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := mirrorctl(t, "replicate", "--once", "-c", cfg); code != 0 {
		t.Fatalf("run after raising the limit: exit %d: %s", code, stderr)
	}
	assertValues(ctx, t, west, remote, 0, []string{"a0", "big", "a1", "a2", "a3"})
}

// The remote topic deleted while replicate runs: the partition reports it
// (target-recreated, in the log and in lag) and refills the topic, recreated
// by the flow leader, from the source log start without a restart.
func TestRemoteTopicDeletedWhileRunningOnRealKafka(t *testing.T) {
	c := newLossCase(t, "tgtgone", 1, nil)
	ctx, west, topic, remote, cl := c.ctx, c.west, c.topic, c.remote, c.cl
	cfg := lossFlow(t, topic, "refresh.topics.interval.seconds = 1\n")
	produceAll(ctx, t, cl, numberedRecs(topic, 0, 0, 200))
	stop := background(t, "replicate", "-c", cfg)
	wadm := kadm.NewClient(newClient(t, west))
	end := func(ctx context.Context) (int64, error) {
		l, err := wadm.ListEndOffsets(ctx, remote)
		if err != nil {
			return -1, err
		}
		o, ok := l.Lookup(remote, 0)
		if !ok {
			return -1, errors.New("no partition 0")
		}
		return o.Offset, o.Err
	}
	pollUntil(ctx, t, time.Minute, "the first records copied", func(ctx context.Context) (bool, string) {
		n, err := end(ctx)
		return n == 200, fmt.Sprintf("%d, %v", n, err)
	})
	topicID := func(ctx context.Context) (kadm.TopicID, error) {
		td, err := wadm.ListTopics(ctx, remote)
		if err != nil {
			return kadm.TopicID{}, err
		}
		d, ok := td[remote]
		if !ok {
			return kadm.TopicID{}, kerr.UnknownTopicOrPartition
		}
		return d.ID, d.Err
	}
	oldID, err := topicID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wadm.DeleteTopics(ctx, remote); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	// Gone, or already recreated by the flow leader under a new topic ID:
	// refresh.topics.interval.seconds = 1 can recreate it between two polls.
	pollUntil(ctx, t, time.Minute, "the remote topic deleted", func(ctx context.Context) (bool, string) {
		id, err := topicID(ctx)
		return errors.Is(err, kerr.UnknownTopicOrPartition) || err == nil && id != oldID, fmt.Sprintf("topic ID %v (was %v), %v", id, oldID, err)
	})
	produceAll(ctx, t, cl, numberedRecs(topic, 0, 200, 300))
	pollUntil(ctx, t, 2*time.Minute, "the remote topic refilled", func(ctx context.Context) (bool, string) {
		n, err := end(ctx)
		return n == 300, fmt.Sprintf("%d, %v", n, err)
	})
	t.Logf("refilled %v after the deletion", time.Since(deleted).Round(10*time.Millisecond))
	pollUntil(ctx, t, time.Minute, "lag says target-recreated", func(ctx context.Context) (bool, string) {
		pl := lagPartition(t, cfg, topic, 0)
		return pl.State == "target-recreated" && pl.RecordsBehind == 0, fmt.Sprintf("%+v", pl)
	})
	code, stderr := stop()
	if code != 130 && code != 0 {
		t.Fatalf("replicate: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "target-recreated") || !strings.Contains(stderr, remote) {
		t.Fatalf("no target-recreated report naming %s:\n%s", remote, stderr)
	}
	assertValues(ctx, t, west, remote, 0, want(0, 300))
}

// The remote topic deleted after source retention removed every record it
// mirrored (the source log start is where the mirror stopped): 1,000
// mirrored records are gone and none can be copied again. `--once` used to
// exit 0 with "errors": [] and no log line; now it exits 3 with a
// target-recreated event counting them lost (in -o json's errors, the log
// and `lag`), and the next run, with the remote partition as the progress
// now says it is, exits 0.
func TestRemoteTopicDeletedAfterRetentionOnRealKafka(t *testing.T) {
	c := newLossCase(t, "tgtgoneret", 1, nil)
	ctx, west, topic, remote, cl, adm := c.ctx, c.west, c.topic, c.remote, c.cl, c.adm
	cfg := lossFlow(t, topic, "")
	produceAll(ctx, t, cl, numberedRecs(topic, 0, 0, 1000))
	if code, _, stderr := mirrorctl(t, "replicate", "--once", "-c", cfg); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	var o kadm.Offsets
	o.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1000})
	res, err := adm.DeleteRecords(ctx, o)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("DeleteRecords: %v", err)
	}
	wadm := kadm.NewClient(newClient(t, west))
	dres, err := wadm.DeleteTopics(ctx, remote)
	if err == nil {
		err = dres.Error()
	}
	if err != nil {
		t.Fatalf("delete %s: %v", remote, err)
	}
	pollUntil(ctx, t, time.Minute, "the remote topic deleted", func(ctx context.Context) (bool, string) {
		td, err := wadm.ListTopics(ctx, remote)
		if err != nil {
			return false, err.Error()
		}
		d, ok := td[remote]
		return !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition), fmt.Sprintf("%+v", d)
	})
	code, out, stderr := mirrorctl(t, "replicate", "--once", "-c", cfg, "-o", "json")
	line := fmt.Sprintf("%s[0]: target-recreated: 1000 mirrored records gone from %s[0], 1000 of them lost", topic, remote)
	var doc struct {
		Errors []string `json:"errors"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("replicate -o json: %v\n%s", err, out)
	}
	if code != 3 || len(doc.Errors) != 1 || !strings.Contains(doc.Errors[0], line) || !strings.Contains(stderr, "kind=target-recreated") {
		t.Fatalf("exit %d, errors %q; want 3 with %q and an ERROR line:\n%s", code, doc.Errors, line, stderr)
	}
	if got := valuesOf(ctx, t, west, remote, 0); len(got) != 0 {
		t.Fatalf("remote holds %d records, want none", len(got))
	}
	pl := lagPartition(t, cfg, topic, 0)
	if pl.State != string(replicate.LossTargetRecreated) || pl.Skipped != 1000 || pl.Loss == nil || pl.Loss.Count != 1000 || pl.Loss.Gone != 1000 {
		t.Fatalf("lag %+v (loss %+v), want target-recreated, 1000 gone and skipped", pl, pl.Loss)
	}
	if code, _, stderr := mirrorctl(t, "replicate", "--once", "-c", cfg); code != 0 {
		t.Fatalf("next run: exit %d, want 0 (reported once): %s", code, stderr)
	}
	t.Logf("reported: %s; lag state %s, skipped %d", line, pl.State, pl.Skipped)
}
