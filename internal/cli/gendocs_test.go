package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The reference is the same bytes on every run (no date), keeps the
// synopsis's <placeholders> in both forms, and has the exit-codes topic,
// which cobra/doc leaves out.
func TestGenerateDocs(t *testing.T) {
	gen := func() (md, man string) {
		md, man = t.TempDir(), t.TempDir()
		if err := GenerateDocs(md, man); err != nil {
			t.Fatal(err)
		}
		return md, man
	}
	md1, man1 := gen()
	md2, man2 := gen()
	for _, pair := range [][2]string{{md1, md2}, {man1, man2}} {
		files, _ := filepath.Glob(filepath.Join(pair[0], "*"))
		if len(files) < 20 {
			t.Fatalf("%d pages in %s", len(files), pair[0])
		}
		for _, f := range files {
			a, _ := os.ReadFile(f)
			b, err := os.ReadFile(filepath.Join(pair[1], filepath.Base(f)))
			if err != nil || !bytes.Equal(a, b) {
				t.Fatalf("%s differs between two runs (%v)", filepath.Base(f), err)
			}
		}
	}
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if s := read(filepath.Join(man1, "mirrorctl-lag.1")); !strings.Contains(s, `.TH "MIRRORCTL" "1" "" "mirrorctl"`) || !strings.Contains(s, "--source <alias>") {
		t.Fatalf("lag man page: dated, or placeholders lost:\n%s", s[:min(len(s), 600)])
	}
	if s := read(filepath.Join(md1, "mirrorctl_lag.md")); !strings.Contains(s, "```\nFor every replicated partition") {
		t.Fatalf("lag page's long help is not preformatted:\n%s", s[:min(len(s), 600)])
	}
	if s := read(filepath.Join(md1, "mirrorctl_help_exit-codes.md")); !strings.Contains(s, "interrupted by SIGINT or SIGTERM") {
		t.Fatalf("exit-codes topic page:\n%s", s)
	}
	if s := read(filepath.Join(md1, "README.md")); !strings.Contains(s, "[`mirrorctl failover plan`](mirrorctl_failover_plan.md)") {
		t.Fatalf("index:\n%s", s)
	}
}
