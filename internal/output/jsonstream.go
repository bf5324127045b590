package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// JSONStream writes one JSON document value by value to a buffered writer,
// byte for byte what [WriteJSON] writes for the same value (two-space
// indent, HTML characters not escaped, C1 and bidirectional controls as \u
// escapes, a final newline), without holding the document in memory. It is
// for documents with many rows (a failover plan of 1,000 groups × 10,000
// partitions is 10 million rows, some 7 GB of JSON): WriteJSON builds the
// whole document twice in memory (encoded, then indented) before the first
// byte is written.
//
// The caller writes the document's structure in the order of the result
// struct's fields, honouring its json tags (omitempty included); parts that
// are small or rare can be handed to [JSONStream.Value], which encodes them
// with encoding/json at the current depth. A test comparing with WriteJSON
// on the same value must back every use.
//
// Errors are sticky: after a write fails every method does nothing, and
// [JSONStream.Close] returns the first error.
type JSONStream struct {
	w io.Writer
	// buf holds what is not written yet; it goes to w once it passes
	// flushAt bytes (appending to a slice costs less than bufio's calls
	// per byte: this writer is bound by the bytes it appends).
	buf []byte
	// levels holds, per open object or array, whether it has an element
	// yet (it then needs a comma before the next one).
	levels []bool
	// afterKey is set between Field and the field's value.
	afterKey bool
	enc      bytes.Buffer
	err      error
}

// flushAt is the size past which the buffered document is written out.
const flushAt = 64 << 10

// NewJSONStream returns a JSONStream writing to w in pieces of about 64 KiB.
func NewJSONStream(w io.Writer) *JSONStream {
	return &JSONStream{w: w, buf: make([]byte, 0, flushAt+4<<10)}
}

// flush writes the buffer out when it is full (or, with all, whatever it
// holds).
func (s *JSONStream) flush(all bool) {
	if s.err != nil || (len(s.buf) < flushAt && !all) || len(s.buf) == 0 {
		return
	}
	if _, err := s.w.Write(s.buf); err != nil {
		s.err = fmt.Errorf("writing JSON: %w", err)
	}
	s.buf = s.buf[:0]
}

// indent is the indentation of nesting level 0..len-1 (two spaces a level).
var indent = strings.Repeat("  ", 64)

// newline writes a line break and the indentation of the current depth.
func (s *JSONStream) newline() {
	d := 2 * len(s.levels)
	s.buf = append(s.buf, '\n')
	for d > len(indent) {
		s.buf = append(s.buf, indent...)
		d -= len(indent)
	}
	s.buf = append(s.buf, indent[:d]...)
}

// pre starts a value: after a Field nothing more, else (an array element)
// the comma, line break and indentation.
func (s *JSONStream) pre() {
	if s.afterKey {
		s.afterKey = false
		return
	}
	s.element()
}

func (s *JSONStream) element() {
	if n := len(s.levels); n > 0 {
		if s.levels[n-1] {
			s.buf = append(s.buf, ',')
		}
		s.levels[n-1] = true
		s.newline()
	}
}

// BeginObject starts an object ({).
func (s *JSONStream) BeginObject() { s.open('{') }

// EndObject ends the innermost object (}).
func (s *JSONStream) EndObject() { s.close('}') }

// BeginArray starts an array ([).
func (s *JSONStream) BeginArray() { s.open('[') }

// EndArray ends the innermost array (]).
func (s *JSONStream) EndArray() { s.close(']') }

func (s *JSONStream) open(c byte) {
	if s.err != nil {
		return
	}
	s.pre()
	s.buf = append(s.buf, c)
	s.levels = append(s.levels, false)
}

func (s *JSONStream) close(c byte) {
	if s.err != nil {
		return
	}
	n := len(s.levels)
	had := s.levels[n-1]
	s.levels = s.levels[:n-1]
	if had {
		s.newline()
	}
	s.buf = append(s.buf, c)
	s.flush(false)
}

// Field writes the key of the next field of the innermost object; its
// value follows with one of the value methods.
func (s *JSONStream) Field(name string) {
	if s.err != nil {
		return
	}
	s.element()
	s.writeString(name)
	s.buf = append(s.buf, ':', ' ')
	s.afterKey = true
}

// String writes v as a JSON string, escaped as WriteJSON escapes it.
func (s *JSONStream) String(v string) {
	if s.err != nil {
		return
	}
	s.pre()
	s.writeString(v)
}

// writeString quotes v: printable ASCII other than " and \ as it is, any
// other string through encoding/json and SafeJSON.
func (s *JSONStream) writeString(v string) {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			s.encode(v, "")
			return
		}
	}
	s.buf = append(s.buf, '"')
	s.buf = append(s.buf, v...)
	s.buf = append(s.buf, '"')
}

// Int writes v as a JSON number.
func (s *JSONStream) Int(v int64) {
	if s.err != nil {
		return
	}
	s.pre()
	s.buf = strconv.AppendInt(s.buf, v, 10)
}

// OptInt writes *v, or null when v is nil.
func (s *JSONStream) OptInt(v *int64) {
	if v == nil {
		s.Null()
		return
	}
	s.Int(*v)
}

// Bool writes true or false.
func (s *JSONStream) Bool(v bool) {
	if s.err != nil {
		return
	}
	s.pre()
	s.buf = strconv.AppendBool(s.buf, v)
}

// Null writes null.
func (s *JSONStream) Null() {
	if s.err != nil {
		return
	}
	s.pre()
	s.buf = append(s.buf, "null"...)
}

// Value writes v as encoding/json encodes it, indented at the current
// depth: for the parts of a document that are neither large nor hot.
func (s *JSONStream) Value(v any) {
	if s.err != nil {
		return
	}
	s.pre()
	prefix := indent
	for len(prefix) < 2*len(s.levels) {
		prefix += indent
	}
	s.encode(v, prefix[:2*len(s.levels)])
}

// encode writes v through encoding/json (HTML not escaped, indented with
// prefix unless prefix is "" and v is a string) and SafeJSON.
func (s *JSONStream) encode(v any, prefix string) {
	s.enc.Reset()
	enc := json.NewEncoder(&s.enc)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, "  ")
	if err := enc.Encode(v); err != nil {
		s.err = fmt.Errorf("writing JSON: %w", err)
		return
	}
	b := bytes.TrimSuffix(s.enc.Bytes(), []byte("\n"))
	s.buf = append(s.buf, SafeJSON(b)...)
	s.flush(false)
}

// Close ends the document with a newline, flushes it and returns the first
// error of any write (wrapped as WriteJSON wraps its errors).
func (s *JSONStream) Close() error {
	if s.err != nil {
		return s.err
	}
	s.buf = append(s.buf, '\n')
	s.flush(true)
	return s.err
}

// Time writes t as encoding/json writes a time.Time (RFC 3339 with
// nanoseconds, quoted); a year outside 0..9999, which encoding/json
// refuses, goes through encoding/json and fails as WriteJSON does.
func (s *JSONStream) Time(t time.Time) {
	if s.err != nil {
		return
	}
	if y := t.Year(); y < 0 || y > 9999 {
		s.Value(t)
		return
	}
	s.pre()
	s.buf = append(s.buf, '"')
	s.buf = t.AppendFormat(s.buf, time.RFC3339Nano)
	s.buf = append(s.buf, '"')
}
