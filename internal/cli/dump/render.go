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
)

// sheet describes one dump's rows for every output format. Rows are
// produced on demand by index, already sorted, so nothing per row is
// materialised as strings except on a TTY.
type sheet struct {
	// jsonKey is the name of the rows array in the JSON document
	// ("checkpoints", "offset_syncs", "heartbeats").
	jsonKey string
	// columns are the CSV header names, the same as the JSON field names.
	// TSV (table format off a TTY) has the same columns and no header.
	columns []string
	// titles are the TTY table headers (lower case; output upper-cases them).
	titles []string
	n      int
	// write writes row i's cells in columns order.
	write func(i int, w *rowWriter)
	// tty returns row i's cells in titles order; now is for the age column.
	tty func(i int, now time.Time) []string
	// json returns row i as a json-tagged struct.
	json    func(i int) any
	skipped []Skipped
}

// render writes s to c.IO.Out in the -o format and summarises skipped
// records on stderr:
//   - json: {"schema_version":1,"<jsonKey>":[...],"skipped":[...]}, written
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
	if format == output.FormatTable && c.IO.IsStdoutTTY() {
		now := c.Now()
		t := output.NewTable(s.titles...)
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
			for _, h := range s.columns {
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
// struct{Envelope; <jsonKey> []T; Skipped []Skipped}, one element at a time.
func writeJSONStream(w *bufio.Writer, s *sheet) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("    ", "  ")
	enc.SetEscapeHTML(false)
	array := func(name string, n int, elem func(int) any, last bool) error {
		fmt.Fprintf(w, "  %q: [", name)
		for i := range n {
			buf.Reset()
			if err := enc.Encode(elem(i)); err != nil {
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
	if err := array(s.jsonKey, s.n, s.json, false); err != nil {
		return err
	}
	if err := array("skipped", len(s.skipped), func(i int) any { return s.skipped[i] }, true); err != nil {
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
