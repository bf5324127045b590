//go:build kafka

package itest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate/progress"
)

// The crash test on real brokers: two `mirrorctl replicate` processes share
// a flow (tasks.max = 2) while 1M records arrive; ten times a random one is
// killed with SIGKILL at a random moment and started again. At the end every
// source record is on the target, in order within each run of copies, and
// the repeats each kill caused are reported.
func TestScaleOutCrashOnRealKafka(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	east, west := mustEnv(t, "MIRRORCTL_KAFKA_US_EAST"), mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST")
	u := uniq(t)
	topic := "scale-" + u
	const parts, perPart, kills = 8, 125_000, 10 // 1M records
	eastCl := newClient(t, east, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	if _, err := kadm.NewClient(eastCl).CreateTopic(ctx, parts, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	// The brokers' group.min.session.timeout.ms is Kafka's default, 6 s.
	cfg := plainConfig(t, fmt.Sprintf(`us-east->eu-west.topics = %s
us-east->eu-west.mirrorctl.group.id = mirrorctl-scale-%s
emit.heartbeats.enabled = false
emit.checkpoints.enabled = false
tasks.max = 2
mirrorctl.progress.interval.ms = 500
us-east.consumer.session.timeout.ms = 6000
eu-west.consumer.session.timeout.ms = 6000
`, topic, u))
	start := replicateStarter(t, cfg)
	procs := []*mirrorProc{start("a0"), start("b0")}

	// Produce 1M records in steps, spread over the kills.
	produced := make(chan struct{})
	// A test that fails early stops the producer before it ends: no
	// t.Error from it after the test has completed.
	t.Cleanup(func() { cancel(); <-produced })
	go func() {
		defer close(produced)
		for i := 0; i < perPart; i += 500 {
			var recs []*kgo.Record
			for p := int32(0); p < parts; p++ {
				for j := i; j < min(i+500, perPart); j++ {
					recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("p%d-%07d", p, j))})
				}
			}
			if err := eastCl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(280 * time.Millisecond) // a steady stream of at least 70 s: the ten kills (at most 60 s) land mid-copy
		}
	}()
	remote := "us-east." + topic
	westAdm := kadm.NewClient(newClient(t, west))
	copied := func() int64 {
		ends, err := westAdm.ListEndOffsets(ctx, remote)
		if err != nil {
			return 0
		}
		var n int64
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err == nil {
				n += o.Offset
			}
		})
		return n
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for k := 0; k < kills; k++ {
		time.Sleep(time.Duration(2000+rng.IntN(4000)) * time.Millisecond)
		select {
		case <-produced:
			t.Fatalf("kill %d came after the last record was produced: the test must kill mid-stream", k+1)
		default:
		}
		i := rng.IntN(len(procs))
		before := copied()
		if err := procs[i].cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-procs[i].done
		procs[i] = start(fmt.Sprintf("%c%d", 'a'+i, k+1))
		t.Logf("kill %d: process %c killed with %d records on the target", k+1, 'a'+i, before)
	}
	select {
	case <-produced:
	case <-ctx.Done():
		t.Fatal("producer did not finish")
	}
	// Done when the progress says every partition is copied to its end
	// (the target's end offsets count the repeats too, so they cannot tell).
	progressed := func() (int, error) {
		recs, err := readAll(ctx, west, "mirrorctl-progress.us-east.internal")
		if err != nil {
			return 0, err
		}
		next := map[int32]int64{}
		for _, r := range recs {
			if k, n, err := progress.Decode(r.Key, r.Value); err == nil && k.Topic == topic {
				next[k.Partition] = n
			}
		}
		done := 0
		for p := int32(0); p < parts; p++ {
			if next[p] >= perPart {
				done++
			}
		}
		return done, nil
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		done, err := progressed()
		if err == nil && done == parts {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("3 min after the last kill, %d of %d partitions are copied to their end (%v); target holds %d records", done, parts, err, copied())
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		<-p.done
	}
	dst, err := readAll(ctx, west, remote)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for p, recs := range byPartition(dst) {
		idx := make([]int, len(recs))
		for i, r := range recs {
			v := string(r.Value)
			n, err := strconv.Atoi(v[strings.IndexByte(v, '-')+1:])
			if err != nil || !strings.HasPrefix(v, fmt.Sprintf("p%d-", p)) {
				t.Fatalf("%s[%d] holds %q", remote, p, v)
			}
			idx[i] = n
		}
		dups, err := testkit.CheckCopy(idx, perPart)
		if err != nil {
			t.Fatalf("%s[%d]: %v", remote, p, err)
		}
		total += dups
		t.Logf("partition %d: %d records, %d repeats", p, len(recs), dups)
	}
	t.Logf("%d records, %d SIGKILLs: 0 lost, order kept, %d repeats (%.2f%%, %.0f per kill)", parts*perPart, kills, total,
		100*float64(total)/float64(parts*perPart), float64(total)/kills)
}
