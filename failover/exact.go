package failover

import (
	"context"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/mirrorctl/mirrorctl/replicate/syncstore"
)

// exactKey dedupes requests: many groups at the same position of a
// partition share one search.
type exactKey struct {
	topic     string
	partition int32
	pos       int64
}

// translateExact translates every committed offset of groups (fetched from
// the source) in exact mode.
func (e *Engine) translateExact(ctx context.Context, groups []string, fetched map[string]kadm.OffsetResponses) (map[string][]Translation, error) {
	topics := map[string]bool{}
	for _, g := range groups {
		fetched[g].Each(func(o kadm.OffsetResponse) {
			if o.Err == nil && e.mirrors(o.Topic) {
				topics[o.Topic] = true
			}
		})
	}
	out := map[string][]Translation{}
	if len(topics) == 0 {
		return out, nil
	}
	adm, err := e.clients.Admin(e.flow.Source)
	if err != nil {
		return nil, err
	}
	ends, err := adm.ListEndOffsets(ctx, keys(topics)...)
	if err != nil {
		return nil, fmt.Errorf("list end offsets on %s: %w", e.flow.Source, err)
	}
	store, err := e.readSyncs(ctx)
	if err != nil {
		return nil, err
	}
	var progress map[tpKey]int64
	reqs := map[exactKey]*locReq{}
	var list []*locReq
	type pending struct {
		group string
		row   Translation
		q     *locReq
		res   syncstore.Result
	}
	var parts []kadm.ListedOffset
	ends.Each(func(lo kadm.ListedOffset) {
		if topics[lo.Topic] {
			parts = append(parts, lo)
		}
	})
	sort.Slice(parts, func(i, j int) bool {
		if parts[i].Topic != parts[j].Topic {
			return parts[i].Topic < parts[j].Topic
		}
		return parts[i].Partition < parts[j].Partition
	})
	var rows []pending
	for _, g := range groups {
		for _, lo := range parts {
			if _, reads := fetched[g][lo.Topic]; !reads {
				continue // the group does not read this topic
			}
			o, ok := fetched[g].Lookup(lo.Topic, lo.Partition)
			row := Translation{SourceTopic: lo.Topic, Topic: e.remoteTopic(lo.Topic), Partition: lo.Partition, Mode: ModeExact}
			switch {
			case ok && o.Err != nil:
				row.Error = fmt.Sprintf("fetch the group's offset of %s[%d] on %s: %v", lo.Topic, lo.Partition, e.flow.Source, o.Err)
			case lo.Err != nil:
				row.Error = fmt.Sprintf("list the end offset of %s[%d] on %s: %v", lo.Topic, lo.Partition, e.flow.Source, lo.Err)
			}
			if row.Error != "" {
				row.Reason = row.Error
				rows = append(rows, pending{group: g, row: row})
				continue
			}
			if !ok || o.At < 0 {
				row.Reason = "no committed offset on " + e.flow.Source
				rows = append(rows, pending{group: g, row: row})
				continue
			}
			row.SourceOffset, row.Metadata = ptr(o.At), o.Metadata
			k := exactKey{lo.Topic, lo.Partition, o.At}
			q := reqs[k]
			tr := store.Translate(lo.Topic, lo.Partition, o.At)
			if q == nil {
				q = &locReq{xTopic: lo.Topic, yTopic: row.Topic, partition: lo.Partition, pos: o.At}
				if tr.OK {
					q.hasAnchor, q.ax, q.ay = true, tr.Sync.UpstreamOffset, tr.Sync.DownstreamOffset
					q.fallback = ptr(tr.Offset)
					q.fallbackReason = fmt.Sprintf("using the offset-sync translation %d (MM2's rule: may re-read, never skips)", tr.Offset)
				} else {
					if progress == nil {
						progress = e.readProgress(ctx)
					}
					q.fallbackReason = e.explain(tr, lo.Topic, lo.Partition, o.At, progress)
				}
				reqs[k] = q
				list = append(list, q)
			}
			rows = append(rows, pending{group: g, row: row, q: q, res: tr})
		}
	}
	if err := e.locate(ctx, e.flow.Source, e.flow.Target, list); err != nil {
		return nil, err
	}
	for _, p := range rows {
		row := p.row
		if q := p.q; q != nil {
			row.TargetOffset, row.Reason, row.NotReplicated = q.offset, q.reason, q.notReplicated
			if q.exact {
				row.Rereads = ptr(0)
			}
			if q.hasAnchor {
				row.Sync = &SyncRef{Upstream: q.ax, Downstream: q.ay}
			}
		}
		out[p.group] = append(out[p.group], row)
	}
	return out, nil
}

// mirrors reports whether the flow mirrors source topic t.
func (e *Engine) mirrors(t string) bool {
	return e.flow.Topics.Accept(t) && !e.flow.Policy.IsInternalTopic(t)
}

// explain says why the offset syncs give no answer for a group at upstream,
// using the oldest kept sync and the mirror's progress.
func (e *Engine) explain(tr syncstore.Result, topic string, partition int32, upstream int64, progress map[tpKey]int64) string {
	var s string
	switch tr.Reason {
	case syncstore.ReasonTooOld:
		s = fmt.Sprintf("the group's offset %d is older than every kept offset sync (oldest %d->%d)", upstream, tr.Sync.UpstreamOffset, tr.Sync.DownstreamOffset)
	default:
		s = string(tr.Reason)
	}
	if p, ok := progress[tpKey{topic, partition}]; ok {
		s += fmt.Sprintf("; the mirror's next source offset for %s[%d] is %d", topic, partition, p)
	}
	return s
}
