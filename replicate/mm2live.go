package replicate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// HeartbeatWriterHeader is the record header mirrorctl puts on the
// heartbeats it writes (value "mirrorctl"), so that a heartbeat without it
// is known to come from MirrorMaker 2. MM2's readers ignore headers.
const HeartbeatWriterHeader = "mirrorctl.writer"

// DetectMM2 looks for a MirrorMaker 2 that still runs the flow: members in
// its Connect worker group on the target ([MM2Takeover].ConnectGroup), or MM2
// heartbeats for the pair still arriving on the target's heartbeats topic (a
// heartbeat newer than the last few intervals makes it watch the topic for
// two intervals more). An error means it could not tell: callers treat that
// as "not known to be safe".
func DetectMM2(ctx context.Context, cfg FlowConfig, clients Clients, now func() time.Time) (MM2Activity, error) {
	act := MM2Activity{ConnectGroup: cfg.MM2.ConnectGroup}
	if now == nil {
		now = time.Now
	}
	interval := max(cfg.HeartbeatsInterval, time.Second)
	var seen int64 = -1 // offset after the last heartbeats record read
	newest := func(ctx context.Context, from int64) (n int, last int64, err error) {
		err = readWholeTopic(ctx, clients, cfg.Target, cfg.Policy.HeartbeatsTopic(), func(r *kgo.Record) {
			seen = max(seen, r.Offset+1)
			if r.Partition != 0 || r.Offset < from || fromMirrorctl(r) {
				return
			}
			h, err := mm2.DecodeHeartbeat(r.Key, r.Value)
			if err != nil || h.SourceAlias != cfg.Source || h.TargetAlias != cfg.Target {
				return
			}
			n++
			last = max(last, h.Timestamp)
		})
		if err != nil {
			err = fmt.Errorf("read heartbeats on %s: %w", cfg.Target, err)
		}
		return n, last, err
	}
	// The Connect group and the heartbeats are read at once.
	var steps []func(context.Context) error
	if g := cfg.MM2.ConnectGroup; g != "" {
		steps = append(steps, func(ctx context.Context) error {
			members, err := connectMembers(ctx, clients, cfg.Target, g)
			act.Members = members
			return err
		})
	}
	var last int64
	if cfg.EmitHeartbeats {
		steps = append(steps, func(ctx context.Context) (err error) {
			_, last, err = newest(ctx, 0)
			return err
		})
	}
	if err := concurrently(ctx, steps...); err != nil || !cfg.EmitHeartbeats {
		return act, err
	}
	act.LastHeartbeatMs = last
	if last == 0 || now().Sub(time.UnixMilli(last)) > max(3*interval, 10*time.Second) {
		return act, nil
	}
	// Recent: watch whether more arrive (an MM2 just stopped sends none).
	from := seen
	select {
	case <-ctx.Done():
		return act, ctx.Err()
	case <-time.After(min(2*interval+time.Second, 15*time.Second)):
	}
	n, last2, err := newest(ctx, from)
	if err != nil {
		return act, err
	}
	act.Heartbeats = n
	act.LastHeartbeatMs = max(last, last2)
	return act, nil
}

// connectMembers lists the members of MM2's Connect worker group on the
// target (client id @ host); none when the group does not exist.
func connectMembers(ctx context.Context, clients Clients, alias, group string) ([]string, error) {
	tgt, closeTgt, err := probeAdmin(clients, alias)
	if err != nil {
		return nil, err
	}
	defer closeTgt()
	// A fresh target creates __consumer_offsets at the first group
	// request: its coordinator is not ready for a moment.
	var described kadm.DescribedGroups
	err = retryTransient(ctx, func() error {
		var err error
		if described, err = tgt.DescribeGroups(ctx, group); err == nil {
			if d, ok := described[group]; ok && d.Err != nil && !errors.Is(d.Err, kerr.GroupIDNotFound) {
				err = d.Err
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("describe MM2's Connect group %s on %s: %w", group, alias, err)
	}
	var members []string
	if d, ok := described[group]; ok && d.Err == nil {
		for _, m := range d.Members {
			members = append(members, m.ClientID+"@"+clientHost(m.ClientHost))
		}
	}
	return members, nil
}

func fromMirrorctl(r *kgo.Record) bool {
	for _, h := range r.Headers {
		if h.Key == HeartbeatWriterHeader {
			return true
		}
	}
	return false
}

// refuseBesideMM2 returns an error wrapping ErrMM2Running when DetectMM2
// sees MM2 run the flow, or cannot tell.
func refuseBesideMM2(ctx context.Context, cfg FlowConfig, clients Clients, now func() time.Time) error {
	act, err := DetectMM2(ctx, cfg, clients, now)
	if err != nil {
		return fmt.Errorf("flow %s: cannot tell whether MirrorMaker 2 still runs it (%w); check, then start with --ignore-live-mm2", cfg.Name(), err)
	}
	if act.Live() {
		return fmt.Errorf("flow %s: %w: %s; stop it first (both would copy every record: twice on the target), or start with --ignore-live-mm2",
			cfg.Name(), ErrMM2Running, act)
	}
	return nil
}
