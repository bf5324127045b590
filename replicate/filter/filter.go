package filter

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// MM2 property keys read by the New*Filter functions.
const (
	KeyTopics                  = "topics"
	KeyTopicsExclude           = "topics.exclude"
	KeyGroups                  = "groups"
	KeyGroupsExclude           = "groups.exclude"
	KeyConfigPropertiesExclude = "config.properties.exclude"

	// Deprecated aliases (KIP-629, 2.7-3.9, removed in 4.0); used only when the
	// new key is absent.
	KeyTopicsBlacklist           = "topics.blacklist"
	KeyGroupsBlacklist           = "groups.blacklist"
	KeyConfigPropertiesBlacklist = "config.properties.blacklist"
)

// Defaults of the MM2 filter keys, as in the pinned Kafka 4.3.1
// (DefaultTopicFilter): since KAFKA-17200 topics.exclude leaves out only
// MM2's own internal topics ("mm2.*\.internal"), not every ".internal" or
// "-internal" name as 2.4 to 3.9 did; the other defaults are unchanged
// since 2.4 apart from the key names.
const (
	DefaultTopics                  = ".*"
	DefaultTopicsExclude           = `mm2.*\.internal, .*\.replica, __.*`
	DefaultGroups                  = ".*"
	DefaultGroupsExclude           = "console-consumer-.*, connect-.*, __.*"
	DefaultConfigPropertiesExclude = `follower\.replication\.throttled\.replicas, ` +
		`leader\.replication\.throttled\.replicas, ` +
		`message\.timestamp\.difference\.max\.ms, ` +
		`message\.timestamp\.type, ` +
		`unclean\.leader\.election\.enable, ` +
		`min\.insync\.replicas`
)

var listSep = regexp.MustCompile(`\s*,\s*`)

// ParseList parses a Kafka ConfigDef LIST value: the value is trimmed, a blank
// value is the empty list, otherwise it is split on commas with any
// surrounding whitespace. Empty items (from ",," or a trailing comma) are
// dropped; MM2 keeps them as empty alternatives, which match only the empty
// name, so the effect on topic and group names is the same.
func ParseList(value string) []string {
	value = strings.TrimSpace(value)
	if value == "" {
		return []string{}
	}
	var items []string
	for _, it := range listSep.Split(value, -1) {
		if it != "" {
			items = append(items, it)
		}
	}
	if items == nil {
		items = []string{}
	}
	return items
}

// Pattern is a compiled MM2 regex list: the items joined as ^(?:p1|p2|...)$,
// matched against the whole name (Java Matcher.matches). An empty list, and a
// nil *Pattern, match nothing. A Pattern is immutable and safe for concurrent use.
type Pattern struct {
	key   string
	items []string
	re    *regexp.Regexp   // nil for an empty list
	each  []*regexp.Regexp // per item, nil where an item only compiles joined
}

// PatternError reports a list item that is not a valid regex, naming the
// config key and the item. Hint, when set, suggests a fix.
type PatternError struct {
	Key  string
	Item string // the offending item; "" when only the joined list fails
	Err  error
	Hint string
}

func (e *PatternError) Error() string {
	var b strings.Builder
	if e.Item != "" {
		fmt.Fprintf(&b, "%s: invalid regex item %q: %v", e.Key, e.Item, e.Err)
	} else {
		fmt.Fprintf(&b, "%s: invalid regex list: %v", e.Key, e.Err)
	}
	if e.Hint != "" {
		b.WriteString(" (hint: ")
		b.WriteString(e.Hint)
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap returns the regex compiler's error.
func (e *PatternError) Unwrap() error { return e.Err }

// ErrUnclosedRepetition is wrapped by a PatternError for an unescaped "{" that
// does not start a {n}, {n,} or {n,m} quantifier. Java rejects such a
// pattern; Go would silently take the brace literally.
var ErrUnclosedRepetition = errors.New("'{' does not start a valid {n}, {n,} or {n,m} quantifier")

// CompileList parses value as a LIST (see ParseList) and compiles it as the
// MM2 regex list for key (e.g. "topics.exclude"). Errors are *PatternError,
// naming key and the first offending item, with a hint for a {m,n}
// quantifier split by the list's commas and for Java-only constructs RE2
// lacks (look-around, backreferences, atomic groups, possessive quantifiers).
func CompileList(key, value string) (*Pattern, error) {
	items := ParseList(value)
	p := &Pattern{key: key, items: items}
	if len(items) == 0 {
		return p, nil
	}
	for i, it := range items {
		if pos := badBrace(it); pos >= 0 {
			hint := `escape a literal brace as \{`
			if isSplitQuantifier(items, i) {
				hint = fmt.Sprintf("list items are separated by commas, so a {m,n} quantifier is cut in two (here %q and %q); "+
					"write it without a comma, e.g. x{1,3} as (?:x|xx|xxx)", it, items[i+1])
			}
			return nil, &PatternError{Key: key, Item: it,
				Err: fmt.Errorf("%w (at byte %d)", ErrUnclosedRepetition, pos), Hint: hint}
		}
	}
	re, err := regexp.Compile(anchor(strings.Join(items, "|")))
	if err != nil {
		for _, it := range items {
			if _, ierr := regexp.Compile(anchor(it)); ierr != nil {
				// Report the item's own error where it has one: the
				// anchored wrapper would leak into the message.
				if _, rerr := regexp.Compile(it); rerr != nil {
					ierr = rerr
				}
				return nil, &PatternError{Key: key, Item: it, Err: ierr, Hint: re2Hint(it)}
			}
		}
		return nil, &PatternError{Key: key, Err: err}
	}
	p.re = re
	p.each = make([]*regexp.Regexp, len(items))
	for i, it := range items {
		p.each[i], _ = regexp.Compile(anchor(it))
	}
	return p, nil
}

// Names returns the items of p written as plain names ("orders",
// "orders.v1"): no regex metacharacter but ".", which names use as a
// separator although the regex reads it as any character. Nil for a nil or
// empty Pattern.
func (p *Pattern) Names() []string {
	if p == nil {
		return nil
	}
	var out []string
	for _, it := range p.items {
		bare := strings.ReplaceAll(it, ".", "")
		if bare != "" && regexp.QuoteMeta(bare) == bare {
			out = append(out, it)
		}
	}
	return out
}

// anchor wraps body as ^(?:body)$ for a whole-name match (Java
// Matcher.matches). An unterminated \Q quotes to the end of the pattern in
// Java; here it is closed with \E before the wrapper's ")".
func anchor(body string) string {
	if unterminatedQuote(body) {
		body += `\E`
	}
	return `^(?:` + body + `)$`
}

// unterminatedQuote reports whether s has a \Q with no matching \E.
func unterminatedQuote(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			continue
		}
		if s[i+1] == 'Q' {
			end := strings.Index(s[i+2:], `\E`)
			if end < 0 {
				return true
			}
			i += 2 + end + 1
			continue
		}
		i++
	}
	return false
}

// MustCompileList is CompileList for constant lists; it panics on error.
func MustCompileList(key, value string) *Pattern {
	p, err := CompileList(key, value)
	if err != nil {
		panic(err)
	}
	return p
}

// badBrace returns the byte offset of the first unescaped "{" outside a
// character class that Java would reject, or -1.
func badBrace(s string) int {
	inClass := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) {
				return -1
			}
			switch s[i+1] {
			case 'Q': // \Q...\E quotes everything
				end := strings.Index(s[i+2:], `\E`)
				if end < 0 {
					return -1
				}
				i += 2 + end + 1
			case 'p', 'P', 'x', 'N': // \p{Name}, \x{hex}: braces belong to the escape
				if i+2 < len(s) && s[i+2] == '{' {
					if end := strings.IndexByte(s[i+2:], '}'); end >= 0 {
						i += 2 + end
						continue
					}
				}
				i++
			default:
				i++
			}
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
			if i+1 < len(s) && s[i+1] == '^' {
				i++
			}
			if i+1 < len(s) && s[i+1] == ']' { // a leading ']' is literal
				i++
			}
		case c == '{':
			if !validQuantifier(s[i:]) {
				return i
			}
		}
	}
	return -1
}

// validQuantifier reports whether s starts with {n}, {n,} or {n,m}.
func validQuantifier(s string) bool {
	j := 1
	digits := func() int {
		n := 0
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
			n++
		}
		return n
	}
	if digits() == 0 {
		return false
	}
	if j < len(s) && s[j] == ',' {
		j++
		digits()
	}
	return j < len(s) && s[j] == '}'
}

var (
	splitHead = regexp.MustCompile(`\{\d*$`)
	splitTail = regexp.MustCompile(`^\d*\}`)
)

// isSplitQuantifier reports whether items[i] ends in "{n" and items[i+1]
// starts with "m}", i.e. a comma split "{n,m}".
func isSplitQuantifier(items []string, i int) bool {
	return i+1 < len(items) && splitHead.MatchString(items[i]) && splitTail.MatchString(items[i+1])
}

var (
	backref    = regexp.MustCompile(`\\[1-9]`)
	possessive = regexp.MustCompile(`[*+?}][+]`)
)

// re2Hint explains Java regex features that Go's RE2 does not have.
func re2Hint(item string) string {
	switch {
	case strings.Contains(item, "(?=") || strings.Contains(item, "(?!") ||
		strings.Contains(item, "(?<=") || strings.Contains(item, "(?<!"):
		return "look-ahead and look-behind are Java-only and not supported by Go's RE2; " +
			"to leave names out, list them in the matching *.exclude key instead"
	case strings.Contains(item, "(?>"):
		return "atomic groups (?>...) are Java-only and not supported by Go's RE2; use a plain group (?:...)"
	case backref.MatchString(item):
		return "backreferences like \\1 are Java-only and not supported by Go's RE2"
	case possessive.MatchString(item):
		return "possessive quantifiers (*+, ++, ?+) are Java-only and not supported by Go's RE2; drop the extra +"
	}
	return ""
}

// Match reports whether name matches the whole of one of the list's items.
// A nil Pattern and an empty list match nothing.
func (p *Pattern) Match(name string) bool {
	if p == nil || p.re == nil {
		return false
	}
	return p.re.MatchString(name)
}

// MatchingItem returns the first item that matches the whole of name. When
// name matches only the joined list (items such as "(a" and "b)" that form a
// group together), it returns the whole list. ok is false when nothing matches.
func (p *Pattern) MatchingItem(name string) (item string, ok bool) {
	if !p.Match(name) {
		return "", false
	}
	for i, re := range p.each {
		if re != nil && re.MatchString(name) {
			return p.items[i], true
		}
	}
	return p.String(), true
}

// Items returns a copy of the list items, in order.
func (p *Pattern) Items() []string {
	if p == nil {
		return nil
	}
	return append([]string(nil), p.items...)
}

// Key returns the config key the list came from ("" for a nil Pattern).
func (p *Pattern) Key() string {
	if p == nil {
		return ""
	}
	return p.key
}

// String returns the list in config form: the items joined by ", ".
func (p *Pattern) String() string {
	if p == nil {
		return ""
	}
	return strings.Join(p.items, ", ")
}

// TopicFilter is MM2's DefaultTopicFilter: a topic is accepted when Include
// matches it and Exclude does not. The zero value accepts nothing.
type TopicFilter struct{ Include, Exclude *Pattern }

// Accept reports whether topic passes the include and exclude lists.
func (f TopicFilter) Accept(topic string) bool {
	return f.Include.Match(topic) && !f.Exclude.Match(topic)
}

// GroupFilter is MM2's DefaultGroupFilter: a consumer group is accepted when
// Include matches it and Exclude does not. The zero value accepts nothing.
type GroupFilter struct{ Include, Exclude *Pattern }

// Accept reports whether group passes the include and exclude lists.
func (f GroupFilter) Accept(group string) bool {
	return f.Include.Match(group) && !f.Exclude.Match(group)
}

// ConfigPropertyFilter is MM2's DefaultConfigPropertyFilter: a topic config
// property is synced unless Exclude matches its name. The zero value accepts
// everything.
type ConfigPropertyFilter struct{ Exclude *Pattern }

// Accept reports whether the topic config property name should be synced.
func (f ConfigPropertyFilter) Accept(name string) bool { return !f.Exclude.Match(name) }

// lookup returns props[key], else props[alias] (a deprecated name), else def,
// and the key the value came from.
func lookup(props map[string]string, key, alias, def string) (value, from string) {
	if v, ok := props[key]; ok {
		return v, key
	}
	if v, ok := props[alias]; ok {
		return v, alias
	}
	return def, key
}

// NewTopicFilter builds the topic filter from MM2 properties "topics" and
// "topics.exclude" (or the deprecated "topics.blacklist" when "topics.exclude"
// is absent), each defaulting as in MM2. Errors are *PatternError.
func NewTopicFilter(props map[string]string) (TopicFilter, error) {
	inc, err := CompileList(KeyTopics, lookupNoAlias(props, KeyTopics, DefaultTopics))
	if err != nil {
		return TopicFilter{}, err
	}
	v, from := lookup(props, KeyTopicsExclude, KeyTopicsBlacklist, DefaultTopicsExclude)
	exc, err := CompileList(from, v)
	if err != nil {
		return TopicFilter{}, err
	}
	return TopicFilter{Include: inc, Exclude: exc}, nil
}

// NewGroupFilter builds the group filter from MM2 properties "groups" and
// "groups.exclude" (or the deprecated "groups.blacklist"), each defaulting as
// in MM2. Errors are *PatternError.
func NewGroupFilter(props map[string]string) (GroupFilter, error) {
	inc, err := CompileList(KeyGroups, lookupNoAlias(props, KeyGroups, DefaultGroups))
	if err != nil {
		return GroupFilter{}, err
	}
	v, from := lookup(props, KeyGroupsExclude, KeyGroupsBlacklist, DefaultGroupsExclude)
	exc, err := CompileList(from, v)
	if err != nil {
		return GroupFilter{}, err
	}
	return GroupFilter{Include: inc, Exclude: exc}, nil
}

// NewConfigPropertyFilter builds the config-property filter from
// "config.properties.exclude" (or the deprecated "config.properties.blacklist"),
// defaulting as in MM2. Errors are *PatternError.
func NewConfigPropertyFilter(props map[string]string) (ConfigPropertyFilter, error) {
	v, from := lookup(props, KeyConfigPropertiesExclude, KeyConfigPropertiesBlacklist, DefaultConfigPropertiesExclude)
	exc, err := CompileList(from, v)
	if err != nil {
		return ConfigPropertyFilter{}, err
	}
	return ConfigPropertyFilter{Exclude: exc}, nil
}

func lookupNoAlias(props map[string]string, key, def string) string {
	if v, ok := props[key]; ok {
		return v
	}
	return def
}
