package aclplan

import (
	"regexp/syntax"
	"sort"
	"strings"

	"github.com/mirrorctl/mirrorctl/replicate/filter"
)

// Resource pattern shapes a filter list item maps to.
const (
	shapeLiteral  = iota // the item matches exactly one name
	shapePrefix          // the item is <literal>.* : every name with that prefix
	shapeWildcard        // the item is .* : every name
	shapeRegex           // anything else: only a snapshot of current names can be granted
)

// itemShape classifies one MM2 regex list item (matched against the whole
// name, as Java's Matcher.matches does) and returns the literal name or
// prefix it stands for. "orders" is literal "orders"; "orders\..*" is prefix
// "orders."; "orders.*" is prefix "orders"; ".*" is the wildcard; anything
// else (alternations, classes, case folding, anchors, ...) is a regex.
func itemShape(item string) (shape int, name string) {
	re, err := syntax.Parse(item, syntax.Perl)
	if err != nil {
		return shapeRegex, ""
	}
	re = re.Simplify()
	isAny := func(r *syntax.Regexp) bool {
		return r.Op == syntax.OpStar && len(r.Sub) == 1 &&
			(r.Sub[0].Op == syntax.OpAnyCharNotNL || r.Sub[0].Op == syntax.OpAnyChar)
	}
	isLit := func(r *syntax.Regexp) bool {
		return r.Op == syntax.OpLiteral && r.Flags&syntax.FoldCase == 0
	}
	switch {
	case isLit(re):
		return shapeLiteral, string(re.Rune)
	case re.Op == syntax.OpEmptyMatch:
		return shapeLiteral, ""
	case isAny(re):
		return shapeWildcard, ""
	case re.Op == syntax.OpConcat && len(re.Sub) == 2 && isLit(re.Sub[0]) && isAny(re.Sub[1]):
		return shapePrefix, string(re.Sub[0].Rune)
	}
	return shapeRegex, ""
}

// resource is one name pattern a feature needs on one cluster: LITERAL
// name, PREFIXED name, or LITERAL "*" (wildcard).
type resource struct {
	pattern string // PatternLiteral or PatternPrefixed
	name    string
}

// namesFor turns an include list into resources. Literal items become
// LITERAL names (unless the exclude list or accept rejects them), prefix
// items PREFIXED names, ".*" the LITERAL "*" wildcard. Regex items are
// resolved against current (the names that exist now, nil when unknown):
// each current name that a regex item matches and accept admits becomes a
// LITERAL resource. regexItems returns the regex items found, so the caller
// can warn that new matches need a re-run, and matched counts the current
// names they matched; wildcard reports a ".*" item.
func namesFor(include *filter.Pattern, current []string, accept func(string) bool) (res []resource, regexItems []string, matched int, wildcard bool) {
	seen := map[resource]bool{}
	add := func(r resource) {
		if !seen[r] {
			seen[r] = true
			res = append(res, r)
		}
	}
	var regexes []*filter.Pattern
	for _, it := range include.Items() {
		shape, name := itemShape(it)
		switch shape {
		case shapeLiteral:
			if accept(name) {
				add(resource{PatternLiteral, name})
			}
		case shapePrefix:
			if name == "" {
				wildcard = true
				add(resource{PatternLiteral, Wildcard})
			} else {
				add(resource{PatternPrefixed, name})
			}
		case shapeWildcard:
			wildcard = true
			add(resource{PatternLiteral, Wildcard})
		default:
			regexItems = append(regexItems, it)
			p, err := filter.CompileList(include.Key(), it)
			if err == nil {
				regexes = append(regexes, p)
			}
		}
	}
	if len(regexes) > 0 {
		names := append([]string(nil), current...)
		sort.Strings(names)
		for _, n := range names {
			if !accept(n) {
				continue
			}
			for _, p := range regexes {
				if p.Match(n) {
					matched++
					add(resource{PatternLiteral, n})
					break
				}
			}
		}
	}
	return res, regexItems, matched, wildcard
}

// covers reports whether a grant on (pattern, name) also applies to the
// resource (bpattern, bname), following Kafka's matching: LITERAL "*"
// matches every name, PREFIXED p matches names starting with p, LITERAL n
// matches n only.
func covers(pattern, name, bpattern, bname string) bool {
	switch {
	case pattern == PatternLiteral && name == Wildcard:
		return true
	case pattern == PatternPrefixed:
		return strings.HasPrefix(bname, name) && (bpattern == PatternLiteral && bname != Wildcard || bpattern == PatternPrefixed)
	default:
		return bpattern == pattern && bname == name
	}
}
