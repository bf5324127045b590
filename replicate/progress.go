package replicate

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/replicate/progress"
)

// Progress records live in mirrorctl's progress topic (see [ProgressTopic]);
// their format is package replicate/progress. A record is written only after
// the target acknowledged the data it covers, so a restart (even after
// kill -9) resumes with nothing lost; at most the records acknowledged since
// the last write are copied again (at-least-once).
type tp struct {
	topic     string
	partition int32
}

func encodeProgress(t tp, next int64, now time.Time) *kgo.Record {
	k, v := progress.Encode(progress.Key{Topic: t.topic, Partition: t.partition}, next, now)
	return &kgo.Record{Key: k, Value: v, Partition: 0, Timestamp: now}
}

func decodeProgress(key, value []byte) (tp, int64, error) {
	k, next, err := progress.Decode(key, value)
	return tp{k.Topic, k.Partition}, next, err
}

// ReadInternalTopic reads partition 0 of topic on cluster alias (where MM2
// writes all its internal topics: offset-syncs, checkpoints, heartbeats) from
// the log start to the end offset it had when the read began, calling fn for
// each data record in offset order (transaction markers are skipped). A
// missing or empty topic reads as nothing. The read is bounded by ctx; the
// error names the topic and cluster.
func ReadInternalTopic(ctx context.Context, clients Clients, alias, topic string, fn func(*kgo.Record)) error {
	adm, err := clients.Admin(alias)
	if err != nil {
		return err
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("list end offsets of %s on %s: %w", topic, alias, err)
	}
	end, ok := ends.Lookup(topic, 0)
	if !ok || end.Err != nil || end.Offset <= 0 {
		return nil // missing or empty
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("list start offsets of %s on %s: %w", topic, alias, err)
	}
	if s, ok := starts.Lookup(topic, 0); ok && s.Err == nil && s.Offset >= end.Offset {
		return nil
	}
	cl, err := clients.Client(alias, "consumer",
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.KeepControlRecords())
	if err != nil {
		return err
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read %s on %s: %w", topic, alias, err)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) { ferr = fmt.Errorf("read %s[%d] on %s: %w", t, p, alias, err) })
		if ferr != nil {
			return ferr
		}
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				fn(r)
			}
			if r.Offset+1 >= end.Offset {
				done = true
			}
		})
		if done {
			return nil
		}
	}
}

// loadProgress reads the flow's progress topic to its end and returns the next
// source offset per source partition. Undecodable records are counted, logged
// by offset and skipped.
func loadProgress(ctx context.Context, clients Clients, cfg FlowConfig, logger *slog.Logger) (map[tp]int64, error) {
	topic := ProgressTopic(cfg.Policy, cfg.Source)
	out := make(map[tp]int64)
	skipped := 0
	err := ReadInternalTopic(ctx, clients, cfg.Target, topic, func(r *kgo.Record) {
		t, next, err := decodeProgress(r.Key, r.Value)
		if err != nil {
			skipped++
			logger.Warn("skipping undecodable progress record", "topic", topic, "offset", r.Offset, "err", err)
			return
		}
		out[t] = next // the newest record per key wins, as compaction keeps it
	})
	if err != nil {
		return nil, err
	}
	if skipped > 0 {
		logger.Warn("progress records skipped", "topic", topic, "count", skipped)
	}
	return out, nil
}

// ensureProgressTopic creates the flow's progress topic on the target.
func ensureProgressTopic(ctx context.Context, cfg FlowConfig, tgt *kadm.Client) error {
	return ensureInternalTopic(ctx, tgt, ProgressTopic(cfg.Policy, cfg.Source), cfg.ProgressReplicationFactor)
}
