package replicate

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate/progress"
)

// Partitions added to a source topic while the mirror runs are created on
// the target and copied, in order and once, without a restart; no
// partition stops and nothing is reported lost.
func TestPartitionGrowthWhileRunning(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("grow")
	remote := "us-east." + topic
	p.CreateTopic(t, "us-east", topic, 2, nil)
	produce := func(part int32, from, to int) {
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: part, Value: []byte(fmt.Sprintf("v%d", i))})
		}
		p.Produce(t, "us-east", recs...)
	}
	produce(0, 0, 10)
	produce(1, 0, 10)
	f := testFlow("us-east", "eu-west")
	f.EmitHeartbeats = false
	f.RefreshTopicsInterval = time.Second
	m, stop := runBackground(t, p, f)
	acked := func(part int32) int64 {
		for _, s := range m.Stats() {
			if s.Topic == topic && s.Partition == part {
				return s.Acked
			}
		}
		return -1
	}
	testkit.WaitFor(t, "the first records copied", func() bool { return acked(0) == 10 && acked(1) == 10 })
	if _, err := p.Admin(t, "us-east").CreatePartitions(testkit.Context(t), 2, topic); err != nil {
		t.Fatal(err)
	}
	grown := time.Now()
	produce(2, 0, 20)
	produce(3, 0, 5)
	produce(0, 10, 15)
	testkit.WaitFor(t, "the new partitions copied", func() bool { return acked(2) == 20 && acked(3) == 5 && acked(0) == 15 })
	// Measured: about 5 s on kfake, the member's refresh (1 s) then the
	// source consumer's fetch.max.wait.ms (kgo's default 5 s) before its
	// next fetch carries the new partitions.
	t.Logf("new partitions copied %v after they were added (refresh.topics.interval.seconds 1)", time.Since(grown).Round(10*time.Millisecond))
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	got := p.ReadAll(t, "eu-west", remote)
	for part, n := range map[int32]int{0: 15, 1: 10, 2: 20, 3: 5} {
		if len(got[part]) != n {
			t.Fatalf("%s[%d] holds %d records, want %d", remote, part, len(got[part]), n)
		}
		for i, r := range got[part] {
			if string(r.Value) != fmt.Sprintf("v%d", i) {
				t.Fatalf("%s[%d] #%d = %q", remote, part, i, r.Value)
			}
		}
	}
	for _, s := range m.Stats() {
		if s.Error != "" || len(s.Losses) > 0 {
			t.Fatalf("partition %d: error %q, losses %v", s.Partition, s.Error, s.Losses)
		}
	}
}

// The first progress is written soon after the first acknowledgements, not
// one progress interval later, so a process that dies within its first
// interval (a crash loop) has saved how far it got.
func TestFirstProgressSoonAfterFirstAck(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("firstack")
	p.CreateTopic(t, "us-east", topic, 1, nil)
	p.Produce(t, "us-east", numbered(topic, 0, 50)...)
	f := testFlow("us-east", "eu-west")
	f.EmitHeartbeats = false
	f.ProgressInterval = time.Hour // the periodic write never comes in this test
	m, _ := runBackground(t, p, f)
	testkit.WaitFor(t, "the records copied", func() bool {
		for _, s := range m.Stats() {
			if s.Topic == topic && s.Acked == 50 {
				return true
			}
		}
		return false
	})
	testkit.WaitFor(t, "the first progress record", func() bool {
		for _, r := range p.ReadAll(t, f.Target, ProgressTopic(f.Policy, f.Source))[0] {
			if k, v, err := progress.DecodeValue(r.Key, r.Value); err == nil && k.Topic == topic && v.Next > 0 {
				return true
			}
		}
		return false
	})
}
