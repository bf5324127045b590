package replicate

import "testing"

func TestSyncStateEmission(t *testing.T) {
	type step struct {
		up, down int64
		want     bool
	}
	tests := []struct {
		name   string
		lagMax int64
		steps  []step
	}{
		{"first record syncs", 100, []step{{0, 0, true}, {1, 1, false}}},
		{"lag max 0 syncs every record", 0, []step{{0, 0, true}, {1, 1, true}, {2, 2, true}}},
		{"stale after lag max", 3, []step{{0, 10, true}, {1, 11, false}, {2, 12, false}, {3, 13, false}, {4, 14, true}, {5, 15, false}}},
		{"upstream gap (txn marker)", 100, []step{{0, 0, true}, {1, 1, false}, {3, 2, true}, {4, 3, false}}},
		{"downstream truncation", 100, []step{{0, 50, true}, {1, 51, false}, {2, 5, true}}},
		{"upstream rewind", 100, []step{{10, 10, true}, {11, 11, false}, {5, 12, true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSyncState()
			for i, st := range tt.steps {
				sync, got := s.update("orders", 3, st.up, st.down, tt.lagMax)
				if got != st.want {
					t.Fatalf("step %d (%d->%d): immediate = %v, want %v", i, st.up, st.down, got, st.want)
				}
				if sync.Topic != "orders" || sync.Partition != 3 || sync.UpstreamOffset != st.up || sync.DownstreamOffset != st.down {
					t.Fatalf("step %d: sync = %+v", i, sync)
				}
			}
		})
	}
}

// With contiguous offsets and offset.lag.max=100, syncs fall at 0, 101, 202,
// 303 (docs/mm2-formats.md §5), plus the delayed one for the last record on flush.
func TestSyncStateSpacingAndFlush(t *testing.T) {
	s := newSyncState()
	var immediate []int64
	for o := int64(0); o < 350; o++ {
		if _, now := s.update("t", 0, o, o, 100); now {
			immediate = append(immediate, o)
		}
	}
	want := []int64{0, 101, 202, 303}
	if len(immediate) != len(want) {
		t.Fatalf("immediate syncs at %v, want %v", immediate, want)
	}
	for i := range want {
		if immediate[i] != want[i] {
			t.Fatalf("immediate syncs at %v, want %v", immediate, want)
		}
	}
	sync, ok := s.flush("t", 0)
	if !ok || sync.Topic != "t" || sync.Partition != 0 || sync.UpstreamOffset != 349 || sync.DownstreamOffset != 349 {
		t.Fatalf("flush = %+v, %v; want 349->349", sync, ok)
	}
	if _, ok := s.flush("t", 0); ok {
		t.Fatal("second flush returned a sync")
	}
	// The flush does not move the staleness baseline (303): 404 is the next
	// immediate sync, as without the flush.
	for o := int64(350); o < 404; o++ {
		if _, now := s.update("t", 0, o, o, 100); now {
			t.Fatalf("record %d was immediate; the next immediate sync is 404", o)
		}
	}
	if _, now := s.update("t", 0, 404, 404, 100); !now {
		t.Fatal("record 404 was not immediate")
	}
}
