package replicate

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate/connectoffsets"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
	"github.com/mirrorctl/mirrorctl/replicate/policy"
)

func TestChooseResumeOrder(t *testing.T) {
	sync := func(u, d int64) *mm2.OffsetSync { return &mm2.OffsetSync{UpstreamOffset: u, DownstreamOffset: d} }
	base := resumeInput{logStart: 0, logEnd: 100, progress: -1, mm2: -1, remoteEnd: 60}
	for _, tc := range []struct {
		name   string
		in     func(resumeInput) resumeInput
		offset int64
		from   string
		recopy int64
		skip   int64
		err    error
	}{
		{"progress first", func(in resumeInput) resumeInput { in.progress, in.mm2, in.sync = 60, 40, sync(30, 30); return in }, 60, ResumeProgress, 0, 0, nil},
		{"MM2 offsets without progress", func(in resumeInput) resumeInput { in.mm2, in.sync = 59, sync(55, 55); return in }, 60, ResumeMM2Offsets, 0, 0, nil},
		{"MM2 offsets with records past them on the target", func(in resumeInput) resumeInput { in.mm2, in.sync = 49, sync(40, 40); return in }, 50, ResumeMM2Offsets, 10, 0, nil},
		{"MM2 offsets, no sync: recopy unknown", func(in resumeInput) resumeInput { in.mm2 = 49; return in }, 50, ResumeMM2Offsets, -1, 0, nil},
		{"newest sync without MM2 offsets", func(in resumeInput) resumeInput { in.sync = sync(50, 50); return in }, 51, ResumeOffsetSync, 9, 0, nil},
		{"a sync past the MM2 offset (MM2 killed before its offset flush)", func(in resumeInput) resumeInput { in.mm2, in.sync = 40, sync(59, 59); return in }, 60, ResumeOffsetSync, 0, 0, nil},
		{"MM2 ran after mirrorctl (hand-back)", func(in resumeInput) resumeInput { in.progress, in.mm2 = 30, 59; return in }, 60, ResumeMM2Offsets, -1, 0, nil},
		{"a sync the target no longer holds is ignored", func(in resumeInput) resumeInput { in.sync = sync(10, 70); in.remoteEnd = 0; return in }, 0, ResumeLogStart, 0, 0, nil},
		{"a sync past the source end is ignored", func(in resumeInput) resumeInput { in.sync, in.remoteEnd = sync(150, 5), 0; return in }, 0, ResumeLogStart, 0, 0, nil},
		{"MM2's negative offset is none", func(in resumeInput) resumeInput { in.mm2, in.remoteEnd = -1, 0; return in }, 0, ResumeLogStart, 0, 0, nil},
		{"deleted before copied", func(in resumeInput) resumeInput { in.mm2, in.logStart = 9, 20; in.remoteEnd = 10; return in }, 20, ResumeMM2Offsets, -1, 10, nil},
		{"nothing known, empty remote: log start", func(in resumeInput) resumeInput { in.remoteEnd = 0; return in }, 0, ResumeLogStart, 0, 0, nil},
		{"nothing known, remote holds data: refused", func(in resumeInput) resumeInput { return in }, -1, "", 60, 0, ErrResumeUnknown},
		{"nothing known, chosen log-start", func(in resumeInput) resumeInput { in.whenUnknown = UnknownLogStart; return in }, 0, ResumeLogStart, 60, 0, nil},
		{"nothing known, chosen log-end", func(in resumeInput) resumeInput { in.whenUnknown = UnknownLogEnd; return in }, 100, ResumeLogEnd, 0, 100, nil},
		{"nothing known, auto.offset.reset=latest", func(in resumeInput) resumeInput { in.latest = true; return in }, 100, ResumeLogEnd, 0, 100, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rp, err := chooseResume(tc.in(base))
			if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if rp.Offset != tc.offset || rp.From != tc.from || rp.Recopy != tc.recopy || rp.Skip != tc.skip {
				t.Fatalf("resume %d from %q recopy %d skip %d; want %d from %q recopy %d skip %d",
					rp.Offset, rp.From, rp.Recopy, rp.Skip, tc.offset, tc.from, tc.recopy, tc.skip)
			}
			if err != nil && (!strings.Contains(rp.Error, KeyResumeUnknown) || !strings.Contains(rp.Error, "60 records")) {
				t.Fatalf("refusal %q: want the key to set and the records held", rp.Error)
			}
		})
	}
}

// mm2Copied plays MirrorMaker 2 on the pair: it copies the first n[p]
// records of each source partition to the remote topic, as MM2 would.
func mm2Copied(t *testing.T, p *clusterPair, topic, remote string, partitions int32, n map[int32]int) {
	t.Helper()
	p.CreateTopic(t, "eu-west", remote, partitions, nil)
	src := p.ReadAll(t, "us-east", topic)
	var out []*kgo.Record
	for part := int32(0); part < partitions; part++ {
		for _, r := range src[part][:n[part]] {
			out = append(out, &kgo.Record{Topic: remote, Partition: part, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp})
		}
	}
	p.Produce(t, "eu-west", out...)
}

// TestTakeoverFromMM2CopiesNothingTwice: a partition with MM2 Connect
// offsets resumes after them, one known only from an offset sync resumes
// after the sync; garbage, other connectors' keys and tombstones in the
// offsets topic are skipped; the target then holds every source record
// exactly once, and mirrorctl's offset syncs continue MM2's.
func TestTakeoverFromMM2CopiesNothingTwice(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("takeover")
	remote := "us-east." + topic
	p.CreateTopic(t, "us-east", topic, 3, nil)
	p.Produce(t, "us-east", sampleRecords(topic, 3, 50)...)
	mm2Copied(t, p, topic, remote, 3, map[int32]int{0: 20, 1: 35, 2: 41})

	offsets := connectoffsets.DedicatedTopic("us-east")
	p.CreateTopic(t, "eu-west", offsets, 5, nil)
	key := func(part int32) []byte {
		return connectoffsets.EncodeKey(connectoffsets.Key{Connector: connectoffsets.DefaultConnector, Cluster: "us-east", Topic: topic, Partition: part})
	}
	rec := func(p int32, k, v []byte) *kgo.Record {
		return &kgo.Record{Topic: offsets, Partition: p, Key: k, Value: v}
	}
	p.Produce(t, "eu-west",
		rec(0, key(0), connectoffsets.EncodeValue(9)),
		rec(0, key(0), connectoffsets.EncodeValue(19)), // the newest wins: resume at 20
		rec(1, []byte(`["MirrorSourceConnector",{"topic":"`+topic+`","partition":1,"cluster":"us-east","x":1}]`), connectoffsets.EncodeValue(34)),
		rec(2, key(2), connectoffsets.EncodeValue(44)),
		rec(2, key(2), nil), // reset: partition 2 has no MM2 offset
		rec(3, []byte("garbage"), []byte("{")),
		rec(3, key(1), []byte(`{"offset":"x"}`)),
		rec(4, []byte(`["MirrorHeartbeatConnector",{"sourceClusterAlias":"us-east","targetClusterAlias":"eu-west"}]`), connectoffsets.EncodeValue(0)),
		rec(4, connectoffsets.EncodeKey(connectoffsets.Key{Connector: connectoffsets.DefaultConnector, Cluster: "ap-south", Topic: topic, Partition: 2}), connectoffsets.EncodeValue(48)),
	)
	// MM2's offset syncs: partition 2 is known only from its sync (40
	// copied to 40); the one of partition 0 is older than its Connect offset.
	syncTopic := "mm2-offset-syncs.eu-west.internal"
	p.CreateTopic(t, "us-east", syncTopic, 1, nil)
	var syncRecs []*kgo.Record
	for _, s := range []mm2.OffsetSync{{Topic: topic, Partition: 0, UpstreamOffset: 10, DownstreamOffset: 10}, {Topic: topic, Partition: 2, UpstreamOffset: 40, DownstreamOffset: 40}} {
		k, _ := s.MarshalKey()
		v, _ := s.MarshalValue()
		syncRecs = append(syncRecs, &kgo.Record{Topic: syncTopic, Partition: 0, Key: k, Value: v})
	}
	p.Produce(t, "us-east", syncRecs...)

	f := testFlow("us-east", "eu-west")
	f.Topics.Include = mustList(t, "topics", topic)
	m := runOnce(t, p, f)

	if n := assertCopied(t, p, "us-east", topic, "eu-west", remote); n != 150 {
		t.Fatalf("target holds %d records, want 150 (each once)", n)
	}
	want := map[int32][2]any{0: {int64(20), ResumeMM2Offsets}, 1: {int64(35), ResumeMM2Offsets}, 2: {int64(41), ResumeOffsetSync}}
	for _, s := range m.Stats() {
		if s.Topic != topic {
			continue
		}
		w := want[s.Partition]
		if s.Start != w[0].(int64) || s.ResumedFrom != w[1].(string) || s.Records != 50-w[0].(int64) {
			t.Errorf("partition %d: resumed at %d from %q, copied %d; want %v and %d copies", s.Partition, s.Start, s.ResumedFrom, s.Records, w, 50-w[0].(int64))
		}
	}
	// mirrorctl's first sync per partition continues MM2's: upstream and
	// downstream both past MM2's, the record at the resume point where it
	// landed.
	first := map[int32]mm2.OffsetSync{}
	for i, s := range readSyncs(t, p, "us-east", syncTopic) {
		if i < 2 || s.Topic != topic {
			continue
		}
		if _, ok := first[s.Partition]; !ok {
			first[s.Partition] = s
		}
	}
	for part, w := range want {
		s, ok := first[part]
		if start := w[0].(int64); !ok || s.UpstreamOffset != start || s.DownstreamOffset != start {
			t.Errorf("partition %d: mirrorctl's first offset sync %+v (found %v), want %d->%d", part, s, ok, start, start)
		}
	}
}

// TestRefusesWhenRemoteHoldsDataAndNothingIsKnown: no progress, no MM2
// offsets, no sync, and records already on the target: the flow stops with
// ErrResumeUnknown and writes nothing; log-end then starts without copying
// what is there again.
func TestRefusesWhenRemoteHoldsDataAndNothingIsKnown(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("unknown")
	remote := "us-east." + topic
	p.CreateTopic(t, "us-east", topic, 2, nil)
	p.Produce(t, "us-east", sampleRecords(topic, 2, 10)...)
	mm2Copied(t, p, topic, remote, 2, map[int32]int{0: 10, 1: 0})

	f := testFlow("us-east", "eu-west")
	f.Topics.Include = mustList(t, "topics", topic)
	m, err := New(Options{Flows: []FlowConfig{f}, Clients: p.Clients, Once: true})
	if err != nil {
		t.Fatal(err)
	}
	err = m.Run(testkit.Context(t))
	if !errors.Is(err, ErrResumeUnknown) || !strings.Contains(err.Error(), remote+"[0]") {
		t.Fatalf("run: %v; want ErrResumeUnknown naming %s[0]", err, remote)
	}
	if got := p.ReadAll(t, "eu-west", remote); len(got[0]) != 10 || len(got[1]) != 0 {
		t.Fatalf("refused run wrote to the target: %d and %d records, want 10 and 0 (no partition starts)", len(got[0]), len(got[1]))
	}

	f.MM2.WhenUnknown = UnknownLogEnd
	m = runOnce(t, p, f)
	if got := p.ReadAll(t, "eu-west", remote); len(got[0]) != 10 {
		t.Fatalf("log-end: %s[0] holds %d records, want the 10 it had", remote, len(got[0]))
	}
	for _, s := range m.Stats() {
		if s.Topic == topic && s.Partition == 0 && (s.ResumedFrom != ResumeLogEnd || s.Records != 0) {
			t.Errorf("log-end: partition 0 %+v, want resumed from log-end with nothing copied", s)
		}
		if s.Topic == topic && s.Partition == 1 && (s.ResumedFrom != ResumeLogStart || s.Records != 10) {
			t.Errorf("partition 1 (empty remote) %+v, want log-start and 10 copies", s)
		}
	}
}

// TestRefusesBesideLiveMM2: MM2's heartbeats for the pair still arriving,
// or members in MM2's Connect group, stop the flow before it writes
// anything, naming what was seen; IgnoreLiveMM2 overrides.
func TestRefusesBesideLiveMM2(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("live")
	p.CreateTopic(t, "us-east", topic, 1, nil)
	p.Produce(t, "us-east", sampleRecords(topic, 1, 5)...)
	f := testFlow("us-east", "eu-west")
	f.Topics.Include = mustList(t, "topics", topic)
	f.MM2.ConnectGroup = testkit.Name("us-east-mm2")
	p.CreateTopic(t, "eu-west", "heartbeats", 1, nil)

	ctx, cancel := context.WithCancel(testkit.Context(t))
	beats := make(chan struct{})
	go func() { // MM2's heartbeat task: no mirrorctl header
		defer close(beats)
		cl := p.Client(t, "eu-west", kgo.RecordPartitioner(kgo.ManualPartitioner()))
		for ctx.Err() == nil {
			hb := mm2.Heartbeat{SourceAlias: "us-east", TargetAlias: "eu-west", Timestamp: time.Now().UnixMilli()}
			k, _ := hb.MarshalKey()
			v, _ := hb.MarshalValue()
			_ = cl.ProduceSync(ctx, &kgo.Record{Topic: "heartbeats", Key: k, Value: v}).FirstErr()
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	testkit.WaitFor(t, "MM2 heartbeats on eu-west", func() bool {
		o, err := p.Admin(t, "eu-west").ListEndOffsets(testkit.Context(t), "heartbeats")
		e, _ := o.Lookup("heartbeats", 0)
		return err == nil && e.Offset > 0
	})
	run := func(ignore bool) error {
		m, err := New(Options{Flows: []FlowConfig{f}, Clients: p.Clients, Once: true, IgnoreLiveMM2: ignore})
		if err != nil {
			t.Fatal(err)
		}
		return m.Run(testkit.Context(t))
	}
	if err := run(false); !errors.Is(err, ErrMM2Running) || !strings.Contains(err.Error(), "heartbeats arrived") {
		t.Fatalf("beside MM2's heartbeats: %v; want ErrMM2Running naming the heartbeats", err)
	}
	if n := endOffset(t, p, "eu-west", "us-east."+topic, 0); n != 0 {
		t.Fatalf("refused run copied %d records", n)
	}
	cancel()
	<-beats

	// A member in MM2's Connect group (a worker that has not left).
	member := p.Client(t, "eu-west", kgo.ConsumerGroup(f.MM2.ConnectGroup), kgo.ConsumeTopics("heartbeats"))
	testkit.WaitFor(t, "the member joined", func() bool {
		d, err := p.Admin(t, "eu-west").DescribeGroups(testkit.Context(t), f.MM2.ConnectGroup)
		return err == nil && len(d[f.MM2.ConnectGroup].Members) == 1
	})
	if err := run(false); !errors.Is(err, ErrMM2Running) || !strings.Contains(err.Error(), "Connect group "+f.MM2.ConnectGroup+" has 1 members") {
		t.Fatalf("beside MM2's Connect group: %v; want ErrMM2Running naming the group", err)
	}
	if err := run(true); err != nil {
		t.Fatalf("forced: %v", err)
	}
	member.Close()
	// (The admin client's metadata may still say the topic is missing.)
	testkit.WaitFor(t, "the forced run's 5 copies", func() bool { return endOffset(t, p, "eu-west", "us-east."+topic, 0) == 5 })
}

// endOffset returns the end offset of topic[partition] on alias, 0 when the
// topic does not exist.
func endOffset(t *testing.T, p *clusterPair, alias, topic string, partition int32) int64 {
	t.Helper()
	o, err := p.Admin(t, alias).ListEndOffsets(testkit.Context(t), topic)
	if err != nil {
		t.Fatalf("list end offsets of %s on %s: %v", topic, alias, err)
	}
	e, ok := o.Lookup(topic, partition)
	if !ok || e.Err != nil {
		return 0
	}
	return e.Offset
}

// The offset-syncs topic is read (back from its end, readSyncs) only for the
// partitions where a sync could change a resume point: the remote partition
// may hold records, and it is not a heartbeats partition that has progress.
func TestSyncMatters(t *testing.T) {
	cfg := FlowConfig{Source: "us-east", Target: "eu-west", Policy: policy.NewDefault(".", false)}
	holds := kadm.ListedOffset{Offset: 7}
	for _, c := range []struct {
		name        string
		topic       string
		hasProgress bool
		end         kadm.ListedOffset
		listed      bool
		want        bool
	}{
		{"remote empty", "orders", false, kadm.ListedOffset{}, true, false},
		{"remote empty, progress", "orders", true, kadm.ListedOffset{}, true, false},
		{"remote holds, no progress", "orders", false, holds, true, true},
		{"remote holds, progress", "orders", true, holds, true, true},
		{"remote end not listed", "orders", true, kadm.ListedOffset{}, false, true},
		{"remote end failed", "orders", true, kadm.ListedOffset{Err: kerr.NotLeaderForPartition}, true, true},
		{"heartbeats with progress", "heartbeats", true, holds, true, false},
		{"heartbeats without progress", "heartbeats", false, holds, true, true},
	} {
		if got := syncMatters(cfg, c.topic, c.hasProgress, c.end, c.listed); got != c.want {
			t.Errorf("%s: syncMatters = %v, want %v", c.name, got, c.want)
		}
	}
}

// readSyncs reads the offset-syncs topic back from its end only as far as the
// partitions asked for need, keeps the newest sync of each, and never lets an
// older sync found further back replace it; nil asks for every partition.
func TestReadSyncsReadsBackOnlyAsFarAsNeeded(t *testing.T) {
	defer func(n int64) { syncScanChunk = n }(syncScanChunk)
	syncScanChunk = 4
	p := newClusterPair(t)
	cfg := testFlow("us-east", "eu-west")
	syncTopic := "mm2-offset-syncs.eu-west.internal"
	p.CreateTopic(t, "us-east", syncTopic, 1, nil)
	// Offset 0: the only sync of "cold"[0]; 1: not a sync; 2..99: "hot"[0..3]
	// in turn, offsets growing.
	sync := func(s mm2.OffsetSync) *kgo.Record {
		k, _ := s.MarshalKey()
		v, _ := s.MarshalValue()
		return &kgo.Record{Topic: syncTopic, Partition: 0, Key: k, Value: v}
	}
	recs := []*kgo.Record{sync(mm2.OffsetSync{Topic: "cold", Partition: 0, UpstreamOffset: 5, DownstreamOffset: 3}),
		{Topic: syncTopic, Partition: 0, Key: []byte("garbage"), Value: []byte{1}}}
	newest := map[tp]mm2.OffsetSync{{"cold", 0}: {Topic: "cold", Partition: 0, UpstreamOffset: 5, DownstreamOffset: 3}}
	for i := int64(2); i < 100; i++ {
		s := mm2.OffsetSync{Topic: "hot", Partition: int32(i % 4), UpstreamOffset: 10 * i, DownstreamOffset: 10*i - 1}
		recs = append(recs, sync(s))
		newest[tp{s.Topic, s.Partition}] = s
	}
	p.Produce(t, "us-east", recs...)
	ctx := testkit.Context(t)

	tk := newTakeover(cfg)
	if err := tk.readSyncs(ctx, cfg, p.Clients, []tp{{"hot", 1}}); err != nil {
		t.Fatal(err)
	}
	if tk.scanTo != 100 || tk.scanFrom != 96 {
		t.Errorf("one hot partition: read [%d, %d), want [96, 100): the last %d records hold its newest sync", tk.scanFrom, tk.scanTo, syncScanChunk)
	}
	if _, s := tk.input(tp{"hot", 1}); s == nil || *s != newest[tp{"hot", 1}] {
		t.Errorf("hot[1]: sync %+v, want %+v", s, newest[tp{"hot", 1}])
	}
	// The cold partition's sync is at offset 0: parts of 4, 8, 16, 32 and
	// the remaining 36 records back to the log start.
	if err := tk.readSyncs(ctx, cfg, p.Clients, []tp{{"cold", 0}, {"hot", 1}}); err != nil {
		t.Fatal(err)
	}
	if tk.scanFrom != 0 {
		t.Errorf("cold partition: read back to %d, want 0", tk.scanFrom)
	}
	for k, want := range newest {
		if _, s := tk.input(k); s == nil || *s != want {
			t.Errorf("%v: sync %+v, want %+v (the newest)", k, s, want)
		}
	}
	// Read whole already: a partition with no sync reads nothing more.
	if err := tk.readSyncs(ctx, cfg, p.Clients, []tp{{"none", 0}}); err != nil {
		t.Fatal(err)
	}
	if _, s := tk.input(tp{"none", 0}); s != nil {
		t.Errorf("none[0]: sync %+v, want none", s)
	}

	// Syncs written after the first read: another member's, for "late"[0],
	// which died before its first progress write, and a newer one of hot[2].
	// A partition with no sync known reads them back from the new end; the
	// newer hot[2] sync met on the way replaces the older one, and a sync of
	// "late"[0] older in the new part does not replace the newest.
	lateOld := mm2.OffsetSync{Topic: "late", Partition: 0, UpstreamOffset: 1, DownstreamOffset: 1}
	hot2 := mm2.OffsetSync{Topic: "hot", Partition: 2, UpstreamOffset: 5000, DownstreamOffset: 4999}
	late := mm2.OffsetSync{Topic: "late", Partition: 0, UpstreamOffset: 7, DownstreamOffset: 6}
	p.Produce(t, "us-east", sync(lateOld), sync(hot2), sync(late))
	if err := tk.readSyncs(ctx, cfg, p.Clients, []tp{{"late", 0}}); err != nil {
		t.Fatal(err)
	}
	if _, s := tk.input(tp{"late", 0}); s == nil || *s != late {
		t.Errorf("late[0]: sync %+v, want %+v (the newest, written after the first read)", s, late)
	}
	if _, s := tk.input(tp{"hot", 2}); s == nil || *s != hot2 {
		t.Errorf("hot[2]: sync %+v, want %+v (newer than the one read first)", s, hot2)
	}
	if tk.scanTo != 103 || tk.scanFrom != 0 {
		t.Errorf("after the new syncs: read [%d, %d), want [0, 103)", tk.scanFrom, tk.scanTo)
	}
	newest[tp{"late", 0}], newest[tp{"hot", 2}] = late, hot2

	// nil: every partition, the whole topic, in parts across its records.
	whole := newTakeover(cfg)
	if err := whole.readSyncs(ctx, cfg, p.Clients, nil); err != nil {
		t.Fatal(err)
	}
	if whole.scanFrom != 0 || len(whole.syncs) != len(newest) {
		t.Errorf("nil: read from %d, %d syncs; want from 0, %d", whole.scanFrom, len(whole.syncs), len(newest))
	}
	for k, want := range newest {
		if got := whole.syncs[k]; got != want {
			t.Errorf("nil, %v: sync %+v, want %+v", k, got, want)
		}
	}

	// A flow whose offset-syncs topic does not exist reads nothing.
	other := testFlow("eu-west", "us-east")
	none := newTakeover(other)
	if err := none.readSyncs(ctx, other, p.Clients, []tp{{"hot", 0}}); err != nil || len(none.syncs) != 0 {
		t.Errorf("missing topic: %d syncs, err %v; want none, nil", len(none.syncs), err)
	}
}
