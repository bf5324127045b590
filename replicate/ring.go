package replicate

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Rings across separate configurations. config refuses a ring of enabled
// flows of one file whose policy cannot tell copies apart (internal/config
// loop.go); flows of different files (three teams, three processes, or MM2
// on one hop) can close a ring no single file shows. Such a ring is found
// from the data: with mirrorctl.provenance.header.enabled a flow stamps
// every copy with the header OriginHeader, the cluster ID the record was
// first written on (kept when the record already carries one, so it
// survives every further hop, MM2's included: MirrorSourceTask copies
// headers as they are). Every flow, stamping or not, stops a partition at
// a record whose origin is the flow's own target: copying it would write a
// copy back onto the cluster it came from, which under
// IdentityReplicationPolicy feeds the ring without end (and under prefixing
// policies grows ever longer topic names in a mixed ring). One stamping flow
// anywhere on the ring is enough for the flow into the stamped origin to
// stop it.

// OriginHeader is the record header a stamping flow adds to each copy: the
// Kafka cluster ID (Metadata) of the cluster the record was first produced
// on, as UTF-8 bytes. mirrorctl's own; absent unless a flow of the ring has
// mirrorctl.provenance.header.enabled = true.
const OriginHeader = "mirrorctl-origin"

// LossRing: the record is a copy whose OriginHeader names the flow's
// target: copying it would close a replication ring. The partition stops
// at it; nothing is skipped (Count 0), and a restart stops there again
// until the ring is broken.
const LossRing LossKind = "ring"

// ringGuard holds what a flow's copy path needs for the ring check.
type ringGuard struct {
	target []byte // the target's cluster ID; nil: not known, nothing is checked
	stamp  []byte // the source's cluster ID when the flow stamps copies, else nil
}

// readRingGuard asks both clusters for their cluster IDs (Metadata). The
// target's is needed for the check; the source's only when the flow stamps,
// and then its absence is an error: a copy must never go out unstamped
// while the operator relies on the header.
func readRingGuard(ctx context.Context, cfg FlowConfig, src, tgt *kadm.Client) (ringGuard, error) {
	var g ringGuard
	m, err := tgt.BrokerMetadata(ctx)
	if err != nil {
		return g, fmt.Errorf("flow %s: cluster ID of %s: %w", cfg.Name(), cfg.Target, err)
	}
	if m.Cluster != "" {
		g.target = []byte(m.Cluster)
	}
	if !cfg.ProvenanceHeader {
		return g, nil
	}
	m, err = src.BrokerMetadata(ctx)
	switch {
	case err != nil:
		return g, fmt.Errorf("flow %s: cluster ID of %s for the %s header: %w", cfg.Name(), cfg.Source, OriginHeader, err)
	case m.Cluster == "":
		return g, fmt.Errorf("flow %s: %s reports no cluster ID: copies cannot carry the %s header (mirrorctl.provenance.header.enabled)",
			cfg.Name(), cfg.Source, OriginHeader)
	}
	g.stamp = []byte(m.Cluster)
	return g, nil
}

// closesRing reports whether r carries an OriginHeader naming the target.
func (g *ringGuard) closesRing(r *kgo.Record) bool {
	if g.target == nil {
		return false
	}
	for _, h := range r.Headers {
		if h.Key == OriginHeader && bytes.Equal(h.Value, g.target) {
			return true
		}
	}
	return false
}

// stampCopy appends the OriginHeader to a copy that has none, when the flow
// stamps.
func (g *ringGuard) stampCopy(r *kgo.Record) {
	if g.stamp == nil {
		return
	}
	for _, h := range r.Headers {
		if h.Key == OriginHeader {
			return
		}
	}
	r.Headers = append(r.Headers, kgo.RecordHeader{Key: OriginHeader, Value: g.stamp})
}

// ErrRing is the error of a partition stopped by [LossRing].
var ErrRing = errors.New("replication ring")

// stopAtRing stops t at r, a copy that came from the flow's target: nothing
// of r or after it is produced, the copies in flight before it still count,
// and the stop is a loss event of kind [LossRing].
func (w *worker) stopAtRing(t *task, r *kgo.Record) {
	w.reportLoss(t, LossEvent{Kind: LossRing, From: r.Offset, To: r.Offset, Stopped: true,
		Reason: fmt.Sprintf("%v: the record carries %s = %s, the cluster ID of %s, so it is a copy of a record first written there, and flow %s would write it back: "+
			"the flows form a ring (another configuration, or MM2, closes it); nothing is lost: break the ring (disable one of its flows or exclude the topic), then restart",
			ErrRing, OriginHeader, w.ring.target, w.cfg.Target, w.cfg.Name())})
}
