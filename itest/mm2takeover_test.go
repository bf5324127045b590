//go:build kafka

package itest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// TestMM2TakeoverAndHandback: a real MirrorMaker 2 copies a 4-partition topic
// while a producer writes; mirrorctl refuses to start beside it; MM2 is
// stopped and mirrorctl continues from MM2's Connect source offsets: the
// target holds every source record exactly once, in order; offset syncs
// never step back and RemoteClusterUtils.translateOffsets answers at least as
// far as before. Then the way back: mirrorctl copies more, hands off, MM2
// restarts and continues: again every record exactly once.
func TestMM2TakeoverAndHandback(t *testing.T) {
	east, west := mustEnv(t, "MIRRORCTL_KAFKA_US_EAST"), mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	u := uniq(t)
	topic, group := "takeover-"+u, "itest-takeover-"+u
	remote := usEast + "." + topic
	const partitions = 4
	srcCl := newClient(t, east, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	src := kadm.NewClient(srcCl)
	if _, err := src.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	// The producer: values p<partition>-<seq>, seq counting per partition.
	var (
		pmu  sync.Mutex
		next [partitions]int
	)
	produce := func(n int) { // n records per partition
		t.Helper()
		pmu.Lock()
		defer pmu.Unlock()
		var recs []*kgo.Record
		for p := int32(0); p < partitions; p++ {
			for i := 0; i < n; i++ {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: []byte(fmt.Sprint(next[p] % 17)), Value: []byte(fmt.Sprintf("p%d-%07d", p, next[p]))})
				next[p]++
			}
		}
		if err := srcCl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Errorf("produce: %v", err)
		}
	}
	pctx, stopProducer := context.WithCancel(ctx)
	pdone := make(chan struct{})
	go func() {
		defer close(pdone)
		for pctx.Err() == nil {
			produce(250)
			select {
			case <-pctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()

	props := writeMM2Props(t, topic, group, east, west)
	stopMM2 := startMM2(ctx, t, props)
	remoteTotal := func(ctx context.Context) (int64, error) {
		ends, err := kadm.NewClient(newClient(t, west)).ListEndOffsets(ctx, remote)
		if err != nil {
			return 0, err
		}
		var n int64
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
		return n, ends.Error()
	}
	pollUntil(ctx, t, 4*time.Minute, "MM2 copied 50,000 records", func(ctx context.Context) (bool, string) {
		n, err := remoteTotal(ctx)
		return err == nil && n >= 50_000, fmt.Sprintf("%d copied, err %v", n, err)
	})
	// A group to checkpoint, committed mid-log on the source: on each
	// partition at the middle offset sync MM2 wrote, so that MM2 has a sync
	// at or before it to translate from. (A fixed offset is not enough: MM2
	// may write its first sync for a partition past it when its sync
	// producer is busy, and then never checkpoints that partition.)
	var mid [partitions]int64
	pollUntil(ctx, t, time.Minute, "MM2 offset syncs on every partition", func(ctx context.Context) (bool, string) {
		syncs, err := readOffsetSyncs(ctx, east, topic)
		if err != nil {
			return false, err.Error()
		}
		for p := int32(0); p < partitions; p++ {
			if len(syncs[p]) < 2 {
				return false, fmt.Sprintf("partition %d: %d offset syncs", p, len(syncs[p]))
			}
			mid[p] = syncs[p][len(syncs[p])/2].UpstreamOffset
		}
		return true, ""
	})
	offs := kadm.Offsets{}
	for p := int32(0); p < partitions; p++ {
		offs.Add(kadm.Offset{Topic: topic, Partition: p, At: mid[p], LeaderEpoch: -1})
	}
	t.Logf("group %s committed at %v", group, mid)
	if resp, err := src.CommitOffsets(ctx, group, offs); err != nil || resp.Error() != nil {
		t.Fatalf("commit %s: %v %v", group, err, resp.Error())
	}
	before := map[int32]int64{}
	pollUntil(ctx, t, 3*time.Minute, "MM2 checkpoints for "+group, func(ctx context.Context) (bool, string) {
		out, err := tryScript(ctx, "translate-offsets", "--bootstrap", west, "--source-alias", usEast, "--group", group, "--timeout-ms", "20000")
		if err != nil {
			return false, err.Error()
		}
		res, err := parseTranslated(out)
		if err != nil || len(res) != partitions {
			return false, fmt.Sprintf("%v %v", res, err)
		}
		for _, r := range res {
			before[r.Partition] = r.Offset
		}
		return true, ""
	})

	// Beside the running MM2, replicate refuses and writes nothing.
	code, _, stderr := mirrorctl(t, "replicate", "--once", "-c", props)
	if code != 1 || !strings.Contains(stderr, "MirrorMaker 2 still runs this flow") {
		t.Fatalf("replicate beside MM2: exit %d, stderr %s; want 1 naming MM2", code, stderr)
	}
	t.Logf("refused beside MM2: %s", strings.TrimSpace(stderr))

	stopMM2()
	syncsBefore, err := readOffsetSyncs(ctx, east, topic)
	if err != nil {
		t.Fatal(err)
	}
	stopProducer()
	<-pdone
	// The dry run says where each partition resumes: after MM2's offsets.
	code, out, stderr := mirrorctl(t, "replicate", "--dry-run", "-o", "json", "-c", props)
	// The topic's partitions, and the heartbeats MM2 copied too.
	if code != 0 || strings.Count(out, `"from": "mm2-offsets"`) < partitions {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, _, stderr := mirrorctl(t, "replicate", "--once", "-c", props); code != 0 {
		t.Fatalf("replicate --once after MM2: exit %d: %s", code, stderr)
	}
	assertExactlyOnce(ctx, t, east, west, topic, remote, partitions)

	// Offset syncs never step back: per partition, both offsets grow in log
	// order, MM2's and mirrorctl's alike, and mirrorctl's continue MM2's.
	syncsAfter, err := readOffsetSyncs(ctx, east, topic)
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < partitions; p++ {
		ss := syncsAfter[p]
		if len(ss) <= len(syncsBefore[p]) {
			t.Errorf("partition %d: no offset sync from mirrorctl (%d before, %d after)", p, len(syncsBefore[p]), len(ss))
		}
		checkMonotonic(t, p, ss)
	}
	// translateOffsets after the switch: the group moves on, and answers
	// are at least as far as before.
	offs = kadm.Offsets{}
	for p := int32(0); p < partitions; p++ {
		offs.Add(kadm.Offset{Topic: topic, Partition: p, At: int64(next[p]), LeaderEpoch: -1})
	}
	if resp, err := src.CommitOffsets(ctx, group, offs); err != nil || resp.Error() != nil {
		t.Fatalf("commit %s: %v %v", group, err, resp.Error())
	}
	if code, _, stderr := mirrorctl(t, "replicate", "--once", "-c", props); code != 0 {
		t.Fatalf("replicate --once (checkpoints): exit %d: %s", code, stderr)
	}
	out2, err := tryScript(ctx, "translate-offsets", "--bootstrap", west, "--source-alias", usEast, "--group", group, "--timeout-ms", "20000")
	if err != nil {
		t.Fatal(err)
	}
	after, err := parseTranslated(out2)
	if err != nil || len(after) != partitions {
		t.Fatalf("translateOffsets after the switch: %v %v", after, err)
	}
	for _, r := range after {
		if r.Offset < before[r.Partition] || r.Offset > int64(next[r.Partition]) {
			t.Errorf("partition %d: translateOffsets %d after the switch, %d before; want at least that and at most the group's %d", r.Partition, r.Offset, before[r.Partition], next[r.Partition])
		}
		t.Logf("partition %d: translateOffsets %d before the switch, %d after (group at %d)", r.Partition, before[r.Partition], r.Offset, next[r.Partition])
	}

	// The way back: mirrorctl copies more, hands off, MM2 continues.
	produce(1000)
	if code, _, stderr := mirrorctl(t, "replicate", "--once", "-c", props); code != 0 {
		t.Fatalf("replicate --once before the hand-back: exit %d: %s", code, stderr)
	}
	code, out, stderr = mirrorctl(t, "mm2", "handoff", "--apply", "-o", "json", "-c", props, "--audit-log", t.TempDir()+"/audit.log")
	// The topic's partitions and the heartbeats partition the flow mirrors.
	if code != 0 || !strings.Contains(out, fmt.Sprintf(`"written": %d`, partitions+1)) {
		t.Fatalf("mm2 handoff --apply: exit %d\n%s\n%s", code, out, stderr)
	}
	produce(1000)
	startMM2(ctx, t, props)
	pollUntil(ctx, t, 3*time.Minute, "MM2 copied what followed the hand-back", func(ctx context.Context) (bool, string) {
		n, err := remoteTotal(ctx)
		var want int64
		for _, v := range next {
			want += int64(v)
		}
		return err == nil && n >= want, fmt.Sprintf("%d of %d, err %v", n, want, err)
	})
	assertExactlyOnce(ctx, t, east, west, topic, remote, partitions)
	syncsAfter, err = readOffsetSyncs(ctx, east, topic)
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < partitions; p++ {
		checkMonotonic(t, p, syncsAfter[p])
	}
}

// assertExactlyOnce checks that each remote partition holds the source
// partition's records exactly once, in order.
func assertExactlyOnce(ctx context.Context, t *testing.T, east, west, topic, remote string, partitions int32) {
	t.Helper()
	srcRecs, err := readAll(ctx, east, topic)
	if err != nil {
		t.Fatal(err)
	}
	dstRecs, err := readAll(ctx, west, remote)
	if err != nil {
		t.Fatal(err)
	}
	s, d := byPartition(srcRecs), byPartition(dstRecs)
	total := 0
	for p := int32(0); p < partitions; p++ {
		if len(d[p]) != len(s[p]) {
			t.Fatalf("%s[%d]: %d records, source has %d", remote, p, len(d[p]), len(s[p]))
		}
		for i := range s[p] {
			if string(s[p][i].Value) != string(d[p][i].Value) {
				t.Fatalf("%s[%d] #%d: %q, want %q", remote, p, i, d[p][i].Value, s[p][i].Value)
			}
		}
		total += len(s[p])
	}
	t.Logf("%s: %d records, each once, in order", remote, total)
}

func checkMonotonic(t *testing.T, p int32, ss []mm2.OffsetSync) {
	t.Helper()
	for i := 1; i < len(ss); i++ {
		if ss[i].UpstreamOffset < ss[i-1].UpstreamOffset || ss[i].DownstreamOffset < ss[i-1].DownstreamOffset {
			t.Errorf("partition %d: offset sync %d %v steps back from %v", p, i, ss[i], ss[i-1])
		}
	}
}
