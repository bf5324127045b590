package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/mirrorctl/mirrorctl"

// pkg is the part of `go list -json` the rules need.
type pkg struct {
	ImportPath string
	Imports    []string // direct, non-test
	Deps       []string // transitive, non-test
}

// listPackages runs `go list -json` over the whole module (non-test files,
// this machine's GOOS/GOARCH).
func listPackages(t *testing.T) []pkg {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the import-direction check needs the go tool on PATH: %v", err)
	}
	cmd := exec.Command(goBin, "list", "-json", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list returned %d packages; expected the whole module", len(pkgs))
	}
	return pkgs
}

// rel strips the module path: "github.com/mirrorctl/mirrorctl/replicate" -> "replicate".
func rel(path string) (string, bool) {
	if path == module {
		return "", true
	}
	if r, ok := strings.CutPrefix(path, module+"/"); ok {
		return r, true
	}
	return "", false
}

func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// isEngine reports whether p (module-relative) is engine-side code: the
// library packages at the top level and the internal packages they build on.
// The CLI (internal/cli), the renderers (internal/output, internal/iostreams),
// the entry point (cmd), and the dev-only trees (bench, itest, harness) are not.
func isEngine(p string) bool {
	for _, front := range []string{"cmd", "internal/cli", "internal/output", "internal/iostreams", "internal/archtest", "bench", "itest", "harness"} {
		if under(p, front) {
			return false
		}
	}
	return true
}

// engineForbidden lists what engine packages must not depend on, even
// indirectly: the CLI and everything that draws on a terminal.
var engineForbidden = []string{
	module + "/internal/cli",
	module + "/internal/output",
	module + "/internal/iostreams",
	"github.com/spf13/cobra",
	"github.com/spf13/viper",
	"github.com/charmbracelet/lipgloss",
	"github.com/olekukonko/tablewriter",
}

// importViolations returns one line per broken rule, sorted.
func importViolations(pkgs []pkg) []string {
	var bad []string
	for _, p := range pkgs {
		r, ok := rel(p.ImportPath)
		if !ok {
			continue
		}
		switch {
		case under(r, "cmd"):
			// cmd/mirrorctl is main only: the standard library and internal/cli.
			for _, imp := range p.Imports {
				if ir, mod := rel(imp); mod && ir != "internal/cli" {
					bad = append(bad, r+" imports "+ir+" (cmd imports only internal/cli)")
				} else if !mod && strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
					bad = append(bad, r+" imports "+imp+" (cmd imports only internal/cli)")
				}
			}
		case isEngine(r):
			for _, f := range engineForbidden {
				for _, dep := range p.Deps {
					if under(dep, f) {
						bad = append(bad, r+" depends on "+f+" (engine packages never reach the CLI or terminal rendering)")
						break
					}
				}
			}
		case strings.HasPrefix(r, "internal/cli/"):
			// A command package imports cmdutil and its own subcommands,
			// never another command: shared logic lives in an engine package
			// or in cmdutil.
			for _, imp := range p.Imports {
				ir, mod := rel(imp)
				switch {
				case !mod || !under(ir, "internal/cli"):
				case ir == "internal/cli":
					bad = append(bad, r+" imports internal/cli (only cmd does)")
				case under(ir, "internal/cli/cmdutil"), under(ir, "internal/cli/clitest"), under(ir, r):
				default:
					bad = append(bad, r+" imports "+ir+" (no command package imports another)")
				}
			}
		}
	}
	sort.Strings(bad)
	return bad
}

// TestImportDirection enforces the layering of docs/architecture.md:
// cmd -> internal/cli -> command packages -> engines, never back.
func TestImportDirection(t *testing.T) {
	for _, v := range importViolations(listPackages(t)) {
		t.Error(v)
	}
}

// TestImportViolationsCatchesBadImports proves the rules fire, on a made-up
// graph, so a check that silently passes everything is itself a failure.
func TestImportViolationsCatchesBadImports(t *testing.T) {
	m := func(s string) string { return module + "/" + s }
	pkgs := []pkg{
		{ImportPath: m("cmd/mirrorctl"), Imports: []string{"os", m("internal/cli"), m("replicate")}},
		{ImportPath: m("failover"), Deps: []string{"context", m("replicate"), m("internal/output"), m("internal/iostreams")}},
		{ImportPath: m("lag"), Deps: []string{m("internal/cli/cmdutil"), "github.com/spf13/cobra", "github.com/spf13/cobra/doc"}},
		{ImportPath: m("internal/cli/lag"), Imports: []string{m("internal/cli/cmdutil"), m("internal/cli/aclplan"), m("lag")}},
		{ImportPath: m("internal/cli/configcmd"), Imports: []string{m("internal/cli/configcmd/show"), m("internal/cli/cmdutil")}},
		{ImportPath: m("internal/cli"), Imports: []string{m("internal/cli/lag")}},
		{ImportPath: m("internal/output"), Deps: []string{m("internal/iostreams")}},
	}
	got := importViolations(pkgs)
	want := []string{
		"cmd/mirrorctl imports replicate (cmd imports only internal/cli)",
		"failover depends on " + m("internal/iostreams") + " (engine packages never reach the CLI or terminal rendering)",
		"failover depends on " + m("internal/output") + " (engine packages never reach the CLI or terminal rendering)",
		"internal/cli/lag imports internal/cli/aclplan (no command package imports another)",
		"lag depends on " + m("internal/cli") + " (engine packages never reach the CLI or terminal rendering)",
		"lag depends on github.com/spf13/cobra (engine packages never reach the CLI or terminal rendering)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
