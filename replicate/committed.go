package replicate

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Committed data only. The data path reads the source read_committed
// (KIP-98) unless FlowConfig.ReadUncommitted says otherwise, and every
// reader of a target or internal topic (the progress view, checkpoint and
// offset-sync reloads, ReadInternalTopic and through it the dumps, lag and
// failover) reads read_committed whatever the user's consumer properties
// say: nothing mirrorctl reports or resumes from points at a record of an
// aborted transaction, or of one still open.
//
// A read_committed consumer gets, of a transaction, either every record
// (committed) or none (aborted, dropped by the client from the fetch's
// aborted-transaction list), and never anything past the partition's last
// stable offset (LSO: the first offset of the oldest open transaction).
// Transaction markers are kept (kgo.KeepControlRecords), so a read that
// must reach an end offset sees the marker that closes the log.

// readCommitted is the isolation option of every internal reader but the
// progress topic's (txnread.go).
func readCommitted() kgo.Opt { return kgo.FetchIsolationLevel(kgo.ReadCommitted()) }

// readUncommitted is the progress readers' isolation option: they filter
// transactions themselves (txnFilter), past the last stable offset.
func readUncommitted() kgo.Opt { return kgo.FetchIsolationLevel(kgo.ReadUncommitted()) }

// sourceIsolation is the data path's source isolation level.
func sourceIsolation(cfg FlowConfig) kgo.IsolationLevel {
	if cfg.ReadUncommitted {
		return kgo.ReadUncommitted()
	}
	return kgo.ReadCommitted()
}

// listSourceEnds lists the end offsets the data path can reach on the source:
// the last stable offsets when it reads committed (what a read_committed
// consumer can reach now; an open transaction's records come later), the
// high watermarks otherwise. --once copies up to them, and
// auto.offset.reset=latest starts there, as Java's consumer resets to the LSO
// under read_committed.
func listSourceEnds(ctx context.Context, cfg FlowConfig, adm *kadm.Client, topics ...string) (kadm.ListedOffsets, error) {
	if cfg.ReadUncommitted {
		return adm.ListEndOffsets(ctx, topics...)
	}
	return adm.ListCommittedOffsets(ctx, topics...)
}

// committedRecords reports whether topic[partition] on cluster alias holds
// a record a read_committed reader sees: 0 when every record below its last
// stable offset belongs to an aborted transaction or is a transaction
// marker (and nothing is there at all), else the partition's committed end
// minus its log start (an upper bound on the records; the refusal names
// it). It reads the partition read_committed from its log start until the
// first data record or the last stable offset, bounded by ctx: only a
// partition holding nothing committed is read whole.
func committedRecords(ctx context.Context, clients Clients, alias, topic string, partition int32) (int64, error) {
	adm, err := clients.Admin(alias)
	if err != nil {
		return 0, err
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("list start offsets of %s on %s: %w", topic, alias, err)
	}
	lsos, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("list last stable offsets of %s on %s: %w", topic, alias, err)
	}
	s, ok1 := starts.Lookup(topic, partition)
	e, ok2 := lsos.Lookup(topic, partition)
	if !ok1 || !ok2 || s.Err != nil || e.Err != nil {
		return 0, fmt.Errorf("offsets of %s[%d] on %s: %v", topic, partition, alias, errors.Join(s.Err, e.Err))
	}
	if e.Offset <= s.Offset {
		return 0, nil
	}
	cl, err := clients.Client(alias, RoleConsumer, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(s.Offset)}}),
		kgo.KeepControlRecords(), readCommitted())
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("read %s[%d] on %s: %w", topic, partition, alias, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return 0, fmt.Errorf("read %s[%d] on %s: %w", topic, partition, alias, ferr)
		}
		found, reached := false, false
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= e.Offset {
				reached = true
				return
			}
			if !r.Attrs.IsControl() {
				found = true
			}
			if r.Offset+1 >= e.Offset {
				reached = true
			}
		})
		if found {
			return e.Offset - s.Offset, nil
		}
		if reached {
			return 0, nil
		}
	}
}
