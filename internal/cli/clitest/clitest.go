// Package clitest holds helpers shared by the command tests: golden-file
// comparison with a shared -update flag, and aligned tables at several
// terminal widths with their identity columns checked whole.
package clitest

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Update is the -update test flag: golden files are rewritten from the
// output instead of compared (`go test ./internal/cli/... -update`).
var Update = flag.Bool("update", false, "rewrite golden files under testdata/golden")

// Golden compares got with the file testdata/golden/<name> relative to the
// test's package directory, or writes it when -update is set.
func Golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run with -update to accept):\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

// TableWidths are the terminal widths, in columns, at which the command
// goldens render their aligned tables: narrow, the common default and wide.
var TableWidths = []int{80, 100, 200}

// GoldenWidths renders a command's aligned table at each of TableWidths
// (render gets the width and returns stdout), compares each with
// testdata/golden/<base>-<width>.txt, and fails when one of identities (the
// flow, group, topic values the rows name) is missing or was cut (a prefix
// of it followed by "…"). Lines may be wider than the terminal only where
// the identity columns alone do not fit: the goldens show it.
func GoldenWidths(t *testing.T, base string, render func(t *testing.T, width int) string, identities ...string) {
	t.Helper()
	for _, width := range TableWidths {
		t.Run(fmt.Sprintf("%s-%d", base, width), func(t *testing.T) {
			got := render(t, width)
			Golden(t, fmt.Sprintf("%s-%d.txt", base, width), got)
			IdentitiesWhole(t, got, identities...)
		})
	}
}

// IdentitiesWhole fails t when one of ids does not appear in out, or
// appears cut: a cell (at a line start or after a space) holding a prefix
// of it followed by "…".
func IdentitiesWhole(t *testing.T, out string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if !strings.Contains(out, id) {
			t.Errorf("%q missing from:\n%s", id, out)
		}
		r := []rune(id)
		for k := 1; k < len(r); k++ {
			cut := string(r[:k]) + "…"
			if strings.HasPrefix(out, cut) || strings.Contains(out, " "+cut) || strings.Contains(out, "\n"+cut) {
				t.Errorf("%q cut to %q in:\n%s", id, string(r[:k])+"…", out)
				break
			}
		}
	}
}
