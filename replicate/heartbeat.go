package replicate

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// heartbeatRecord builds MM2's heartbeat for source->target at now: topic
// "heartbeats" (partition 0) on the target, record timestamp equal to the
// value's (MM2 MirrorHeartbeatTask).
func heartbeatRecord(cfg FlowConfig, now time.Time) (*kgo.Record, error) {
	hb := mm2.Heartbeat{SourceAlias: cfg.Source, TargetAlias: cfg.Target, Timestamp: now.UnixMilli()}
	k, err := hb.MarshalKey()
	if err != nil {
		return nil, err
	}
	v, err := hb.MarshalValue()
	if err != nil {
		return nil, err
	}
	return &kgo.Record{
		Topic:     cfg.Policy.HeartbeatsTopic(),
		Partition: 0,
		Key:       k,
		Value:     v,
		Timestamp: time.UnixMilli(hb.Timestamp),
		// Tells mirrorctl's check for a running MM2 (mm2live.go) that
		// this heartbeat is not MM2's.
		Headers: []kgo.RecordHeader{{Key: HeartbeatWriterHeader, Value: []byte("mirrorctl")}},
	}, nil
}

// runHeartbeats emits a heartbeat for cfg every cfg.HeartbeatsInterval until
// ctx is done, or exactly one when once is set. It creates the heartbeats
// topic on the target first (compacted, one partition). MM2 runs this for
// every ordered pair with heartbeats on, whether or not the pair's flow is
// enabled: that is how the source's "heartbeats" topic comes to exist and
// reveal the topology downstream (docs/mm2-formats.md §8).
func runHeartbeats(ctx context.Context, cfg FlowConfig, clients Clients, logger *slog.Logger, now func() time.Time, once bool) error {
	adm, err := clients.Admin(cfg.Target)
	if err != nil {
		return err
	}
	if err := ensureInternalTopic(ctx, adm, cfg.Policy.HeartbeatsTopic(), cfg.HeartbeatsReplicationFactor); err != nil {
		return fmt.Errorf("heartbeats %s: %w", cfg.Name(), err)
	}
	cl, err := clients.Client(cfg.Target, "producer", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	emit := func() error {
		r, err := heartbeatRecord(cfg, now())
		if err != nil {
			return err
		}
		// Bounded: a heartbeat the target will not take (no WRITE on
		// heartbeats, say) must not hang the flow, --once included.
		hctx, cancel := context.WithTimeout(ctx, heartbeatTimeout(cfg.HeartbeatsInterval))
		defer cancel()
		return cl.ProduceSync(hctx, r).FirstErr()
	}
	if once {
		if err := emit(); err != nil {
			return fmt.Errorf("heartbeats %s: %w", cfg.Name(), err)
		}
		return nil
	}
	t := time.NewTicker(cfg.HeartbeatsInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := emit(); err != nil && ctx.Err() == nil {
				// A heartbeat that did not arrive is the signal itself: log it
				// and keep beating, as MM2 does.
				logger.Warn("heartbeat not written", "flow", cfg.Name(), "err", err)
			}
		}
	}
}

// heartbeatTimeout bounds one heartbeat write: ten intervals, at least 10s
// and at most 60s.
func heartbeatTimeout(interval time.Duration) time.Duration {
	return min(max(10*interval, 10*time.Second), time.Minute)
}

// prepareHeartbeats runs before any flow plans its topics. For every pair of
// the run that emits heartbeats into a cluster that an enabled flow of the
// run copies from (the reverse pair of a two-way setup: eu-west->us-east
// beats into us-east, which us-east->eu-west copies), it makes the
// heartbeats topic exist there and, with once, writes that pair's one
// heartbeat. A flow plans at start and then only every
// refresh.topics.interval.seconds, so a heartbeats topic created after its
// plan would not be copied for that long (a --once run never copies it, and
// the next `lag --max-latency` breaches on it).
//
// The topics exist when it returns; the once heartbeats are written in the
// background, while the flows read their start-up state, and fail calls
// with the error of a write that failed. A flow lists the end offsets it
// copies up to only once they are written ([onceBeats.wait]), and a leader
// writes no other heartbeat for a pair written here ([onceBeats.wrote]).
func prepareHeartbeats(ctx context.Context, flows []FlowConfig, clients Clients, now func() time.Time, once bool, fail func(error)) (*onceBeats, error) {
	copied := map[string]bool{}
	for _, f := range flows {
		if f.Enabled {
			copied[f.Source] = true
		}
	}
	b := &onceBeats{done: make(chan struct{}), written: map[string]bool{}}
	var pending []FlowConfig
	for _, h := range flows {
		if !h.EmitHeartbeats || !copied[h.Target] {
			continue
		}
		adm, err := clients.Admin(h.Target)
		if err != nil {
			return nil, err
		}
		if err := ensureInternalTopic(ctx, adm, h.Policy.HeartbeatsTopic(), h.HeartbeatsReplicationFactor); err != nil {
			return nil, fmt.Errorf("heartbeats %s: %w", h.Name(), err)
		}
		if once {
			pending = append(pending, h)
		}
	}
	go func() {
		defer close(b.done)
		for _, h := range pending {
			if err := writeOnceHeartbeat(ctx, h, clients, now); err != nil {
				b.err = fmt.Errorf("heartbeats %s: %w", h.Name(), err)
				fail(b.err)
				return
			}
			b.written[h.Name()] = true
		}
	}()
	return b, nil
}

// writeOnceHeartbeat writes pair h's one heartbeat of a once run.
func writeOnceHeartbeat(ctx context.Context, h FlowConfig, clients Clients, now func() time.Time) error {
	r, err := heartbeatRecord(h, now())
	if err != nil {
		return err
	}
	cl, err := clients.Client(h.Target, RoleProducer, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	hctx, cancel := context.WithTimeout(ctx, heartbeatTimeout(h.HeartbeatsInterval))
	defer cancel()
	return cl.ProduceSync(hctx, r).FirstErr()
}

// onceBeats is what prepareHeartbeats writes in the background: written
// (by flow name) and err are set before done is closed.
type onceBeats struct {
	done    chan struct{}
	written map[string]bool
	err     error
}

// wait waits until the once heartbeats are written. When one failed it
// returns context.Canceled: prepareHeartbeats' fail reported the cause and
// stops the run.
func (b *onceBeats) wait(ctx context.Context) error {
	if b == nil {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-b.done:
		if b.err != nil {
			return context.Canceled
		}
		return nil
	}
}

// wrote waits for the once heartbeats, then reports whether flow's was one
// of them.
func (b *onceBeats) wrote(ctx context.Context, flow string) (bool, error) {
	if err := b.wait(ctx); err != nil || b == nil {
		return false, err
	}
	return b.written[flow], nil
}
