package audit

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// Problem is one defect Verify found in the audit file.
type Problem struct {
	// Line is the 1-based line number in the file.
	Line int `json:"line"`
	// Seq is the entry's Seq as written on that line, 0 when the line is
	// not an entry.
	Seq int64 `json:"seq"`
	// Msg says what is wrong, e.g. "prev does not match line 3".
	Msg string `json:"problem"`
}

// String returns "line N: msg".
func (p Problem) String() string { return fmt.Sprintf("line %d: %s", p.Line, p.Msg) }

// Report is the result of Check.
type Report struct {
	// Lines is the number of lines in the file (a torn last line counts).
	Lines int
	// Entries are the lines that parse as entries, in file order.
	Entries []Entry
	// Problems are the defects found, in line order; none means intact.
	Problems []Problem
	// Unfinished are the begin entries without an end entry for the same
	// Op: a command still running, one killed (kill -9, power loss), or
	// the end of the file removed.
	Unfinished []Entry

	lineHashes []string // hex SHA-256 of each entry's line, parallel to Entries
}

// Intact reports whether no problem was found.
func (r *Report) Intact() bool { return len(r.Problems) == 0 }

// Read returns the entries of the audit file at path in file order. Lines
// that are not entries (garbage, a torn last line) are skipped and reported
// in the returned error, one "path:line: ..." per line joined with
// errors.Join, alongside the entries that could be read. It does not check
// the chain; use Verify for that. A missing file is an error wrapping
// fs.ErrNotExist.
func Read(path string) ([]Entry, error) {
	r, err := Check(path)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, p := range r.Problems {
		if p.Seq == 0 {
			errs = append(errs, fmt.Errorf("%s:%d: %s", path, p.Line, p.Msg))
		}
	}
	return r.Entries, errors.Join(errs...)
}

// Verify checks the audit file at path and returns its problems; none means
// the chain is intact. It finds modified entries (Hash, and the next line's
// Prev), removed, inserted and reordered entries (Seq and Prev), garbage
// lines and a truncated last line. Whole entries removed from the end leave
// a valid shorter chain: only a Head kept elsewhere finds that (see
// Report.CheckHead). The error is for I/O only (a missing file wraps
// fs.ErrNotExist).
func Verify(path string) ([]Problem, error) {
	r, err := Check(path)
	if err != nil {
		return nil, err
	}
	return r.Problems, nil
}

// Check reads and verifies the audit file at path (see Verify) and returns
// the full Report.
func Check(path string) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	r := &Report{}
	br := bufio.NewReaderSize(f, 64<<10)
	var prevLine []byte
	begun := map[string]int{} // op -> index in r.Entries of its begin
	ended := map[string]bool{}
	// expectSeq is the Seq the next line should carry: 1 on line 1, then
	// the last entry's Seq plus the lines since (garbage lines count), so
	// a gap is reported once, where it is, not on every later line.
	expectSeq := int64(1)
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadBytes('\n')
		if len(line) == 0 && errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("audit log %s:%d: %w", path, lineNo, err)
		}
		r.Lines = lineNo
		torn := !bytes.HasSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\n"))
		problem := func(seq int64, format string, args ...any) {
			r.Problems = append(r.Problems, Problem{Line: lineNo, Seq: seq, Msg: fmt.Sprintf(format, args...)})
		}
		e, perr := parseLine(line)
		switch {
		case perr != nil && torn:
			problem(0, "last line is incomplete (no newline): the file was truncated or a write was cut off")
		case perr != nil:
			problem(0, "not an audit entry: %v", perr)
		default:
			if torn {
				problem(e.Seq, "last line has no newline: the file was truncated or a write was cut off")
			}
			checkEntry(r, e, line, prevLine, lineNo, &expectSeq, problem, begun, ended)
			r.Entries = append(r.Entries, e)
			r.lineHashes = append(r.lineHashes, lineHash(line))
		}
		if perr != nil {
			expectSeq++
		}
		prevLine = append(prevLine[:0], line...)
		if torn {
			break
		}
	}
	for op, i := range begun {
		if !ended[op] {
			r.Unfinished = append(r.Unfinished, r.Entries[i])
		}
	}
	slices.SortFunc(r.Unfinished, func(a, b Entry) int { return cmp.Compare(a.Seq, b.Seq) })
	return r, nil
}

// checkEntry checks one parsed entry against its line number, its own line
// and the previous line, advances *expectSeq, and tracks begin/end pairs.
func checkEntry(r *Report, e Entry, line, prevLine []byte, lineNo int, expectSeq *int64, problem func(int64, string, ...any), begun map[string]int, ended map[string]bool) {
	if e.Seq != *expectSeq {
		problem(e.Seq, "seq %d, want %d: entries before it were removed, inserted or moved", e.Seq, *expectSeq)
	}
	*expectSeq = e.Seq + 1
	want := ""
	if lineNo > 1 {
		sum := sha256.Sum256(prevLine)
		want = hex.EncodeToString(sum[:])
	}
	if e.Prev != want {
		if lineNo == 1 {
			problem(e.Seq, "prev is set on the first line: entries before it were removed")
		} else {
			problem(e.Seq, "prev does not match line %d: that line was modified, or entries were removed, inserted or reordered", lineNo-1)
		}
	}
	if !hashOK(line, e.Hash) {
		problem(e.Seq, "hash does not match the line: this entry was modified")
	}
	switch e.Kind {
	case KindBegin:
		if _, dup := begun[e.Op]; dup {
			problem(e.Seq, "second begin for operation %s", e.Op)
		} else {
			begun[e.Op] = len(r.Entries)
		}
	case KindEnd:
		if _, ok := begun[e.Op]; !ok {
			problem(e.Seq, "end of operation %s has no begin before it", e.Op)
		} else if ended[e.Op] {
			problem(e.Seq, "second end for operation %s", e.Op)
		}
		ended[e.Op] = true
	case KindNote:
		if _, ok := begun[e.Op]; !ok {
			problem(e.Seq, "note of operation %s has no begin before it", e.Op)
		}
	default:
		problem(e.Seq, "unknown kind %q", e.Kind)
	}
}

// parseLine decodes one line (without "\n") into an Entry, rejecting
// unknown fields and trailing data.
func parseLine(line []byte) (Entry, error) {
	var e Entry
	if len(bytes.TrimSpace(line)) == 0 {
		return e, errors.New("empty line")
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return e, err
	}
	if dec.More() {
		return e, errors.New("data after the entry")
	}
	return e, nil
}

// hashOK reports whether line ends in `"hash":"<h>"}` with h the SHA-256 of
// line with h removed.
func hashOK(line []byte, h string) bool {
	if len(h) != sha256.Size*2 || !bytes.HasSuffix(line, []byte(`"hash":"`+h+`"}`)) {
		return false
	}
	blank := make([]byte, 0, len(line)-len(h))
	blank = append(blank, line[:len(line)-len(h)-2]...)
	blank = append(blank, `"}`...)
	sum := sha256.Sum256(blank)
	return hex.EncodeToString(sum[:]) == h
}
