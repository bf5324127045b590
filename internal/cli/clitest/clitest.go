// Package clitest holds helpers shared by the command tests: golden-file
// comparison with a shared -update flag.
package clitest

import (
	"flag"
	"os"
	"path/filepath"
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
