package syncstore

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

const (
	benchSyncs      = 1_000_000
	benchPartitions = 100
	benchStep       = 101 // offset.lag.max=100 with lock-step offsets (5.3)
)

var benchTopics = func() []string {
	t := make([]string, benchPartitions/10)
	for i := range t {
		t[i] = fmt.Sprintf("topic-%d", i)
	}
	return t
}()

// benchSync returns the k-th of benchSyncs syncs, dealt round-robin over 10
// topics x 10 partitions, upstream == downstream advancing by benchStep.
func benchSync(k int) mm2.OffsetSync {
	p := k % benchPartitions
	off := int64(k/benchPartitions) * benchStep
	return mm2.OffsetSync{Topic: benchTopics[p/10], Partition: int32(p % 10), UpstreamOffset: off, DownstreamOffset: off}
}

func loadedStore() *Store {
	s := New(false)
	s.ReadToEnd()
	for k := 0; k < benchSyncs; k++ {
		s.Add(benchSync(k))
	}
	return s
}

// BenchmarkAdd adds 1M syncs over 100 partitions to a fresh live store per
// iteration; ns/sync is the cost of one Add.
func BenchmarkAdd(b *testing.B) {
	syncs := make([]mm2.OffsetSync, benchSyncs)
	for k := range syncs {
		syncs[k] = benchSync(k)
	}
	b.ReportAllocs()
	for b.Loop() {
		s := New(false)
		s.ReadToEnd()
		for _, o := range syncs {
			s.Add(o)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchSyncs, "ns/sync")
}

// BenchmarkTranslate translates random group offsets on a store holding 1M
// syncs over 100 partitions; one op is one Translate.
func BenchmarkTranslate(b *testing.B) {
	s := loadedStore()
	maxOff := int64(benchSyncs/benchPartitions) * benchStep
	r := rand.New(rand.NewPCG(1, 2))
	type q struct {
		topic string
		part  int32
		up    int64
	}
	qs := make([]q, 4096)
	for i := range qs {
		p := r.IntN(benchPartitions)
		qs[i] = q{benchTopics[p/10], int32(p % 10), r.Int64N(maxOff)}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		x := qs[i%len(qs)]
		if res := s.Translate(x.topic, x.part, x.up); !res.OK && res.Reason != ReasonTooOld {
			b.Fatalf("t(%v) = %+v", x, res)
		}
		i++
	}
}

// BenchmarkTranslateParallel is BenchmarkTranslate from all Ps while one
// goroutine keeps adding syncs, to show readers do not wait for the writer.
func BenchmarkTranslateParallel(b *testing.B) {
	s := loadedStore()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for k := benchSyncs; ; k++ {
			select {
			case <-stop:
				return
			default:
				s.Add(benchSync(k))
			}
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(rand.Uint64(), 3))
		maxOff := int64(benchSyncs/benchPartitions) * benchStep
		for pb.Next() {
			p := r.IntN(benchPartitions)
			s.Translate(benchTopics[p/10], int32(p%10), r.Int64N(maxOff))
		}
	})
	b.StopTimer()
	close(stop)
	<-done
}
