package kafka

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mirrorctl/mirrorctl/internal/config"
)

// jaasEntry is one parsed login-module entry of a sasl.jaas.config value:
//
//	<module class> <control flag> [<key>=<value> ...] [;]
//
// Option values are kept as config.Secret, since the password is one of them
// and a mis-quoted config can shift secret text into any token.
type jaasEntry struct {
	module  string                   // login module class, e.g. org.apache.kafka.common.security.plain.PlainLoginModule
	flag    string                   // required, requisite, sufficient or optional (lower case)
	options map[string]config.Secret // option name -> value, unquoted and unescaped
}

// option returns the value of the named option, or "" when absent.
func (e jaasEntry) option(name string) (string, bool) {
	v, ok := e.options[name]
	return v.Reveal(), ok
}

// errJAAS is wrapped by every JAAS syntax error.
var errJAAS = errors.New("invalid JAAS configuration")

// jaasError reports a syntax problem at a byte offset. It never includes any
// of the input text: a value that failed to parse may be (part of) a secret.
func jaasError(off int, what string) error {
	return fmt.Errorf("%w: %s at byte %d", errJAAS, what, off)
}

// parseJAAS parses the value of sasl.jaas.config, which Kafka requires to hold
// exactly one login module entry. Values may be bare words or quoted with
// double or single quotes; inside quotes a backslash escapes the next
// character (\" \\ \' and \n, \t, \r for control characters). Whitespace,
// including newlines, separates tokens; // and /* */ comments are skipped
// outside quotes; the trailing ';' may be omitted.
//
// Errors wrap errJAAS and name only byte offsets and option names that have
// been fully parsed as names, never values.
func parseJAAS(s string) (jaasEntry, error) {
	p := jaasParser{s: s}
	var e jaasEntry

	p.skipSpace()
	if p.err != nil {
		return e, p.err
	}
	if p.eof() {
		return e, fmt.Errorf("%w: empty", errJAAS)
	}
	start := p.i
	e.module = p.word()
	if e.module == "" || !isClassName(e.module) {
		return jaasEntry{}, jaasError(start, "expected a login module class name")
	}

	p.skipSpace()
	start = p.i
	flag := strings.ToLower(p.word())
	switch flag {
	case "required", "requisite", "sufficient", "optional":
		e.flag = flag
	case "":
		return jaasEntry{}, jaasError(start, "missing control flag (required, requisite, sufficient or optional)")
	default:
		return jaasEntry{}, jaasError(start, "control flag must be required, requisite, sufficient or optional")
	}

	e.options = map[string]config.Secret{}
	for {
		p.skipSpace()
		if p.err != nil {
			return jaasEntry{}, p.err
		}
		if p.eof() {
			return e, nil
		}
		if p.s[p.i] == ';' {
			p.i++
			p.skipSpace()
			if p.err != nil {
				return jaasEntry{}, p.err
			}
			if !p.eof() {
				return jaasEntry{}, jaasError(p.i, "text after ';' (sasl.jaas.config takes exactly one login module)")
			}
			return e, nil
		}
		keyStart := p.i
		key := p.key()
		if key == "" {
			return jaasEntry{}, jaasError(keyStart, "expected an option name")
		}
		p.skipSpace()
		if p.eof() || p.s[p.i] != '=' {
			return jaasEntry{}, jaasError(keyStart, "expected '=' after an option name")
		}
		p.i++
		p.skipSpace()
		if p.err != nil {
			return jaasEntry{}, p.err
		}
		valStart := p.i
		if p.eof() {
			return jaasEntry{}, jaasError(valStart, fmt.Sprintf("missing value for option %q", key))
		}
		var val string
		if c := p.s[p.i]; c == '"' || c == '\'' {
			v, err := p.quoted(c)
			if err != nil {
				return jaasEntry{}, err
			}
			val = v
		} else {
			val = p.word()
			if val == "" {
				return jaasEntry{}, jaasError(valStart, fmt.Sprintf("missing value for option %q", key))
			}
		}
		e.options[key] = config.NewSecret(val)
	}
}

// isClassName reports whether s looks like a Java class name, so that it is
// safe to show in an error.
func isClassName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '.' || c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

type jaasParser struct {
	s   string
	i   int
	err error
}

func (p *jaasParser) eof() bool { return p.i >= len(p.s) }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

// skipSpace skips whitespace and comments; an unterminated /* sets p.err.
func (p *jaasParser) skipSpace() {
	for !p.eof() {
		c := p.s[p.i]
		switch {
		case isSpace(c):
			p.i++
		case strings.HasPrefix(p.s[p.i:], "//"):
			for !p.eof() && p.s[p.i] != '\n' {
				p.i++
			}
		case strings.HasPrefix(p.s[p.i:], "/*"):
			end := strings.Index(p.s[p.i+2:], "*/")
			if end < 0 {
				p.err = jaasError(p.i, "unterminated /* comment")
				p.i = len(p.s)
				return
			}
			p.i += 2 + end + 2
		default:
			return
		}
	}
}

// word reads a bare token: everything up to whitespace, '=', ';' or a quote.
func (p *jaasParser) word() string {
	start := p.i
	for !p.eof() {
		c := p.s[p.i]
		if isSpace(c) || c == ';' || c == '=' || c == '"' || c == '\'' {
			break
		}
		p.i++
	}
	return p.s[start:p.i]
}

// key reads an option name: letters, digits, '_', '-', '.'.
func (p *jaasParser) key() string {
	start := p.i
	for !p.eof() {
		c := p.s[p.i]
		if !(c == '_' || c == '-' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			break
		}
		p.i++
	}
	return p.s[start:p.i]
}

// quoted reads a value enclosed in q, starting at the opening quote.
func (p *jaasParser) quoted(q byte) (string, error) {
	open := p.i
	p.i++
	var b strings.Builder
	for !p.eof() {
		c := p.s[p.i]
		switch c {
		case q:
			p.i++
			return b.String(), nil
		case '\\':
			p.i++
			if p.eof() {
				return "", jaasError(open, "unterminated quoted value")
			}
			switch e := p.s[p.i]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			default:
				b.WriteByte(e)
			}
			p.i++
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return "", jaasError(open, "unterminated quoted value")
}
