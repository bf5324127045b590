//go:build kafka

package itest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/cli/lag"
	lagengine "github.com/mirrorctl/mirrorctl/lag"
)

// TestLagOnRealMM2Flow runs a real MirrorMaker 2, lets it copy 50 records
// per partition and checkpoint a group, stops it, produces 13 more per
// partition (the first stamped 60 s ago), and checks that `mirrorctl lag`,
// which sees only MM2's offset syncs, heartbeats and checkpoints, agrees
// with a count of the records on both sides.
func TestLagOnRealMM2Flow(t *testing.T) {
	east := mustEnv(t, "MIRRORCTL_KAFKA_US_EAST")
	west := mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	u := uniq(t)
	topic := "lag-" + u
	group := "itest-lag-" + u
	remote := usEast + "." + topic
	const (
		partitions = 2
		copied     = 50
		late       = 13
		committed  = 40
	)
	srcCl := newClient(t, east, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	src := kadm.NewClient(srcCl)
	if _, err := src.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatalf("create %s on us-east: %v", topic, err)
	}
	produce := func(n int, ts time.Time) {
		t.Helper()
		var recs []*kgo.Record
		for p := int32(0); p < partitions; p++ {
			for i := 0; i < n; i++ {
				r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("p%d-%d", p, i))}
				if !ts.IsZero() {
					r.Timestamp = ts.Add(time.Duration(i) * time.Second)
				}
				recs = append(recs, r)
			}
		}
		if err := srcCl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
	}
	props := writeMM2Props(t, topic, group, east, west)
	produce(copied, time.Time{})
	offs := kadm.Offsets{}
	for p := int32(0); p < partitions; p++ {
		offs.Add(kadm.Offset{Topic: topic, Partition: p, At: committed, LeaderEpoch: -1})
	}
	if resp, err := src.CommitOffsets(ctx, group, offs); err != nil || resp.Error() != nil {
		t.Fatalf("commit %s on us-east: %v %v", group, err, resp.Error())
	}
	stop := startMM2(ctx, t, props)

	// Wait for every record, the last offset sync (49) and a checkpoint per
	// partition carrying the commit.
	pollUntil(ctx, t, 3*time.Minute, "MM2 copied, synced and checkpointed", func(ctx context.Context) (bool, string) {
		syncs, err := readOffsetSyncs(ctx, east, topic)
		if err != nil {
			return false, err.Error()
		}
		cks, err := readCheckpoints(ctx, west, group)
		if err != nil {
			return false, err.Error()
		}
		for p := int32(0); p < partitions; p++ {
			if ss := syncs[p]; len(ss) == 0 || ss[len(ss)-1].UpstreamOffset != copied-1 {
				return false, fmt.Sprintf("%s-%d syncs %v", topic, p, ss)
			}
			if c, ok := cks[tp{remote, p}]; !ok || c.UpstreamOffset != committed {
				return false, fmt.Sprintf("%s-%d checkpoint %v", remote, p, c)
			}
		}
		return true, ""
	})
	stop()
	produce(late, time.Now().Add(-60*time.Second))

	srcRecs, err := readAll(ctx, east, topic)
	if err != nil {
		t.Fatal(err)
	}
	dstRecs, err := readAll(ctx, west, remote)
	if err != nil {
		t.Fatal(err)
	}
	srcCount, dstCount := map[int32]int64{}, map[int32]int64{}
	for _, r := range srcRecs {
		srcCount[r.Partition]++
	}
	for _, r := range dstRecs {
		dstCount[r.Partition]++
	}

	code, stdout, stderr := mirrorctl(t, "lag", "-c", props, "--source", usEast, "--target", euWest, "--group", group, "-o", "json")
	if code != 0 {
		t.Fatalf("lag exit %d: %s\n%s", code, stdout, stderr)
	}
	var res lag.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if len(res.Flows) != 1 {
		t.Fatalf("lag: %s", stdout)
	}
	fl := res.Flows[0]
	// The flow also lists us-east's heartbeats topic (it bypasses the topic
	// filter); check ours.
	var mine []lagengine.PartitionLag
	for _, p := range fl.Partitions {
		if p.SourceTopic == topic {
			mine = append(mine, p)
		}
	}
	if len(mine) != partitions {
		t.Fatalf("lag lists %d partitions of %s, want %d: %s", len(mine), topic, partitions, stdout)
	}
	for _, p := range mine {
		behind := srcCount[p.Partition] - dstCount[p.Partition]
		if p.From != lagengine.FromOffsetSyncs || p.SourceEndOffset != srcCount[p.Partition] || p.TargetEndOffset != dstCount[p.Partition] ||
			p.RecordsBehind != behind || behind != late || p.ReplicatedOffset != dstCount[p.Partition]-1 {
			t.Errorf("partition %+v; counted %d on us-east, %d on eu-west", p, srcCount[p.Partition], dstCount[p.Partition])
		}
		if p.TimeBehindMs == nil || *p.TimeBehindMs < 60_000 || *p.TimeBehindMs > 120_000 {
			t.Errorf("partition %d time behind %v ms, want about 60000", p.Partition, p.TimeBehindMs)
		}
	}
	if fl.HeartbeatAgeMs == nil || *fl.HeartbeatAgeMs < 0 || *fl.HeartbeatAgeMs > 120_000 {
		t.Errorf("heartbeat age %v, want MM2's last heartbeat, under 2 minutes", fl.HeartbeatAgeMs)
	}
	if len(fl.Groups) != 1 || fl.Groups[0].CheckpointAgeMs == nil || len(fl.Groups[0].Partitions) != partitions {
		t.Fatalf("groups %+v", fl.Groups)
	}
	for _, gp := range fl.Groups[0].Partitions {
		// Committed at the checkpoint's upstream: what is left is MM2's
		// translation slack, under offset.lag.max (10) records.
		if gp.CommittedOffset != committed || gp.UpstreamOffset != committed || gp.Rereads < 0 || gp.Rereads > 10 {
			t.Errorf("group partition %+v", gp)
		}
	}
	t.Logf("lag on MM2's flow: %s", stdout)

	// Thresholds on the same state.
	if code, _, _ := mirrorctl(t, "lag", "-c", props, "--source", usEast, "--target", euWest, "--max-records", fmt.Sprint(late-1)); code != 3 {
		t.Errorf("--max-records %d: exit %d, want 3", late-1, code)
	}
	// The flow's heartbeats partition is shared with every other test on
	// these clusters and may be further behind: only this topic's
	// partitions must stay within the limits.
	code, stdout, _ = mirrorctl(t, "lag", "-c", props, "--source", usEast, "--target", euWest, "--max-records", fmt.Sprint(late), "--max-latency", "10m", "-o", "json")
	var lim lag.Result
	if err := json.Unmarshal([]byte(stdout), &lim); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	for _, b := range lim.Breaches {
		if strings.Contains(b.Subject, topic) {
			t.Errorf("--max-records %d --max-latency 10m: breach %+v on the test's topic", late, b)
		}
	}
	if code != 0 && len(lim.Breaches) == 0 {
		t.Errorf("--max-records %d --max-latency 10m: exit %d without a breach", late, code)
	}
}
