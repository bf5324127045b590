package failover

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/groupstate"
	"github.com/mirrorctl/mirrorctl/replicate"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
	"github.com/mirrorctl/mirrorctl/replicate/progress"
	"github.com/mirrorctl/mirrorctl/replicate/syncstore"
)

// Mode selects how offsets are translated.
type Mode string

const (
	// ModeAuto is exact where the source cluster answers, checkpoint
	// otherwise.
	ModeAuto Mode = "auto"
	// ModeCheckpoint uses the newest checkpoint per partition in
	// <source>.checkpoints.internal on the target, as MM2's
	// RemoteClusterUtils.translateOffsets does. It needs only the target.
	ModeCheckpoint Mode = "checkpoint"
	// ModeExact finds the copy of the next record the group would read by
	// content (timestamp, key, value, header digest), starting from the
	// nearest offset sync. It needs both clusters.
	ModeExact Mode = "exact"
	// modeSync marks failback rows that fell back to the inverse offset
	// sync rule.
	modeSync Mode = "sync"
)

// Modes lists the values accepted by [ParseMode].
func Modes() []string { return []string{string(ModeAuto), string(ModeCheckpoint), string(ModeExact)} }

// Options configures an [Engine].
type Options struct {
	// Flow is the source->target flow whose topics, offset syncs and
	// checkpoints are used (its Policy names the remote topics; its Topics
	// filter decides which of a group's topics are mirrored).
	Flow replicate.FlowConfig
	// Clients hands out clients per cluster alias; the engine closes the
	// consumers it obtains and never the admin clients.
	Clients replicate.Clients
	Logger  *slog.Logger     // nil discards
	Now     func() time.Time // nil is time.Now
	// SearchBound is how many records past the expected position a content
	// search may look (duplicates after producer retries); default 1000.
	SearchBound int64
	// MaxScan bounds the records read per partition and side; beyond it
	// the safe sync-based answer is used. Default 100000.
	MaxScan int64
	// SourceTimeout bounds the first request to the source cluster in auto
	// and checkpoint mode; when it expires the source counts as down.
	// Default 10s.
	SourceTimeout time.Duration
	// ApplyParallel is how many groups Apply commits at once; default 8.
	ApplyParallel int
	// CommitTimeout bounds one group's commit once sent, and the re-read
	// of its offsets when the commit's answer was lost; default 30s.
	CommitTimeout time.Duration
	// Progress, when set, is told how exact translation (Translate,
	// Plan, failback) gets on while it reads partitions record by record:
	// see [ScanProgress]. It is called from the goroutine running the
	// engine's method, never concurrently. nil reports nothing.
	Progress func(ScanProgress)
}

// ScanProgress is one step of exact translation's reads: it reads
// partitions of Cluster in phases (the group's side, then the other side),
// Total partitions per phase. A phase starts with Done 0, reports each
// partition read, and ends with End set, also when a read failed or the
// context ended (Done then stays below Total).
type ScanProgress struct {
	Cluster     string // alias of the cluster being read
	Done, Total int    // partitions read so far, and to read, in this phase
	End         bool   // the phase is over
}

// Engine translates, plans, applies and verifies consumer-group moves along
// one flow. It is safe for sequential use; build one per command run.
type Engine struct {
	flow          replicate.FlowConfig
	clients       replicate.Clients
	log           *slog.Logger
	now           func() time.Time
	bound         int64
	maxScan       int64
	sourceTimeout time.Duration
	parallel      int
	commitTimeout time.Duration
	progress      func(ScanProgress)
}

// New checks opts and returns an Engine. It connects to nothing.
func New(opts Options) (*Engine, error) {
	if opts.Clients == nil {
		return nil, errors.New("failover: Options.Clients is nil")
	}
	if err := opts.Flow.Validate(); err != nil {
		return nil, err
	}
	e := &Engine{flow: opts.Flow, clients: opts.Clients, log: opts.Logger, now: opts.Now,
		bound: opts.SearchBound, maxScan: opts.MaxScan, sourceTimeout: opts.SourceTimeout, parallel: opts.ApplyParallel, commitTimeout: opts.CommitTimeout,
		progress: opts.Progress}
	if e.commitTimeout <= 0 {
		e.commitTimeout = defaultCommitTimeout
	}
	if e.parallel <= 0 {
		e.parallel = 8
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.now == nil {
		e.now = time.Now
	}
	if e.bound <= 0 {
		e.bound = 1000
	}
	if e.maxScan <= 0 {
		e.maxScan = 100000
	}
	if e.sourceTimeout <= 0 {
		e.sourceTimeout = 10 * time.Second
	}
	return e, nil
}

// SyncRef is the offset sync a translation started from: the source record
// at Upstream was copied to Downstream on the target.
type SyncRef struct {
	Upstream   int64 `json:"upstream"`
	Downstream int64 `json:"downstream"`
}

// Translation is one group partition translated from the source to the
// target.
type Translation struct {
	SourceTopic string `json:"source_topic"`
	// Topic is the remote topic on the target, e.g. "us-east.orders".
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// SourceOffset is the group's committed offset on the source (in
	// checkpoint mode the checkpoint's upstream offset); nil when the group
	// has no commit for the partition.
	SourceOffset *int64 `json:"source_offset"`
	// TargetOffset is the translated committed offset on the target (the
	// next record to read); nil when there is no safe answer (see Reason).
	TargetOffset *int64 `json:"target_offset"`
	// Mode produced the row: exact or checkpoint (sync for failback rows
	// that used the inverse offset-sync rule).
	Mode Mode `json:"mode"`
	// Sync is the offset sync the translation started from, if any.
	Sync *SyncRef `json:"sync,omitempty"`
	// Rereads is how many offsets a consumer will read again compared
	// with the exact position (records, plus any transaction markers
	// between); nil when the exact position is unknown.
	Rereads *int64 `json:"rereads"`
	// Reason explains a nil TargetOffset, a fallback or an adjustment.
	Reason string `json:"reason"`
	// Error is set when an input of the row (the group's commit, the
	// partition's offsets) could not be read: the row is unknown, never
	// acted on.
	Error string `json:"error,omitempty"`
	// OutOfRange is set (by Engine.Translate) when TargetOffset is not a
	// position on the target: below the partition's log start or past its
	// end (high watermark), e.g. a checkpoint at 2^50 written by a broken
	// or foreign mirror. It says which bound and by how much; failover
	// refuses to commit such a row (see Plan).
	OutOfRange string `json:"out_of_range,omitempty"`

	// Metadata is the source commit's (or checkpoint's) metadata, carried
	// to the target commit.
	Metadata string `json:"-"`
	// NotReplicated reports that the record the group reads next has no
	// copy on the target yet.
	NotReplicated bool `json:"-"`
	// CheckpointTime is the checkpoint record's timestamp (checkpoint mode).
	CheckpointTime time.Time `json:"-"`
	// SourceUp and SourceCommit are, for checkpoint-mode rows, whether
	// the source answered and the group's commit there now (nil: none),
	// for judging the checkpoint (package freshness).
	SourceUp     bool   `json:"-"`
	SourceCommit *int64 `json:"-"`
}

// GroupTranslation holds one group's rows, sorted by topic and partition.
type GroupTranslation struct {
	Group      string        `json:"group"`
	Partitions []Translation `json:"partitions"`
	// Error is set when the group's commits could not be read (it then
	// has no rows): unknown, not "no commits".
	Error string `json:"error,omitempty"`
}

// TranslateResult is the outcome of [Engine.Translate].
type TranslateResult struct {
	Source string             `json:"source"`
	Target string             `json:"target"`
	Groups []GroupTranslation `json:"groups"`
	// SourceDown is set when auto mode could not reach the source and
	// used checkpoints only; SourceErr says why.
	SourceDown bool   `json:"-"`
	SourceErr  string `json:"-"`
	// MirrorLive is the time of the flow's newest heartbeat on the target,
	// else of the newest checkpoint of any group; zero when none or not
	// read (it is read in checkpoint mode, or with the source down).
	MirrorLive time.Time `json:"-"`
}

func ptr(v int64) *int64 { return &v }

// remoteTopic is the target-side name of source topic t (MM2
// MirrorCheckpointTask.renameTopicPartition): a topic that came from the
// target in the first place maps back to its original name.
func (e *Engine) remoteTopic(t string) string {
	p := e.flow.Policy
	if src, ok := p.TopicSource(t); ok && src == e.flow.Target {
		return p.OriginalTopic(t)
	}
	return p.FormatRemoteTopic(e.flow.Source, t)
}

// sourceTopic is the inverse of remoteTopic for a target-side topic, ok=false
// when the topic did not come from the flow's source.
func (e *Engine) sourceTopic(t string) (string, bool) {
	p := e.flow.Policy
	if src, ok := p.TopicSource(t); ok {
		if src != e.flow.Source {
			return "", false
		}
		u, ok := p.UpstreamTopic(t)
		return u, ok
	}
	// A topic with no source alias came from the target itself; the source
	// holds it under a remote name only if it was mirrored back.
	return "", false
}

// checkpointRec is the newest checkpoint of a key, with its record time.
type checkpointRec struct {
	mm2.Checkpoint
	at time.Time
}

// readCheckpoints reads <source>.checkpoints.internal on the target; the
// last record per (group, topic, partition) in log order wins, as
// RemoteClusterUtils.translateOffsets does. Undecodable records are skipped.
func (e *Engine) readCheckpoints(ctx context.Context, groups map[string]bool) (map[string][]checkpointRec, error) {
	cks, _, err := e.readCheckpointsNewest(ctx, groups)
	return cks, err
}

// readCheckpointsNewest is readCheckpoints that also returns the newest
// checkpoint record time of any group (the mirror's liveness).
func (e *Engine) readCheckpointsNewest(ctx context.Context, groups map[string]bool) (map[string][]checkpointRec, time.Time, error) {
	topic := e.flow.Policy.CheckpointsTopic(e.flow.Source)
	ix := newCheckpointIndex(groups, e.log, topic)
	if err := replicate.ReadInternalTopic(ctx, e.clients, e.flow.Target, topic, ix.add); err != nil {
		return nil, time.Time{}, fmt.Errorf("read checkpoints: %w", err)
	}
	return ix.byGroup(), ix.newest, nil
}

// checkpointKey is a checkpoint's key: group, remote topic (their numbers
// in a checkpointIndex) and partition. Twelve bytes without pointers: the
// index of 10 million checkpoints hashes and the collector scans less.
type checkpointKey struct {
	g, t, p int32
}

// checkpointIndex keeps the newest checkpoint per key of the records of a
// checkpoints topic given to add in log order, for the groups asked (nil:
// every group), and the newest record time of any group. Group and topic
// names are kept once each (the decoded copies are dropped).
type checkpointIndex struct {
	groups map[string]bool
	names  map[string]int32 // group and topic names, numbered
	byName []string         // the names by number
	at     map[checkpointKey]int32
	recs   []checkpointRec // in the order their keys were first seen
	newest time.Time
	log    *slog.Logger
	topic  string
}

func newCheckpointIndex(groups map[string]bool, log *slog.Logger, topic string) *checkpointIndex {
	return &checkpointIndex{groups: groups, names: map[string]int32{}, at: map[checkpointKey]int32{}, log: log, topic: topic}
}

// name numbers s, the first time it is seen, and returns its number and
// the copy of it the index keeps.
func (ix *checkpointIndex) name(s string) (int32, string) {
	if n, ok := ix.names[s]; ok {
		return n, ix.byName[n]
	}
	n := int32(len(ix.byName))
	ix.names[s] = n
	ix.byName = append(ix.byName, s)
	return n, s
}

// add decodes r (MM2's Checkpoint key and value); undecodable records are
// skipped.
func (ix *checkpointIndex) add(r *kgo.Record) {
	ck, err := mm2.DecodeCheckpoint(r.Key, r.Value)
	if err != nil {
		ix.log.Debug("skipping undecodable checkpoint", "topic", ix.topic, "offset", r.Offset, "err", err)
		return
	}
	if r.Timestamp.After(ix.newest) {
		ix.newest = r.Timestamp
	}
	if ix.groups != nil && !ix.groups[ck.Group] {
		return
	}
	var k checkpointKey
	k.g, ck.Group = ix.name(ck.Group)
	k.t, ck.Topic = ix.name(ck.Topic)
	k.p = ck.Partition
	if i, ok := ix.at[k]; ok {
		ix.recs[i] = checkpointRec{ck, r.Timestamp}
		return
	}
	ix.at[k] = int32(len(ix.recs))
	ix.recs = append(ix.recs, checkpointRec{ck, r.Timestamp})
}

// byGroup is the newest checkpoints by group, in no order.
func (ix *checkpointIndex) byGroup() map[string][]checkpointRec {
	n := map[string]int{}
	for i := range ix.recs {
		n[ix.recs[i].Group]++
	}
	out := make(map[string][]checkpointRec, len(n))
	for g, c := range n {
		out[g] = make([]checkpointRec, 0, c)
	}
	for _, c := range ix.recs {
		out[c.Group] = append(out[c.Group], c)
	}
	return out
}

// newestHeartbeat is the time of the flow's newest heartbeat in the
// target's heartbeats topic (MM2 MirrorHeartbeatTask's records, source and
// target aliases of the flow); zero when there is none or it cannot be
// read.
func (e *Engine) newestHeartbeat(ctx context.Context) time.Time {
	var newest time.Time
	_ = replicate.ReadInternalTopic(ctx, e.clients, e.flow.Target, e.flow.Policy.HeartbeatsTopic(), func(r *kgo.Record) {
		hb, err := mm2.DecodeHeartbeat(r.Key, r.Value)
		if err != nil || hb.SourceAlias != e.flow.Source || hb.TargetAlias != e.flow.Target {
			return
		}
		if t := time.UnixMilli(hb.Timestamp); t.After(newest) {
			newest = t
		}
	})
	return newest
}

// readSyncs loads the flow's offset-syncs topic into a store that keeps the
// full 64-slot history (MM2 3.8+ startup, syncstore.New(false)), and also
// returns the newest sync per partition.
func (e *Engine) readSyncs(ctx context.Context) (*syncstore.Store, error) {
	alias, topic := e.flow.OffsetSyncsTopic()
	st := syncstore.New(false)
	err := replicate.ReadInternalTopic(ctx, e.clients, alias, topic, func(r *kgo.Record) {
		s, err := mm2.DecodeOffsetSync(r.Key, r.Value)
		if err != nil {
			e.log.Debug("skipping undecodable offset sync", "topic", topic, "offset", r.Offset, "err", err)
			return
		}
		st.Add(s)
	})
	if err != nil {
		return nil, fmt.Errorf("read offset syncs %s on %s: %w", topic, alias, err)
	}
	st.ReadToEnd()
	return st, nil
}

// readProgress reads mirrorctl's progress topic on the target: the next
// source offset the mirror will copy, per source partition. A flow mirrored
// by MM2 has none (empty map).
func (e *Engine) readProgress(ctx context.Context) map[tpKey]int64 {
	topic := replicate.ProgressTopic(e.flow.Policy, e.flow.Source)
	out := map[tpKey]int64{}
	_ = replicate.ReadProgressTopic(ctx, e.clients, e.flow.Target, topic, func(r *kgo.Record) {
		if k, next, err := progress.Decode(r.Key, r.Value); err == nil {
			out[tpKey{k.Topic, k.Partition}] = next
		}
	})
	return out
}

// fetchOffsets fetches the committed offsets of groups on adm's cluster
// (OffsetFetch), retrying while the coordinator is not ready. A group that
// does not exist has no offsets (a known, empty answer). errs holds, per
// group, why its offsets are unknown (the request failed, an authorization
// error, no answer); such a group is absent from the first map. Errors per
// partition stay in the responses' Err: callers must check them (see
// [currentOf]) and never read an error as "no commit".
func fetchOffsets(ctx context.Context, adm *kadm.Client, alias string, groups []string) (map[string]kadm.OffsetResponses, map[string]error) {
	out := make(map[string]kadm.OffsetResponses, len(groups))
	errs := map[string]error{}
	var resp kadm.FetchOffsetsResponses
	_ = groupstate.RetryCoordinator(ctx, func() error {
		resp = adm.FetchManyOffsets(ctx, groups...)
		for _, r := range resp {
			if groupstate.CoordinatorErr(r.Err) {
				return r.Err
			}
		}
		return nil
	})
	for _, g := range groups {
		r, ok := resp[g]
		switch {
		case !ok:
			errs[g] = fmt.Errorf("fetch offsets of group %s on %s: no answer for the group", g, alias)
		case errors.Is(r.Err, kerr.GroupIDNotFound):
			out[g] = kadm.OffsetResponses{}
		case r.Err != nil:
			errs[g] = fmt.Errorf("fetch offsets of group %s on %s: %w", g, alias, r.Err)
		default:
			out[g] = r.Fetched
		}
	}
	return out, errs
}

// Translate translates the committed source offsets of groups to the target
// (see [Mode]). Every partition of every topic a group has committed on
// (and the flow mirrors) gets a row; a partition without a commit has a nil
// SourceOffset. Errors are returned for a cluster that cannot be read at all
// (the source only in exact mode).
//
// Every row's TargetOffset is checked against the target partition's log
// start and end (ListOffsets): one outside them is kept as it was read and
// gets OutOfRange; offsets that cannot be listed give the row an Error.
func (e *Engine) Translate(ctx context.Context, groups []string, mode Mode) (*TranslateResult, error) {
	res, err := e.translate(ctx, groups, mode, false)
	if err != nil {
		return nil, err
	}
	if err := e.checkTargetRanges(ctx, res); err != nil {
		return nil, err
	}
	return res, nil
}

// checkTargetRanges sets OutOfRange (or Error, when the bounds cannot be
// listed) on every row of res whose TargetOffset is outside its target
// partition's [log start, end].
func (e *Engine) checkTargetRanges(ctx context.Context, res *TranslateResult) error {
	topics := map[string]bool{}
	for _, g := range res.Groups {
		for _, r := range g.Partitions {
			if r.TargetOffset != nil && r.Error == "" {
				topics[r.Topic] = true
			}
		}
	}
	if len(topics) == 0 {
		return nil
	}
	adm, err := e.clients.Admin(e.flow.Target)
	if err != nil {
		return err
	}
	starts, ends, lerr := listOffsets(ctx, adm, e.flow.Target, keys(topics))
	for gi := range res.Groups {
		for i := range res.Groups[gi].Partitions {
			r := &res.Groups[gi].Partitions[i]
			if r.TargetOffset == nil || r.Error != "" {
				continue
			}
			var s, en kadm.ListedOffset
			ok := lerr == nil
			if ok {
				var ok1, ok2 bool
				s, ok1 = starts.Lookup(r.Topic, r.Partition)
				en, ok2 = ends.Lookup(r.Topic, r.Partition)
				ok = ok1 && ok2 && s.Err == nil && en.Err == nil
			}
			at := *r.TargetOffset
			switch {
			case !ok:
				why := "no answer for the partition"
				switch {
				case lerr != nil:
					why = lerr.Error()
				case s.Err != nil:
					why = s.Err.Error()
				case en.Err != nil:
					why = en.Err.Error()
				}
				r.Error = fmt.Sprintf("log start and end of %s[%d] on %s unknown: %s", r.Topic, r.Partition, e.flow.Target, why)
			case at > en.Offset:
				r.OutOfRange = fmt.Sprintf("offset %d is past the end %d of %s[%d] on %s by %d: not a position there (a bad checkpoint?)", at, en.Offset, r.Topic, r.Partition, e.flow.Target, at-en.Offset)
			case at < s.Offset:
				r.OutOfRange = fmt.Sprintf("offset %d is below the log start %d of %s[%d] on %s by %d: those records were deleted (retention)", at, s.Offset, r.Topic, r.Partition, e.flow.Target, s.Offset-at)
			}
		}
	}
	return nil
}

// errSourceNotAsked is why a target-only translation has no source answer.
var errSourceNotAsked = errors.New("not asked: an unplanned failover uses only what the target holds")

// translate is Translate; with targetOnly (an unplanned failover, checkpoint
// mode) the source is never asked, so nothing waits on it.
func (e *Engine) translate(ctx context.Context, groups []string, mode Mode, targetOnly bool) (*TranslateResult, error) {
	res := &TranslateResult{Source: e.flow.Source, Target: e.flow.Target}
	groups = dedupe(groups)
	// The source is asked in every mode but a target-only one: in
	// checkpoint mode its answer only fills Rereads by comparison with the
	// exact position.
	var (
		srcOffsets   map[string]kadm.OffsetResponses
		srcGroupErrs map[string]error
		srcErr       = fmt.Errorf("source cluster %s: %w", e.flow.Source, errSourceNotAsked)
	)
	if !targetOnly {
		srcOffsets, srcGroupErrs, srcErr = e.probeSource(ctx, groups, mode)
	}
	if srcErr != nil && mode == ModeExact {
		return nil, srcErr
	}
	sourceUp := srcErr == nil
	if !sourceUp && mode == ModeAuto {
		res.SourceDown, res.SourceErr = true, srcErr.Error()
		// Info, not Warn: the caller reports SourceDown (translate and
		// failover print it once as a warning).
		e.log.Info("source cluster not answering; using checkpoints", "cluster", e.flow.Source, "err", srcErr)
	}
	var cks map[string][]checkpointRec
	if mode == ModeCheckpoint || !sourceUp {
		set := map[string]bool{}
		for _, g := range groups {
			set[g] = true
		}
		var err error
		var newest time.Time
		if cks, newest, err = e.readCheckpointsNewest(ctx, set); err != nil {
			return nil, err
		}
		res.MirrorLive = newest
		if hb := e.newestHeartbeat(ctx); !hb.IsZero() {
			res.MirrorLive = hb
		}
	}
	var exactRows map[string][]Translation
	if sourceUp {
		var err error
		if exactRows, err = e.translateExact(ctx, groups, srcOffsets); err != nil {
			return nil, err
		}
	}
	sourceNames := map[string]string{} // checkpointRows' memo
	for _, g := range groups {
		gt := GroupTranslation{Group: g}
		if mode == ModeCheckpoint || !sourceUp {
			gt.Partitions = checkpointRows(e, cks[g], exactRows[g], sourceNames)
			for i := range gt.Partitions {
				r := &gt.Partitions[i]
				r.SourceUp = sourceUp && srcGroupErrs[g] == nil
				if r.SourceUp {
					if o, ok := srcOffsets[g].Lookup(r.SourceTopic, r.Partition); ok && o.Err == nil && o.At >= 0 {
						r.SourceCommit = ptr(o.At)
					} else if ok && o.Err != nil {
						r.SourceUp = false // unknown: judged by the mirror's liveness
					}
				}
			}
			if r := srcOffsets[g]; sourceUp && srcGroupErrs[g] == nil {
				gt.Partitions = append(gt.Partitions, e.uncheckpointed(r, gt.Partitions)...)
			} else if len(gt.Partitions) == 0 {
				// No checkpoint and no answer from the source: whether the
				// group has commits there is unknown, never "none".
				why := "it does not answer"
				if err := srcGroupErrs[g]; err != nil {
					why = err.Error()
				} else if res.SourceErr != "" {
					why = res.SourceErr
				} else if srcErr != nil {
					why = srcErr.Error()
				}
				gt.Error = fmt.Sprintf("no checkpoint for group %s, and its commits on %s cannot be read (%s)", g, e.flow.Source, why)
			}
		} else {
			gt.Partitions = exactRows[g]
		}
		if err := srcGroupErrs[g]; err != nil && mode != ModeCheckpoint {
			// Unknown commits are not "no commits": the group gets no
			// rows and says why.
			gt.Error, gt.Partitions = err.Error(), nil
		}
		if gt.Partitions == nil {
			gt.Partitions = []Translation{}
		}
		sortRows(gt.Partitions)
		res.Groups = append(res.Groups, gt)
	}
	return res, nil
}

// uncheckpointed returns a row (no translation) for each of the group's
// source commits r on a mirrored topic that has no checkpoint row in have,
// so a commit without a checkpoint is reported, never dropped.
func (e *Engine) uncheckpointed(r kadm.OffsetResponses, have []Translation) []Translation {
	seen := map[tpKey]bool{}
	for _, t := range have {
		seen[tpKey{t.SourceTopic, t.Partition}] = true
	}
	var out []Translation
	for _, o := range r.Sorted() {
		if o.Err != nil || o.At < 0 || !e.mirrors(o.Topic) || seen[tpKey{o.Topic, o.Partition}] {
			continue
		}
		out = append(out, Translation{SourceTopic: o.Topic, Topic: e.remoteTopic(o.Topic), Partition: o.Partition, Mode: ModeCheckpoint,
			SourceOffset: ptr(o.At), Metadata: o.Metadata, Reason: "no checkpoint for this partition (the group commits it on " + e.flow.Source + ")"})
	}
	return out
}

// probeSource fetches the groups' source commits; in auto and checkpoint mode
// the first request is bounded by SourceTimeout. The error is for a source
// that does not answer at all; gerrs holds the groups whose commits could
// not be read although it answers.
func (e *Engine) probeSource(ctx context.Context, groups []string, mode Mode) (offsets map[string]kadm.OffsetResponses, gerrs map[string]error, err error) {
	adm, err := e.clients.Admin(e.flow.Source)
	if err != nil {
		return nil, nil, err
	}
	pctx := ctx
	if mode != ModeExact {
		var cancel context.CancelFunc
		pctx, cancel = context.WithTimeout(ctx, e.sourceTimeout)
		defer cancel()
	}
	if _, err := adm.ListBrokers(pctx); err != nil {
		return nil, nil, fmt.Errorf("source cluster %s: %w", e.flow.Source, err)
	}
	offsets, gerrs = fetchOffsets(ctx, adm, e.flow.Source, groups)
	if len(groups) > 0 && len(gerrs) == len(groups) {
		// Not one group could be read, and not because the cluster said
		// no (a Kafka error): the source is not answering.
		var errs []error
		for _, g := range groups {
			var ke *kerr.Error
			var ae *kadm.AuthError
			if errors.As(gerrs[g], &ke) || errors.As(gerrs[g], &ae) {
				return offsets, gerrs, nil
			}
			errs = append(errs, gerrs[g])
		}
		return nil, nil, fmt.Errorf("source cluster %s: %w", e.flow.Source, errs[0])
	}
	return offsets, gerrs, nil
}

// checkpointRows turns a group's checkpoints into rows; with exact rows at
// hand (source up) it fills Rereads by comparison. sourceNames memoizes
// each remote topic's source topic across the groups of one translation
// (e.sourceTopic splits the name).
func checkpointRows(e *Engine, cks []checkpointRec, exact []Translation, sourceNames map[string]string) []Translation {
	byTP := map[tpKey]Translation{}
	for _, x := range exact {
		byTP[tpKey{x.Topic, x.Partition}] = x
	}
	var out []Translation
	if len(cks) > 0 {
		out = make([]Translation, 0, len(cks))
	}
	// The rows' offsets in one allocation, not two per row.
	offs := make([]int64, 2*len(cks))
	for i, c := range cks {
		st, ok := sourceNames[c.Topic]
		if !ok {
			st = c.Topic
			if s, ok := e.sourceTopic(c.Topic); ok {
				st = s
			}
			sourceNames[c.Topic] = st
		}
		up, down := &offs[2*i], &offs[2*i+1]
		*up, *down = c.UpstreamOffset, c.DownstreamOffset
		row := Translation{SourceTopic: st, Topic: c.Topic, Partition: c.Partition, Mode: ModeCheckpoint,
			SourceOffset: up, TargetOffset: down, Metadata: c.Metadata, CheckpointTime: c.at}
		if x, ok := byTP[tpKey{c.Topic, c.Partition}]; ok && x.TargetOffset != nil && x.Rereads != nil && *x.Rereads == 0 &&
			x.SourceOffset != nil && *x.SourceOffset == c.UpstreamOffset {
			d := *x.TargetOffset - c.DownstreamOffset
			row.Rereads = &d
			if d < 0 {
				row.Reason = fmt.Sprintf("the checkpoint is %d past the exact position %d: a consumer would skip records", -d, *x.TargetOffset)
			}
		}
		out = append(out, row)
	}
	return out
}

func sortRows(rows []Translation) {
	slices.SortFunc(rows, func(a, b Translation) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.Partition, b.Partition)
	})
}

func dedupe(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// MatchGroups lists the consumer groups whose id matches accept: on the
// source (or, with onTarget, the target) cluster, and when the source does
// not answer within SourceTimeout, the groups named in the checkpoints
// topic. The result is sorted.
func (e *Engine) MatchGroups(ctx context.Context, accept func(string) bool, onTarget bool) ([]string, error) {
	alias := e.flow.Source
	if onTarget {
		alias = e.flow.Target
	}
	adm, err := e.clients.Admin(alias)
	if err != nil {
		return nil, err
	}
	lctx, cancel := context.WithTimeout(ctx, e.sourceTimeout)
	defer cancel()
	var out []string
	listed, err := adm.ListGroups(lctx)
	if err == nil {
		for _, g := range listed.Sorted() {
			if accept(g.Group) {
				out = append(out, g.Group)
			}
		}
		return out, nil
	}
	if onTarget {
		return nil, fmt.Errorf("list groups on %s: %w", alias, err)
	}
	cks, cerr := e.readCheckpoints(ctx, nil)
	if cerr != nil {
		return nil, errors.Join(fmt.Errorf("list groups on %s: %w", alias, err), cerr)
	}
	for g := range cks {
		if accept(g) {
			out = append(out, g)
		}
	}
	sort.Strings(out)
	return out, nil
}
