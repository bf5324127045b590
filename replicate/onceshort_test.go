package replicate

import "testing"

// TestOnceShortOnlyAtStart checks which partitions a once run takes for
// remote partitions that lost mirrored records: only those whose remote end
// listed at the run's start is below the downstream position recorded
// before it. A partition another member copies further during the run (its
// progress later ahead of the remote end listed at the start) is not one:
// taking it for a loss left a --once process waiting for ever for a
// partition it did not own, beside a second process sharing the flow.
func TestOnceShortOnlyAtStart(t *testing.T) {
	var s taskSet
	a, b, c, d := tp{"t", 0}, tp{"t", 1}, tp{"t", 2}, tp{"t", 3}
	s.setOnceEnds(map[tp]int64{a: 500, b: 500, c: 500, d: 500},
		map[tp]int64{a: 100, b: 50, c: 0, d: 40}, // remote ends listed at the start
		map[tp]int64{a: 100, b: 80, d: 10})       // downstream positions before it
	for _, tt := range []struct {
		key  tp
		want bool
	}{
		{a, false}, // copied up to the remote end: whatever the progress says later
		{b, true},  // the remote partition ended below its recorded position
		{c, false}, // no progress at the start: nothing was lost
		{d, false}, // ahead of its progress (another member copying)
	} {
		if got := s.remoteShort(tt.key); got != tt.want {
			t.Errorf("%v: short %v, want %v", tt.key, got, tt.want)
		}
	}
}
