package audit

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
)

// Redacted replaces every secret value in an entry; it is the text
// config.Secret prints.
const Redacted = "**redacted**"

// sensitiveWords are substrings that make a flag, property or JSON key name
// sensitive (compared lower-case). They follow the rules of
// internal/config.IsSensitive without importing it.
var sensitiveWords = []string{"password", "passwd", "secret", "token", "jaas", "credential", "private", "apikey", "api-key", "api_key"}

// IsSensitiveName reports whether a flag, property or JSON key name names a
// secret: it contains one of password, passwd, secret, token, jaas,
// credential, private or apikey (any case), one of its '.', '-' or '_'
// separated parts is "key", "pwd" or "pass", or it ends in "keystore.key".
// "--ssl.key.password", "sasl.jaas.config", "--api-key", "--key" and
// "key-format" are sensitive (over-masking is harmless); "topic" and "keys"
// are not.
func IsSensitiveName(name string) bool {
	k := strings.ToLower(strings.TrimLeft(name, "-"))
	for _, w := range sensitiveWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	for _, seg := range strings.FieldsFunc(k, func(r rune) bool { return r == '.' || r == '-' || r == '_' }) {
		if seg == "key" || seg == "pwd" || seg == "pass" {
			return true
		}
	}
	return false
}

// dataKeySensitive is IsSensitiveName for JSON keys in Entry.Data, where a
// bare "key" is usually a record key (a digest or an offset position), not a
// secret: "key" and "keys" alone are allowed, "ssl.key" or "private_key" are
// not.
func dataKeySensitive(name string) bool {
	switch strings.ToLower(name) {
	case "key", "keys", "key_digest", "key_hash":
		return false
	}
	return IsSensitiveName(name)
}

// MaskArgs returns a copy of a command line with secret values replaced by
// Redacted:
//   - "--name=value" and "-name=value" when name is sensitive (IsSensitiveName);
//   - "--name value": the argument after a sensitive "--name" flag, unless
//     it starts with "-";
//   - "key=value" anywhere (a positional argument, the value of -X or
//     --set, or the value part of "--flag=key=value") when key is sensitive;
//   - the password of a URL with user info ("scheme://user:pass@host").
//
// Flags without a value ("--no-password-prompt") are left as they are when
// the next argument starts with "-". Nil in, nil out.
func MaskArgs(args []string) []string {
	if args == nil {
		return nil
	}
	out := make([]string, len(args))
	maskNext := false
	for i, a := range args {
		if maskNext && !strings.HasPrefix(a, "-") {
			out[i] = Redacted
			maskNext = false
			continue
		}
		maskNext = false
		out[i] = maskArg(a)
		if strings.HasPrefix(a, "-") && !strings.Contains(a, "=") && IsSensitiveName(a) {
			maskNext = true
		}
	}
	return out
}

// maskArg masks one argument on its own (the "--x=v", "k=v" and URL forms).
func maskArg(a string) string {
	name, value, ok := strings.Cut(a, "=")
	if !ok {
		return maskURL(a)
	}
	if IsSensitiveName(name) {
		return name + "=" + Redacted
	}
	if strings.HasPrefix(name, "-") {
		return name + "=" + maskArg(value)
	}
	return maskURL(name) + "=" + maskURL(value)
}

var urlUserInfo = regexp.MustCompile(`(://[^/:@\s]*:)[^@\s/]*@`)

func maskURL(s string) string {
	return urlUserInfo.ReplaceAllString(s, "${1}"+Redacted+"@")
}

// inlineSecret finds "name=value" and "name: value" fragments inside free
// text whose name is sensitive, e.g. a JAAS line `password="x"` or
// "sasl.password=x" in an error message.
var inlineSecret = regexp.MustCompile(`(?i)([A-Za-z0-9_.\-]*(?:password|passwd|secret|token|credential|jaas\.config|private\.key|keystore\.key|apikey|api_key)[A-Za-z0-9_.\-]*)(\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s,;]+)`)

// MaskText returns s with the value of every sensitive "name=value" or
// "name: value" fragment (see IsSensitiveName) and every URL password
// replaced by Redacted. Audit uses it for error texts and for string values
// in Entry.Data.
func MaskText(s string) string {
	s = inlineSecret.ReplaceAllString(s, "${1}${2}"+Redacted)
	return maskURL(s)
}

// redactJSON returns raw with the value of every object member whose key is
// sensitive replaced by Redacted and every string masked with MaskText. raw
// is returned unchanged (same bytes) when there was nothing to redact;
// otherwise it is re-encoded, with object keys sorted.
func redactJSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	v, changed := redactValue(v)
	if !changed {
		return raw, nil
	}
	return marshal(v)
}

func redactValue(v any) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		changed := false
		for k, val := range x {
			if dataKeySensitive(k) {
				if s, ok := val.(string); ok && (s == "" || s == Redacted) {
					continue
				}
				if val == nil {
					continue
				}
				x[k] = Redacted
				changed = true
				continue
			}
			nv, c := redactValue(val)
			if c {
				x[k] = nv
				changed = true
			}
		}
		return x, changed
	case []any:
		changed := false
		for i, val := range x {
			nv, c := redactValue(val)
			if c {
				x[i] = nv
				changed = true
			}
		}
		return x, changed
	case string:
		m := MaskText(x)
		return m, m != x
	}
	return v, false
}

// marshal encodes v as compact JSON without HTML escaping and without the
// trailing newline json.Encoder adds.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
