package replicate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/replicate/connectoffsets"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// Taking over from MirrorMaker 2: where mirrorctl has no progress for a
// source partition, a partition task resumes where MM2 stopped. MM2 leaves
// two traces of how far it copied: its Connect source offsets (the upstream
// offset of the last record copied, per partition; package connectoffsets)
// and its offset syncs (a record copied, with its offset on the target).
//
// Resume points, in order ([ResumeProgress], [ResumeMM2Offsets],
// [ResumeOffsetSync], then the reset policy):
//
//  1. mirrorctl's progress;
//  2. MM2's Connect source offset N: resume at N+1, as MirrorSourceTask does;
//  3. the newest offset sync (U, D) of the partition: resume at U+1 (what
//     the target took after D is copied again: about offset.lag.max
//     records at most while MM2 flushed its syncs);
//  4. nothing known: the log start ([ResumeLogStart]), or the log end with
//     auto.offset.reset=latest ([ResumeLogEnd]). When the remote partition
//     already holds records, nothing known means copying them again: the
//     task refuses to start ([ErrResumeUnknown]) unless
//     [MM2Takeover].WhenUnknown makes the choice.
//
// Each source is evidence that records were copied: a later source that
// proves more was copied than an earlier one wins (MM2 ran after mirrorctl
// stopped, after a hand-back with `mirrorctl mm2 handoff`; a sync written
// after the last Connect offset flush of an MM2 that was killed). A sync
// counts only while the target still holds its downstream offset and the
// source its upstream offset.
//
// The offset syncs mirrorctl then writes continue MM2's (upstream and
// downstream offsets only grow), and the checkpointer reloads MM2's
// checkpoints and syncs (checkpoint.go), so translation is continuous across
// the switch.

// Where a task's resume point came from, beyond those of task.go.
const (
	ResumeMM2Offsets = "mm2-offsets" // MM2's Connect source offset (the last copied record + 1)
	ResumeOffsetSync = "offset-sync" // the newest offset sync (its upstream offset + 1)
)

// Values of [MM2Takeover].WhenUnknown.
const (
	UnknownRefuse   = "refuse"    // default: a partition task refuses to start
	UnknownLogStart = "log-start" // copy from the log start: the remote partition gets its records again
	UnknownLogEnd   = "log-end"   // start at the log end: what the source holds now is not copied
)

// MM2Takeover says where a flow finds the traces MirrorMaker 2 left, and what
// a partition task does when there are none.
type MM2Takeover struct {
	// OffsetsTopic is the Connect offsets topic (offset.storage.topic) on
	// the target that holds MM2's source offsets; default
	// "mm2-offsets.<source>.internal", MM2's dedicated mode.
	OffsetsTopic string
	// Connector is the name of MM2's MirrorSourceConnector for the flow
	// (the first element of its offset keys); default
	// "MirrorSourceConnector", as dedicated mode names it.
	Connector string
	// ConnectGroup is the Connect worker group of the MM2 that ran the
	// flow, on the target (dedicated mode: "<source>-mm2"); while it has
	// members, MM2 runs.
	ConnectGroup string
	// WhenUnknown decides for a partition with no progress, no MM2 offset
	// and no offset sync whose remote partition already holds records:
	// [UnknownRefuse] (default, also ""), [UnknownLogStart] or
	// [UnknownLogEnd].
	WhenUnknown string
}

// DefaultMM2Takeover returns MM2's dedicated-mode locations for flows from
// source.
func DefaultMM2Takeover(source string) MM2Takeover {
	return MM2Takeover{OffsetsTopic: connectoffsets.DedicatedTopic(source), Connector: connectoffsets.DefaultConnector,
		ConnectGroup: source + "-mm2", WhenUnknown: UnknownRefuse}
}

// ErrResumeUnknown is returned (wrapped) when a partition has no known
// resume point and its remote partition already holds records.
var ErrResumeUnknown = errors.New("no resume point known and the remote partition already holds records")

// ResumePoint is where a partition task starts, and why.
type ResumePoint struct {
	Topic       string `json:"topic"`
	RemoteTopic string `json:"remote_topic"`
	Partition   int32  `json:"partition"`
	// Offset is the first source offset copied.
	Offset int64 `json:"offset"`
	// From is ResumeProgress, ResumeMM2Offsets, ResumeOffsetSync,
	// ResumeLogStart or ResumeLogEnd; "" when refused.
	From string `json:"from"`
	// Recopy estimates the records the remote partition already holds
	// that will be copied again (records, from the newest offset sync at or
	// below the resume point, counting contiguous offsets); -1 unknown.
	Recopy int64 `json:"recopy"`
	// Skip is the source records that will never be copied: deleted before
	// they were copied, or left behind by a start at the log end.
	Skip int64 `json:"skip"`
	// The evidence: progress, MM2's Connect source offset (the last copied
	// upstream offset) and the newest offset sync; -1 where none.
	Progress         int64 `json:"progress"`
	MM2Offset        int64 `json:"mm2_offset"`
	SyncUpstream     int64 `json:"sync_upstream"`
	SyncDownstream   int64 `json:"sync_downstream"`
	LogStart, LogEnd int64 `json:"-"`
	RemoteEnd        int64 `json:"remote_end"` // the remote partition's end offset; -1 unknown
	// Error says why the partition will not start (ErrResumeUnknown).
	Error string `json:"error,omitempty"`
}

// resumeInput is what is known of one partition when its task starts.
type resumeInput struct {
	logStart, logEnd int64 // source; logEnd -1 when not listed
	progress         int64 // -1 none
	mm2              int64 // MM2's last copied upstream offset; -1 none
	sync             *mm2.OffsetSync
	remoteEnd        int64 // -1 when not listed
	// uncommittedOnly says the remote partition holds no record a
	// read_committed reader sees (committedRecords): everything below
	// remoteEnd belongs to open or aborted transactions, no copies.
	uncommittedOnly bool
	latest          bool // auto.offset.reset=latest
	whenUnknown     string
}

// chooseResume decides a partition's resume point (see the comment at the
// top of this file). It returns an error wrapping ErrResumeUnknown when the
// partition must not start.
func chooseResume(in resumeInput) (ResumePoint, error) {
	rp := ResumePoint{Offset: -1, Recopy: 0, Progress: in.progress, MM2Offset: in.mm2, SyncUpstream: -1, SyncDownstream: -1,
		LogStart: in.logStart, LogEnd: in.logEnd, RemoteEnd: in.remoteEnd}
	sync := in.sync
	if sync != nil && !syncUsable(*sync, in) {
		sync = nil
	}
	if sync != nil {
		rp.SyncUpstream, rp.SyncDownstream = sync.UpstreamOffset, sync.DownstreamOffset
	}
	if in.progress >= 0 {
		rp.Offset, rp.From = in.progress, ResumeProgress
	}
	if in.mm2 >= 0 && in.mm2+1 > rp.Offset { // MM2 reads a negative offset as none
		rp.Offset, rp.From = in.mm2+1, ResumeMM2Offsets
	}
	if sync != nil && sync.UpstreamOffset+1 > rp.Offset {
		rp.Offset, rp.From = sync.UpstreamOffset+1, ResumeOffsetSync
	}
	if rp.From != "" {
		if rp.Offset < in.logStart {
			rp.Skip = in.logStart - rp.Offset
			rp.Offset = in.logStart
		}
		rp.Recopy = recopyEstimate(rp.Offset, rp.From, sync, in.remoteEnd)
		return rp, nil
	}
	holds := in.remoteEnd
	if in.uncommittedOnly {
		holds = 0
	}
	switch {
	case in.latest && in.logEnd >= 0:
		rp.Offset, rp.From, rp.Skip = in.logEnd, ResumeLogEnd, in.logEnd-in.logStart
	case holds <= 0:
		rp.Offset, rp.From = in.logStart, ResumeLogStart
	case in.whenUnknown == UnknownLogStart:
		rp.Offset, rp.From, rp.Recopy = in.logStart, ResumeLogStart, holds
	case in.whenUnknown == UnknownLogEnd && in.logEnd >= 0:
		rp.Offset, rp.From, rp.Skip = in.logEnd, ResumeLogEnd, in.logEnd-in.logStart
	default:
		rp.Recopy = holds
		err := unknownErr(holds)
		rp.Error = err.Error()
		return rp, err
	}
	return rp, nil
}

// unknownErr is the refusal of a partition whose remote partition holds
// records records and whose resume point is unknown.
func unknownErr(records int64) error {
	return fmt.Errorf("%w (%d records): no mirrorctl progress, no MM2 source offset, no offset sync; "+
		"copying from the log start would write them again: set %s = %s (copy again) or %s (start at the log end), "+
		"or run with --resume-unknown", ErrResumeUnknown, records, KeyResumeUnknown, UnknownLogStart, UnknownLogEnd)
}

// KeyResumeUnknown is the mm2.properties key behind MM2Takeover.WhenUnknown
// (named here for messages; internal/config defines it).
const KeyResumeUnknown = "mirrorctl.resume.unknown"

// syncUsable reports whether an offset sync still describes this partition:
// the source still has (or had) its upstream offset and the target holds
// its downstream offset. A sync from a deleted and recreated topic fails one
// of the two.
func syncUsable(s mm2.OffsetSync, in resumeInput) bool {
	if s.UpstreamOffset < 0 || s.DownstreamOffset < 0 {
		return false
	}
	if in.logEnd >= 0 && s.UpstreamOffset >= in.logEnd {
		return false
	}
	return in.remoteEnd < 0 || s.DownstreamOffset < in.remoteEnd
}

// recopyEstimate estimates how many records the remote partition holds past
// the copy of source offset resume-1: from the sync (U, D) at or below it,
// with contiguous offsets, resume-1 sits at D+(resume-1-U) on the target.
func recopyEstimate(resume int64, from string, sync *mm2.OffsetSync, remoteEnd int64) int64 {
	if remoteEnd < 0 {
		return -1
	}
	if sync == nil || sync.UpstreamOffset > resume-1 {
		if from == ResumeProgress {
			return 0 // progress is written after the copies it covers were acknowledged
		}
		return -1
	}
	at := sync.DownstreamOffset + (resume - 1 - sync.UpstreamOffset)
	if n := remoteEnd - 1 - at; n > 0 {
		return n
	}
	return 0
}

// takeover is what a flow read, at its start, of the traces MM2 left: its
// Connect source offsets and the newest offset sync per source partition.
type takeover struct {
	offsets *connectoffsets.Store

	mu    sync.Mutex            // guards syncs and the scan bounds
	syncs map[tp]mm2.OffsetSync // the newest sync per source partition in the part read
	// The part of partition 0 of the offset-syncs topic read so far:
	// scanFrom up to scanTo, its read_committed end at the first read (or
	// a later end, once all up to it was read). scanFrom <= logStart: read
	// back to the log start (readSyncs).
	scanned                    bool
	scanFrom, scanTo, logStart int64
}

// loadTakeover reads MM2's Connect offsets topic on the target (every
// partition, read_committed, up to its end at the call) and the flow's
// offset-syncs topic, whole. Missing topics read as nothing. Records that
// are not source offsets are counted and skipped, with a warning.
func loadTakeover(ctx context.Context, cfg FlowConfig, clients Clients) (*takeover, error) {
	tk := newTakeover(cfg)
	if err := concurrently(ctx, func(ctx context.Context) error { return tk.readOffsets(ctx, cfg, clients) },
		func(ctx context.Context) error { return tk.readSyncs(ctx, cfg, clients, nil) }); err != nil {
		return nil, err
	}
	return tk, nil
}

func newTakeover(cfg FlowConfig) *takeover {
	return &takeover{offsets: connectoffsets.NewStore(cfg.MM2.Connector, cfg.Source), syncs: map[tp]mm2.OffsetSync{}}
}

// readOffsets reads MM2's Connect offsets topic into tk (see loadTakeover).
func (tk *takeover) readOffsets(ctx context.Context, cfg FlowConfig, clients Clients) error {
	if cfg.MM2.OffsetsTopic == "" {
		return nil
	}
	if err := readWholeTopic(ctx, clients, cfg.Target, cfg.MM2.OffsetsTopic, func(r *kgo.Record) {
		tk.offsets.Add(r.Partition, r.Offset, r.Key, r.Value)
	}); err != nil {
		return fmt.Errorf("flow %s: read where MirrorMaker 2 stopped: %w", cfg.Name(), err)
	}
	return nil
}

// syncScanChunk is the first part of the offset-syncs topic readSyncs reads,
// in records; each further part is twice the one before.
var syncScanChunk int64 = 8192

// readSyncs makes the newest offset sync of every source partition in want
// known to tk (nil want: of every partition, reading the topic whole). MM2
// reads partition 0 of the flow's offset-syncs topic only, and so does
// this. The topic is read backwards from its read_committed end at the
// first call, in parts that double from syncScanChunk records, until every
// partition of want has a sync or the log start is reached: the newest
// syncs stand at the end, and the topic (compacted, but its segments, 1 GiB
// by default, rarely roll) can hold millions of older ones, which a member
// given partitions by a rebalance would otherwise read whole. What was read
// is kept. A later call for a partition with no sync known first reads
// back from the topic's new end to where the first read began (the syncs
// written since: another member's, which died before its first progress
// write for the partition), then further back from where the last read
// stopped. A partition with a sync known is not looked up again: a newer
// one was written by an owner whose progress covers it.
func (tk *takeover) readSyncs(ctx context.Context, cfg FlowConfig, clients Clients, want []tp) error {
	if tk == nil {
		return nil
	}
	tk.mu.Lock()
	defer tk.mu.Unlock()
	missing := map[tp]bool{}
	for _, k := range want {
		if _, ok := tk.syncs[k]; !ok {
			missing[k] = true
		}
	}
	if (want != nil && len(missing) == 0) || (want == nil && tk.scanned && tk.scanFrom <= tk.logStart) {
		return nil
	}
	alias, topic := cfg.offsetSyncsCluster()
	cl, err := rangeClient(clients, alias)
	if err != nil {
		return err
	}
	defer cl.Close()
	wrap := func(err error) error {
		return fmt.Errorf("flow %s: read where MirrorMaker 2 stopped: %w", cfg.Name(), err)
	}
	starts, ends, err := logBounds(ctx, kadm.NewClient(cl), alias, topic)
	if err != nil {
		return wrap(err)
	}
	var start, end int64
	if e, ok := ends.Lookup(topic, 0); ok && e.Err == nil {
		end = e.Offset
	}
	if s, ok := starts.Lookup(topic, 0); ok && s.Err == nil {
		start = s.Offset
	}
	if !tk.scanned {
		tk.scanFrom, tk.scanTo, tk.logStart, tk.scanned = end, end, start, true
	} else if end > tk.scanTo {
		// Newer than anything known: a sync found here replaces the one
		// kept. All of it read, the part read reaches the new end.
		lo := max(tk.scanTo, start)
		reached, err := tk.scanBack(ctx, cl, alias, topic, lo, end, want == nil, missing, true)
		if err != nil {
			return wrap(err)
		}
		if reached <= lo {
			tk.scanTo = end
		}
	}
	if tk.scanFrom > tk.logStart {
		reached, err := tk.scanBack(ctx, cl, alias, topic, tk.logStart, tk.scanFrom, want == nil, missing, false)
		if err != nil {
			return wrap(err)
		}
		tk.scanFrom = reached
	}
	return nil
}

// scanBack reads partition 0 of topic backwards from hi down to lo, in parts
// that double from syncScanChunk records, until all is set or missing is
// empty, and returns the offset the read reached. Each part's syncs are
// kept for partitions not yet met in this call, and deleted from missing;
// newer says they replace a sync tk already holds (else a sync held is
// newer and stays).
func (tk *takeover) scanBack(ctx context.Context, cl *kgo.Client, alias, topic string, lo, hi int64, all bool, missing map[tp]bool, newer bool) (int64, error) {
	met := map[tp]bool{}
	for chunk := syncScanChunk; (all || len(missing) > 0) && hi > lo; chunk *= 2 {
		from := max(lo, hi-chunk)
		part := map[tp]mm2.OffsetSync{}
		if err := readRanges(ctx, cl, alias, topic, map[int32][2]int64{0: {from, hi}}, func(r *kgo.Record) {
			if s, err := mm2.DecodeOffsetSync(r.Key, r.Value); err == nil {
				part[tp{s.Topic, s.Partition}] = s // log order: the newest wins
			}
		}); err != nil {
			return hi, err
		}
		for k, s := range part {
			if _, held := tk.syncs[k]; !met[k] && (newer || !held) {
				tk.syncs[k] = s
			}
			met[k] = true
			delete(missing, k)
		}
		hi = from
	}
	return hi, nil
}

// input returns what the takeover knows of src.
func (tk *takeover) input(src tp) (mm2Off int64, sync *mm2.OffsetSync) {
	mm2Off = -1
	if tk == nil {
		return -1, nil
	}
	if p, ok := tk.offsets.Get(src.topic, src.partition); ok {
		mm2Off = p.Offset
	}
	tk.mu.Lock()
	defer tk.mu.Unlock()
	if s, ok := tk.syncs[src]; ok {
		sync = &s
	}
	return mm2Off, sync
}

// readWholeTopic reads every partition of topic on alias from its start up to
// the read_committed end (last stable offset) each had at the call, calling
// fn for each data record in offset order per partition. A missing topic
// reads as nothing. It asks through a client of its own: a lookup of a
// topic that does not exist yet must not leave "missing" in the metadata
// cache of the engine's shared admin clients.
func readWholeTopic(ctx context.Context, clients Clients, alias, topic string, fn func(*kgo.Record)) error {
	cl, err := rangeClient(clients, alias)
	if err != nil {
		return err
	}
	defer cl.Close()
	starts, ends, err := logBounds(ctx, kadm.NewClient(cl), alias, topic)
	if err != nil {
		return err
	}
	ranges := map[int32][2]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		s, ok := starts.Lookup(topic, o.Partition)
		if o.Err == nil && o.Offset > 0 && (!ok || s.Err != nil || s.Offset < o.Offset) {
			ranges[o.Partition] = [2]int64{-2, o.Offset} // -2: the log start
		}
	})
	return readRanges(ctx, cl, alias, topic, ranges, fn)
}

// rangeClient is the client readWholeTopic and readSyncs read through:
// read_committed, keeping control records (readRanges uses them to tell
// where a range ends), and an offset no longer in the log resets to the log
// start whatever the cluster's auto.offset.reset says.
func rangeClient(clients Clients, alias string) (*kgo.Client, error) {
	return clients.Client(alias, RoleConsumer, kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
}

// logBounds lists topic's start offsets and read_committed ends (last stable
// offsets) on alias, retrying transient errors. A missing topic, or a
// partition of it, lists UnknownTopicOrPartition; any other error of a
// partition's end is returned.
func logBounds(ctx context.Context, adm *kadm.Client, alias, topic string) (starts, ends kadm.ListedOffsets, err error) {
	if err := retryTransient(ctx, func() error {
		if err := concurrently(ctx, func(ctx context.Context) (err error) {
			if ends, err = adm.ListCommittedOffsets(ctx, topic); err != nil {
				return fmt.Errorf("list end offsets of %s on %s: %w", topic, alias, err)
			}
			return nil
		}, func(ctx context.Context) (err error) {
			if starts, err = adm.ListStartOffsets(ctx, topic); err != nil {
				return fmt.Errorf("list start offsets of %s on %s: %w", topic, alias, err)
			}
			return nil
		}); err != nil {
			return err
		}
		var perr error
		ends.Each(func(o kadm.ListedOffset) {
			if transient(o.Err) {
				perr = fmt.Errorf("end offset of %s[%d] on %s: %w", topic, o.Partition, alias, o.Err)
			}
		})
		return perr
	}); err != nil {
		return nil, nil, err
	}
	var ferr error
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil && !errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
			ferr = fmt.Errorf("end offset of %s[%d] on %s: %w", topic, o.Partition, alias, o.Err)
		}
	})
	return starts, ends, ferr
}

// readRanges reads topic on alias through cl, a client of rangeClient's:
// for each partition of ranges, the records from offset [0] (-2: the log
// start; past the log start: from there) up to [1], exclusive, calling fn for each
// data record in offset order per partition. A partition's range ends at
// the first record at or past [1]-1 (a compacted log may lack the record
// just before [1], never every record after it).
func readRanges(ctx context.Context, cl *kgo.Client, alias, topic string, ranges map[int32][2]int64, fn func(*kgo.Record)) error {
	if len(ranges) == 0 {
		return nil
	}
	want := map[int32]int64{}
	consume := map[int32]kgo.Offset{}
	for p, r := range ranges {
		want[p] = r[1]
		consume[p] = kgo.NewOffset().At(r[0])
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: consume})
	defer cl.RemoveConsumePartitions(map[string][]int32{topic: slices.Collect(maps.Keys(ranges))})
	var ferr error
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read %s on %s: %w", topic, alias, err)
		}
		fs.EachError(func(t string, p int32, err error) { ferr = fmt.Errorf("read %s[%d] on %s: %w", t, p, alias, err) })
		if ferr != nil {
			return ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			end, ok := want[r.Partition]
			if !ok {
				return
			}
			if r.Offset < end && !r.Attrs.IsControl() {
				fn(r)
			}
			if r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
	}
	return nil
}

// probeAdmin returns an admin client of its own for alias (see
// readWholeTopic), and the func that closes it.
func probeAdmin(clients Clients, alias string) (*kadm.Client, func(), error) {
	cl, err := clients.Client(alias, RoleConsumer)
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl.Close, nil
}

// PlanResume returns, for every partition of the topics the flow replicates,
// where a partition task would resume now and why, without changing
// anything (replicate --dry-run). A partition that would refuse to start
// carries its Error.
func PlanResume(ctx context.Context, cfg FlowConfig, clients Clients, plan *Plan) ([]ResumePoint, error) {
	if len(plan.Replicated()) == 0 {
		return []ResumePoint{}, nil
	}
	src, closeSrc, err := probeAdmin(clients, cfg.Source)
	if err != nil {
		return nil, err
	}
	defer closeSrc()
	var snap resumeSnapshot
	tk := newTakeover(cfg)
	if err := concurrently(ctx,
		func(ctx context.Context) (err error) {
			snap.progress, err = readProgress(ctx, cfg, clients)
			return err
		},
		func(ctx context.Context) error { return snap.listOffsets(ctx, cfg, clients, src, plan) },
		func(ctx context.Context) error { return tk.readOffsets(ctx, cfg, clients) },
		func(ctx context.Context) error { return tk.readSyncs(ctx, cfg, clients, nil) },
	); err != nil {
		return nil, err
	}
	return snap.resumePoints(cfg, plan, tk), nil
}

// resumeSnapshot is what a flow's resume points are chosen from, read at
// one moment: the progress topic and, for every replicated partition, the
// source log start and end and the remote end.
type resumeSnapshot struct {
	progress            map[tp]int64 // the next source offset to copy, per partition with progress
	starts, ends, rends kadm.ListedOffsets
}

// readProgress reads the flow's progress topic up to its high watermark, as
// a read_committed reader sees it (txnFilter), and returns the next source offset to copy per partition that has
// progress, as the engine's start-up read does (progressView.readAtStart):
// the newest record that decodes wins per partition.
func readProgress(ctx context.Context, cfg FlowConfig, clients Clients) (map[tp]int64, error) {
	v := newProgressView(clients, cfg, discard)
	defer v.close()
	fctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	return v.readAtStart(ctx, func() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = v.follow(fctx) // its errors are logged, and the read waits for what it needs
		}()
	})
}

// listOffsets lists, at once, the log start and end offsets of the plan's
// topics on the source (through src) and the end offsets of its remote
// topics that exist on the target (through a client of its own, see
// readWholeTopic).
func (snap *resumeSnapshot) listOffsets(ctx context.Context, cfg FlowConfig, clients Clients, src *kadm.Client, plan *Plan) error {
	var topics, remotes []string
	for _, t := range plan.Replicated() {
		topics = append(topics, t.Topic)
		if t.Action != ActionCreate {
			remotes = append(remotes, t.RemoteTopic)
		}
	}
	snap.rends = kadm.ListedOffsets{}
	steps := []func(context.Context) error{
		func(ctx context.Context) (err error) {
			if snap.starts, err = src.ListStartOffsets(ctx, topics...); err != nil {
				return fmt.Errorf("list start offsets on %s: %w", cfg.Source, err)
			}
			return nil
		},
		func(ctx context.Context) (err error) {
			if snap.ends, err = src.ListEndOffsets(ctx, topics...); err != nil {
				return fmt.Errorf("list end offsets on %s: %w", cfg.Source, err)
			}
			return nil
		},
	}
	if len(remotes) > 0 {
		steps = append(steps, func(ctx context.Context) error {
			tgt, closeTgt, err := probeAdmin(clients, cfg.Target)
			if err != nil {
				return err
			}
			defer closeTgt()
			if snap.rends, err = tgt.ListEndOffsets(ctx, remotes...); err != nil {
				return fmt.Errorf("list end offsets on %s: %w", cfg.Target, err)
			}
			return nil
		})
	}
	return concurrently(ctx, steps...)
}

// needSyncs returns the partitions of the plan whose resume point an offset
// sync could change (syncMatters): those readSyncs must find.
func (snap *resumeSnapshot) needSyncs(cfg FlowConfig, plan *Plan) []tp {
	var want []tp
	for _, t := range plan.Replicated() {
		if t.Action == ActionCreate {
			continue
		}
		for p := int32(0); p < t.Partitions; p++ {
			_, hasProgress := snap.progress[tp{t.Topic, p}]
			e, ok := snap.rends.Lookup(t.RemoteTopic, p)
			if syncMatters(cfg, t.Topic, hasProgress, e, ok) {
				want = append(want, tp{t.Topic, p})
			}
		}
	}
	return want
}

// syncMatters reports whether an offset sync could change where a partition
// of source topic resumes: only when its remote partition may hold records
// (remoteEnd above 0, or not listed: an offset sync names a target offset,
// syncUsable), and not for a heartbeats partition that has progress: one
// heartbeat a second, its progress is at most a few heartbeats behind its
// copies. Reading the offset-syncs topic, read whole, is skipped otherwise.
func syncMatters(cfg FlowConfig, topic string, hasProgress bool, remoteEnd kadm.ListedOffset, listed bool) bool {
	if listed && remoteEnd.Err == nil && remoteEnd.Offset <= 0 {
		return false
	}
	return !hasProgress || !cfg.Policy.IsHeartbeatsTopic(topic)
}

// resumePoints chooses the resume point of every partition of the plan
// (chooseResume) from snap and tk, sorted by topic and partition.
func (snap *resumeSnapshot) resumePoints(cfg FlowConfig, plan *Plan, tk *takeover) []ResumePoint {
	var out []ResumePoint
	for _, t := range plan.Replicated() {
		for p := int32(0); p < t.Partitions; p++ {
			key := tp{t.Topic, p}
			in := resumeInput{progress: -1, logEnd: -1, remoteEnd: -1, latest: cfg.StartFromLatest, whenUnknown: cfg.MM2.WhenUnknown}
			if s, ok := snap.starts.Lookup(t.Topic, p); ok && s.Err == nil {
				in.logStart = s.Offset
			}
			if e, ok := snap.ends.Lookup(t.Topic, p); ok && e.Err == nil {
				in.logEnd = e.Offset
			}
			if e, ok := snap.rends.Lookup(t.RemoteTopic, p); ok && e.Err == nil {
				in.remoteEnd = e.Offset
			} else if errors.Is(e.Err, kerr.UnknownTopicOrPartition) || !ok {
				in.remoteEnd = 0 // to be created: holds nothing
			}
			if n, ok := snap.progress[key]; ok {
				in.progress = n
			}
			in.mm2, in.sync = tk.input(key)
			rp, _ := chooseResume(in)
			rp.Topic, rp.RemoteTopic, rp.Partition = t.Topic, t.RemoteTopic, p
			out = append(out, rp)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// MM2Activity is what shows that MirrorMaker 2 still runs a flow.
type MM2Activity struct {
	// ConnectGroup is the Connect worker group checked on the target, and
	// Members its members (client ids and hosts), if any.
	ConnectGroup string   `json:"connect_group"`
	Members      []string `json:"members,omitempty"`
	// Heartbeats counts MM2 heartbeats for the pair that arrived while
	// the check watched the heartbeats topic; LastHeartbeatMs is the newest
	// one's timestamp (epoch ms), 0 if none.
	Heartbeats      int   `json:"heartbeats"`
	LastHeartbeatMs int64 `json:"last_heartbeat_ms,omitempty"`
}

// Live reports whether a seems to be a running MM2.
func (a MM2Activity) Live() bool { return len(a.Members) > 0 || a.Heartbeats > 0 }

func (a MM2Activity) String() string {
	var parts []string
	if len(a.Members) > 0 {
		parts = append(parts, fmt.Sprintf("Connect group %s has %d members (%s)", a.ConnectGroup, len(a.Members), strings.Join(a.Members, ", ")))
	}
	if a.Heartbeats > 0 {
		parts = append(parts, fmt.Sprintf("%d MM2 heartbeats arrived while watching", a.Heartbeats))
	}
	if len(parts) == 0 {
		return "no MM2 activity"
	}
	return strings.Join(parts, "; ")
}

// ErrMM2Running is returned (wrapped) when MirrorMaker 2 still runs the flow.
var ErrMM2Running = errors.New("MirrorMaker 2 still runs this flow")

// preflightResume refuses the flow, before any partition task starts, when
// a partition it replicates has no known resume point and its remote
// partition already holds records a read_committed reader sees
// (chooseResume, committedRecords), so that a refused flow copies nothing
// at all. Without a refusal possible (a choice made, or
// auto.offset.reset=latest) it refuses nothing.
func (w *worker) preflightResume(ctx context.Context, plan *Plan, snap *resumeSnapshot) error {
	if w.cfg.StartFromLatest || (w.cfg.MM2.WhenUnknown != "" && w.cfg.MM2.WhenUnknown != UnknownRefuse) || len(plan.Replicated()) == 0 {
		return nil
	}
	var errs []error
	for _, rp := range snap.resumePoints(w.cfg, plan, w.starter.takeover) {
		if rp.Error == "" {
			continue
		}
		// Records of open or aborted transactions (an exactly-once owner
		// killed mid-transaction) are no copies: judge by what is
		// committed. An open one is not fenced here (its owner may be
		// alive); the task's start fences it and judges again.
		n, err := committedRecords(ctx, w.clients, w.cfg.Target, rp.RemoteTopic, rp.Partition)
		if err != nil {
			return fmt.Errorf("flow %s: %w", w.cfg.Name(), err)
		}
		if n == 0 {
			continue
		}
		errs = append(errs, fmt.Errorf("%s[%d] -> %s[%d]: %w", rp.Topic, rp.Partition, rp.RemoteTopic, rp.Partition, unknownErr(rp.RemoteEnd)))
	}
	if len(errs) > 0 {
		return fmt.Errorf("flow %s: refusing to start, %d partitions would be copied again: %w", w.cfg.Name(), len(errs), errors.Join(errs...))
	}
	return nil
}

// preflightRereads is how many times preflightAgain reads the progress
// again before a refusal stands.
const preflightRereads = 3

// preflightAgain looks again before refusing for a partition with no known
// resume point (err from preflightResume, wrapping ErrResumeUnknown): while
// other members copy, a copy is on the remote partition before the progress
// that covers it is written (within a progress interval), so a process that
// joins then can list records on the remote that the progress it read does
// not cover yet. It reads the progress again every ProgressInterval, up to
// preflightRereads times, and returns nil once every partition has a resume
// point, else the last refusal (or the read's error).
func (w *worker) preflightAgain(ctx context.Context, plan *Plan, snap *resumeSnapshot, err error) error {
	for i := 0; i < preflightRereads && errors.Is(err, ErrResumeUnknown); i++ {
		select {
		case <-ctx.Done():
			return err
		case <-time.After(max(w.cfg.ProgressInterval, 50*time.Millisecond)):
		}
		progress, rerr := w.progress.readAtStart(ctx, w.run.followProgress)
		if rerr != nil {
			return rerr
		}
		snap.progress = progress
		err = w.preflightResume(ctx, plan, snap)
	}
	return err
}

// resumePoint chooses task t's resume point (chooseResume) from its progress
// (written, -1 none), the source log start, the listed source and remote end
// offsets and what MM2 left, and logs a takeover or a start at the log end.
// Where no resume point is known and the remote partition holds records,
// it judges by what a read_committed reader of the remote sees (after
// attach fenced the previous exactly-once owner, its open transaction is
// aborted): only committed copies make it refuse. A gap (Skip with a source
// other than the log end) is the caller's to report.
func (s *starter) resumePoint(ctx context.Context, t *task, logStart, written int64, f *startFacts) (ResumePoint, error) {
	w := s.w
	in := resumeInput{logStart: logStart, logEnd: -1, progress: written, remoteEnd: -1, latest: w.cfg.StartFromLatest, whenUnknown: w.cfg.MM2.WhenUnknown}
	if e, ok := f.ends.Lookup(t.src.topic, t.src.partition); ok && e.Err == nil {
		in.logEnd = e.Offset
	}
	if e, ok := f.rends.Lookup(t.remote, t.src.partition); ok && e.Err == nil {
		in.remoteEnd = e.Offset
	}
	in.mm2, in.sync = s.takeover.input(t.src)
	rp, err := chooseResume(in)
	if errors.Is(err, ErrResumeUnknown) {
		n, cerr := committedRecords(ctx, w.clients, w.cfg.Target, t.remote, t.src.partition)
		if cerr != nil {
			return rp, fmt.Errorf("%s[%d] -> %s[%d]: %w", t.src.topic, t.src.partition, t.remote, t.src.partition, cerr)
		}
		if n == 0 {
			in.uncommittedOnly = true
			w.log.Info("the remote partition holds only records of open or aborted transactions: starting from the log start", "topic", t.src.topic, "partition", t.src.partition,
				"remote", t.remote, "remote_end", in.remoteEnd)
			rp, err = chooseResume(in)
		}
	}
	if err != nil {
		return rp, fmt.Errorf("%s[%d] -> %s[%d]: %w", t.src.topic, t.src.partition, t.remote, t.src.partition, err)
	}
	if rp.From == ResumeOffsetSync && rp.MM2Offset < 0 {
		// No progress and no MM2 offsets: the partition's last owner died
		// before its first progress write, the progress topic was lost, or
		// MM2 ran without Connect offsets. The syncs prove how far the copy
		// got; only what the target took after the sync is copied again.
		w.log.Warn("no progress for the partition (its last owner stopped before writing any, or the progress topic was lost): resuming after the newest offset sync", "topic", t.src.topic, "partition", t.src.partition,
			"resume", rp.Offset, "from", rp.From, "sync_upstream", rp.SyncUpstream, "sync_downstream", rp.SyncDownstream, "recopy_estimate", rp.Recopy)
	} else if rp.From == ResumeMM2Offsets || rp.From == ResumeOffsetSync {
		w.log.Info("partition task takes over from MirrorMaker 2", "topic", t.src.topic, "partition", t.src.partition,
			"resume", rp.Offset, "from", rp.From, "mm2_offset", rp.MM2Offset, "sync_upstream", rp.SyncUpstream, "recopy_estimate", rp.Recopy)
	}
	if rp.From == ResumeLogEnd && rp.Skip > 0 {
		w.log.Warn("partition starts at the log end: the records before it are not copied", "topic", t.src.topic, "partition", t.src.partition,
			"records", rp.Skip)
	}
	return rp, nil
}
