package replicate

import (
	"testing"
	"time"
)

// SetPositionInterval makes the flows started by t probe their clusters and
// report positions every d instead of every 5 s, until t ends.
func SetPositionInterval(t testing.TB, d time.Duration) {
	positionEvery.Store(int64(d))
	t.Cleanup(func() { positionEvery.Store(0) })
}
