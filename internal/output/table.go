package output

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mattn/go-runewidth"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/mirrorctl/mirrorctl/internal/iostreams"
)

// Table is a list of rows of string cells under named columns. Build one with
// NewTable, add rows with AddRow, and write it with Render. Cells are already
// formatted strings (use Time and Count for times and numbers); sort the rows
// before adding them, since Table keeps insertion order.
type Table struct {
	headers []string
	rows    [][]string
}

// NewTable returns an empty table with the given column headers. Give headers
// in lower case ("key", "file:line"): they are printed as given in CSV and
// upper-cased on a TTY.
func NewTable(headers ...string) *Table {
	return &Table{headers: append([]string(nil), headers...)}
}

// AddRow appends one row. A row shorter than the header is padded with empty
// cells; a longer one makes Render fail.
func (t *Table) AddRow(cells ...string) {
	row := append([]string(nil), cells...)
	for len(row) < len(t.headers) {
		row = append(row, "")
	}
	t.rows = append(t.rows, row)
}

// Len returns the number of rows.
func (t *Table) Len() int { return len(t.rows) }

// ErrTableJSON is returned by Table.Render for FormatJSON: JSON output is built
// from typed result structs with WriteJSON, not from table cells.
var ErrTableJSON = errors.New("output: a Table cannot render JSON; use WriteJSON with a typed result")

// Render writes the table to ios.Out in format f:
//   - FormatTable on a TTY: columns aligned with two spaces between them,
//     upper-cased headers (bold when colour is on), and the
//     widest columns truncated with "…" to fit ios.TerminalWidth().
//   - FormatTable off a TTY: one line per row, cells separated by a tab, no
//     header line; tabs and newlines inside cells become spaces.
//   - FormatCSV: RFC 4180 CSV with the headers, as given, as the first record.
//
// FormatJSON returns ErrTableJSON. Write errors are returned wrapped.
func (t *Table) Render(ios *iostreams.IOStreams, f Format) error {
	for i, r := range t.rows {
		if len(r) > len(t.headers) {
			return fmt.Errorf("output: table row %d has %d cells, want %d (%s)", i+1, len(r), len(t.headers), strings.Join(t.headers, ", "))
		}
	}
	switch f {
	case FormatTable, "":
		if ios.IsStdoutTTY() {
			return t.renderAligned(ios)
		}
		return t.renderTSV(ios.Out)
	case FormatCSV:
		return t.renderCSV(ios.Out)
	case FormatJSON:
		return ErrTableJSON
	default:
		return fmt.Errorf("output: unknown format %q", string(f))
	}
}

var lineBreaks = strings.NewReplacer("\t", " ", "\r\n", " ", "\n", " ", "\r", " ")

// oneLine replaces tabs and line breaks with spaces so a cell stays on one
// line and in one field.
func oneLine(s string) string { return lineBreaks.Replace(s) }

// minColumnWidth is the narrowest a column is truncated to on a TTY, in
// terminal cells.
const minColumnWidth = 8

// fitWidths returns each column's width in terminal cells: its widest cell,
// then, while the table (with two-space gaps) is wider than maxWidth, the
// widest column is narrowed one cell at a time, never below minColumnWidth.
func fitWidths(headers []string, rows [][]string, maxWidth int) []int {
	w := make([]int, len(headers))
	for i, h := range headers {
		w[i] = runewidth.StringWidth(h)
	}
	for _, r := range rows {
		for i, c := range r {
			if cw := runewidth.StringWidth(oneLine(c)); cw > w[i] {
				w[i] = cw
			}
		}
	}
	total := 2 * (len(w) - 1)
	for _, x := range w {
		total += x
	}
	for total > maxWidth {
		widest := 0
		for i := range w {
			if w[i] > w[widest] {
				widest = i
			}
		}
		if w[widest] <= minColumnWidth {
			break
		}
		w[widest]--
		total--
	}
	return w
}

// truncate shortens s to width terminal cells, ending in "…" when cut.
func truncate(s string, width int) string {
	if runewidth.StringWidth(s) <= width {
		return s
	}
	return runewidth.Truncate(s, width, "…")
}

func (t *Table) renderTSV(w io.Writer) error {
	clean := lineBreaks
	var b strings.Builder
	for _, r := range t.rows {
		for i, c := range r {
			if i > 0 {
				b.WriteByte('\t')
			}
			b.WriteString(clean.Replace(c))
		}
		b.WriteByte('\n')
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing table: %w", err)
	}
	return nil
}

func (t *Table) renderCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(t.headers); err != nil {
		return fmt.Errorf("writing CSV: %w", err)
	}
	if err := cw.WriteAll(t.rows); err != nil {
		return fmt.Errorf("writing CSV: %w", err)
	}
	return nil
}

// renderAligned is the only code that touches tablewriter (v1 API).
func (t *Table) renderAligned(ios *iostreams.IOStreams) error {
	st := NewStyles(ios)
	upper := make([]string, len(t.headers))
	for i, h := range t.headers {
		upper[i] = strings.ToUpper(h)
	}
	widths := fitWidths(upper, t.rows, ios.TerminalWidth())
	headers := make([]any, len(t.headers))
	for i, h := range upper {
		headers[i] = st.Header(truncate(h, widths[i]))
	}
	cell := tw.CellConfig{
		Formatting: tw.CellFormatting{AutoWrap: tw.WrapNone, AutoFormat: tw.Off},
		Alignment:  tw.CellAlignment{Global: tw.AlignLeft},
		Padding:    tw.CellPadding{Global: tw.Padding{Left: "", Right: "  ", Overwrite: true}},
	}
	var buf bytes.Buffer
	tbl := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{
				Separators: tw.Separators{ShowHeader: tw.Off, ShowFooter: tw.Off, BetweenRows: tw.Off, BetweenColumns: tw.Off},
				Lines:      tw.Lines{ShowTop: tw.Off, ShowBottom: tw.Off, ShowHeaderLine: tw.Off, ShowFooterLine: tw.Off},
			},
		})),
		tablewriter.WithConfig(tablewriter.Config{
			Header: cell,
			Row:    cell,
		}),
	)
	tbl.Header(headers...)
	for _, r := range t.rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = truncate(oneLine(c), widths[i])
		}
		if err := tbl.Append(cells); err != nil {
			return fmt.Errorf("building table: %w", err)
		}
	}
	if err := tbl.Render(); err != nil {
		return fmt.Errorf("rendering table: %w", err)
	}
	// tablewriter pads the last column; drop trailing blanks on each line.
	var out strings.Builder
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		nl := strings.HasSuffix(line, "\n")
		out.WriteString(strings.TrimRight(line, " \n"))
		if nl {
			out.WriteByte('\n')
		}
	}
	if _, err := io.WriteString(ios.Out, out.String()); err != nil {
		return fmt.Errorf("writing table: %w", err)
	}
	return nil
}
