package replicate

import (
	"bytes"
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// A reverse checkpoint from the offset syncs alone is exact only at a sync:
// between two (offset.lag.max records apart, or more) the inverse rule
// answers the sync's upstream offset plus one, and a failback from it reads
// again every record the group read on the target since that sync. While
// the reverse checkpoints are written both clusters answer, so the mirror
// pins the answer instead: the data records of the remote partition from
// the sync's downstream offset up to the group's commit are the copies of
// as many data records of the source partition from the sync's upstream
// offset; when each pair has the same timestamp, key, value and headers,
// the group's source position is the offset after the last of them. A pin
// that cannot be made (records deleted, a copy that does not match, more
// than pinLimit records apart, a read that does not finish within
// pinTimeout) keeps the inverse rule's answer. Pins are kept per group
// position and offset sync, so a group that does not move costs no read.

// pinLimit is the most records a pin reads on each cluster.
const pinLimit = 5000

// pinTimeout bounds each pin's reads.
const pinTimeout = 5 * time.Second

type pinKey struct {
	topic     string // source topic
	partition int32
	down      int64 // the group's commit on the remote partition
	sync      mm2.OffsetSync
}

// reversePins pins reverse checkpoints for one emit pass; known carries
// the pins of the previous pass (-1: could not be pinned).
type reversePins struct {
	r     *reverseCheckpointer
	known map[pinKey]int64
	used  map[pinKey]int64
	tried int // pins read this pass, at most pinsPerPass
}

// pinsPerPass bounds the reads of one pass: the other positions keep the
// inverse rule's answer until a later pass pins them.
const pinsPerPass = 256

func (r *reverseCheckpointer) newPins() *reversePins {
	return &reversePins{r: r, known: r.pins, used: map[pinKey]int64{}}
}

// done keeps the pass's pins for the next pass.
func (p *reversePins) done() { p.r.pins = p.used }

// upstream returns the source offset of the group's commit down on remote
// partition (source topic up): pinned by content when it can be, else by
// the inverse offset-sync rule; ok=false when no offset sync is at or below
// down.
func (p *reversePins) upstream(ctx context.Context, up, remote string, partition int32, down int64) (int64, bool) {
	c := p.r.c
	u, ok := c.syncs.TranslateUpstream(up, partition, down)
	if !ok {
		return 0, false
	}
	var sync mm2.OffsetSync
	for _, s := range c.syncs.Syncs(up, partition) {
		if s.DownstreamOffset <= down {
			sync = s
			break
		}
	}
	if sync.DownstreamOffset == down || down-sync.DownstreamOffset > pinLimit {
		return u, true
	}
	k := pinKey{up, partition, down, sync}
	pinned, seen := p.known[k]
	if !seen {
		if p.tried >= pinsPerPass {
			return u, true
		}
		p.tried++
		pinned = p.pin(ctx, up, remote, partition, down, sync)
	}
	p.used[k] = pinned
	if pinned < 0 {
		return u, true
	}
	return pinned, true
}

// pin matches the remote data records in [sync downstream, down) with the
// source data records from the sync's upstream offset, pair by pair, and
// returns the source offset after the last pair, or -1.
func (p *reversePins) pin(ctx context.Context, up, remote string, partition int32, down int64, sync mm2.OffsetSync) int64 {
	src, tgt, ok := p.readers()
	if !ok {
		return -1
	}
	defer src.Close()
	defer tgt.Close()
	ctx, cancel := context.WithTimeout(ctx, pinTimeout)
	defer cancel()
	copies, next := readData(ctx, tgt, remote, partition, sync.DownstreamOffset,
		func(_ []*kgo.Record, r *kgo.Record) bool { return r.Offset < down },
		func(recs []*kgo.Record, next int64) bool { return next >= down || len(recs) > pinLimit })
	if next < down || len(copies) == 0 || len(copies) > pinLimit || copies[0].Offset != sync.DownstreamOffset {
		return -1
	}
	n := len(copies)
	origs, _ := readData(ctx, src, up, partition, sync.UpstreamOffset,
		func(recs []*kgo.Record, _ *kgo.Record) bool { return len(recs) < n },
		func(recs []*kgo.Record, _ int64) bool { return len(recs) >= n })
	if len(origs) < n || origs[0].Offset != sync.UpstreamOffset {
		return -1
	}
	for i := range copies {
		if !sameRecord(copies[i], origs[i]) {
			return -1
		}
	}
	return origs[n-1].Offset + 1
}

// readers creates a pin's source and target readers (each pin its own,
// so no fetch of another pin is buffered): the source with the data path's
// isolation (the records the mirror copies), the target read_committed
// (the records a group reads), both keeping the markers so a read sees its
// position pass them.
func (p *reversePins) readers() (src, tgt *kgo.Client, ok bool) {
	c := p.r.c
	src, err := c.clients.Client(c.cfg.Source, RoleConsumer, kgo.FetchIsolationLevel(sourceIsolation(c.cfg)), kgo.KeepControlRecords())
	if err != nil {
		return nil, nil, false
	}
	tgt, err = c.clients.Client(c.cfg.Target, RoleConsumer, readCommitted(), kgo.KeepControlRecords())
	if err != nil {
		src.Close()
		return nil, nil, false
	}
	return src, tgt, true
}

// readData reads topic[partition] from offset from with cl until enough
// (given the data records kept and the next offset to read), its end, or
// ctx ends,
// keeping the data records keep admits, and returns them, in order, and the
// next offset to read.
func readData(ctx context.Context, cl *kgo.Client, topic string, partition int32, from int64,
	keep func([]*kgo.Record, *kgo.Record) bool, enough func([]*kgo.Record, int64) bool) ([]*kgo.Record, int64) {
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(from)}})
	var out []*kgo.Record
	next, atEnd := from, false
	for !atEnd && !enough(out, next) && ctx.Err() == nil {
		cl.PollFetches(ctx).EachPartition(func(fp kgo.FetchTopicPartition) {
			if fp.Topic != topic || fp.Partition != partition {
				return
			}
			// Nothing more to read now: the end a fetch can reach (the
			// last stable offset when reading committed).
			end := fp.HighWatermark
			if fp.LastStableOffset >= 0 && fp.LastStableOffset < end {
				end = fp.LastStableOffset
			}
			defer func() { atEnd = atEnd || (end >= 0 && next >= end) }()
			for _, r := range fp.Records {
				if r.Offset < next {
					continue
				}
				next = r.Offset + 1
				if !r.Attrs.IsControl() && keep(out, r) {
					out = append(out, r)
				}
			}
		})
	}
	return out, next
}

// sameRecord reports whether a copy and its original have the same
// timestamp, key, value and headers, [OriginHeader] left out (a stamping
// flow adds it to the copy).
func sameRecord(a, b *kgo.Record) bool {
	if !a.Timestamp.Equal(b.Timestamp) || !bytes.Equal(a.Key, b.Key) || !bytes.Equal(a.Value, b.Value) {
		return false
	}
	ah, bh := withoutOrigin(a.Headers), withoutOrigin(b.Headers)
	if len(ah) != len(bh) {
		return false
	}
	for i := range ah {
		if ah[i].Key != bh[i].Key || !bytes.Equal(ah[i].Value, bh[i].Value) {
			return false
		}
	}
	return true
}

// withoutOrigin returns hs without [OriginHeader] (hs itself when it has
// none, the common case: no copy).
func withoutOrigin(hs []kgo.RecordHeader) []kgo.RecordHeader {
	for i, h := range hs {
		if h.Key == OriginHeader {
			out := append(append([]kgo.RecordHeader(nil), hs[:i]...), hs[i+1:]...)
			return withoutOrigin(out)
		}
	}
	return hs
}
