package replicate_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// A three-cluster IdentityReplicationPolicy ring split over three configs
// (three teams, three processes): no file shows the ring, so config validate
// cannot refuse it. With the provenance header on one flow (a->b), the flow
// that closes the ring (c->a) stops the partition at the first copy that
// came from a, exit 3 naming kind ring, and a holds its 100 records only.
// Without the header the same run copies a's records back onto a.
func TestRingAcrossConfigsStops(t *testing.T) {
	for _, header := range []bool{true, false} {
		t.Run(fmt.Sprintf("header=%v", header), func(t *testing.T) {
			dir := t.TempDir()
			addrs := map[string]string{}
			for _, a := range []string{"a", "b", "c"} {
				c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.ClusterID(testkit.Name("ring-"+a)))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(c.Close)
				addrs[a] = strings.Join(c.ListenAddrs(), ",")
			}
			topic := testkit.Name("y")
			client := func(alias string) *kgo.Client {
				cl, err := kgo.NewClient(kgo.SeedBrokers(addrs[alias]), kgo.RecordPartitioner(kgo.ManualPartitioner()))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(cl.Close)
				return cl
			}
			a := client("a")
			ctx := context.Background()
			if _, err := kadm.NewClient(a).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
				t.Fatal(err)
			}
			config := func(src, tgt string, stamp bool) string {
				s := fmt.Sprintf("clusters = %s, %s\n%s.bootstrap.servers = %s\n%s.bootstrap.servers = %s\n%s->%s.enabled = true\n%s->%s.topics = %s\n",
					src, tgt, src, addrs[src], tgt, addrs[tgt], src, tgt, src, tgt, topic) +
					"replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n" +
					"replication.factor = 1\noffset-syncs.topic.replication.factor = 1\nheartbeats.topic.replication.factor = 1\n" +
					"checkpoints.topic.replication.factor = 1\n"
				if stamp {
					s += fmt.Sprintf("%s->%s.mirrorctl.provenance.header.enabled = true\n", src, tgt)
				}
				f := filepath.Join(dir, src+"-"+tgt+".properties")
				if err := os.WriteFile(f, []byte(s), 0o600); err != nil {
					t.Fatal(err)
				}
				return f
			}
			files := map[string]string{"a": config("a", "b", header), "b": config("b", "c", false), "c": config("c", "a", false)}
			// The three flows run (each once) while the topic is empty, as
			// three teams' mirrors would be running when records arrive.
			for _, src := range []string{"a", "b", "c"} {
				if code, _, stderr := run(t, "replicate", "--once", "-c", files[src]); code != 0 {
					t.Fatalf("%s: first run: exit %d: %s", src, code, stderr)
				}
			}
			var recs []*kgo.Record
			for i := 0; i < 100; i++ {
				recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("v%03d", i)),
					Headers: []kgo.RecordHeader{{Key: "app", Value: []byte("orders")}}})
			}
			if err := a.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			for _, src := range []string{"a", "b"} {
				if code, _, stderr := run(t, "replicate", "--once", "-c", files[src]); code != 0 {
					t.Fatalf("%s: exit %d: %s", src, code, stderr)
				}
			}
			code, _, stderr := run(t, "replicate", "--once", "-c", files["c"])
			onA := countRecords(t, a, topic)
			if !header {
				// What the header prevents: a's records written back onto a.
				if code != 0 || onA != 200 {
					t.Fatalf("without the header: exit %d, %d records on a (want 0 and 200): %s", code, onA, stderr)
				}
				return
			}
			want := fmt.Sprintf("%s[0]: ring at source offset 0", topic)
			if code != 3 || !strings.Contains(stderr, want) || !strings.Contains(stderr, replicate.OriginHeader) || !strings.Contains(stderr, "partition stopped") {
				t.Fatalf("c->a: exit %d, stderr %s; want 3 naming %q", code, stderr, want)
			}
			if onA != 100 {
				t.Fatalf("a holds %d records of %s, want its own 100", onA, topic)
			}
			// b and c hold the copies, stamped with a's cluster ID once, the
			// record's own header kept first.
			c := client("c")
			fetched := readAll(t, c, topic, 100)
			if h := fetched[0].Headers; len(h) != 2 || h[0].Key != "app" || h[1].Key != replicate.OriginHeader || !strings.HasPrefix(string(h[1].Value), "ring-a") {
				t.Fatalf("copy on c has headers %v", h)
			}
		})
	}
}

func countRecords(t *testing.T, cl *kgo.Client, topic string) int64 {
	t.Helper()
	ends, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := ends.Lookup(topic, 0)
	return o.Offset
}

func readAll(t *testing.T, cl *kgo.Client, topic string, n int) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}})
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records of %s: %v", len(out), n, topic, err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}
