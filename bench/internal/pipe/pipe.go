// Package pipe is the benchmarks' bare franz-go consume→produce pipe: the
// ceiling any mirror can reach between two clusters, with franz-go's default
// client settings, as mirrorctl uses them.
package pipe

import (
	"context"
	"flag"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Main parses the pipe's command line (-src, -dst: comma-separated
// bootstrap addresses; -topic; -partitions, default defPartitions; -follow)
// and runs [Run] until it ends or ctx is done.
func Main(ctx context.Context, args []string, defPartitions int) error {
	fs := flag.NewFlagSet("pipe", flag.ExitOnError)
	src := fs.String("src", "", "source bootstrap")
	dst := fs.String("dst", "", "target bootstrap")
	topic := fs.String("topic", "", "source topic")
	partitions := fs.Int("partitions", defPartitions, "partitions")
	follow := fs.Bool("follow", false, "keep copying until interrupted")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return Run(ctx, strings.Split(*src, ","), strings.Split(*dst, ","), *topic, int32(*partitions), *follow)
}

// Run copies every partition (0..partitions-1) of topic from the start to
// pipe.<topic> on dst, same partition, each fetched record produced
// unchanged but for what belongs to the source's producer. It stops once
// the end offsets listed at start are copied and acknowledged, or, with
// follow, when ctx is done. It returns the first produce error.
func Run(ctx context.Context, src, dst []string, topic string, partitions int32, follow bool) error {
	admCl, err := kgo.NewClient(kgo.SeedBrokers(src...))
	if err != nil {
		return err
	}
	ends, err := kadm.NewClient(admCl).ListEndOffsets(ctx, topic)
	admCl.Close()
	if err != nil {
		return err
	}
	remaining := map[int32]int64{}
	assign := map[int32]kgo.Offset{}
	for p := int32(0); p < partitions; p++ {
		assign[p] = kgo.NewOffset().AtStart()
		if o, ok := ends.Lookup(topic, p); ok && o.Offset > 0 {
			remaining[p] = o.Offset
		}
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(src...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}))
	if err != nil {
		return err
	}
	defer consumer.Close()
	producer, err := kgo.NewClient(kgo.SeedBrokers(dst...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer producer.Close()
	dstTopic := "pipe." + topic
	var (
		mu   sync.Mutex
		perr error
	)
	promise := func(_ *kgo.Record, err error) {
		mu.Lock()
		if err != nil && perr == nil {
			perr = err
		}
		mu.Unlock()
	}
	for follow || len(remaining) > 0 {
		fetches := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		if err := fetches.Err0(); err != nil {
			return err
		}
		fetches.EachRecord(func(r *kgo.Record) {
			// Read the offset first: the producer overwrites it with the
			// target's offset once the copy is acknowledged.
			if end, ok := remaining[r.Partition]; ok && r.Offset+1 >= end {
				delete(remaining, r.Partition)
			}
			r.Topic = dstTopic
			r.Attrs = kgo.RecordAttrs{}
			r.ProducerEpoch, r.ProducerID, r.LeaderEpoch = 0, 0, 0
			producer.Produce(context.Background(), r, promise)
		})
	}
	if err := producer.Flush(context.Background()); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	return perr
}
