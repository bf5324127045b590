package failover

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/replicate"
)

// scanJob reads one partition from an exact offset: visit is called for
// every record at or after from (control records included, in offset order)
// until it returns false or the record before end was seen.
type scanJob struct {
	topic     string
	partition int32
	from, end int64
	visit     func(r *kgo.Record) bool
	done      func() // nil, or called once when the job ends (read or skipped)
}

type tpKey struct {
	topic     string
	partition int32
}

// scan runs jobs on cluster alias with one consumer per round, every
// partition of a round fetched in parallel (kgo.ConsumePartitions at exact
// offsets). Jobs on the same partition run in successive rounds. A job whose
// range is empty is skipped. The error names the partition and cluster.
func scan(ctx context.Context, clients replicate.Clients, alias string, jobs []*scanJob) error {
	var rounds [][]*scanJob
	seen := map[tpKey]int{}
	for _, j := range jobs {
		if j.from >= j.end {
			if j.done != nil {
				j.done()
			}
			continue
		}
		k := tpKey{j.topic, j.partition}
		r := seen[k]
		seen[k] = r + 1
		if r == len(rounds) {
			rounds = append(rounds, nil)
		}
		rounds[r] = append(rounds[r], j)
	}
	for _, round := range rounds {
		if err := scanRound(ctx, clients, alias, round); err != nil {
			return err
		}
	}
	return nil
}

// tracked has e.progress told about jobs, a phase of exact translation
// reading alias: each job's end counts one partition, and the returned func
// (call it once the jobs' scan returned) ends the phase.
func (e *Engine) tracked(alias string, jobs []*scanJob) func() {
	if e.progress == nil || len(jobs) == 0 {
		return func() {}
	}
	done, total := 0, len(jobs)
	e.progress(ScanProgress{Cluster: alias, Total: total})
	for _, j := range jobs {
		j.done = func() {
			done++
			e.progress(ScanProgress{Cluster: alias, Done: done, Total: total})
		}
	}
	return func() { e.progress(ScanProgress{Cluster: alias, Done: done, Total: total, End: true}) }
}

func scanRound(ctx context.Context, clients replicate.Clients, alias string, jobs []*scanJob) error {
	assign := map[string]map[int32]kgo.Offset{}
	open := map[tpKey]*scanJob{}
	for _, j := range jobs {
		if assign[j.topic] == nil {
			assign[j.topic] = map[int32]kgo.Offset{}
		}
		assign[j.topic][j.partition] = kgo.NewOffset().At(j.from)
		open[tpKey{j.topic, j.partition}] = j
	}
	// Read committed, as every mirrorctl reader: a record of an aborted
	// transaction is neither a translation anchor nor a match.
	cl, err := clients.Client(alias, replicate.RoleConsumer, kgo.ConsumePartitions(assign), kgo.KeepControlRecords(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return err
	}
	defer cl.Close()
	for len(open) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read %d partitions on %s: %w", len(open), alias, err)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil {
				ferr = fmt.Errorf("read %s[%d] on %s: %w", t, p, alias, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		done := map[string][]int32{}
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			k := tpKey{p.Topic, p.Partition}
			j := open[k]
			if j == nil {
				return
			}
			for _, r := range p.Records {
				if r.Offset < j.from {
					continue
				}
				if !j.visit(r) || r.Offset+1 >= j.end {
					delete(open, k)
					done[p.Topic] = append(done[p.Topic], p.Partition)
					if j.done != nil {
						j.done()
					}
					return
				}
			}
		})
		if len(done) > 0 {
			cl.RemoveConsumePartitions(done)
		}
	}
	return nil
}
