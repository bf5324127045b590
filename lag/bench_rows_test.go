package lag

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/replicate"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
	"github.com/mirrorctl/mirrorctl/replicate/syncstore"
)

// rowSizes are the sizes of BenchmarkGroupRows: groups × partitions each
// group has a checkpoint of and a commit on. The largest is issue #31's
// 1,000 groups over 10,000 partitions (10 million rows); its inputs alone
// hold some 4 GB: run it with -benchtime=1x.
var rowSizes = []struct{ groups, partitions int }{{1000, 100}, {1000, 1000}, {1000, 10000}}

// BenchmarkGroupRows is `lag`'s per-group work after the clusters were
// read, on synthetic in-memory inputs, so it measures the compute apart
// from Kafka: the checkpoint records decoded and indexed as they are read
// (checkpointIndex), sorted per group, and each group's rows with its
// source commits (one kadm.FetchManyOffsets answer) and the offset syncs
// (one per partition: 2 commits since the checkpoint and 4 of
// translation slack per row) (groupRows). The records, commits and syncs are
// built before the timer starts. rows/s is group partitions per second.
func BenchmarkGroupRows(b *testing.B) {
	for _, size := range rowSizes {
		b.Run(fmt.Sprintf("groups=%d/partitions=%d", size.groups, size.partitions), func(b *testing.B) {
			benchGroupRows(b, size.groups, size.partitions)
		})
	}
}

// kv is a checkpoint record's key and value.
type kv struct{ k, v []byte }

func benchGroupRows(b *testing.B, groups, partitions int) {
	now := time.Now()
	c := &collector{fc: replicate.DefaultFlowConfig("us-east", "eu-west"), now: now}
	syncs := syncstore.New(false)
	remoteToSource := map[string]string{}
	for p := range partitions {
		topic := fmt.Sprintf("grp-%05d", p/10)
		remoteToSource["us-east."+topic] = topic
		syncs.Add(mm2.OffsetSync{Topic: topic, Partition: int32(p % 10), UpstreamOffset: 0, DownstreamOffset: 0})
	}
	syncs.ReadToEnd()
	recs := make([]kv, 0, groups*partitions) // a kgo.Record each would take 10 times the memory
	fetched := kadm.FetchOffsetsResponses{}
	names := make([]string, groups)
	for g := range groups {
		names[g] = fmt.Sprintf("g-%05d", g)
		offs := kadm.OffsetResponses{}
		for p := range partitions {
			topic, part := fmt.Sprintf("grp-%05d", p/10), int32(p%10)
			ck := mm2.Checkpoint{Group: names[g], Topic: "us-east." + topic, Partition: part, UpstreamOffset: 5, DownstreamOffset: 5}
			k, _ := ck.MarshalKey()
			v, _ := ck.MarshalValue()
			recs = append(recs, kv{k, v})
			if offs[topic] == nil {
				offs[topic] = map[int32]kadm.OffsetResponse{}
			}
			offs[topic][part] = kadm.OffsetResponse{Offset: kadm.Offset{Topic: topic, Partition: part, At: 7, LeaderEpoch: -1}}
		}
		fetched[names[g]] = kadm.FetchOffsetsResponse{Group: names[g], Fetched: offs}
	}
	b.ResetTimer()
	rows := 0
	for b.Loop() {
		cs := newCheckpointIndex()
		r := kgo.Record{Timestamp: now.Add(-time.Second)}
		for _, kv := range recs {
			r.Key, r.Value = kv.k, kv.v
			cs.add(&r)
		}
		out, err := c.groupRows(names, cs, cs.byGroup(), true, fetched, syncs, remoteToSource)
		if err != nil {
			b.Fatal(err)
		}
		rows = 0
		for _, gl := range out {
			rows += len(gl.Partitions)
			if gl.RereadsOnFailover != int64(6*partitions) {
				b.Fatalf("group %s rereads %d, want %d", gl.Group, gl.RereadsOnFailover, 6*partitions)
			}
		}
		if rows != groups*partitions {
			b.Fatalf("%d rows, want %d", rows, groups*partitions)
		}
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
