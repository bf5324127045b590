package filter

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseList(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", []string{}},
		{"   ", []string{}},
		{".*", []string{".*"}},
		{" a , b,c ,  d ", []string{"a", "b", "c", "d"}},
		{"a,,b,", []string{"a", "b"}},
		{",", []string{}},
		{"a\t,\nb", []string{"a", "b"}},
		{"a{1,3}", []string{"a{1", "3}"}},
		{DefaultTopicsExclude, []string{`mm2.*\.internal`, `.*\.replica`, `__.*`}},
		{DefaultGroupsExclude, []string{"console-consumer-.*", "connect-.*", "__.*"}},
	}
	for _, tt := range tests {
		if got := ParseList(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseList(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDefaultTopicFilter(t *testing.T) {
	f, err := NewTopicFilter(nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		topic string
		want  bool
	}{
		{"orders", true},
		{"us-east.orders", true},
		{"heartbeats", true},
		{"__consumer_offsets", false},
		{"__transaction_state", false},
		{"mm2-offsets.us-east.internal", false},
		// Kafka 4 (KAFKA-17200): only MM2's own ".internal" topics are
		// excluded by default; checkpoints topics are internal by policy.
		{"connect-configs-internal", true},
		{"us-east.checkpoints.internal", true},
		{"orders.internal", true},
		{"orders.replica", false},
		{"orders_internal", true},
		{"orders.internalx", true},
		{"_single", true},
	}
	for _, tt := range tests {
		if got := f.Accept(tt.topic); got != tt.want {
			t.Errorf("default topics Accept(%q) = %v, want %v", tt.topic, got, tt.want)
		}
	}
}

func TestDefaultGroupAndConfigFilters(t *testing.T) {
	g, err := NewGroupFilter(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	for group, want := range map[string]bool{
		"order-processor":        true,
		"console-consumer-12345": false,
		"connect-mm2":            false,
		"__ksql":                 false,
		"my-connect-app":         true,
	} {
		if got := g.Accept(group); got != want {
			t.Errorf("default groups Accept(%q) = %v, want %v", group, got, want)
		}
	}
	c, err := NewConfigPropertyFilter(nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"follower.replication.throttled.replicas": false,
		"leader.replication.throttled.replicas":   false,
		"message.timestamp.difference.max.ms":     false,
		"message.timestamp.type":                  false,
		"unclean.leader.election.enable":          false,
		"min.insync.replicas":                     false,
		"retention.ms":                            true,
		"cleanup.policy":                          true,
		"min.insync.replicasX":                    true,
		"minXinsync.replicas":                     true, // dots are escaped
	} {
		if got := c.Accept(name); got != want {
			t.Errorf("default config Accept(%q) = %v, want %v", name, got, want)
		}
	}
	if got := len(c.Exclude.Items()); got != 6 {
		t.Errorf("config exclude has %d items, want 6", got)
	}
}

func TestFiltersFromProps(t *testing.T) {
	tests := []struct {
		name  string
		props map[string]string
		topic string
		want  bool
	}{
		{"blank include matches nothing", map[string]string{"topics": ""}, "orders", false},
		{"blank exclude excludes nothing", map[string]string{"topics.exclude": "  "}, "__consumer_offsets", true},
		{"include list", map[string]string{"topics": "orders, payments.*"}, "payments-eu", true},
		{"include list miss", map[string]string{"topics": "orders, payments.*"}, "orders2", false},
		{"deprecated blacklist", map[string]string{"topics.blacklist": "orders"}, "orders", false},
		{"deprecated blacklist replaces default", map[string]string{"topics.blacklist": "orders"}, "x.replica", true},
		{"new key wins over blacklist", map[string]string{"topics.exclude": "a", "topics.blacklist": "orders"}, "orders", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := NewTopicFilter(tt.props)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Accept(tt.topic); got != tt.want {
				t.Errorf("Accept(%q) = %v, want %v", tt.topic, got, tt.want)
			}
		})
	}
	g, err := NewGroupFilter(map[string]string{"groups.blacklist": "g1"})
	if err != nil || g.Accept("g1") || !g.Accept("console-consumer-1") {
		t.Errorf("groups.blacklist alias: err %v", err)
	}
	c, err := NewConfigPropertyFilter(map[string]string{"config.properties.blacklist": "retention\\.ms"})
	if err != nil || c.Accept("retention.ms") || !c.Accept("min.insync.replicas") {
		t.Errorf("config.properties.blacklist alias: err %v", err)
	}
	if _, err := NewGroupFilter(map[string]string{"groups": "(?=x)"}); err == nil || !strings.HasPrefix(err.Error(), "groups: ") {
		t.Errorf("bad groups: err = %v", err)
	}
	if _, err := NewConfigPropertyFilter(map[string]string{"config.properties.exclude": "a{"}); err == nil || !strings.HasPrefix(err.Error(), "config.properties.exclude: ") {
		t.Errorf("bad config exclude: err = %v", err)
	}
	if _, err := NewTopicFilter(map[string]string{"topics.blacklist": "a)"}); err == nil || !strings.HasPrefix(err.Error(), "topics.blacklist: ") {
		t.Errorf("bad blacklist: err = %v", err)
	}
}

func TestPatternMatchWholeName(t *testing.T) {
	p := MustCompileList("topics", "orders, pay.*")
	for name, want := range map[string]bool{
		"orders": true, "orders2": false, "xorders": false, "payments": true, "pay": true, "": false,
	} {
		if got := p.Match(name); got != want {
			t.Errorf("Match(%q) = %v, want %v", name, got, want)
		}
	}
	if got := p.String(); got != "orders, pay.*" {
		t.Errorf("String = %q", got)
	}
	if got := p.Key(); got != "topics" {
		t.Errorf("Key = %q", got)
	}
	items := p.Items()
	items[0] = "mutated"
	if p.Items()[0] != "orders" {
		t.Error("Items returned internal slice")
	}
	if it, ok := p.MatchingItem("payroll"); !ok || it != "pay.*" {
		t.Errorf("MatchingItem = %q, %v", it, ok)
	}
	if _, ok := p.MatchingItem("nope"); ok {
		t.Error("MatchingItem matched nope")
	}
}

func TestNilAndEmptyPatterns(t *testing.T) {
	var nilP *Pattern
	empty := MustCompileList("topics", " ")
	for _, p := range []*Pattern{nilP, empty} {
		if p.Match("") || p.Match("orders") {
			t.Errorf("%v matched", p)
		}
		if len(p.Items()) != 0 || p.String() != "" {
			t.Errorf("items %q, string %q", p.Items(), p.String())
		}
	}
	if nilP.Key() != "" {
		t.Error("nil Key")
	}
	if (TopicFilter{}).Accept("orders") || (GroupFilter{}).Accept("g") {
		t.Error("zero filters accept")
	}
	if !(ConfigPropertyFilter{}).Accept("retention.ms") {
		t.Error("zero config filter rejects")
	}
}

// Items that only form a valid regex together (Java joins them raw with "|")
// are accepted, as MM2 does.
func TestItemsJoinedRaw(t *testing.T) {
	p, err := CompileList("topics", "(foo, bar)")
	if err != nil {
		t.Fatal(err)
	}
	if !p.Match("foo") || !p.Match("bar") || p.Match("foo|bar") {
		t.Errorf("joined group: foo %v bar %v", p.Match("foo"), p.Match("bar"))
	}
	if it, ok := p.MatchingItem("bar"); !ok || it != "(foo, bar)" {
		t.Errorf("MatchingItem = %q, %v", it, ok)
	}
}

func TestCompileListErrors(t *testing.T) {
	tests := []struct {
		name     string
		value    string
		item     string
		is       error
		contains []string
	}{
		{"comma split quantifier", `orders, a{1,3}`, "a{1", ErrUnclosedRepetition,
			[]string{`topics: invalid regex item "a{1"`, `a {m,n} quantifier is cut in two (here "a{1" and "3}")`}},
		{"comma split open-ended split", `x\d{2,}`, `x\d{2`, ErrUnclosedRepetition,
			[]string{`(here "x\\d{2" and "}")`}},
		{"stray brace", `a{b}`, "a{b}", ErrUnclosedRepetition,
			[]string{`escape a literal brace as \{`, "at byte 1"}},
		{"lookahead", `(?!test-).*`, `(?!test-).*`, nil,
			[]string{"look-ahead and look-behind are Java-only", "*.exclude"}},
		{"lookbehind", `.*(?<!-tmp)`, `.*(?<!-tmp)`, nil,
			[]string{"look-ahead and look-behind are Java-only"}},
		{"backreference", `(a)\1`, `(a)\1`, nil, []string{`backreferences like \1`}},
		{"possessive", `a*+`, `a*+`, nil, []string{"possessive quantifiers"}},
		{"atomic", `(?>ab)`, `(?>ab)`, nil, []string{"atomic groups"}},
		{"plain syntax error names item", `ok, bad(`, `bad(`, nil, []string{`topics: invalid regex item "bad("`, "missing closing )"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := CompileList("topics", tt.value)
			if p != nil || err == nil {
				t.Fatalf("CompileList(%q) = %v, %v; want error", tt.value, p, err)
			}
			var pe *PatternError
			if !errors.As(err, &pe) || pe.Key != "topics" || pe.Item != tt.item {
				t.Fatalf("err = %#v, want PatternError for item %q", err, tt.item)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("err = %v, want errors.Is %v", err, tt.is)
			}
			for _, c := range tt.contains {
				if !strings.Contains(err.Error(), c) {
					t.Errorf("err %q does not contain %q", err, c)
				}
			}
		})
	}
}

// Braces that Java accepts must not trip the brace check ({n,} cannot appear:
// the comma splits it, see TestCompileListErrors).
func TestValidBraces(t *testing.T) {
	for _, v := range []string{`a{3}`, `[{]x`, `[]{]`, `\{literal\}`, `\p{L}+`, `\x{41}`, `\Qa{b\E`, `a}`, `[^]{]`} {
		if _, err := CompileList("topics", v); err != nil {
			t.Errorf("CompileList(%q): %v", v, err)
		}
	}
	p := MustCompileList("topics", `\Qa{b\E`)
	if !p.Match("a{b") {
		t.Error(`\Q...\E not literal`)
	}
}

func TestMustCompileListPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	MustCompileList("topics", "(")
}

// An unterminated \Q quotes the rest of the pattern, as in Java: as the last
// item it is a literal; earlier, it swallows the "|" and the later items.
func TestUnterminatedQuote(t *testing.T) {
	p, err := CompileList("groups", `a, \Qb.c`)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Match("a") || !p.Match("b.c") || p.Match("bxc") {
		t.Errorf("last item: a %v, b.c %v, bxc %v", p.Match("a"), p.Match("b.c"), p.Match("bxc"))
	}
	p, err = CompileList("groups", `\Qb.c, a`)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Match("b.c|a") || p.Match("a") || p.Match("b.c") {
		t.Errorf("first item: b.c|a %v, a %v, b.c %v", p.Match("b.c|a"), p.Match("a"), p.Match("b.c"))
	}
	if it, ok := p.MatchingItem("b.c|a"); !ok || it != `\Qb.c, a` {
		t.Errorf("MatchingItem = %q, %v", it, ok)
	}
}

func TestCompileListErrorNamesTheItemOnly(t *testing.T) {
	_, err := CompileList("topics", "orders, foo[")
	if err == nil || !strings.Contains(err.Error(), `"foo["`) || strings.Contains(err.Error(), ")$") {
		t.Fatalf("error %v: want the item named, without the anchoring wrapper", err)
	}
}

func TestPatternNames(t *testing.T) {
	tests := []struct {
		list string
		want []string
	}{
		{"orders, orders.v1, payments\\..*, audit-.*, .*, inventory_2", []string{"orders", "orders.v1", "inventory_2"}},
		{"", nil},
		{"a|b, (c), d+", nil},
	}
	for _, tt := range tests {
		p := MustCompileList("topics", tt.list)
		if got := p.Names(); strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("%q: Names() = %q, want %q", tt.list, got, tt.want)
		}
	}
	var nilP *Pattern
	if nilP.Names() != nil {
		t.Error("nil Pattern has names")
	}
}
