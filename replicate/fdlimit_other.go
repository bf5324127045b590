//go:build !linux

package replicate

// openFilesFree cannot tell outside Linux (ok false).
func openFilesFree() (free int, limit uint64, ok bool) { return 0, 0, false }
