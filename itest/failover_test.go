//go:build kafka

package itest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestFailoverCutoverOnRealKafka is a full cutover: a consumer reads part of
// orders on us-east and commits, `mirrorctl replicate --once` copies the
// topic, `mirrorctl failover --apply --verify` moves the group, and a
// consumer of the same group on eu-west reads exactly the records the first
// one had not read: none missing, none repeated (exact mode).
func TestFailoverCutoverOnRealKafka(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	u := uniq(t)
	topic, group := "orders-fo-"+u, "cutover-"+u
	east := mustEnv(t, "MIRRORCTL_KAFKA_US_EAST")
	west := mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST")
	prod := newClient(t, east, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.AllowAutoTopicCreation())
	adm := kadm.NewClient(newClient(t, east))
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	all := shapes(topic, 3, 0, 300)
	produceAll(ctx, t, prod, all)
	key := func(r *kgo.Record) string {
		return fmt.Sprintf("%d/%s/%s/%d", r.Partition, r.Key, r.Value, r.Timestamp.UnixMilli())
	}
	want := map[string]bool{}
	for _, r := range all {
		want[key(r)] = true
	}

	// Read part of the topic on us-east and commit what was read.
	seen := map[string]int{}
	readParts := map[int32]bool{}
	first := newClient(t, east, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(20_000), kgo.MaxConcurrentFetches(1))
	for n := 0; n < 400; {
		fs := first.PollRecords(ctx, 100)
		if ctx.Err() != nil {
			t.Fatalf("first consumer: %v", ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) { seen[key(r)]++; n++; readParts[r.Partition] = true })
	}
	if err := first.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	first.LeaveGroup()
	first.Close()

	cfg := plainConfig(t, "topics = "+topic+"\nemit.heartbeats.enabled = false\n")
	if code, _, stderr := mirrorctl(t, "-c", cfg, "replicate", "--once"); code != 0 {
		t.Fatalf("replicate --once: exit %d: %s", code, stderr)
	}
	auditLog := filepath.Join(t.TempDir(), "audit.jsonl")
	code, stdout, stderr := mirrorctl(t, "-c", cfg, "--audit-log", auditLog, "failover", "--source", usEast, "--target", euWest,
		"--group", group, "--mode", "exact", "--apply", "--verify")
	if code != 0 {
		t.Fatalf("failover: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if strings.Count(stdout, "\tcommitted\tpass\t") != len(readParts) {
		t.Fatalf("failover output:\n%s", stdout)
	}

	second := newClient(t, west, kgo.ConsumerGroup(group), kgo.ConsumeTopics("us-east."+topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())) // partitions the group never read start at the beginning
	remaining := len(all) - len(seen)
	got := 0
	pollUntil(ctx, t, time.Minute, "the rest of the records on eu-west", func(ctx context.Context) (bool, string) {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		defer pcancel()
		second.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
			got++
			seen[key(r)]++
		})
		return got >= remaining, fmt.Sprintf("%d of %d", got, remaining)
	})
	for k := range want {
		switch seen[k] {
		case 0:
			t.Errorf("record %s never read", k)
		case 1:
		default:
			t.Errorf("record %s read %d times", k, seen[k])
		}
	}
	if got != remaining {
		t.Errorf("eu-west consumer read %d records, want %d", got, remaining)
	}
}
