//go:build kafka

package itest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A Kafka 4 consumer group (KIP-848, the consumer protocol: franz-go's
// ServerSideBalancer) active on the target is refused by `failover` at plan
// and at --apply with its member named, and `replicate` with
// sync.group.offsets.enabled leaves it alone: the classic DescribeGroups
// answers GROUP_ID_NOT_FOUND for such a group, which must not read as
// absent.
func TestConsumerProtocolGroupOnRealKafka(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	u := uniq(t)
	topic, group := "orders-848-"+u, "kip848-"+u
	remote := "us-east." + topic
	east := mustEnv(t, "MIRRORCTL_KAFKA_US_EAST")
	west := mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST")
	eadm := kadm.NewClient(newClient(t, east))
	if _, err := eadm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	produceAll(ctx, t, newClient(t, east, kgo.RecordPartitioner(kgo.ManualPartitioner())), shapes(topic, 2, 0, 100))
	if _, err := eadm.CommitOffsets(ctx, group, kadm.OffsetsFromRecords(kgo.Record{Topic: topic, Partition: 0, Offset: 49}, kgo.Record{Topic: topic, Partition: 1, Offset: 49})); err != nil {
		t.Fatal(err)
	}
	cfg := plainConfig(t, "topics = "+topic+"\nemit.heartbeats.enabled = false\n")
	if code, _, stderr := mirrorctl(t, "-c", cfg, "replicate", "--once"); code != 0 {
		t.Fatalf("replicate --once: exit %d: %s", code, stderr)
	}

	// The consumer-protocol member on eu-west; it commits nothing.
	member := newClient(t, west, kgo.ConsumerGroup(group), kgo.ConsumeTopics(remote), kgo.ServerSideBalancer(),
		kgo.Balancers(kgo.RangeBalancer()), kgo.DisableAutoCommit(), kgo.ClientID("kip848-member"))
	pctx, pcancel := context.WithCancel(ctx)
	defer pcancel()
	go func() {
		for pctx.Err() == nil {
			member.PollFetches(pctx)
		}
	}()
	wadm := kadm.NewClient(newClient(t, west))
	pollUntil(ctx, t, time.Minute, "the consumer-protocol member to join", func(ctx context.Context) (bool, string) {
		d, err := wadm.DescribeConsumerGroups(ctx, group)
		if err != nil {
			return false, err.Error()
		}
		g := d[group]
		return g.Err == nil && len(g.Members) == 1, g.State
	})
	classic, err := wadm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("classic DescribeGroups of the consumer-protocol group: state %q err %v %q", classic[group].State, classic[group].Err, classic[group].ErrMessage)

	auditLog := filepath.Join(t.TempDir(), "audit.jsonl")
	for _, apply := range []bool{false, true} {
		args := []string{"-c", cfg, "--audit-log", auditLog, "failover", "--group", group, "-o", "json"}
		if apply {
			args = append(args, "--apply")
		}
		code, stdout, stderr := mirrorctl(t, args...)
		var doc struct {
			Groups []struct {
				GroupType       string `json:"group_type"`
				BlockingMembers []struct {
					ClientID string `json:"client_id"`
					Protocol string `json:"protocol"`
				} `json:"blocking_members"`
				Partitions []struct {
					Action string `json:"action"`
				} `json:"partitions"`
			} `json:"groups"`
		}
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			t.Fatalf("apply=%v: %v\n%s", apply, err, stdout)
		}
		if code != 3 || len(doc.Groups) != 1 || doc.Groups[0].GroupType != "consumer" || len(doc.Groups[0].BlockingMembers) != 1 ||
			doc.Groups[0].BlockingMembers[0].ClientID != "kip848-member" || doc.Groups[0].BlockingMembers[0].Protocol != "consumer" ||
			!strings.Contains(stderr, "stop its consumers first: kip848-member@") {
			t.Fatalf("apply=%v: exit %d\n%s\n%s", apply, code, stdout, stderr)
		}
		for _, p := range doc.Groups[0].Partitions {
			if p.Action != "skip-active" {
				t.Fatalf("apply=%v: action %s, want skip-active\n%s", apply, p.Action, stdout)
			}
		}
	}

	syncCfg := plainConfig(t, "topics = "+topic+"\nemit.heartbeats.enabled = false\nsync.group.offsets.enabled = true\n")
	if code, _, stderr := mirrorctl(t, "-c", syncCfg, "replicate", "--once"); code != 0 {
		t.Fatalf("replicate --once with sync.group.offsets: exit %d: %s", code, stderr)
	}
	offs, err := wadm.FetchOffsets(ctx, group)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		t.Fatal(err)
	}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil && o.At >= 0 {
			t.Errorf("an active consumer-protocol group got a commit on eu-west: %s[%d] at %d", o.Topic, o.Partition, o.At)
		}
	})
}

// A drill on real brokers leaves the real group's offsets alone and its
// report's RPO is the count of records the source holds and the target
// does not.
func TestDrillOnRealKafka(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	u := uniq(t)
	topic, group := "orders-drill-"+u, "drill-"+u
	east := mustEnv(t, "MIRRORCTL_KAFKA_US_EAST")
	west := mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST")
	eadm := kadm.NewClient(newClient(t, east))
	if _, err := eadm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	prod := newClient(t, east, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceAll(ctx, t, prod, shapes(topic, 2, 0, 60))
	if _, err := eadm.CommitOffsets(ctx, group, kadm.OffsetsFromRecords(kgo.Record{Topic: topic, Partition: 0, Offset: 29}, kgo.Record{Topic: topic, Partition: 1, Offset: 29})); err != nil {
		t.Fatal(err)
	}
	cfg := plainConfig(t, "topics = "+topic+"\nemit.heartbeats.enabled = false\n")
	if code, _, stderr := mirrorctl(t, "-c", cfg, "replicate", "--once"); code != 0 {
		t.Fatalf("replicate --once: exit %d: %s", code, stderr)
	}
	produceAll(ctx, t, prod, shapes(topic, 2, 60, 67)) // not mirrored
	// The real group also has commits on eu-west (a consumer there read a
	// little): the drill must leave both clusters' commits as they are.
	wadm := kadm.NewClient(newClient(t, west))
	if _, err := wadm.CommitOffsets(ctx, group, kadm.OffsetsFromRecords(kgo.Record{Topic: "us-east." + topic, Partition: 0, Offset: 4}, kgo.Record{Topic: "us-east." + topic, Partition: 1, Offset: 4})); err != nil {
		t.Fatal(err)
	}
	eastBefore, westBefore := commitsOf(ctx, t, eadm, group), commitsOf(ctx, t, wadm, group)
	dir := t.TempDir()
	code, stdout, stderr := mirrorctl(t, "-c", cfg, "--audit-log", filepath.Join(dir, "audit.jsonl"), "failover", "--group", group, "--drill", "--drill-report", dir)
	if code != 0 {
		t.Fatalf("drill: exit %d\n%s\n%s", code, stdout, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "drill-*.json"))
	if len(files) != 1 {
		t.Fatalf("evidence %v", files)
	}
	var rep struct {
		RPORecords int64 `json:"rpo_records"`
		Verified   int   `json:"verified"`
		Deleted    bool  `json:"shadow_groups_deleted"`
	}
	b, err := os.ReadFile(files[0])
	if err == nil {
		err = json.Unmarshal(b, &rep)
	}
	if err != nil {
		t.Fatal(err)
	}
	// Count both sides.
	sEnds, err := eadm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	wEnds, err := wadm.ListEndOffsets(ctx, "us-east."+topic)
	if err != nil {
		t.Fatal(err)
	}
	var diff int64
	sEnds.Each(func(o kadm.ListedOffset) {
		w, _ := wEnds.Lookup("us-east."+topic, o.Partition)
		diff += o.Offset - w.Offset
	})
	if rep.RPORecords != diff || diff == 0 || rep.Verified != 2 || !rep.Deleted {
		t.Fatalf("report %+v, want RPO %d records (source minus target)\n%s", rep, diff, b)
	}
	if got := commitsOf(ctx, t, wadm, group); fmt.Sprint(got) != fmt.Sprint(westBefore) || len(got) != 2 {
		t.Errorf("the drill changed the real group on eu-west: %v, was %v", got, westBefore)
	}
	if got := commitsOf(ctx, t, eadm, group); fmt.Sprint(got) != fmt.Sprint(eastBefore) || len(got) != 2 {
		t.Errorf("the drill changed the real group on us-east: %v, was %v", got, eastBefore)
	}
	t.Logf("drill report: RPO %d records (source minus target: %d), verified %d, shadow groups deleted %v", rep.RPORecords, diff, rep.Verified, rep.Deleted)
}
