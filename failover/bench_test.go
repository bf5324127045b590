package failover

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

// BenchmarkPlanApply1000Groups plans and applies a failover of 1,000 groups
// x 12 partitions on embedded clusters (exact mode). Run with
// -benchtime=1x: later iterations find every partition unchanged.
func BenchmarkPlanApply1000Groups(b *testing.B) {
	p := newPair(b)
	topic := testkit.Name("orders")
	p.CreateTopic(b, "us-east", topic, 12, nil)
	var recs []*kgo.Record
	for part := int32(0); part < 12; part++ {
		recs = append(recs, records(topic, part, 0, 200)...)
	}
	p.Produce(b, "us-east", recs...)
	f := testFlow(b, topic)
	p.mirrorOnce(b, f)
	adm := p.Admin(b, "us-east")
	groups := make([]string, 1000)
	for i := range groups {
		groups[i] = fmt.Sprintf("bench-%04d", i)
		os := kadm.Offsets{}
		for part := int32(0); part < 12; part++ {
			os.Add(kadm.Offset{Topic: topic, Partition: part, At: int64((i*7 + int(part)) % 201), LeaderEpoch: -1})
		}
		if _, err := adm.CommitOffsets(testkit.Context(b), groups[i], os); err != nil {
			b.Fatal(err)
		}
	}
	e := p.engine(b, f)
	b.ResetTimer()
	for b.Loop() {
		plan, err := e.PlanFailover(testkit.Context(b), PlanOptions{Groups: groups, Mode: ModeExact})
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Apply(testkit.Context(b), plan); err != nil {
			b.Fatal(err)
		}
		if n := plan.Problems(); n != 0 {
			b.Fatalf("%d problems", n)
		}
	}
}

// BenchmarkExactTranslate100Partitions translates one group over 100
// partitions of 1,000 records each in exact mode.
func BenchmarkExactTranslate100Partitions(b *testing.B) {
	p := newPair(b)
	topic := testkit.Name("orders")
	p.CreateTopic(b, "us-east", topic, 100, nil)
	var recs []*kgo.Record
	for part := int32(0); part < 100; part++ {
		recs = append(recs, records(topic, part, 0, 1000)...)
	}
	p.Produce(b, "us-east", recs...)
	f := testFlow(b, topic)
	p.mirrorOnce(b, f)
	offs := map[int32]int64{}
	for part := int32(0); part < 100; part++ {
		offs[part] = int64(part*9 + 50)
	}
	p.Commit(b, "us-east", "bench-one", map[string]map[int32]int64{topic: offs})
	e := p.engine(b, f)
	b.ResetTimer()
	for b.Loop() {
		res, err := e.Translate(testkit.Context(b), []string{"bench-one"}, ModeExact)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res.Groups[0].Partitions {
			if r.TargetOffset == nil || *r.TargetOffset != *r.SourceOffset {
				b.Fatalf("%+v", r)
			}
		}
	}
}
