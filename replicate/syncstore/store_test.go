package syncstore

import (
	"slices"
	"strings"
	"testing"

	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

const (
	tTopic = "orders"
	tPart  = int32(3)
)

func sy(up, down int64) mm2.OffsetSync {
	return mm2.OffsetSync{Topic: tTopic, Partition: tPart, UpstreamOffset: up, DownstreamOffset: down}
}

// tooOld is the expected value of a translation MM2 answers with -1.
const tooOld = int64(-1)

type translation struct{ up, want int64 }

// checkTranslations asserts each upstream offset translates to want, where
// want == tooOld means "not OK, ReasonTooOld".
func checkTranslations(t *testing.T, s *Store, ts []translation) {
	t.Helper()
	for _, tr := range ts {
		got := s.Translate(tTopic, tPart, tr.up)
		if tr.want == tooOld {
			if got.OK || got.Reason != ReasonTooOld {
				t.Errorf("t(%d) = %+v, want not OK with ReasonTooOld", tr.up, got)
			}
			continue
		}
		if !got.OK || got.Offset != tr.want || got.Reason != "" {
			t.Errorf("t(%d) = %+v, want OK offset %d", tr.up, got, tr.want)
		}
	}
}

// TestSpecSequence is the one-partition sequence of docs/mm2-formats.md §6, checked
// against MM2's own OffsetSyncStore.
func TestSpecSequence(t *testing.T) {
	steps := []struct {
		name string
		add  mm2.OffsetSync
		ts   []translation
		dump string // "" = the spec gives no array for this step
	}{
		{"first sync", sy(100, 200),
			[]translation{{150, 201}, {100, 200}, {99, tooOld}}, "[0:100→200]"},
		{"second sync", sy(150, 251),
			[]translation{{150, 251}, {149, 201}, {120, 201}, {5, tooOld}}, ""},
		{"downstream reset keeps the array", sy(200, 10),
			[]translation{{200, 10}, {160, 252}, {150, 251}, {149, 201}},
			"[0:200→10, 7:150→251, 8:100→200]"},
		{"upstream rewind clears the array", sy(20, 20),
			[]translation{{20, 20}, {150, 21}, {19, tooOld}}, "[0:20→20]"},
	}
	s := New(false)
	s.ReadToEnd()
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			s.Add(st.add)
			checkTranslations(t, s, st.ts)
			if st.dump != "" {
				if got := s.dump(tTopic, tPart); got != st.dump {
					t.Errorf("array = %s, want %s", got, st.dump)
				}
			}
		})
	}
}

// TestSpecSequenceSyncUsed checks Result.Sync on the downstream-reset step:
// t(160)=252 comes from the old 150→251 sync, not the newest one.
func TestSpecSequenceSyncUsed(t *testing.T) {
	s := New(false)
	s.ReadToEnd()
	for _, o := range []mm2.OffsetSync{sy(100, 200), sy(150, 251), sy(200, 10)} {
		s.Add(o)
	}
	cases := []struct {
		up   int64
		want Result
	}{
		{160, Result{Offset: 252, OK: true, Sync: sy(150, 251)}},
		{200, Result{Offset: 10, OK: true, Sync: sy(200, 10)}},
		{1000, Result{Offset: 11, OK: true, Sync: sy(200, 10)}},
		{100, Result{Offset: 200, OK: true, Sync: sy(100, 200)}},
		{99, Result{Reason: ReasonTooOld, Sync: sy(100, 200)}},
	}
	for _, c := range cases {
		if got := s.Translate(tTopic, tPart, c.up); got != c.want {
			t.Errorf("t(%d) = %+v, want %+v", c.up, got, c.want)
		}
	}
	want := []mm2.OffsetSync{sy(200, 10), sy(150, 251), sy(100, 200)}
	if got := s.Syncs(tTopic, tPart); !slices.Equal(got, want) {
		t.Errorf("Syncs = %v, want %v", got, want)
	}
}

// add101 adds the syncs o→o for o = 0, 10, …, 1000.
func add101(s *Store) {
	for o := int64(0); o <= 1000; o += 10 {
		s.Add(sy(o, o))
	}
}

// lockStepDump expands the spec's "index:offset" form (upstream = downstream)
// into dump's "index:up→down" form.
func lockStepDump(spec string) string {
	inner := strings.TrimSuffix(strings.TrimPrefix(spec, "["), "]")
	var parts []string
	for _, p := range strings.Split(inner, ", ") {
		_, off, _ := strings.Cut(p, ":")
		parts = append(parts, p+"→"+off)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// TestSpec101Syncs covers 101 lock-step syncs (0, 10, ..., 1000): live,
// and read during startup with both mustReadToEnd values.
func TestSpec101Syncs(t *testing.T) {
	const fullArray = "[0:1000, 5:990, 6:960, 7:900, 8:840, 9:720, 10:480, 11:0]"
	fullTranslations := []translation{
		{1000, 1000}, {999, 991}, {995, 991}, {990, 990}, {985, 961},
		{900, 900}, {500, 481}, {100, 1}, {0, 0},
	}
	cases := []struct {
		name          string
		mustReadToEnd bool
		live          bool // ReadToEnd before the syncs, else after
		dump          string
		ts            []translation
	}{
		{"live, mustReadToEnd=false", false, true, fullArray, fullTranslations},
		{"live, mustReadToEnd=true", true, true, fullArray, fullTranslations},
		{"startup, mustReadToEnd=false", false, false, fullArray, fullTranslations},
		{"startup, mustReadToEnd=true", true, false, "[0:1000]",
			[]translation{{1000, 1000}, {1001, 1001}, {999, tooOld}, {500, tooOld}, {0, tooOld}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(c.mustReadToEnd)
			if c.live {
				s.ReadToEnd()
			}
			add101(s)
			if !c.live {
				if got := s.Translate(tTopic, tPart, 500); got.OK || got.Reason != ReasonNotReady {
					t.Errorf("before ReadToEnd: t(500) = %+v, want ReasonNotReady", got)
				}
				s.ReadToEnd()
			}
			if got, want := s.dump(tTopic, tPart), lockStepDump(c.dump); got != want {
				t.Errorf("array = %s\nwant    %s", got, want)
			}
			checkTranslations(t, s, c.ts)
		})
	}
}

// TestStartupThenLive: with mustReadToEnd=true only the latest startup sync
// survives, and syncs after ReadToEnd build history on top of it.
func TestStartupThenLive(t *testing.T) {
	s := New(true)
	add101(s)
	s.ReadToEnd()
	s.Add(sy(1010, 1010))
	if got, want := s.dump(tTopic, tPart), "[0:1010→1010, 5:1000→1000]"; got != want {
		t.Errorf("array = %s, want %s", got, want)
	}
	checkTranslations(t, s, []translation{{1005, 1001}, {1010, 1010}, {999, tooOld}})
}

func TestReasons(t *testing.T) {
	s := New(false)
	s.Add(sy(100, 200))
	if s.Ready() {
		t.Fatal("Ready() before ReadToEnd")
	}
	if got := s.Translate(tTopic, tPart, 150); got != (Result{Reason: ReasonNotReady}) {
		t.Errorf("not ready: got %+v", got)
	}
	s.ReadToEnd()
	s.ReadToEnd() // idempotent
	if !s.Ready() {
		t.Fatal("Ready() false after ReadToEnd")
	}
	cases := []struct {
		name  string
		topic string
		part  int32
		up    int64
		want  Result
	}{
		{"other partition", tTopic, tPart + 1, 150, Result{Reason: ReasonNoSyncs}},
		{"other topic", "payments", tPart, 150, Result{Reason: ReasonNoSyncs}},
		{"too old", tTopic, tPart, 99, Result{Reason: ReasonTooOld, Sync: sy(100, 200)}},
		{"ok", tTopic, tPart, 150, Result{Offset: 201, OK: true, Sync: sy(100, 200)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := s.Translate(c.topic, c.part, c.up); got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
	texts := map[Reason]string{
		ReasonNotReady: "offset syncs not read to the end yet",
		ReasonNoSyncs:  "no offset sync for this partition",
		ReasonTooOld:   "the group's offset is older than every kept offset sync",
	}
	for r, want := range texts {
		if string(r) != want {
			t.Errorf("reason %q, want %q", r, want)
		}
	}
}

// TestIdenticalSyncsAreDistinct: two records with equal offsets are two syncs
// (MM2 compares by identity), so an equal sync still replaces slot 0 and the
// first copy moves out like any other older sync.
func TestIdenticalSyncsAreDistinct(t *testing.T) {
	s := New(false)
	s.ReadToEnd()
	s.Add(sy(100, 100))
	s.Add(sy(100, 100))
	// B fails for slot 1 only if 100 > 100 + 2 - 1, which is false, so the
	// walk stops at slot 1 and the first copy keeps slots 1..63.
	if got, want := s.dump(tTopic, tPart), "[0:100→100, 1:100→100]"; got != want {
		t.Errorf("array = %s, want %s", got, want)
	}
	if got := s.Syncs(tTopic, tPart); len(got) != 2 {
		t.Errorf("Syncs = %v, want 2 entries", got)
	}
}

func TestPartitionsIndependent(t *testing.T) {
	s := New(false)
	s.ReadToEnd()
	s.Add(mm2.OffsetSync{Topic: "b", Partition: 1, UpstreamOffset: 10, DownstreamOffset: 20})
	s.Add(mm2.OffsetSync{Topic: "a", Partition: 2, UpstreamOffset: 500, DownstreamOffset: 5})
	s.Add(mm2.OffsetSync{Topic: "a", Partition: 0, UpstreamOffset: 7, DownstreamOffset: 7})
	// A rewind on a/2 must not touch b/1.
	s.Add(mm2.OffsetSync{Topic: "a", Partition: 2, UpstreamOffset: 1, DownstreamOffset: 6})
	want := []TopicPartition{{"a", 0}, {"a", 2}, {"b", 1}}
	if got := s.Partitions(); !slices.Equal(got, want) {
		t.Errorf("Partitions = %v, want %v", got, want)
	}
	if got := s.Translate("b", 1, 15); got.Offset != 21 || !got.OK {
		t.Errorf("b/1 t(15) = %+v, want 21", got)
	}
	if got := s.Translate("a", 2, 500); got.Offset != 7 || !got.OK {
		t.Errorf("a/2 t(500) = %+v, want 7 (from 1→6)", got)
	}
	if got := s.Syncs("c", 0); got != nil {
		t.Errorf("Syncs of unknown partition = %v, want nil", got)
	}
	if got := s.dump("c", 0); got != "[]" {
		t.Errorf("dump of unknown partition = %s", got)
	}
}

func TestTranslateUpstream(t *testing.T) {
	type inv struct {
		down   int64
		want   int64
		wantOK bool
	}
	cases := []struct {
		name  string
		syncs []mm2.OffsetSync
		inv   []inv
	}{
		{"lock-step 101 syncs", nil, []inv{
			{1000, 1000, true}, {1005, 1001, true}, {995, 991, true}, {990, 990, true},
			{500, 481, true}, {0, 0, true}, {-1, 0, false},
		}},
		{"offset pair", []mm2.OffsetSync{sy(100, 200), sy(150, 251)}, []inv{
			{251, 150, true}, {260, 151, true}, {250, 101, true}, {200, 100, true}, {199, 0, false},
		}},
		{"after downstream reset: newest sync at or below wins", []mm2.OffsetSync{sy(100, 200), sy(150, 251), sy(200, 10)}, []inv{
			{10, 200, true}, {300, 201, true}, {9, 0, false},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(false)
			s.ReadToEnd()
			if c.syncs == nil {
				add101(s)
			}
			for _, o := range c.syncs {
				s.Add(o)
			}
			for _, iv := range c.inv {
				got, ok := s.TranslateUpstream(tTopic, tPart, iv.down)
				if ok != iv.wantOK || (ok && got != iv.want) {
					t.Errorf("u(%d) = %d, %v; want %d, %v", iv.down, got, ok, iv.want, iv.wantOK)
				}
			}
		})
	}
	s := New(false)
	if _, ok := s.TranslateUpstream(tTopic, tPart, 5); ok {
		t.Error("TranslateUpstream on an empty store: ok")
	}
}

// TestLargeOffsets checks the 2^63 wrap-around of the bounds near the top of
// the offset range does not panic or break the spacing.
func TestLargeOffsets(t *testing.T) {
	s := New(false)
	s.ReadToEnd()
	base := int64(1) << 62
	for i := int64(0); i < 200; i++ {
		s.Add(sy(base+i*(1<<54), i))
	}
	got := s.Syncs(tTopic, tPart)
	if got[0].UpstreamOffset != base+199*(1<<54) || got[len(got)-1].UpstreamOffset != base {
		t.Errorf("newest/oldest = %v / %v", got[0], got[len(got)-1])
	}
	checkInvariants(t, s, "large offsets", s.Syncs(tTopic, tPart)[0], sy(base, 0))
	r := s.Translate(tTopic, tPart, base+5)
	if !r.OK || r.Offset != 1 {
		t.Errorf("t(base+5) = %+v, want 1", r)
	}
}
