package replicate

import (
	"context"

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

// readCommitted is the isolation option of every internal reader.
func readCommitted() kgo.Opt { return kgo.FetchIsolationLevel(kgo.ReadCommitted()) }

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
