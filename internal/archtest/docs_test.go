package archtest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// repoRoot is the repository root, seen from this package's directory.
const repoRoot = "../.."

// maxReadmeLines keeps README.md a page a newcomer reads in five minutes;
// the manual is docs/ (docs/README.md).
const maxReadmeLines = 250

// pendingPages are pages README.md or docs/ link to that other branches
// create (the context and status commands' generated help, the ACL-sync
// fidelity page). A listed page
// is not reported missing; once it exists the entry must go, so the list
// cannot outlive the merge (TestDocsLinksResolve fails on it).
var pendingPages = map[string]bool{}

// TestReadmeLength fails when README.md grows past maxReadmeLines.
func TestReadmeLength(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, at most %d: move the detail into a docs/ page and link it", n, maxReadmeLines)
	}
}

// TestDocsLinksResolve checks every relative Markdown link of README.md,
// CONTRIBUTING.md and docs/*.md: the file or directory it names must exist,
// and a #fragment into a Markdown page must name one of its headings (as
// GitHub makes their anchors) or an <a id>.
func TestDocsLinksResolve(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "CONTRIBUTING.md"))
	sort.Strings(pages)
	if len(pages) < 12 {
		t.Fatalf("found %d pages, want README.md, CONTRIBUTING.md and the docs/ pages", len(pages))
	}
	checked := 0
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range relativeLinks(string(b)) {
			checked++
			target := filepath.Clean(filepath.Join(filepath.Dir(page), l.target))
			rel, _ := filepath.Rel(repoRoot, target)
			rel = filepath.ToSlash(rel)
			_, statErr := os.Stat(target)
			switch {
			case pendingPages[rel] && statErr == nil:
				t.Errorf("%s exists now: remove it from pendingPages (docs_test.go)", rel)
			case pendingPages[rel]:
			case statErr != nil:
				name, _ := filepath.Rel(repoRoot, page)
				t.Errorf("%s:%d: link %q: %s does not exist", name, l.line, l.target, rel)
			case l.fragment != "" && strings.HasSuffix(target, ".md"):
				b, err := os.ReadFile(target)
				if err != nil {
					t.Fatal(err)
				}
				if !anchors(string(b))[l.fragment] {
					name, _ := filepath.Rel(repoRoot, page)
					t.Errorf("%s:%d: link %q: %s has no heading or anchor #%s", name, l.line, l.target+"#"+l.fragment, rel, l.fragment)
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked %d links, want at least 50 (did the link pattern break?)", checked)
	}
}

// TestRelativeLinks proves relativeLinks finds what it must and skips what
// it must, so a link check that sees nothing is itself a failure.
func TestRelativeLinks(t *testing.T) {
	md := "see [a](docs/a.md#x) and [b](../b/ \"title\"), [web](https://x.org/y.md), [top](#anchor)\n" +
		"`[code](not-a-link.md)` [mail](mailto:a@b)\n```sh\n[fenced](skipped.md)\n```\n[c](c.md)\n"
	var got []string
	for _, l := range relativeLinks(md) {
		got = append(got, l.target+"@"+string(rune('0'+l.line)))
	}
	want := []string{"docs/a.md@1", "../b/@1", "c.md@6"}
	if ls := relativeLinks(md); len(ls) == 3 && ls[0].fragment != "x" {
		t.Errorf("fragment of the first link = %q, want x", ls[0].fragment)
	}
	page := "# Loss events: nothing is lost silently\n## `/status` and /healthz\n## x\n## x\n```\n# not a heading\n```\n<a id=\"status-endpoint\"></a>\n"
	a := anchors(page)
	for _, id := range []string{"loss-events-nothing-is-lost-silently", "status-and-healthz", "x", "x-1", "status-endpoint"} {
		if !a[id] {
			t.Errorf("anchors lacks %q: %v", id, a)
		}
	}
	if a["not-a-heading"] {
		t.Error("anchors took a line of a fenced block as a heading")
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("relativeLinks = %v, want %v", got, want)
	}
}

// link is one relative link: its target, its #fragment (without '#'), and
// its line.
type link struct {
	target, fragment string
	line             int
}

var (
	linkRE = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeRE = regexp.MustCompile("`[^`]*`")
)

// relativeLinks returns the inline links of the Markdown text md that point
// at a file of the repository: not in fenced code blocks or code spans, not
// a URL with a scheme, not a fragment of the same page.
func relativeLinks(md string) []link {
	var out []link
	fenced := false
	for i, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(codeRE.ReplaceAllString(line, ""), -1) {
			target, fragment, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			out = append(out, link{target, fragment, i + 1})
		}
	}
	return out
}

var (
	anchorIDRE = regexp.MustCompile(`<a id="([^"]+)"`)
	slugDropRE = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// anchors returns the fragment names a Markdown page offers: its headings
// outside fenced blocks, as GitHub makes them (lower case, punctuation but
// '-' and '_' dropped, spaces as '-', a repeated one suffixed -1, -2, ...),
// and the ids of its <a id="..."> tags.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	fenced := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range anchorIDRE.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		if !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		slug := strings.ReplaceAll(slugDropRE.ReplaceAllString(strings.ToLower(text), ""), " ", "-")
		id := slug
		for n := 1; out[id]; n++ {
			id = fmt.Sprintf("%s-%d", slug, n)
		}
		out[id] = true
	}
	return out
}
