package config

import (
	"fmt"
	"strings"

	"github.com/magiconair/properties"
)

// rawEntry is one key = value pair as written, with the 1-based line on which
// its logical line starts. value has the .properties escapes decoded but no
// ${provider:...} references resolved.
type rawEntry struct {
	key   string
	value string
	line  int
}

// logicalLine is one logical line of a .properties file: its first physical
// line number and its text, continuation lines included.
type logicalLine struct {
	line int
	text string
}

// splitLogical cuts a .properties text into logical lines, following
// java.util.Properties.load: a line whose first non-blank character is '#'
// or '!' is a comment and is never continued; a line ending in an odd number
// of backslashes continues on the next physical line (whatever that line
// holds, '#' included), and a blank line ends the continuation. Line
// terminators are \n, \r\n or \r.
func splitLogical(text string) []logicalLine {
	text = strings.TrimPrefix(text, "\uFEFF")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	lines := strings.Split(text, "\n")
	var out []logicalLine
	for i := 0; i < len(lines); i++ {
		t := strings.TrimLeft(lines[i], " \t\f")
		if t == "" || t[0] == '#' || t[0] == '!' {
			continue
		}
		start := i
		for continues(lines[i]) && i+1 < len(lines) {
			i++
		}
		out = append(out, logicalLine{line: start + 1, text: strings.Join(lines[start:i+1], "\n") + "\n"})
	}
	return out
}

// continues reports whether a physical line ends in an odd number of
// backslashes, i.e. continues on the next line.
func continues(s string) bool {
	n := 0
	for n < len(s) && s[len(s)-1-n] == '\\' {
		n++
	}
	return n%2 == 1
}

// parseEntries decodes the logical lines of text with magiconair/properties
// (escapes, separators, continuations; its own ${} expansion disabled) one
// logical line at a time, so each key keeps the line it starts on. Lines the
// library rejects become *Errors; the library's message is not used because
// it can quote part of the value.
func parseEntries(file, text string) ([]rawEntry, []*Error, []Warning) {
	var (
		entries []rawEntry
		errs    []*Error
		warns   []Warning
	)
	loader := properties.Loader{Encoding: properties.UTF8, DisableExpansion: true}
	for _, ll := range splitLogical(text) {
		if t := strings.TrimLeft(ll.text, " \t\f"); t[0] == '=' || t[0] == ':' {
			warns = append(warns, Warning{File: file, Line: ll.line, Msg: "line has an empty key; ignored"})
			continue
		}
		if c, ok := droppedEscape(ll.text); ok {
			k := leadingKey(ll.text)
			msg := fmt.Sprintf(`"\%c" is read as "%c": .properties drops a backslash before a character that is not an escape, as MM2 does; write "\\%c" to keep a regex escape`, c, c, c)
			if IsSensitive(k) {
				msg = "a backslash before a character that is not an escape is dropped, as MM2 does"
			}
			warns = append(warns, Warning{File: file, Line: ll.line, Key: k, Msg: msg})
		}
		p, err := loader.LoadBytes([]byte(ll.text))
		if err != nil {
			msg := "malformed line (check backslash escapes)"
			if strings.Contains(err.Error(), "unicode") {
				msg = `malformed \uXXXX escape`
			}
			errs = append(errs, &Error{File: file, Line: ll.line, Key: leadingKey(ll.text), Msg: msg})
			continue
		}
		for _, k := range p.Keys() {
			v, _ := p.Get(k)
			entries = append(entries, rawEntry{key: k, value: v, line: ll.line})
		}
	}
	return entries, errs, warns
}

// leadingKey returns the text before the first separator of a logical line,
// for naming the key of a line the library could not parse. It does not
// decode escapes: it is only a label.
func leadingKey(text string) string {
	t := strings.TrimLeft(text, " \t\f")
	if i := strings.IndexAny(t, " \t\f:=\n"); i >= 0 {
		t = t[:i]
	}
	if len(t) > 80 {
		t = t[:80]
	}
	return t
}

// droppedEscape finds a backslash before a character that is not a
// .properties escape (\t \n \r \f \uXXXX \\ \: \= \# \! \space or a line
// break). Java drops such a backslash silently, so a regex like cart\..*
// reaches MM2 as cart..*; it returns the first such character.
func droppedEscape(text string) (byte, bool) {
	for i := 0; i+1 < len(text); i++ {
		if text[i] != '\\' {
			continue
		}
		c := text[i+1]
		i++
		if !strings.ContainsRune("\\tnrfu:=#! \n", rune(c)) {
			return c, true
		}
	}
	return 0, false
}
