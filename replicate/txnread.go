package replicate

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The progress topic holds both kinds of writes: at-least-once positions,
// produced outside transactions, and exactly-once positions, committed in
// the tasks' transactions. A read_committed reader stops at the partition's
// last stable offset, the first record of the oldest transaction still
// open, so one open transaction, of a process killed in it, hides every
// position written after it until the coordinator aborts it at its timeout
// (KIP-98; tens of seconds, never for a hanging transaction), whichever flow
// partition it was for. The progress readers therefore read uncommitted, up
// to the high watermark, and keep a transaction's records back themselves
// until its marker says commit (txnFilter): they see every position a
// read_committed reader would see, as soon as it is decided.

// txnFilter passes on the records of one partition, read uncommitted in
// offset order, that a read_committed reader would see: a record written
// outside a transaction at once, a transaction's records when its commit
// marker is read, and never an aborted transaction's. Not safe for
// concurrent use.
type txnFilter struct {
	open map[int64]*openTxn // by producer ID: transactions whose marker is not read yet
}

// openTxn is the data of one transaction not ended yet.
type openTxn struct {
	first int64         // the offset of its first record
	recs  []*kgo.Record // copies of its data records, in offset order
}

// controlCommit reports whether control record r is a commit marker (else
// an abort, or a control record of another kind: ok false). The key is the
// ControlRecordType: version int16, type int16 (0 abort, 1 commit).
func controlCommit(r *kgo.Record) (commit, ok bool) {
	if len(r.Key) < 4 {
		return false, false
	}
	switch binary.BigEndian.Uint16(r.Key[2:4]) {
	case 0:
		return false, true
	case 1:
		return true, true
	}
	return false, false
}

// add takes the partition's next record and appends to out the records it
// makes visible, in the order they were written: r itself when written
// outside a transaction, the transaction's records when r is its commit
// marker, none otherwise. A transactional record is copied (its key and
// value too), so nothing holds the fetch buffer it came in.
func (f *txnFilter) add(r *kgo.Record, out []*kgo.Record) []*kgo.Record {
	switch {
	case r.Attrs.IsControl():
		commit, ok := controlCommit(r)
		if !ok {
			return out
		}
		tx := f.open[r.ProducerID]
		delete(f.open, r.ProducerID)
		if commit && tx != nil {
			out = append(out, tx.recs...)
		}
		return out
	case r.Attrs.IsTransactional():
		if f.open == nil {
			f.open = map[int64]*openTxn{}
		}
		tx := f.open[r.ProducerID]
		if tx == nil {
			tx = &openTxn{first: r.Offset}
			f.open[r.ProducerID] = tx
		}
		c := *r
		c.Key, c.Value = bytes.Clone(r.Key), bytes.Clone(r.Value)
		c.Headers = nil
		tx.recs = append(tx.recs, &c)
		return out
	}
	return append(out, r)
}

// openBefore reports whether a transaction that began before offset end is
// still open and holds a record match accepts.
func (f *txnFilter) openBefore(end int64, match func(*kgo.Record) bool) bool {
	for _, tx := range f.open {
		if tx.first < end && slices.ContainsFunc(tx.recs, match) {
			return true
		}
	}
	return false
}

// ReadProgressTopic reads partition 0 of the progress topic on cluster alias
// (see [ProgressTopic]) from its log start to its high watermark when the
// read began, and calls fn with the records a read_committed reader sees
// (txnFilter), newest by offset last per key: a record is passed on only
// when no newer one of its key was. So the last call per key holds its
// newest position, and a transaction still open, whichever partition's, hides
// only its own records. A missing or empty topic reads as nothing. The read
// is bounded by ctx; the error names the topic and cluster.
func ReadProgressTopic(ctx context.Context, clients Clients, alias, topic string, fn func(*kgo.Record)) error {
	var (
		f      txnFilter
		newest = map[string]int64{} // the offset of the last record passed on, per key
		vis    []*kgo.Record
	)
	return readPartitionZero(ctx, clients, alias, topic, false, func(r *kgo.Record) {
		vis = f.add(r, vis[:0])
		for _, v := range vis {
			if at, ok := newest[string(v.Key)]; !ok || v.Offset > at {
				newest[string(v.Key)] = v.Offset
				fn(v)
			}
		}
	})
}
