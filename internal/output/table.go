package output

import (
	"bufio"
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
//
// Each column has a Kind that decides what gives way when a TTY is too
// narrow (see Render): by default it follows the header name (KindOf), and
// SetKind overrides it. Cells of columns with a Tone function are coloured on
// a colour TTY.
type Table struct {
	headers []string
	rows    [][]string
	kinds   []ColumnKind
	tones   []func(cell string) Tone
}

// ColumnKind says how a column behaves when the table is wider than the
// terminal.
type ColumnKind int

const (
	// KindAuto is the default: KindOf(header), and a column whose every
	// cell is a number is never cut.
	KindAuto ColumnKind = iota
	// KindIdentity columns (flow, group, topic, partition, cluster, ...)
	// name the row: they are never cut or wrapped.
	KindIdentity
	// KindText columns hold free text (reason, error, problem): they wrap
	// onto more lines first, down to a floor of 16 cells.
	KindText
	// KindValue columns are cut with "…" (down to 12 cells) once text
	// columns are at their floor.
	KindValue
)

var (
	identityHeaders = map[string]bool{
		"flow": true, "group": true, "topic": true, "source topic": true, "remote topic": true,
		"target topic": true, "partition": true, "cluster": true, "source": true, "target": true,
		"principal": true, "resource": true, "key": true, "scope": true, "seq": true, "line": true,
		"file:line": true, "name": true,
	}
	textHeaders = map[string]bool{
		"reason": true, "error": true, "problem": true, "message": true, "detail": true,
		"command": true, "stopped": true, "metadata": true, "outcome": true,
		"via": true, "note": true,
	}
)

// KindOf returns the kind a column gets from its header (case-insensitive):
// KindIdentity for flow, group, topic, source topic, remote topic, target
// topic, partition, cluster, source, target, principal, resource, key,
// scope, seq, line, file:line and name; KindText for reason, error, problem,
// message, detail, command, stopped, metadata, outcome, via and note;
// KindValue otherwise.
func KindOf(header string) ColumnKind {
	h := strings.ToLower(strings.TrimSpace(header))
	switch {
	case identityHeaders[h]:
		return KindIdentity
	case textHeaders[h]:
		return KindText
	default:
		return KindValue
	}
}

// NewTable returns an empty table with the given column headers. Give headers
// in lower case ("key", "file:line"): they are upper-cased on a TTY and
// written in snake_case (SnakeHeader) in CSV and TSV.
func NewTable(headers ...string) *Table {
	t := &Table{headers: append([]string(nil), headers...)}
	t.kinds = make([]ColumnKind, len(headers))
	t.tones = make([]func(string) Tone, len(headers))
	for i, h := range headers {
		if f := defaultTone(h); f != nil {
			t.tones[i] = f
		}
	}
	return t
}

// SetKind sets the kind of the column named header; an unknown header is
// ignored.
func (t *Table) SetKind(header string, k ColumnKind) {
	if i := t.col(header); i >= 0 {
		t.kinds[i] = k
	}
}

// SetTone colours the cells of the column named header on a colour TTY with
// the Tone fn returns for each cell (ToneNone leaves it plain). Columns
// named action, status, outcome, result, match and verified get StatusTone
// by default, and error columns ToneError; pass nil to turn that off.
func (t *Table) SetTone(header string, fn func(cell string) Tone) {
	if i := t.col(header); i >= 0 {
		t.tones[i] = fn
	}
}

func (t *Table) col(header string) int {
	for i, h := range t.headers {
		if h == header {
			return i
		}
	}
	return -1
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

// Render writes the table to ios.Out in format f. Every cell goes through
// Escape first.
//   - FormatTable on a TTY, or with ios.WideTables() (--wide) anywhere:
//     columns aligned with two spaces between them and upper-cased headers
//     (bold when colour is on). Unless wide, a table wider than
//     ios.TerminalWidth() is narrowed in this order: text columns (reason,
//     error, ...) wrap onto more lines down to 16 cells; then multi-word
//     headers wider than their cells break at spaces onto more lines
//     ("SOURCE OFFSET" over "8"); if that is not enough text columns leave
//     the grid and each non-empty text cell is printed
//     under its row ("  reason: ...", wrapped to the terminal); then value
//     columns are cut with "…" down to 12 cells; identity columns (flow, group,
//     topic, partition, ...), number columns and header words are never cut.
//     A grid still wider than the terminal gives up its identity columns
//     that hold one value in every row (two rows or more): each is printed
//     once above the table ("flow: us-east->eu-west") and the rest is laid
//     out again; what still does not fit is printed wider than the terminal.
//   - FormatTable off a TTY: one line per row, cells separated by a tab, no
//     header line.
//   - FormatTSV: the same with a header row of SnakeHeader names.
//   - FormatCSV: RFC 4180 CSV with a header row of SnakeHeader names.
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
		if ios.IsStdoutTTY() || ios.WideTables() {
			return t.renderAligned(ios)
		}
		return t.renderTSV(ios.Out, false)
	case FormatTSV:
		return t.renderTSV(ios.Out, true)
	case FormatCSV:
		return t.renderCSV(ios.Out)
	case FormatJSON:
		return ErrTableJSON
	default:
		return fmt.Errorf("output: unknown format %q", string(f))
	}
}

// SnakeHeader returns the CSV/TSV name of a column header: lower case, with
// spaces, '-' and ':' as '_' ("records behind" → "records_behind",
// "file:line" → "file_line").
func SnakeHeader(h string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case ' ', '-', ':':
			return '_'
		}
		return r
	}, strings.ToLower(strings.TrimSpace(h)))
}

// renderTSV writes the rows through a 64 KiB buffer, not as one string:
// a failover plan of 1,000 groups x 10,000 partitions is 10 million lines.
func (t *Table) renderTSV(w io.Writer, header bool) error {
	b := bufio.NewWriterSize(w, 64<<10)
	line := func(cells []string) {
		for i, c := range cells {
			if i > 0 {
				b.WriteByte('\t')
			}
			b.WriteString(Escape(c))
		}
		b.WriteByte('\n')
	}
	if header {
		hs := make([]string, len(t.headers))
		for i, h := range t.headers {
			hs[i] = SnakeHeader(h)
		}
		line(hs)
	}
	for _, r := range t.rows {
		line(r)
	}
	if err := b.Flush(); err != nil {
		return fmt.Errorf("writing table: %w", err)
	}
	return nil
}

func (t *Table) renderCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	hs := make([]string, len(t.headers))
	for i, h := range t.headers {
		hs[i] = SnakeHeader(h)
	}
	if err := cw.Write(hs); err != nil {
		return fmt.Errorf("writing CSV: %w", err)
	}
	for _, r := range t.rows {
		rec := make([]string, len(r))
		for i, c := range r {
			rec[i] = EscapeCSV(c)
		}
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("writing CSV: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("writing CSV: %w", err)
	}
	return nil
}

// Floors of the columns that give way, in terminal cells.
const (
	textFloor  = 16
	valueFloor = 12
)

// layout returns each column's width in terminal cells for cells (escaped,
// one line each) under headers (upper-cased), fitted to maxWidth as Render
// describes (maxWidth <= 0 means no limit), the kind each column ended up
// with, and which text columns are detached: printed under their row
// instead of in the grid, because even wrapped to their floor the grid
// would not fit.
func layout(headers []string, rows [][]string, kinds []ColumnKind, maxWidth int) (w []int, kind []ColumnKind, detached []bool) {
	n := len(headers)
	w = make([]int, n)
	floor := make([]int, n)
	detached = make([]bool, n)
	for i, h := range headers {
		w[i] = runewidth.StringWidth(h)
	}
	numeric := make([]bool, n)
	content := make([]int, n) // widest cell, header excluded
	for i := range numeric {
		numeric[i] = true
	}
	for _, r := range rows {
		for i, c := range r {
			if cw := runewidth.StringWidth(c); cw > w[i] {
				w[i] = cw
			}
			if cw := runewidth.StringWidth(c); cw > content[i] {
				content[i] = cw
			}
			if c != "" && !isNumber(c) {
				numeric[i] = false
			}
		}
	}
	kind = make([]ColumnKind, n)
	for i := range kind {
		kind[i] = kinds[i]
		if kind[i] == KindAuto {
			kind[i] = KindOf(headers[i])
			if kind[i] == KindValue && numeric[i] && len(rows) > 0 {
				kind[i] = KindIdentity
			}
		}
		hw := runewidth.StringWidth(headers[i])
		switch kind[i] {
		case KindText:
			floor[i] = max(hw, textFloor)
		case KindValue:
			floor[i] = max(hw, valueFloor)
		default:
			floor[i] = w[i]
		}
	}
	total := 2 * (n - 1)
	for _, x := range w {
		total += x
	}
	if maxWidth <= 0 || total <= maxWidth {
		return w, kind, detached
	}
	shrink := func(k ColumnKind) {
		for total > maxWidth {
			widest := -1
			for i := range w {
				if kind[i] == k && !detached[i] && w[i] > floor[i] && (widest < 0 || w[i] > w[widest]) {
					widest = i
				}
			}
			if widest < 0 {
				return
			}
			w[widest]--
			total--
		}
	}
	shrink(KindText)
	if total > maxWidth {
		// Multi-word headers wider than their cells ("SOURCE OFFSET" over
		// "8") break onto a second line, down to their longest word.
		for i := range w {
			if total <= maxWidth {
				break
			}
			hw := runewidth.StringWidth(headers[i])
			if w[i] != hw || !strings.Contains(headers[i], " ") {
				continue
			}
			to := max(content[i], longestWord(headers[i]))
			if kind[i] == KindText {
				to = max(to, floor[i])
			}
			if to < w[i] {
				total -= w[i] - to
				w[i] = to
				if kind[i] != KindText {
					floor[i] = min(floor[i], to)
				}
			}
		}
	}
	if total > maxWidth {
		// Text at its floor is not enough: the text columns leave the
		// grid, so the rest keeps one line per row.
		for i := range w {
			if kind[i] == KindText && n > 1 {
				detached[i] = true
				total -= w[i] + 2
			}
		}
	}
	shrink(KindValue)
	return w, kind, detached
}

// longestWord returns the width of the widest space-separated word of s.
func longestWord(s string) int {
	m := 0
	for _, f := range strings.Fields(s) {
		m = max(m, runewidth.StringWidth(f))
	}
	return m
}

// isNumber reports whether a cell is a number as tables print them: digits
// with optional sign, thousands commas and decimal point ("-1", "1,234",
// "0.5").
func isNumber(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '-' || s[0] == '+' {
		s = s[1:]
	}
	digits := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits = true
		case c == ',' || c == '.':
		default:
			return false
		}
	}
	return digits
}

// truncate shortens s to width terminal cells, ending in "…" when cut.
func truncate(s string, width int) string {
	if runewidth.StringWidth(s) <= width {
		return s
	}
	return runewidth.Truncate(s, width, "…")
}

// wrap breaks s into lines of at most width terminal cells, at spaces where
// it can and inside a word where it must.
func wrap(s string, width int) []string {
	if width <= 0 || runewidth.StringWidth(s) <= width {
		return []string{s}
	}
	var lines []string
	var cur strings.Builder
	curW := 0
	flush := func() {
		lines = append(lines, strings.TrimRight(cur.String(), " "))
		cur.Reset()
		curW = 0
	}
	for _, word := range strings.Split(s, " ") {
		ww := runewidth.StringWidth(word)
		if curW > 0 && curW+1+ww > width {
			flush()
		}
		if curW > 0 {
			cur.WriteByte(' ')
			curW++
		}
		for ww > width-curW {
			// hard-break a word longer than what is left of the line
			head := runewidth.Truncate(word, width-curW, "")
			if head == "" {
				flush()
				continue
			}
			cur.WriteString(head)
			flush()
			word = word[len(head):]
			ww = runewidth.StringWidth(word)
		}
		cur.WriteString(word)
		curW += ww
	}
	if cur.Len() > 0 || len(lines) == 0 {
		flush()
	}
	return lines
}

// renderAligned is the only code that touches tablewriter (v1 API).
// gridWidth is the width in cells of the grid laid out as widths, with the
// detached columns left out and two cells between columns.
func gridWidth(widths []int, detached []bool) int {
	total, n := 0, 0
	for i, w := range widths {
		if !detached[i] {
			total += w
			n++
		}
	}
	return total + 2*max(n-1, 0)
}

// toned is cell c of column i in that column's tone.
func (t *Table) toned(st Styles, i int, c string) string {
	if fn := t.tones[i]; fn != nil {
		return st.Tone(fn(c), c)
	}
	return c
}

// hoistedTable is a table with its one-value columns taken out: hoist
// lists their indexes in the original table, t is the rest.
type hoistedTable struct {
	hoist []int
	t     *Table
}

// hoisted returns t without the identity columns (by kind or header, not
// numbers) whose cells (escaped: cells) are the same non-empty value in
// every row, when there are at least two rows, at least one such column
// and at least one other column; ok is false otherwise.
func (t *Table) hoisted(cells [][]string) (hoistedTable, bool) {
	if len(cells) < 2 {
		return hoistedTable{}, false
	}
	var out hoistedTable
	keep := []int{}
	for i := range t.headers {
		k := t.kinds[i]
		if k == KindAuto {
			k = KindOf(t.headers[i])
		}
		same := k == KindIdentity && i < len(cells[0]) && cells[0][i] != ""
		for _, r := range cells[1:] {
			if !same {
				break
			}
			same = i < len(r) && r[i] == cells[0][i]
		}
		if same {
			out.hoist = append(out.hoist, i)
		} else {
			keep = append(keep, i)
		}
	}
	if len(out.hoist) == 0 || len(keep) == 0 {
		return hoistedTable{}, false
	}
	rest := &Table{}
	for _, i := range keep {
		rest.headers = append(rest.headers, t.headers[i])
		rest.kinds = append(rest.kinds, t.kinds[i])
		rest.tones = append(rest.tones, t.tones[i])
	}
	for _, r := range t.rows {
		row := make([]string, 0, len(keep))
		for _, i := range keep {
			if i < len(r) {
				row = append(row, r[i])
			} else {
				row = append(row, "")
			}
		}
		rest.rows = append(rest.rows, row)
	}
	out.t = rest
	return out, true
}

func (t *Table) renderAligned(ios *iostreams.IOStreams) error {
	st := NewStyles(ios)
	upper := make([]string, len(t.headers))
	for i, h := range t.headers {
		upper[i] = strings.ToUpper(h)
	}
	cells := make([][]string, len(t.rows))
	for r, row := range t.rows {
		cells[r] = make([]string, len(row))
		for i, c := range row {
			cells[r][i] = Escape(c)
		}
	}
	maxWidth := ios.TerminalWidth()
	if ios.WideTables() {
		maxWidth = 0
	}
	widths, kinds, detached := layout(upper, cells, t.kinds, maxWidth)
	if maxWidth > 0 && gridWidth(widths, detached) > maxWidth {
		if rest, ok := t.hoisted(cells); ok {
			// Columns holding one value in every row move above the
			// table as "flow: us-east->eu-west", and the rest is laid
			// out again.
			var head strings.Builder
			for _, h := range rest.hoist {
				fmt.Fprintf(&head, "%s %s\n", st.Muted(strings.ToLower(t.headers[h])+":"), t.toned(st, h, cells[0][h]))
			}
			if _, err := io.WriteString(ios.Out, head.String()); err != nil {
				return fmt.Errorf("writing table: %w", err)
			}
			return rest.t.renderAligned(ios)
		}
	}
	// Headers wrap like text cells when their column was narrowed below
	// them (at spaces, so never inside a word); they are the first rows.
	var headerParts [][]string
	headerHeight := 1
	for i, h := range upper {
		if detached[i] {
			continue
		}
		parts := []string{h}
		if runewidth.StringWidth(h) > widths[i] {
			parts = wrap(h, widths[i])
		}
		headerParts = append(headerParts, parts)
		headerHeight = max(headerHeight, len(parts))
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
	for l := range headerHeight {
		line := make([]string, len(headerParts))
		for i, parts := range headerParts {
			if l < len(parts) {
				line[i] = st.Header(parts[l])
			}
		}
		if err := tbl.Append(line); err != nil {
			return fmt.Errorf("building table: %w", err)
		}
	}
	physical := headerHeight    // output lines appended so far, header included
	notes := map[int][]string{} // grid line index → detached lines after it
	for _, r := range cells {
		// A row whose text cells wrap becomes several physical rows, so
		// the table never relies on tablewriter's own wrapping.
		parts := make([][]string, len(r))
		height := 1
		for i, c := range r {
			switch {
			case detached[i]:
				continue
			case runewidth.StringWidth(c) <= widths[i]:
				parts[i] = []string{c}
			case kinds[i] == KindText:
				parts[i] = wrap(c, widths[i])
			default:
				parts[i] = []string{truncate(c, widths[i])}
			}
			height = max(height, len(parts[i]))
		}
		for l := range height {
			var line []string
			for i := range r {
				if detached[i] {
					continue
				}
				c := ""
				if l < len(parts[i]) {
					c = parts[i][l]
					if fn := t.tones[i]; fn != nil {
						c = st.Tone(fn(r[i]), c)
					}
				}
				line = append(line, c)
			}
			if err := tbl.Append(line); err != nil {
				return fmt.Errorf("building table: %w", err)
			}
			physical++
		}
		// detached text cells follow their row, indented, as
		// "  reason: ..." wrapped to the terminal
		for i, c := range r {
			if !detached[i] || c == "" {
				continue
			}
			label := "  " + strings.ToLower(t.headers[i]) + ": "
			indent := strings.Repeat(" ", runewidth.StringWidth(label))
			for j, l := range wrap(c, max(maxWidth-len(indent), textFloor)) {
				if fn := t.tones[i]; fn != nil {
					l = st.Tone(fn(c), l)
				}
				pre := indent
				if j == 0 {
					pre = st.Muted(label)
				}
				notes[physical-1] = append(notes[physical-1], pre+l)
			}
		}
	}
	if err := tbl.Render(); err != nil {
		return fmt.Errorf("rendering table: %w", err)
	}
	// tablewriter pads the last column; drop trailing blanks on each line,
	// and put the detached text under its row (line 0 is the header).
	var out strings.Builder
	for i, line := range strings.SplitAfter(buf.String(), "\n") {
		nl := strings.HasSuffix(line, "\n")
		out.WriteString(strings.TrimRight(line, " \n"))
		if nl {
			out.WriteByte('\n')
		}
		for _, note := range notes[i] {
			out.WriteString(note)
			out.WriteByte('\n')
		}
	}
	if _, err := io.WriteString(ios.Out, out.String()); err != nil {
		return fmt.Errorf("writing table: %w", err)
	}
	return nil
}
