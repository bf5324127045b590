package dump

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// column is one field of a dump's rows, declared once for every output
// format: name is the CSV header and the JSON field name, title the TTY
// header. Exactly one of str, num and millis is set; each returns the cell of
// sorted row i. A millis column (epoch ms) is an RFC 3339 UTC time with
// milliseconds in CSV, TSV and JSON, and two cells on a TTY: the time and its
// age ("time", "age").
type column struct {
	name, title string
	str         func(i int) string
	num         func(i int) int64
	millis      func(i int) int64
}

func strCol(name, title string, f func(int) string) column {
	return column{name: name, title: title, str: f}
}

func numCol(name, title string, f func(int) int64) column {
	return column{name: name, title: title, num: f}
}

// timeCol is a millis column shown as "time" and "age" on a TTY.
func timeCol(name string, f func(int) int64) column {
	return column{name: name, title: "time", millis: f}
}

// sheet is one dump's rows for every output format: n rows, produced on
// demand by index, already sorted, through the columns, so nothing per row
// is materialised as strings except on a TTY.
type sheet struct {
	// jsonKey is the name of the rows array in the JSON document
	// ("checkpoints", "offset_syncs", "heartbeats").
	jsonKey string
	cols    []column
	n       int
	skipped []Skipped
	// internal is the topic read, written as the JSON document's
	// internal_topic (nil: left out).
	internal *replicate.InternalTopic
}

// names are the CSV header and JSON field names, in column order. TSV
// (table format off a TTY) has the same columns and no header.
func (s *sheet) names() []string {
	out := make([]string, len(s.cols))
	for i, c := range s.cols {
		out[i] = c.name
	}
	return out
}

// titles are the TTY table headers (lower case; output upper-cases them).
func (s *sheet) titles() []string {
	var out []string
	for _, c := range s.cols {
		out = append(out, c.title)
		if c.millis != nil {
			out = append(out, "age")
		}
	}
	return out
}

// write writes row i's cells in column order.
func (s *sheet) write(i int, w *rowWriter) {
	for _, c := range s.cols {
		switch {
		case c.str != nil:
			w.str(c.str(i))
		case c.num != nil:
			w.int(c.num(i))
		default:
			w.millis(c.millis(i))
		}
	}
}

// tty returns row i's cells in titles order; now is for the age cells.
func (s *sheet) tty(i int, now time.Time) []string {
	var out []string
	for _, c := range s.cols {
		switch {
		case c.str != nil:
			out = append(out, c.str(i))
		case c.num != nil:
			out = append(out, itoa(c.num(i)))
		default:
			at, age := ttyTime(c.millis(i), now)
			out = append(out, at, age)
		}
	}
	return out
}

// writeJSON appends row i as the JSON object encoding/json writes for a
// struct with these fields in this order, indented as an element of the
// rows array (prefix "    ", indent "  "). Strings go through enc, which
// has HTML escaping off, so their escaping is encoding/json's.
func (s *sheet) writeJSON(i int, out *bytes.Buffer, enc *json.Encoder, scratch *bytes.Buffer) error {
	out.WriteString("{\n")
	for k, c := range s.cols {
		out.WriteString("      ")
		out.WriteString(strconv.Quote(c.name)) // names are plain ASCII
		out.WriteString(": ")
		switch {
		case c.num != nil:
			out.Write(strconv.AppendInt(out.AvailableBuffer(), c.num(i), 10))
		case c.millis != nil:
			out.WriteByte('"') // RFC 3339 is plain ASCII: nothing to escape
			out.Write(time.UnixMilli(c.millis(i)).UTC().AppendFormat(out.AvailableBuffer(), timeLayout))
			out.WriteByte('"')
		default:
			v := c.str(i)
			if plainJSON(v) {
				out.WriteByte('"')
				out.WriteString(v)
				out.WriteByte('"')
				break
			}
			scratch.Reset()
			if err := enc.Encode(v); err != nil {
				return err
			}
			out.Write(bytes.TrimSuffix(scratch.Bytes(), []byte("\n")))
		}
		if k < len(s.cols)-1 {
			out.WriteByte(',')
		}
		out.WriteByte('\n')
	}
	out.WriteString("    }")
	return nil
}

// plainJSON reports whether encoding/json (HTML escaping off) writes s as
// is between quotes: printable ASCII without '"' or '\\'.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 || b >= 0x7f || b == '"' || b == '\\' {
			return false
		}
	}
	return true
}

// render writes s to c.IO.Out in the -o format and summarises skipped
// records on stderr:
//   - json: {"schema_version":1,"internal_topic":{...},"<jsonKey>":[...],"skipped":[...]}, written
//     element by element, byte-identical to output.WriteJSON of the whole
//     document;
//   - csv: RFC 4180 with a header of the JSON field names;
//   - table off a TTY: the CSV columns tab-separated, no header; tsv: the
//     same under a header row;
//   - every text cell goes through output.Escape (output.EscapeCSV for
//     CSV), since group names and metadata come from records anyone with
//     WRITE on the internal topic can produce;
//   - table on a TTY: output.Table with an age column relative to c.Now().
func render(c *Common, s *sheet) error {
	err := renderOut(c, s)
	printSkipped(c.IO, s.skipped)
	return err
}

func renderOut(c *Common, s *sheet) error {
	format := c.Output()
	if format == output.FormatTable && (c.IO.IsStdoutTTY() || c.IO.WideTables()) {
		now := c.Now()
		t := output.NewTable(s.titles()...)
		for i := range s.n {
			t.AddRow(s.tty(i, now)...)
		}
		return t.Render(c.IO, format)
	}
	bw := bufio.NewWriterSize(c.IO.Out, 64<<10)
	var err error
	switch format {
	case output.FormatJSON:
		err = writeJSONStream(bw, s)
	case output.FormatCSV, output.FormatTable, output.FormatTSV:
		w := &rowWriter{w: bw, csv: format == output.FormatCSV}
		if format != output.FormatTable {
			for _, h := range s.names() {
				w.str(h)
			}
			w.end()
		}
		for i := range s.n {
			s.write(i, w)
			w.end()
		}
	default:
		return fmt.Errorf("output: unknown format %q", string(format))
	}
	if ferr := bw.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("writing %s: %w", format, ferr)
	}
	return err
}

// writeJSONStream writes s as output.WriteJSON would write
// struct{Envelope; <jsonKey> []T; Skipped []Skipped}, one element at a time,
// T being a struct with one field per column.
func writeJSONStream(w *bufio.Writer, s *sheet) error {
	var buf, scratch bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("    ", "  ")
	enc.SetEscapeHTML(false)
	senc := json.NewEncoder(&scratch)
	senc.SetEscapeHTML(false)
	array := func(name string, n int, elem func(int) error, last bool) error {
		fmt.Fprintf(w, "  %q: [", name)
		for i := range n {
			buf.Reset()
			if err := elem(i); err != nil {
				return fmt.Errorf("writing JSON: %s[%d]: %w", name, i, err)
			}
			if i > 0 {
				w.WriteByte(',')
			}
			w.WriteString("\n    ")
			w.Write(output.SafeJSON(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))))
		}
		if n > 0 {
			w.WriteString("\n  ")
		}
		w.WriteByte(']')
		if !last {
			w.WriteByte(',')
		}
		w.WriteByte('\n')
		return nil
	}
	fmt.Fprintf(w, "{\n  \"schema_version\": %d,\n", output.SchemaVersion)
	if s.internal != nil {
		buf.Reset()
		ienc := json.NewEncoder(&buf)
		ienc.SetIndent("  ", "  ")
		ienc.SetEscapeHTML(false)
		if err := ienc.Encode(s.internal); err != nil {
			return fmt.Errorf("writing JSON: internal_topic: %w", err)
		}
		w.WriteString("  \"internal_topic\": ")
		w.Write(output.SafeJSON(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))))
		w.WriteString(",\n")
	}
	if err := array(s.jsonKey, s.n, func(i int) error { return s.writeJSON(i, &buf, senc, &scratch) }, false); err != nil {
		return err
	}
	if err := array("skipped", len(s.skipped), func(i int) error { return enc.Encode(s.skipped[i]) }, true); err != nil {
		return err
	}
	_, err := w.WriteString("}\n")
	return err
}

// rowWriter writes one row of TSV or CSV cells without per-cell allocation.
// Write errors stick in the bufio.Writer and surface at Flush.
type rowWriter struct {
	w   *bufio.Writer
	csv bool
	col int
	num []byte
}

func (r *rowWriter) sep() {
	if r.col > 0 {
		if r.csv {
			r.w.WriteByte(',')
		} else {
			r.w.WriteByte('\t')
		}
	}
	r.col++
}

func (r *rowWriter) str(s string) {
	r.sep()
	if r.csv {
		s = output.EscapeCSV(s)
	} else {
		s = output.Escape(s)
	}
	switch {
	case !r.csv:
		r.w.WriteString(s)
	case csvNeedsQuotes(s):
		r.w.WriteByte('"')
		r.w.WriteString(strings.ReplaceAll(s, `"`, `""`))
		r.w.WriteByte('"')
	default:
		r.w.WriteString(s)
	}
}

// csvNeedsQuotes follows encoding/csv's rule: quote empty-looking or
// special fields (separator, quote, line breaks, a leading space, `\.`).
func csvNeedsQuotes(s string) bool {
	if s == "" {
		return false
	}
	if s == `\.` || s[0] == ' ' || s[0] == '\t' {
		return true
	}
	return strings.ContainsAny(s, ",\"\r\n")
}

func (r *rowWriter) int(n int64) {
	r.sep()
	r.num = strconv.AppendInt(r.num[:0], n, 10)
	r.w.Write(r.num)
}

func (r *rowWriter) millis(ms int64) {
	r.sep()
	r.num = time.UnixMilli(ms).UTC().AppendFormat(r.num[:0], timeLayout)
	r.w.Write(r.num)
}

func (r *rowWriter) end() {
	r.w.WriteByte('\n')
	r.col = 0
}

// ttyTime returns the time and age cells for a TTY row.
func ttyTime(ms int64, now time.Time) (string, string) {
	t := time.UnixMilli(ms)
	return t.UTC().Format(time.RFC3339), output.Relative(t, now)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
