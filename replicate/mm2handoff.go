package replicate

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/replicate/connectoffsets"
	"github.com/mirrorctl/mirrorctl/replicate/filter"
)

// Handing a flow back to MirrorMaker 2: mirrorctl's progress (the next
// source offset per partition) becomes MM2's Connect source offsets (the last
// copied upstream offset, next-1), written to MM2's offsets topic with the
// key bytes Connect itself writes, to the partition Connect's producer would
// choose (murmur2 of the key), so that an MM2 restarted on the same
// mm2.properties resumes where mirrorctl stopped (MirrorSourceTask seeks to
// offset+1).

// Handoff actions per partition.
const (
	HandoffWrite      = "write"       // MM2's offset is moved to mirrorctl's position
	HandoffInSync     = "in-sync"     // MM2's offset already says what progress says
	HandoffMM2Ahead   = "mm2-ahead"   // MM2 copied further than mirrorctl's progress: left alone (writing would copy again)
	HandoffNoProgress = "no-progress" // mirrorctl never copied this partition: MM2 keeps what it has
)

// HandoffRow is one source partition of a hand-back.
type HandoffRow struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Progress is mirrorctl's next source offset, -1 none; MM2Offset the
	// last copied upstream offset MM2 has now, -1 none; Write the offset
	// the hand-back writes (Progress-1), -1 none.
	Progress  int64  `json:"progress"`
	MM2Offset int64  `json:"mm2_offset"`
	Write     int64  `json:"write"`
	Action    string `json:"action"`

	key       []byte
	recordKey connectoffsets.Key
}

// HandoffPlan is what `mirrorctl mm2 handoff` would write for one flow.
type HandoffPlan struct {
	Flow         string `json:"flow"`
	OffsetsTopic string `json:"offsets_topic"` // on the target
	Connector    string `json:"connector"`
	// OffsetsTopicExists is false when MM2 never ran against this target
	// with this offsets topic (Connect creates it at its first start).
	OffsetsTopicExists bool         `json:"offsets_topic_exists"`
	Rows               []HandoffRow `json:"partitions"`
	// Skipped counts records of the offsets topic that are not Connect
	// source offsets.
	Skipped int `json:"skipped_records"`
	// OutsideFlow counts partitions with progress or MM2 offsets whose
	// topic the flow does not mirror now (topics, topics.exclude): they are
	// left alone, as MM2 would never read them.
	OutsideFlow int `json:"outside_flow"`
	// MM2 is what was seen of a running MM2; Replicate the replicate
	// processes that are members of the flow's group now.
	MM2       MM2Activity `json:"mm2"`
	Replicate []Member    `json:"replicate_members"`
	// Blocked says why the plan must not be applied now ("" when it may).
	Blocked string `json:"blocked,omitempty"`
}

// Writes returns how many partitions the plan writes.
func (p *HandoffPlan) Writes() int {
	n := 0
	for _, r := range p.Rows {
		if r.Action == HandoffWrite {
			n++
		}
	}
	return n
}

// ErrHandoffBlocked is returned (wrapped) by ApplyHandoff when the plan is
// blocked: MM2 or a replicate process still runs the flow, or MM2's offsets
// topic does not exist.
var ErrHandoffBlocked = errors.New("hand-back blocked")

// PlanHandoff reads mirrorctl's progress and MM2's Connect source offsets for
// flow cfg and returns what a hand-back would write. It changes nothing.
func PlanHandoff(ctx context.Context, cfg FlowConfig, clients Clients) (*HandoffPlan, error) {
	plan := &HandoffPlan{Flow: cfg.Name(), OffsetsTopic: cfg.MM2.OffsetsTopic, Connector: cfg.MM2.Connector, Rows: []HandoffRow{}, Replicate: []Member{}}
	progress := map[tp]int64{}
	if err := ReadProgressTopic(ctx, clients, cfg.Target, ProgressTopic(cfg.Policy, cfg.Source), func(r *kgo.Record) {
		if k, v, err := decodeProgress(r.Key, r.Value); err == nil {
			progress[k] = v.Next
		}
	}); err != nil {
		return nil, err
	}
	tk, err := loadTakeover(ctx, cfg, clients)
	if err != nil {
		return nil, err
	}
	plan.Skipped = tk.offsets.Skipped
	tgt, closeTgt, err := probeAdmin(clients, cfg.Target)
	if err != nil {
		return nil, err
	}
	defer closeTgt()
	td, err := tgt.ListTopics(ctx, cfg.MM2.OffsetsTopic)
	if err != nil {
		return nil, fmt.Errorf("describe %s on %s: %w", cfg.MM2.OffsetsTopic, cfg.Target, err)
	}
	if d, ok := td[cfg.MM2.OffsetsTopic]; ok && d.Err == nil {
		plan.OffsetsTopicExists = true
	} else if ok && d.Err != nil && !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		return nil, fmt.Errorf("describe %s on %s: %w", cfg.MM2.OffsetsTopic, cfg.Target, d.Err)
	}
	plan.Rows = handoffRows(cfg, plan, progress, tk)
	if plan.MM2, err = DetectMM2(ctx, cfg, clients, nil); err != nil {
		plan.Blocked = "cannot tell whether MirrorMaker 2 runs the flow: " + err.Error()
		return plan, nil
	}
	src, closeSrc, err := probeAdmin(clients, cfg.Source)
	if err != nil {
		return nil, err
	}
	defer closeSrc()
	own, err := ReadOwnership(ctx, src, tgt, cfg)
	switch {
	case err != nil:
		plan.Blocked = "cannot tell whether replicate processes run the flow: " + err.Error()
	case plan.MM2.Live():
		plan.Blocked = "MirrorMaker 2 still runs the flow (" + plan.MM2.String() + "): it would overwrite the offsets"
	case len(own.Members) > 0:
		plan.Replicate = own.Members
		plan.Blocked = fmt.Sprintf("%d replicate processes still run the flow (group %s): stop them first, or their progress moves on past the hand-back", len(own.Members), own.Group)
	case !plan.OffsetsTopicExists && plan.Writes() > 0:
		plan.Blocked = fmt.Sprintf("MM2's offsets topic %s does not exist on %s: start MM2 once (it creates the topic), stop it, and hand back again; or set %s", cfg.MM2.OffsetsTopic, cfg.Target, "mirrorctl.mm2.offsets.topic")
	}
	return plan, nil
}

// ApplyHandoff writes the plan's offsets to MM2's offsets topic and waits for
// the target to acknowledge them. It returns how many were written; an error
// wrapping ErrHandoffBlocked when the plan is blocked (nothing written).
func ApplyHandoff(ctx context.Context, cfg FlowConfig, clients Clients, plan *HandoffPlan) (int, error) {
	if plan.Blocked != "" {
		return 0, fmt.Errorf("flow %s: %w: %s", cfg.Name(), ErrHandoffBlocked, plan.Blocked)
	}
	var recs []*kgo.Record
	for _, r := range plan.Rows {
		if r.Action == HandoffWrite {
			recs = append(recs, &kgo.Record{Topic: plan.OffsetsTopic, Key: r.key, Value: connectoffsets.EncodeValue(r.Write)})
		}
	}
	if len(recs) == 0 {
		return 0, nil
	}
	// Connect's producer places a key by murmur2 of its bytes, as the
	// sticky key partitioner with Kafka's hasher does.
	cl, err := clients.Client(cfg.Target, RoleProducer, kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	res := cl.ProduceSync(ctx, recs...)
	n := 0
	for _, r := range res {
		if r.Err == nil {
			n++
		}
	}
	if err := res.FirstErr(); err != nil {
		return n, fmt.Errorf("flow %s: write MM2 offsets to %s on %s: %d of %d written: %w", cfg.Name(), plan.OffsetsTopic, cfg.Target, n, len(recs), err)
	}
	return n, nil
}

// handoffRows is a row per partition that mirrorctl's progress or MM2's
// Connect offsets name, sorted; partitions outside the flow are counted in
// plan.OutsideFlow instead.
func handoffRows(cfg FlowConfig, plan *HandoffPlan, progress map[tp]int64, tk *takeover) []HandoffRow {
	rows := []HandoffRow{}
	seen := map[tp]bool{}
	add := func(k tp) {
		if seen[k] {
			return
		}
		seen[k] = true
		if !filter.DecideTopic(cfg.Policy, cfg.Topics, k.topic, cfg.Target, cfg.HeartbeatsReplication).Replicate {
			plan.OutsideFlow++
			return
		}
		row := HandoffRow{Topic: k.topic, Partition: k.partition, Progress: -1, MM2Offset: -1, Write: -1,
			recordKey: connectoffsets.Key{Connector: cfg.MM2.Connector, Cluster: cfg.Source, Topic: k.topic, Partition: k.partition}}
		row.key = connectoffsets.EncodeKey(row.recordKey)
		if pos, ok := tk.offsets.Get(k.topic, k.partition); ok {
			row.MM2Offset = pos.Offset
			row.key = pos.RawKey // the bytes MM2's Connect looks up
		}
		next, ok := progress[k]
		switch {
		case !ok || next <= 0:
			row.Action = HandoffNoProgress
			if ok {
				row.Progress = next
			}
		case row.MM2Offset == next-1:
			row.Progress, row.Action = next, HandoffInSync
		case row.MM2Offset > next-1:
			row.Progress, row.Action = next, HandoffMM2Ahead
		default:
			row.Progress, row.Write, row.Action = next, next-1, HandoffWrite
		}
		rows = append(rows, row)
	}
	for k := range progress {
		add(k)
	}
	for _, pos := range tk.offsets.Positions() {
		add(tp{pos.Topic, pos.Partition})
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	return rows
}

// ReadMM2Offsets returns MM2's Connect source offsets for the flow (the
// MirrorSourceConnector named cfg.MM2.Connector, in cfg.MM2.OffsetsTopic on
// the target; see loadTakeover): per source topic and partition, the
// upstream offset of the last record MM2 copied (it resumes at one more).
// An absent topic, or a flow without one configured, reads as none. This is
// how `lag` follows a flow handed back to MM2: MM2 moves these offsets on,
// while mirrorctl's progress stays where the hand-back left it.
func ReadMM2Offsets(ctx context.Context, cfg FlowConfig, clients Clients) (map[string]map[int32]int64, error) {
	tk := newTakeover(cfg)
	if err := tk.readOffsets(ctx, cfg, clients); err != nil {
		return nil, err
	}
	out := map[string]map[int32]int64{}
	for _, p := range tk.offsets.Positions() {
		if out[p.Topic] == nil {
			out[p.Topic] = map[int32]int64{}
		}
		out[p.Topic][p.Partition] = p.Offset
	}
	return out, nil
}
