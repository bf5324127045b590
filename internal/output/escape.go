package output

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Escape returns s with every character that could act on a terminal
// replaced by a visible escape, so that text read from a cluster (topic and
// group names, checkpoint metadata, record fields) cannot move the cursor,
// recolour, retitle or clear the operator's terminal:
//   - C0 controls and DEL: "\t", "\n", "\r" for the usual three, else
//     "\x1b"-style hex (ESC is "\x1b");
//   - C1 controls U+0080..U+009F (U+009B is a one-character CSI): "\u009b";
//   - bidirectional overrides and isolates (U+202A..U+202E, U+2066..U+2069),
//     which reorder what is shown: "\u202e";
//   - bytes that are not valid UTF-8: "\xff";
//   - a backslash is doubled only when s needed escaping, so ordinary text
//     (regexes such as `orders\..*`) is shown unchanged.
//
// Text with none of these is returned as is, without allocation. JSON
// output does not use Escape: encoding/json escapes what JSON requires.
func Escape(s string) string { return escape(s, false) }

// EscapeCSV is Escape for a CSV field: tabs and line breaks are kept, since
// CSV quotes them as data; every other control character is escaped.
func EscapeCSV(s string) string { return escape(s, true) }

func escape(s string, keepSpace bool) string {
	if !needsEscape(s, keepSpace) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case keepSpace && (r == '\t' || r == '\n' || r == '\r'):
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// needsEscape reports whether s holds anything Escape would change (other
// than backslashes, which are only doubled alongside another escape).
func needsEscape(s string, keepSpace bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 || c == 0x7f) && !(keepSpace && (c == '\t' || c == '\n' || c == '\r')) {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || unsafeRune(r) {
			return true
		}
		i += size
	}
	return false
}

// unsafeRune reports the non-ASCII runes Escape replaces: C1 controls and
// bidirectional embedding, override and isolate controls.
func unsafeRune(r rune) bool {
	return (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// SafeJSON rewrites, in encoded JSON b, the characters encoding/json leaves
// raw but a terminal may act on (C1 controls U+0080..U+009F, bidirectional
// controls U+202A..U+202E and U+2066..U+2069) as \u escapes. The document
// means exactly the same to a JSON parser: these characters can only occur
// inside strings. b is returned unchanged (no copy) when it holds none.
func SafeJSON(b []byte) []byte {
	var out []byte
	last := 0
	for i := 0; i < len(b); i++ {
		if b[i] != 0xc2 && b[i] != 0xe2 {
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if !unsafeRune(r) {
			continue
		}
		out = append(out, b[last:i]...)
		out = fmt.Appendf(out, `\u%04x`, r)
		i += n - 1
		last = i + 1
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}
