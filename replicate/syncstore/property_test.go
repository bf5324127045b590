package syncstore

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// checkInvariants asserts MM2's invariants (docs/mm2-formats.md §6) on the raw array
// of tTopic/tPart:
//
//	A: slot 0 holds newest;
//	B: for i<j holding different syncs, up[i] <= up[j] + 2^j - 2^i (pairs
//	   whose bound overflows are skipped, as MM2's own test does);
//	C: for i<j holding different syncs, up[i] >= up[j] + 2^max(i-2,0);
//	D: slot 63 holds oldest (the first sync since the array was last cleared).
//
// It also checks the shape the algorithm implies: upstream offsets never
// increase with the index, and each sync fills one contiguous run of slots.
func checkInvariants(t *testing.T, s *Store, label string, newest, oldest mm2.OffsetSync) {
	t.Helper()
	a := s.load(tTopic, tPart)
	if a == nil {
		t.Fatalf("%s: no array", label)
	}
	if got := a[0].sync(tTopic, tPart); got != newest {
		t.Fatalf("%s: invariant A: slot 0 = %v, want %v", label, got, newest)
	}
	if got := a[slotCount-1].sync(tTopic, tPart); got != oldest {
		t.Fatalf("%s: invariant D: slot 63 = %v, want %v", label, got, oldest)
	}
	seen := map[uint64]bool{}
	for i := range a {
		if i > 0 && a[i].id != a[i-1].id {
			if seen[a[i].id] {
				t.Fatalf("%s: sync %v appears in two runs (slot %d)", label, a[i], i)
			}
			if a[i].up > a[i-1].up {
				t.Fatalf("%s: slot %d up %d > slot %d up %d", label, i, a[i].up, i-1, a[i-1].up)
			}
			if a[i].id > a[i-1].id {
				t.Fatalf("%s: slot %d holds a newer sync than slot %d", label, i, i-1)
			}
		}
		seen[a[i].id] = true
	}
	for j := range a {
		for i := 0; i < j; i++ {
			if a[i].id == a[j].id {
				continue
			}
			if b := a[j].up + int64(1)<<uint(j) - int64(1)<<uint(i); b >= 0 && a[i].up > b {
				t.Fatalf("%s: invariant B(%d,%d): %d > %d", label, i, j, a[i].up, b)
			}
			if c := a[j].up + int64(1)<<uint(max(i-2, 0)); c >= 0 && a[i].up < c {
				t.Fatalf("%s: invariant C(%d,%d): %d < %d", label, i, j, a[i].up, c)
			}
		}
	}
}

// gapGen draws upstream gaps between consecutive syncs.
type gapGen struct {
	name string
	gap  func(r *rand.Rand) int64
}

var gapGens = []gapGen{
	{"every offset", func(*rand.Rand) int64 { return 1 }},
	{"every 10", func(*rand.Rand) int64 { return 10 }},
	{"uniform 1..100", func(r *rand.Rand) int64 { return 1 + r.Int64N(100) }},
	{"bursty", func(r *rand.Rand) int64 {
		switch r.IntN(10) {
		case 0:
			return 1 + r.Int64N(1<<20)
		default:
			return 1 + r.Int64N(8)
		}
	}},
	{"exponential scales", func(r *rand.Rand) int64 { return 1 + r.Int64N(int64(1)<<r.IntN(40)) }},
}

// TestInvariantsRandomMonotone adds random strictly increasing sync sequences
// and checks invariants A-D after every Add. (A repeated upstream offset, as a
// restarted task may write, breaks invariant C in MM2 too: see
// TestIdenticalSyncsAreDistinct.)
func TestInvariantsRandomMonotone(t *testing.T) {
	for _, g := range gapGens {
		t.Run(g.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 8; seed++ {
				r := rand.New(rand.NewPCG(seed, 42))
				s := New(false)
				s.ReadToEnd()
				n := 200 + r.IntN(2500)
				up, down := r.Int64N(1000), r.Int64N(1000)
				first := sy(up, down)
				for k := 0; k < n; k++ {
					if k > 0 {
						gap := g.gap(r)
						up += gap
						down += gap + r.Int64N(3) // markers may widen the target
					}
					cur := sy(up, down)
					s.Add(cur)
					checkInvariants(t, s, g.name, cur, first)
				}
				if d := len(s.Syncs(tTopic, tPart)); d > slotCount {
					t.Fatalf("%d distinct syncs kept", d)
				}
			}
		})
	}
}

// TestInvariantsAfterRewind: after an upstream rewind the array restarts from
// the rewinding sync, and the invariants hold again from there.
func TestInvariantsAfterRewind(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	s := New(false)
	s.ReadToEnd()
	up := int64(0)
	for k := 0; k < 500; k++ {
		up += 1 + r.Int64N(50)
		s.Add(sy(up, up))
	}
	first := sy(3, 3)
	s.Add(first)
	if got, want := s.dump(tTopic, tPart), "[0:3→3]"; got != want {
		t.Fatalf("after rewind: %s, want %s", got, want)
	}
	up = 3
	for k := 0; k < 500; k++ {
		up += 1 + r.Int64N(50)
		cur := sy(up, up)
		s.Add(cur)
		checkInvariants(t, s, "after rewind", cur, first)
	}
}

// record is one replicated source record and where it landed.
type record struct{ up, down int64 }

// trueDownstream returns where a group at upstream offset g must resume on
// the target: the downstream offset of the first replicated record at or past
// g, or one past the last record when g is past them all.
func trueDownstream(recs []record, g int64) int64 {
	lo, hi := 0, len(recs)
	for lo < hi {
		m := (lo + hi) / 2
		if recs[m].up < g {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(recs) {
		return recs[len(recs)-1].down + 1
	}
	return recs[lo].down
}

// TestTranslateNeverPastTruth replicates random record streams (upstream gaps
// from compaction or markers, downstream gaps from target transaction
// markers, or pure lock-step), emits syncs for a random subset of records, and
// checks every group offset: a translation is never past the true downstream
// position, is exact at a kept sync, is monotone in the group offset, and
// exists for every offset at or past the oldest kept sync.
func TestTranslateNeverPastTruth(t *testing.T) {
	cases := []struct {
		name              string
		upGapP, downGapP  float64
		syncP             float64
		lockStepExactSame bool // down == up for every record
	}{
		{"lock-step dense syncs", 0, 0, 0.5, true},
		{"lock-step sparse syncs", 0, 0, 0.02, true},
		{"upstream gaps", 0.1, 0, 0.05, false},
		{"downstream markers", 0, 0.2, 0.05, false},
		{"both", 0.1, 0.1, 0.1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 4; seed++ {
				r := rand.New(rand.NewPCG(seed, 99))
				recs := make([]record, 0, 4000)
				up, down := int64(0), int64(0)
				if !c.lockStepExactSame {
					up, down = r.Int64N(100), r.Int64N(100)
				}
				for k := 0; k < 4000; k++ {
					recs = append(recs, record{up, down})
					up++
					down++
					if r.Float64() < c.upGapP {
						up += 1 + r.Int64N(40)
					}
					if r.Float64() < c.downGapP {
						down += 1 + r.Int64N(3)
					}
				}
				s := New(false)
				s.ReadToEnd()
				for k, rec := range recs {
					if k == 0 || r.Float64() < c.syncP {
						s.Add(sy(rec.up, rec.down))
					}
					if k%500 == 499 || k == len(recs)-1 {
						checkTranslations2(t, s, recs, c.lockStepExactSame)
					}
				}
			}
		})
	}
}

func checkTranslations2(t *testing.T, s *Store, recs []record, lockStep bool) {
	t.Helper()
	kept := s.Syncs(tTopic, tPart)
	oldest := kept[len(kept)-1].UpstreamOffset
	exact := map[int64]int64{}
	for _, k := range kept {
		exact[k.UpstreamOffset] = k.DownstreamOffset
	}
	prev := int64(-1)
	last := recs[len(recs)-1].up + 3
	for g := int64(0); g <= last; g++ {
		res := s.Translate(tTopic, tPart, g)
		if g < oldest {
			if res.OK || res.Reason != ReasonTooOld {
				t.Fatalf("t(%d) below oldest sync %d = %+v, want ReasonTooOld", g, oldest, res)
			}
			continue
		}
		if !res.OK {
			t.Fatalf("t(%d) = %+v, want OK", g, res)
		}
		if truth := trueDownstream(recs, g); res.Offset > truth {
			t.Fatalf("t(%d) = %d is past the true downstream %d (sync %v)", g, res.Offset, truth, res.Sync)
		}
		if lockStep && res.Offset > g {
			t.Fatalf("lock-step t(%d) = %d > %d", g, res.Offset, g)
		}
		if d, ok := exact[g]; ok && res.Offset != d {
			t.Fatalf("t(%d) = %d at a kept sync, want %d", g, res.Offset, d)
		}
		if res.Offset < prev {
			t.Fatalf("t(%d) = %d < t(%d) = %d: not monotone", g, res.Offset, g-1, prev)
		}
		prev = res.Offset
	}
}

// TestConcurrentAddTranslate runs one writer and several readers at once; run
// with -race. Readers must only see whole arrays: with down == up every
// translation is at most the group offset and at least the oldest sync.
func TestConcurrentAddTranslate(t *testing.T) {
	s := New(false)
	s.Add(sy(0, 0))
	s.ReadToEnd()
	const n = 20000
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for {
				select {
				case <-done:
					return
				default:
				}
				g := r.Int64N(n * 3)
				res := s.Translate(tTopic, tPart, g)
				if !res.OK || res.Offset > g || res.Offset < 0 {
					t.Errorf("t(%d) = %+v", g, res)
					return
				}
				if syncs := s.Syncs(tTopic, tPart); syncs[len(syncs)-1].UpstreamOffset != 0 {
					t.Errorf("oldest sync %v, want 0→0", syncs[len(syncs)-1])
					return
				}
			}
		}(w)
	}
	for k := int64(1); k < n; k++ {
		s.Add(sy(k*3, k*3))
	}
	close(done)
	wg.Wait()
}
