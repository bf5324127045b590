//go:build kafka

package itest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/cli"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
)

// mirrorctl runs the CLI in-process and returns its exit code and output.
func mirrorctl(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	code := cli.Run(ctx, ios, args, nil)
	return code, out.String(), errOut.String()
}

// plainConfig writes an mm2.properties for us-east->eu-west over PLAINTEXT,
// sized for single-node clusters, plus extra lines.
func plainConfig(t *testing.T, extra string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mm2.properties")
	writeFile(t, path, fmt.Sprintf(`clusters = us-east, eu-west
us-east.bootstrap.servers = %s
eu-west.bootstrap.servers = %s
us-east->eu-west.enabled = true
replication.factor = 1
offset-syncs.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
checkpoints.topic.replication.factor = 1
%s`, mustEnv(t, "MIRRORCTL_KAFKA_US_EAST"), mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST"), extra))
	return path
}

// shapesBase is the timestamp of record 0 in shapes: fixed for the test
// binary's run, and recent. The brokers delete by time (retention.ms, 7 days
// by default; some tests set 2 hours): records stamped with a fixed date
// aged past it with the calendar, and each retention check (every 5
// minutes) then deleted them under a running test.
var shapesBase = time.Now().Add(-time.Minute).Truncate(time.Millisecond)

// shapes returns n records per partition with headers (a repeated key, a null
// value), null keys, tombstones and explicit millisecond timestamps.
func shapes(topic string, partitions int32, from, to int) []*kgo.Record {
	base := shapesBase
	var out []*kgo.Record
	for p := int32(0); p < partitions; p++ {
		for i := from; i < to; i++ {
			r := &kgo.Record{Topic: topic, Partition: p, Key: []byte(fmt.Sprintf("k%d", i%11)),
				Value: []byte(fmt.Sprintf("p%d-%06d", p, i)), Timestamp: base.Add(time.Duration(i) * time.Millisecond)}
			switch i % 6 {
			case 1:
				r.Key = nil
			case 2:
				r.Value = nil
			case 3:
				r.Headers = []kgo.RecordHeader{{Key: "h", Value: []byte("1")}, {Key: "h", Value: []byte("2")}, {Key: "nil", Value: nil}}
			}
			out = append(out, r)
		}
	}
	return out
}

func produceAll(ctx context.Context, t *testing.T, cl *kgo.Client, recs []*kgo.Record) {
	t.Helper()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

func byPartition(recs []*kgo.Record) map[int32][]*kgo.Record {
	out := map[int32][]*kgo.Record{}
	for _, r := range recs {
		out[r.Partition] = append(out[r.Partition], r)
	}
	return out
}

func sameRecord(a, b *kgo.Record) string {
	switch {
	case !bytes.Equal(a.Key, b.Key) || (a.Key == nil) != (b.Key == nil):
		return fmt.Sprintf("key %q vs %q", a.Key, b.Key)
	case !bytes.Equal(a.Value, b.Value) || (a.Value == nil) != (b.Value == nil):
		return fmt.Sprintf("value %q (nil %v) vs %q (nil %v)", a.Value, a.Value == nil, b.Value, b.Value == nil)
	case !a.Timestamp.Equal(b.Timestamp):
		return fmt.Sprintf("timestamp %v vs %v", a.Timestamp, b.Timestamp)
	case len(a.Headers) != len(b.Headers):
		return fmt.Sprintf("headers %v vs %v", a.Headers, b.Headers)
	}
	for i := range a.Headers {
		if a.Headers[i].Key != b.Headers[i].Key || !bytes.Equal(a.Headers[i].Value, b.Headers[i].Value) || (a.Headers[i].Value == nil) != (b.Headers[i].Value == nil) {
			return fmt.Sprintf("header %d %v vs %v", i, a.Headers[i], b.Headers[i])
		}
	}
	return ""
}

// assertMirrored compares every partition of topic on us-east with remote on
// eu-west, record by record, and returns the record count.
func assertMirrored(ctx context.Context, t *testing.T, east, west, topic, remote string, opts ...kgo.Opt) int {
	t.Helper()
	src, err := readAll(ctx, east, topic, opts...)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := readAll(ctx, west, remote, opts...)
	if err != nil {
		t.Fatal(err)
	}
	sp, dp := byPartition(src), byPartition(dst)
	if len(sp) != len(dp) {
		t.Fatalf("%s has %d non-empty partitions, %s has %d", remote, len(dp), topic, len(sp))
	}
	for p, srecs := range sp {
		drecs := dp[p]
		if len(drecs) != len(srecs) {
			t.Fatalf("%s[%d]: %d records, source has %d", remote, p, len(drecs), len(srecs))
		}
		for i := range srecs {
			if d := sameRecord(srecs[i], drecs[i]); d != "" {
				t.Fatalf("%s[%d] record %d differs: %s", remote, p, i, d)
			}
		}
	}
	return len(src)
}

func TestReplicateOnRealKafka(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	east, west := mustEnv(t, "MIRRORCTL_KAFKA_US_EAST"), mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST")
	topic := "orders-" + uniq(t)
	remote := "us-east." + topic
	eastCl := newClient(t, east, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	eastAdm := kadm.NewClient(eastCl)
	if _, err := eastAdm.CreateTopic(ctx, 3, 1, map[string]*string{
		"retention.ms":        kadm.StringPtr("7200000"),
		"min.insync.replicas": kadm.StringPtr("1"), // excluded by config.properties.exclude
	}, topic); err != nil {
		t.Fatal(err)
	}
	produceAll(ctx, t, eastCl, shapes(topic, 3, 0, 300))
	cfg := plainConfig(t, fmt.Sprintf("us-east->eu-west.topics = %s\nus-east->eu-west.offset.lag.max = 10\n", topic))

	if code, _, stderr := mirrorctl(t, "replicate", "--once", "-c", cfg); code != 0 {
		t.Fatalf("replicate --once: exit %d: %s", code, stderr)
	}
	if n := assertMirrored(ctx, t, east, west, topic, remote); n != 900 {
		t.Fatalf("mirrored %d records, want 900", n)
	}

	// Topic configs: copied except the excluded ones.
	westAdm := kadm.NewClient(newClient(t, west))
	rc, err := westAdm.DescribeTopicConfigs(ctx, remote)
	if err != nil || len(rc) != 1 || rc[0].Err != nil {
		t.Fatalf("describe %s: %v %v", remote, err, rc)
	}
	got := map[string]string{}
	for _, c := range rc[0].Configs {
		if c.Source == 1 { // DYNAMIC_TOPIC_CONFIG: set on the topic itself
			got[c.Key] = c.MaybeValue()
		}
	}
	if got["retention.ms"] != "7200000" {
		t.Errorf("retention.ms on %s = %q, want 7200000", remote, got["retention.ms"])
	}
	if _, ok := got["min.insync.replicas"]; ok {
		t.Errorf("min.insync.replicas was copied to %s", remote)
	}

	// Offset syncs on the source, MM2 format, upstream names, spaced by
	// offset.lag.max=10 (0, 11, 22, ...) plus the delayed last one.
	syncs, err := readOffsetSyncs(ctx, east, topic)
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 3; p++ {
		var ups []int64
		for _, s := range syncs[p] {
			if s.Topic == topic {
				ups = append(ups, s.UpstreamOffset)
				if s.UpstreamOffset != s.DownstreamOffset {
					t.Errorf("sync %v: offsets differ on an empty target", s)
				}
			}
		}
		want := []int64{0, 11, 22, 33, 44, 55, 66, 77, 88, 99, 110, 121, 132, 143, 154, 165, 176, 187, 198, 209, 220, 231, 242, 253, 264, 275, 286, 297, 299}
		if fmt.Sprint(ups) != fmt.Sprint(want) {
			t.Errorf("partition %d: syncs at %v, want %v", p, ups, want)
		}
	}

	// Partition growth on the source, then more records: a second run grows
	// the remote topic and copies each new record exactly once.
	if _, err := eastAdm.UpdatePartitions(ctx, 5, topic); err != nil {
		t.Fatal(err)
	}
	// A new client sees the new partitions in its first metadata.
	produceAll(ctx, t, newClient(t, east, kgo.RecordPartitioner(kgo.ManualPartitioner())), shapes(topic, 5, 300, 400))
	if code, _, stderr := mirrorctl(t, "replicate", "--once", "-c", cfg); code != 0 {
		t.Fatalf("second replicate --once: exit %d: %s", code, stderr)
	}
	td, err := westAdm.ListTopics(ctx, remote)
	if err != nil || len(td[remote].Partitions) != 5 {
		t.Fatalf("%s has %d partitions after growth, want 5 (%v)", remote, len(td[remote].Partitions), err)
	}
	if n := assertMirrored(ctx, t, east, west, topic, remote); n != 900+500 {
		t.Fatalf("mirrored %d records after growth, want 1400", n)
	}
}

// The same flow with both clusters over SASL_SSL with SCRAM-SHA-512 and the
// harness's CA (PEM truststore): the client factory against a real broker.
func TestReplicateOverSASLSSL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	user, pass := mustEnv(t, "MIRRORCTL_KAFKA_SCRAM_USER"), mustEnv(t, "MIRRORCTL_KAFKA_SCRAM_PASSWORD")
	ca := mustEnv(t, "MIRRORCTL_KAFKA_CA_PEM")
	east, west := mustEnv(t, "MIRRORCTL_KAFKA_US_EAST_SASL"), mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST_SASL")
	topic := "secure-" + uniq(t)
	eastCl := newClient(t, mustEnv(t, "MIRRORCTL_KAFKA_US_EAST"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if _, err := kadm.NewClient(eastCl).CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	produceAll(ctx, t, eastCl, shapes(topic, 2, 0, 50))
	path := filepath.Join(t.TempDir(), "mm2.properties")
	security := func(alias, bootstrap string) string {
		return fmt.Sprintf(`%[1]s.bootstrap.servers = %[2]s
%[1]s.security.protocol = SASL_SSL
%[1]s.sasl.mechanism = SCRAM-SHA-512
%[1]s.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required \
  username="%[3]s" password="${env:ITEST_SCRAM_PASSWORD}";
%[1]s.ssl.truststore.type = PEM
%[1]s.ssl.truststore.location = %[4]s
`, alias, bootstrap, user, ca)
	}
	writeFile(t, path, "clusters = us-east, eu-west\n"+security("us-east", east)+security("eu-west", west)+
		"config.providers = env\nconfig.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider\n"+
		"us-east->eu-west.enabled = true\nus-east->eu-west.topics = "+topic+"\n"+
		"replication.factor = 1\noffset-syncs.topic.replication.factor = 1\nheartbeats.topic.replication.factor = 1\n")
	t.Setenv("ITEST_SCRAM_PASSWORD", pass)
	code, stdout, stderr := mirrorctl(t, "replicate", "--once", "-vv", "-c", path)
	if code != 0 {
		t.Fatalf("replicate over SASL_SSL: exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout+stderr, pass) {
		t.Fatal("the SCRAM password appeared in mirrorctl's output or logs")
	}
	if n := assertMirrored(ctx, t, mustEnv(t, "MIRRORCTL_KAFKA_US_EAST"), mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST"), topic, "us-east."+topic); n != 100 {
		t.Fatalf("mirrored %d, want 100", n)
	}
}

// kill -9 of a running `mirrorctl replicate` on real brokers, then a restart:
// nothing lost, order kept, only records after the last progress write
// copied again.
func TestKill9OnRealKafka(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "mirrorctl")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/mirrorctl").CombinedOutput(); err != nil {
		t.Fatalf("build mirrorctl: %v\n%s", err, out)
	}
	east, west := mustEnv(t, "MIRRORCTL_KAFKA_US_EAST"), mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST")
	topic := "crash-" + uniq(t)
	eastCl := newClient(t, east, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if _, err := kadm.NewClient(eastCl).CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	cfg := plainConfig(t, "us-east->eu-west.topics = "+topic+"\nemit.heartbeats.enabled = false\n")
	cmd := exec.Command(bin, "replicate", "-c", cfg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	n := 0
	westAdm := kadm.NewClient(newClient(t, west))
	deadline := time.Now().Add(90 * time.Second)
	progressed := func() bool {
		ends, err := westAdm.ListEndOffsets(ctx, "mirrorctl-progress.us-east.internal")
		o, ok := ends.Lookup("mirrorctl-progress.us-east.internal", 0)
		return err == nil && ok && o.Err == nil && o.Offset >= 2
	}
	// Produce in steps until progress has been written for this topic's copy.
	for start := time.Now(); !progressed() || time.Since(start) < 3*time.Second; {
		var recs []*kgo.Record
		for p := int32(0); p < 2; p++ {
			for i := n; i < n+500; i++ {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("p%d-%07d", p, i))})
			}
		}
		produceAll(ctx, t, eastCl, recs)
		n += 500
		if time.Now().After(deadline) {
			t.Fatalf("no progress within 90s; mirrorctl stderr: %s", stderr.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if code, _, errOut := mirrorctl(t, "replicate", "--once", "-c", cfg); code != 0 {
		t.Fatalf("resume: exit %d: %s", code, errOut)
	}
	dst, err := readAll(ctx, west, "us-east."+topic)
	if err != nil {
		t.Fatal(err)
	}
	for p, got := range byPartition(dst) {
		k := 0
		for k < len(got) && k < n && string(got[k].Value) == fmt.Sprintf("p%d-%07d", p, k) {
			k++
		}
		j := n - (len(got) - k)
		if j < 0 || j > k {
			t.Fatalf("partition %d: %d records on the target for %d produced, intact prefix %d: lost or invented records", p, len(got), n, k)
		}
		for i := k; i < len(got); i++ {
			if want := fmt.Sprintf("p%d-%07d", p, j+i-k); string(got[i].Value) != want {
				t.Fatalf("partition %d record %d = %s, want %s", p, i, got[i].Value, want)
			}
		}
		t.Logf("partition %d: %d produced, %d copied before the kill, %d copied twice", p, n, k, k-j)
	}
	_ = os.Remove(bin)
}
