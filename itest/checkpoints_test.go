//go:build kafka

package itest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMirrorctlWritesMM2Reads: checkpoints written by `mirrorctl replicate`
// are read by Kafka's own RemoteClusterUtils.translateOffsets, which must
// return exactly the offsets mirrorctl reports, and must never point past
// the group's true position.
func TestMirrorctlWritesMM2Reads(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	east, west := mustEnv(t, "MIRRORCTL_KAFKA_US_EAST"), mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST")
	u := uniq(t)
	topic, group := "ck-"+u, "itest-ck-"+u
	eastCl := newClient(t, east, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(eastCl)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	produceAll(ctx, t, eastCl, shapes(topic, 3, 0, 300))
	committed := map[int32]int64{0: 0, 1: 150, 2: 300} // start, middle, end
	offs := kadm.Offsets{}
	for p, at := range committed {
		offs.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1, Metadata: fmt.Sprintf("md-%d", p)})
	}
	if resp, err := adm.CommitOffsets(ctx, group, offs); err != nil || resp.Error() != nil {
		t.Fatalf("commit %s: %v %v", group, err, resp.Error())
	}
	cfg := plainConfig(t, fmt.Sprintf("us-east->eu-west.topics = %s\nus-east->eu-west.groups = %s\noffset.lag.max = 10\n", topic, group))
	if code, _, stderr := mirrorctl(t, "replicate", "--once", "-c", cfg); code != 0 {
		t.Fatalf("replicate --once: exit %d: %s", code, stderr)
	}
	ours, err := dumpLatest(t, cfg, group)
	if err != nil {
		t.Fatal(err)
	}
	if len(ours) != 3 {
		t.Fatalf("mirrorctl wrote checkpoints for %d partitions, want 3: %v", len(ours), ours)
	}
	for _, c := range ours {
		// Source and target offsets run in lock-step here, so the true
		// position on the target is the committed offset itself.
		if g := committed[c.Partition]; c.Offset > g || c.Topic != "us-east."+topic || c.Metadata != fmt.Sprintf("md-%d", c.Partition) {
			t.Errorf("checkpoint %+v for committed %d: past the true position, or wrong name or metadata", c, g)
		}
	}
	if ours[0].Offset != 0 || ours[2].Offset != 300 {
		t.Errorf("checkpoints %v: want exactly 0 at the start and 300 at the end", ours)
	}
	out, err := tryScript(ctx, "translate-offsets", "--bootstrap", west, "--source-alias", usEast, "--group", group, "--timeout-ms", "20000")
	if err != nil {
		t.Fatal(err)
	}
	javaRes, err := parseTranslated(out)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(javaRes) != fmt.Sprint(ours) {
		t.Fatalf("RemoteClusterUtils.translateOffsets %v, mirrorctl %v", javaRes, ours)
	}
}
