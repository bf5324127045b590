// Package output renders command results: aligned tables, tab-separated text,
// CSV, indented JSON and JSON Lines, plus ok/warn/error styles and human
// times and counts. It is the only package that imports tablewriter and
// lipgloss, so their APIs (tablewriter changed completely between v0.0.5 and
// v1) stay behind this one door.
//
// Key types: Format (the -o choice), Table (headers + string rows), Styles.
// Every JSON document carries "schema_version": SchemaVersion; embed Envelope
// in result structs to get it.
//
// TTY and non-TTY output differ on purpose, as in cli/cli: on a terminal,
// tables have upper-cased (and, with colour, bold) headers, counts are
// grouped with commas and times are relative; off a terminal, tables are
// tab-separated rows without a header, counts are raw and times are RFC3339
// in UTC, so scripts can cut/awk them (-o tsv adds a header row). Text in
// table, TSV and CSV cells is passed through Escape, since names and
// metadata come from clusters and internal records anyone with WRITE on a
// topic can fill.
package output

import (
	"fmt"
	"strings"
)

// Format is the value of the global -o/--output flag.
type Format string

// The output formats a command may be asked for.
const (
	// FormatTable is a human table on a TTY and tab-separated rows otherwise.
	FormatTable Format = "table"
	// FormatJSON is one indented JSON document with a schema_version field.
	FormatJSON Format = "json"
	// FormatCSV is RFC 4180 CSV with a header row.
	FormatCSV Format = "csv"
	// FormatTSV is tab-separated rows under a header row of snake_case
	// column names; tabs and line breaks inside cells are escaped.
	FormatTSV Format = "tsv"
)

// Formats returns the accepted format names in help order: table, json,
// csv, tsv.
func Formats() []string {
	return []string{string(FormatTable), string(FormatJSON), string(FormatCSV), string(FormatTSV)}
}

// ParseFormat parses s (case-insensitive, surrounding space ignored). The
// empty string means FormatTable. An unknown name returns an error that lists
// the valid values.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(strings.TrimSpace(s))); f {
	case "":
		return FormatTable, nil
	case FormatTable, FormatJSON, FormatCSV, FormatTSV:
		return f, nil
	default:
		return "", fmt.Errorf("invalid output format %q: valid values are {%s}", s, strings.Join(Formats(), "|"))
	}
}

// String implements fmt.Stringer.
func (f Format) String() string { return string(f) }
