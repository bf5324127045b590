package config

import (
	"fmt"
	"log/slog"
)

// Secret holds a password, a JAAS config or a key. Every way of printing it
// (String, GoString, fmt verbs, JSON, text and slog) yields "**redacted**";
// only Reveal returns the value. An empty Secret prints as "".
type Secret struct{ v string }

// NewSecret wraps s.
func NewSecret(s string) Secret { return Secret{v: s} }

const redacted = "**redacted**"

// Reveal returns the secret value. Call it only where the value is handed to
// a client library, never where it could be printed or logged.
func (s Secret) Reveal() string { return s.v }

// IsZero reports whether the secret is empty.
func (s Secret) IsZero() bool { return s.v == "" }

func (s Secret) mask() string {
	if s.v == "" {
		return ""
	}
	return redacted
}

// String implements fmt.Stringer.
func (s Secret) String() string { return s.mask() }

// GoString implements fmt.GoStringer (%#v).
func (s Secret) GoString() string { return `config.Secret("` + s.mask() + `")` }

// Format implements fmt.Formatter, so every verb (%s, %v, %q, %x, %d) is masked.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		fmt.Fprint(f, s.GoString())
		return
	}
	fmt.Fprint(f, s.mask())
}

// MarshalJSON implements json.Marshaler.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + s.mask() + `"`), nil }

// MarshalText implements encoding.TextMarshaler.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.mask()), nil }

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.mask()) }
