package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Head identifies the end of a hash chain: the Seq of its last entry and
// the hex SHA-256 of that entry's line (the value the next entry's Prev
// will hold). Because every line's Prev covers the line before it, a Head
// recorded at some point commits to every entry up to it: keep it outside
// the log (a ticket, a CI artefact, another host) and a later
// CheckHead finds the log cut back or rewritten below it, which no check of
// the file alone can (removing whole entries from the end leaves a valid,
// shorter chain).
type Head struct {
	// Seq is the last entry's sequence number (1-based); 0 for an empty
	// log.
	Seq int64 `json:"seq"`
	// Hash is the hex SHA-256 of the last entry's line, "" for an empty
	// log.
	Hash string `json:"hash"`
}

// String returns "seq:hash", the form ParseHead reads.
func (h Head) String() string { return strconv.FormatInt(h.Seq, 10) + ":" + h.Hash }

// minHeadHash is the shortest hash prefix ParseHead accepts, in hex digits
// (48 bits).
const minHeadHash = 12

// ParseHead reads "seq:hash" as printed by Head.String; hash may be cut to
// a prefix of at least 12 hex digits. Errors name what is wrong.
func ParseHead(s string) (Head, error) {
	seqS, hash, ok := strings.Cut(strings.TrimSpace(s), ":")
	seq, err := strconv.ParseInt(seqS, 10, 64)
	if !ok || err != nil || seq < 1 {
		return Head{}, fmt.Errorf("head %q: want <seq>:<sha256>, seq a positive integer (as `mirrorctl audit verify` prints it)", s)
	}
	hash = strings.ToLower(hash)
	if _, err := hex.DecodeString(hash + strings.Repeat("0", len(hash)%2)); err != nil || len(hash) < minHeadHash || len(hash) > sha256.Size*2 {
		return Head{}, fmt.Errorf("head %q: the hash must be %d to %d hex digits", s, minHeadHash, sha256.Size*2)
	}
	return Head{Seq: seq, Hash: hash}, nil
}

// Head returns the head of the entries Check read: the last entry's Seq and
// line hash. It describes the file as it is; whether the chain below it is
// intact is what Problems say.
func (r *Report) Head() Head {
	if len(r.Entries) == 0 {
		return Head{}
	}
	return Head{Seq: r.Entries[len(r.Entries)-1].Seq, Hash: r.lineHashes[len(r.lineHashes)-1]}
}

// ErrHeadMismatch is wrapped by CheckHead's errors.
var ErrHeadMismatch = errors.New("audit log does not contain the expected head")

// CheckHead reports whether the log Check read still holds want: an entry
// with want.Seq whose line hashes to want.Hash (a prefix is enough).
// Entries appended after want are fine. It returns nil when the head is
// there, else an error wrapping ErrHeadMismatch that says whether entries
// were removed from the end (the log is shorter) or the entry was
// rewritten. It proves nothing about entries after want.Seq.
func (r *Report) CheckHead(want Head) error {
	for i := len(r.Entries) - 1; i >= 0; i-- {
		if r.Entries[i].Seq != want.Seq {
			continue
		}
		if strings.HasPrefix(r.lineHashes[i], want.Hash) {
			return nil
		}
		return fmt.Errorf("%w: entry %d is there but its line hashes to %s, not %s: it or an entry before it was rewritten",
			ErrHeadMismatch, want.Seq, r.lineHashes[i][:minHeadHash], want.Hash)
	}
	last := r.Head()
	if last.Seq < want.Seq {
		n := want.Seq - last.Seq
		removed := fmt.Sprintf("%d entries were", n)
		if n == 1 {
			removed = "1 entry was"
		}
		return fmt.Errorf("%w: the log ends at entry %d, before the expected head %d: %s removed from its end (or it was replaced)",
			ErrHeadMismatch, last.Seq, want.Seq, removed)
	}
	return fmt.Errorf("%w: no entry %d in the log (it ends at %d): entries were removed or renumbered", ErrHeadMismatch, want.Seq, last.Seq)
}

// lineHash is the hex SHA-256 of one line without its newline.
func lineHash(line []byte) string {
	sum := sha256.Sum256(line)
	return hex.EncodeToString(sum[:])
}
