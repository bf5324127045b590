package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestJSONReferenceCoversResults finds every top-level JSON document the
// command packages build (a composite literal with
// `Envelope: output.NewEnvelope()`) and checks that jsonDocs lists its type,
// so docs/json-fields.md documents every -o json result.
func TestJSONReferenceCoversResults(t *testing.T) {
	listed := map[string]bool{}
	for _, d := range jsonDocs {
		listed[d.typ.PkgPath()+"."+d.typ.Name()] = true
	}
	var found []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			cl, ok := n.(*ast.CompositeLit)
			if !ok || !buildsEnvelope(cl) {
				return true
			}
			if id, ok := cl.Type.(*ast.Ident); ok {
				found = append(found, "github.com/mirrorctl/mirrorctl/internal/cli/"+filepath.ToSlash(filepath.Dir(path))+"."+id.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(found)
	if len(found) < 15 {
		t.Fatalf("found %d JSON result types, want at least 15 (did the search break?): %v", len(found), found)
	}
	for _, name := range found {
		if !listed[name] {
			t.Errorf("%s is written with -o json but jsonDocs (jsonref.go) does not list it", name)
		}
	}
}

// buildsEnvelope reports whether cl sets Envelope: output.NewEnvelope().
func buildsEnvelope(cl *ast.CompositeLit) bool {
	for _, el := range cl.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		if k, ok := kv.Key.(*ast.Ident); !ok || k.Name != "Envelope" {
			continue
		}
		if call, ok := kv.Value.(*ast.CallExpr); ok {
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "NewEnvelope" {
				return true
			}
		}
	}
	return false
}

// TestJSONReferenceIsCurrent regenerates docs/json-fields.md and compares it
// with the committed file, so a result type changed without `make docs`
// fails here as well as in make docs-check.
func TestJSONReferenceIsCurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "json-fields.md")
	if err := GenerateJSONReference(path); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../docs/json-fields.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Error("docs/json-fields.md is stale: run make docs and commit it")
	}
	for _, field := range []string{"`flows[].partitions[].records_behind` | integer", "`plans[].groups[].incomplete` | list of string", "`error.exit_code` | integer"} {
		if !strings.Contains(string(got), field) {
			t.Errorf("json-fields.md lacks the row %s", field)
		}
	}
}
