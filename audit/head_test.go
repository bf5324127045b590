package audit

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
)

// TestHeadDetectsTailTruncation removes whole entries from the end of a
// log: Verify still finds a valid chain (that is what a chain alone cannot
// see), and CheckHead with the head recorded before finds the cut.
func TestHeadDetectsTailTruncation(t *testing.T) {
	l, path := openAt(t)
	writeOp(t, l, "failover apply")
	writeOp(t, l, "failover apply")
	r, err := Check(path)
	if err != nil || !r.Intact() {
		t.Fatalf("fresh log: %v %v", err, r.Problems)
	}
	head := r.Head()
	if head.Seq != 6 || len(head.Hash) != 64 {
		t.Fatalf("head = %+v, want seq 6 and a SHA-256", head)
	}
	parsed, err := ParseHead(head.String()[:2+16]) // "6:" and 16 hex digits
	if err != nil || parsed.Seq != 6 {
		t.Fatalf("ParseHead(prefix) = %+v, %v", parsed, err)
	}
	if err := r.CheckHead(parsed); err != nil {
		t.Fatalf("intact log fails its own head: %v", err)
	}

	// The log grows: an older head is still held.
	writeOp(t, l, "failback apply")
	if r, _ = Check(path); r.CheckHead(head) != nil {
		t.Fatalf("appending broke the old head: %v", r.CheckHead(head))
	}

	// Cut the last operation (3 lines): the chain is valid, the head is not.
	b, _ := os.ReadFile(path)
	lines := bytes.SplitAfter(b, []byte("\n"))
	if err := os.WriteFile(path, bytes.Join(lines[:len(lines)-1-3-3], nil), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err = Check(path)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Intact() {
		t.Fatalf("a log cut at an entry boundary should still chain: %v", r.Problems)
	}
	err = r.CheckHead(head)
	if !errors.Is(err, ErrHeadMismatch) || !strings.Contains(err.Error(), "removed from its end") {
		t.Fatalf("CheckHead after truncation = %v, want removed-from-end", err)
	}

	// Rewrite the whole chain after an edit: same length, other hash.
	if err := r.CheckHead(Head{Seq: 3, Hash: strings.Repeat("0", 16)}); !errors.Is(err, ErrHeadMismatch) || !strings.Contains(err.Error(), "rewritten") {
		t.Fatalf("CheckHead with another hash = %v", err)
	}
}

func TestParseHead(t *testing.T) {
	for _, bad := range []string{"", "6", "x:abcdefabcdef", "0:abcdefabcdef", "6:abc", "6:zzzzzzzzzzzz", "6:" + strings.Repeat("a", 65)} {
		if _, err := ParseHead(bad); err == nil {
			t.Errorf("ParseHead(%q) accepted", bad)
		}
	}
	h, err := ParseHead(" 12:ABCDEF0123456 ")
	if err != nil || h.Seq != 12 || h.Hash != "abcdef0123456" {
		t.Fatalf("ParseHead = %+v, %v", h, err)
	}
}
