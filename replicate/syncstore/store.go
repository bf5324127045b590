package syncstore

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// slotCount is the number of syncs kept per source partition: one per bit of
// a 64-bit offset, as MM2 keeps (OffsetSyncStore.SYNCS_PER_PARTITION).
const slotCount = 64

// entry is one kept sync. id tells apart syncs that were added separately even
// when their offsets are equal: MM2 compares array slots by object identity,
// so two records with the same offsets are still two different syncs, and the
// update rule depends on that.
type entry struct {
	up, down int64
	id       uint64
}

// slots is one partition's array. Index 0 is the newest sync and index 63 the
// oldest still usable; runs of equal ids fill the gaps between distinct syncs.
// A published *slots is never modified: writers build a new one.
type slots [slotCount]entry

// TopicPartition names a source topic-partition (the key of an offset sync).
type TopicPartition struct {
	Topic     string
	Partition int32
}

// partState holds the published array of one source partition.
type partState struct {
	cur atomic.Pointer[slots]
}

// Store holds, per source topic-partition, MM2's 64-slot array of offset syncs
// and translates group offsets with it (MM2 class OffsetSyncStore).
//
// Concurrency: a Store is safe for concurrent use. Writers (Add, ReadToEnd)
// are serialised by an internal mutex and are expected to come from the one
// goroutine that reads the offset-syncs topic. Readers (Translate,
// TranslateUpstream, Syncs, Partitions, Ready) take no lock: each partition's
// array is copy-on-write and published atomically, so a reader always sees a
// whole array, either the one before or the one after a concurrent Add.
//
// The zero value is not usable; call New.
type Store struct {
	mustReadToEnd bool
	ready         atomic.Bool

	mu     sync.Mutex // serialises Add and ReadToEnd
	nextID uint64     // identity of the next added sync; guarded by mu

	parts sync.Map // TopicPartition -> *partState
}

// New returns an empty store that is not yet ready (see ReadToEnd).
//
// mustReadToEnd selects the startup behaviour (docs/mm2-formats.md §6,
// "Start-up"). When true, every sync added before ReadToEnd replaces the
// partition's whole array, so after a restart only the latest sync per
// partition is known until new syncs arrive: MM2 3.4.1 to 3.7.x always, and
// 3.8.0+ when the checkpoint task could not read its own checkpoints topic.
// When false, syncs read before ReadToEnd go through the normal update rule
// and the full history is rebuilt from what compaction left in the topic
// (MM2 3.8.0+ with its checkpoints read, KAFKA-15905).
func New(mustReadToEnd bool) *Store {
	return &Store{mustReadToEnd: mustReadToEnd}
}

// Add applies one record of the offset-syncs topic, in topic order, using
// MM2's update rule (docs/mm2-formats.md §6, "Store"):
//
//   - the first sync of a partition fills all 64 slots;
//   - a sync whose upstream offset is below the newest kept one (the source
//     partition was rewound or recreated) also fills all 64 slots, as does
//     every sync added before ReadToEnd when the store was created with
//     mustReadToEnd=true;
//   - otherwise the sync becomes slot 0 and older slots are repaired outward
//     until the spacing invariant holds again, promoting older kept syncs
//     where they fit (the KAFKA-15202 rule), so results equal MM2's.
//
// A downstream offset that goes backwards (target truncated) does not clear
// the array. Add does not block readers.
func (s *Store) Add(sync mm2.OffsetSync) {
	key := TopicPartition{Topic: sync.Topic, Partition: sync.Partition}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	n := entry{up: sync.UpstreamOffset, down: sync.DownstreamOffset, id: s.nextID}

	p := s.part(key)
	old := p.cur.Load()
	next := new(slots)
	if old == nil || n.up < old[0].up || (s.mustReadToEnd && !s.ready.Load()) {
		for i := range next {
			next[i] = n
		}
	} else {
		*next = *old
		next.insert(old, n)
	}
	p.cur.Store(next)
}

// part returns the holder for key, creating it if needed. Called with s.mu
// held.
func (s *Store) part(key TopicPartition) *partState {
	if v, ok := s.parts.Load(key); ok {
		return v.(*partState)
	}
	p := new(partState)
	s.parts.Store(key, p)
	return p
}

// insert makes n the newest sync of a, where a starts as a copy of old (the
// array before this update) and old stays unchanged.
//
// Slot 0 always takes n. Then, walking outward, each slot is checked against
// its (possibly just replaced) newer neighbour. If spacing rule B already
// holds there, it holds for the rest of the array too and the walk stops.
// Otherwise the slot takes the current candidate. The candidate starts as n;
// before each slot, syncs from old are considered in order (a cursor that
// never passes the slot being filled) and one is promoted to candidate when it
// is recent enough for this slot (rule B against the newer neighbour) and far
// enough from both neighbours (rule C), which keeps more distinct syncs than
// copying n outward would. A considered sync that is too close to the newer
// neighbour, or that repeats in old, is passed over for good; the cursor keeps
// moving while it passes syncs over.
func (a *slots) insert(old *slots, n entry) {
	a[0] = n
	cand := n
	cursor := 0
	for cur := 1; cur < slotCount; cur++ {
		newer := cur - 1
		for {
			o := old[cursor]
			recent := ruleB(a[newer], o, newer, cur)
			farFromNewer := ruleC(a[newer], o, newer)
			farFromOlder := cur+1 == slotCount || ruleC(o, a[cur+1], cur)
			repeated := cursor+1 < slotCount && old[cursor+1].id == o.id
			promoted := recent && farFromNewer && farFromOlder
			if promoted {
				cand = o
			}
			passOver := repeated || !farFromNewer
			if promoted || passOver {
				cursor++
			}
			if !passOver || cursor >= cur {
				break
			}
		}
		if ruleB(a[newer], a[cur], newer, cur) {
			return
		}
		a[cur] = cand
	}
}

// ruleB reports whether invariant B holds for syncs x at index i and y at
// index j (i < j): x.up <= y.up + 2^j - 2^i, i.e. y is not too old to sit at
// j. The bound is computed with 64-bit wrap-around like MM2 (2^63 wraps
// negative), and a negative bound counts as holding. The same sync at both
// indexes always holds.
func ruleB(x, y entry, i, j int) bool {
	if x.id == y.id {
		return true
	}
	bound := y.up + int64(1)<<uint(j) - int64(1)<<uint(i)
	return bound < 0 || x.up <= bound
}

// ruleC reports whether invariant C holds for syncs x at index i and y at a
// later index: x.up >= y.up + 2^max(i-2,0), i.e. the two are spaced far
// enough apart. A bound that overflows negative counts as failing. The same
// sync at both indexes always holds.
func ruleC(x, y entry, i int) bool {
	if x.id == y.id {
		return true
	}
	bound := y.up + int64(1)<<uint(max(i-2, 0))
	return bound >= 0 && x.up >= bound
}

// ReadToEnd marks the initial read of the offset-syncs topic as finished
// (MM2: OffsetSyncStore.start returning). From then on Translate answers, and
// with mustReadToEnd=true syncs stop replacing the whole array. Calling it
// again has no effect.
func (s *Store) ReadToEnd() {
	s.mu.Lock()
	s.ready.Store(true)
	s.mu.Unlock()
}

// Ready reports whether ReadToEnd has been called.
func (s *Store) Ready() bool { return s.ready.Load() }

// Reason says why a translation gave no offset. Its value is a human-readable
// sentence fragment suitable for a table cell or log message.
type Reason string

const (
	// ReasonNotReady: the initial read of the offset-syncs topic has not
	// finished (MM2 emits no checkpoint; KAFKA-13659).
	ReasonNotReady Reason = "offset syncs not read to the end yet"
	// ReasonNoSyncs: the store holds no sync for the partition (MM2 emits no
	// checkpoint; KAFKA-12635, 3.3.0).
	ReasonNoSyncs Reason = "no offset sync for this partition"
	// ReasonTooOld: every kept sync is past the group's offset (MM2's
	// translateDownstream returns -1 and the checkpoint is dropped).
	ReasonTooOld Reason = "the group's offset is older than every kept offset sync"
)

// Result is the outcome of one translation.
type Result struct {
	// Offset is the translated target (downstream) offset, a committed-offset
	// position (the next record to read). Valid only when OK.
	Offset int64
	// OK reports whether Offset is valid.
	OK bool
	// Reason says why not OK; empty when OK.
	Reason Reason
	// Sync is the sync the answer started from: when OK, the newest kept
	// sync at or before the group's offset; with ReasonTooOld, the oldest
	// kept sync (which is past the group's offset). Zero otherwise.
	Sync mm2.OffsetSync
}

// Translate maps a group's committed offset upstream (the next source record
// to read) on topic/partition to the target partition, as MM2's
// OffsetSyncStore.translateDownstream does (docs/mm2-formats.md §6):
//
//   - before ReadToEnd: not OK, ReasonNotReady;
//   - no sync for the partition: not OK, ReasonNoSyncs;
//   - s = the newest kept sync with s.UpstreamOffset <= upstream; if there is
//     none: not OK, ReasonTooOld (MM2 returns -1);
//   - OK with Offset = s.DownstreamOffset when upstream == s.UpstreamOffset,
//     else s.DownstreamOffset + 1.
//
// It never extrapolates from the sync: records after it may have been
// filtered or compacted away, and the +1 can cause re-reads but never skips.
func (s *Store) Translate(topic string, partition int32, upstream int64) Result {
	if !s.ready.Load() {
		return Result{Reason: ReasonNotReady}
	}
	a := s.load(topic, partition)
	if a == nil {
		return Result{Reason: ReasonNoSyncs}
	}
	e := a[slotCount-1]
	for i := range a {
		if a[i].up <= upstream {
			e = a[i]
			break
		}
	}
	res := Result{Sync: e.sync(topic, partition)}
	if e.up > upstream {
		res.Reason = ReasonTooOld
		return res
	}
	res.OK = true
	res.Offset = e.down
	if upstream != e.up {
		res.Offset++
	}
	return res
}

// TranslateUpstream maps a target (downstream) committed offset back to the
// source, for failback: the newest kept sync s with s.DownstreamOffset <=
// downstream gives s.UpstreamOffset, plus one when downstream is past
// s.DownstreamOffset. It returns ok=false when no kept sync qualifies or the
// partition has none. Like Translate it never extrapolates. It answers
// whether or not ReadToEnd has been called; callers that need a complete view
// check Ready first. MM2 has no such method; it is the mirror image of
// translateDownstream.
func (s *Store) TranslateUpstream(topic string, partition int32, downstream int64) (int64, bool) {
	a := s.load(topic, partition)
	if a == nil {
		return 0, false
	}
	for i := range a {
		if a[i].down <= downstream {
			if downstream == a[i].down {
				return a[i].up, true
			}
			return a[i].up + 1, true
		}
	}
	return 0, false
}

// Syncs returns the distinct syncs kept for topic/partition, newest first
// (at most 64), or nil if it has none. The slice is the caller's.
func (s *Store) Syncs(topic string, partition int32) []mm2.OffsetSync {
	a := s.load(topic, partition)
	if a == nil {
		return nil
	}
	var out []mm2.OffsetSync
	for i := range a {
		if i == 0 || a[i].id != a[i-1].id {
			out = append(out, a[i].sync(topic, partition))
		}
	}
	return out
}

// Partitions returns every source topic-partition with at least one kept
// sync, sorted by topic then partition.
func (s *Store) Partitions() []TopicPartition {
	var out []TopicPartition
	s.parts.Range(func(k, v any) bool {
		if v.(*partState).cur.Load() != nil {
			out = append(out, k.(TopicPartition))
		}
		return true
	})
	slices.SortFunc(out, func(x, y TopicPartition) int {
		return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
	})
	return out
}

// load returns the published array of a partition, or nil.
func (s *Store) load(topic string, partition int32) *slots {
	v, ok := s.parts.Load(TopicPartition{Topic: topic, Partition: partition})
	if !ok {
		return nil
	}
	return v.(*partState).cur.Load()
}

func (e entry) sync(topic string, partition int32) mm2.OffsetSync {
	return mm2.OffsetSync{Topic: topic, Partition: partition, UpstreamOffset: e.up, DownstreamOffset: e.down}
}

// dump renders the distinct kept syncs of a partition with their first index,
// as "[0:200→10, 7:150→251, 8:100→200]" (index:upstream→downstream), or "[]"
// when it has none. It is the form docs/mm2-formats.md §6 and the tests use.
func (s *Store) dump(topic string, partition int32) string {
	a := s.load(topic, partition)
	var b strings.Builder
	b.WriteByte('[')
	if a != nil {
		for i := range a {
			if i > 0 && a[i].id == a[i-1].id {
				continue
			}
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%d:%d→%d", i, a[i].up, a[i].down)
		}
	}
	b.WriteByte(']')
	return b.String()
}
