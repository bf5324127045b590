package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The partition-task engine (package replicate, without its subpackages) is
// the code with the most concurrency in the module. These limits keep each
// of its parts small enough to read whole (docs/architecture.md,
// "Replication engine"):
const (
	maxStructFields = 15 // fields of one struct type (an embedded struct counts as one)
	maxFuncLines    = 80 // lines of one function or method, from func to closing brace
)

// documents are the exported value types exempt from maxStructFields: a
// configuration (one field per mm2.properties key) and JSON documents (one
// field per documented JSON field). Splitting them would change the public
// API and the JSON that scripts read, not make a lifecycle easier to follow.
var documents = map[string]bool{"FlowConfig": true, "FlowStatus": true, "PartitionStats": true}

// shape is what shapeOf measured in one package directory.
type shape struct {
	structs   map[string]int // type name -> fields
	funcs     map[string]int // func name -> lines
	mutexes   []string       // every sync.Mutex / sync.RWMutex field or variable, as file:line name
	uncovered []string       // those of mutexes with no comment saying what they guard
}

// shapeOf parses the non-test Go files of dir.
func shapeOf(t *testing.T, dir string) shape {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	s := shape{structs: map[string]int{}, funcs: map[string]int{}}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeSpec:
				if st, ok := n.Type.(*ast.StructType); ok {
					s.structs[n.Name.Name] = len(st.Fields.List) + extraNames(st.Fields)
				}
			case *ast.FuncDecl:
				name := n.Name.Name
				if n.Recv != nil && len(n.Recv.List) == 1 {
					name = recvName(n.Recv.List[0].Type) + "." + name
				}
				s.funcs[name] = fset.Position(n.End()).Line - fset.Position(n.Pos()).Line + 1
			case *ast.Field:
				if isMutex(n.Type) {
					for _, id := range n.Names {
						where := fmt.Sprintf("%s:%d %s", filepath.Base(name), fset.Position(id.Pos()).Line, id.Name)
						s.mutexes = append(s.mutexes, where)
						if !commented(n.Doc) && !commented(n.Comment) {
							s.uncovered = append(s.uncovered, where)
						}
					}
				}
			}
			return true
		})
	}
	return s
}

// extraNames counts the names beyond the first in fields like "a, b int".
func extraNames(fl *ast.FieldList) int {
	n := 0
	for _, f := range fl.List {
		if len(f.Names) > 1 {
			n += len(f.Names) - 1
		}
	}
	return n
}

func recvName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return recvName(e.X)
	case *ast.Ident:
		return e.Name
	case *ast.IndexExpr:
		return recvName(e.X)
	}
	return "?"
}

func isMutex(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == "sync" && (sel.Sel.Name == "Mutex" || sel.Sel.Name == "RWMutex")
}

// commented reports a comment that says what a mutex guards.
func commented(cg *ast.CommentGroup) bool {
	if cg == nil {
		return false
	}
	text := strings.ToLower(cg.Text())
	return strings.Contains(text, "guard") || strings.Contains(text, "serialis") || strings.Contains(text, "held")
}

// TestReplicateEngineShape enforces the limits above on package replicate.
// Run with -v to print the measurements (the counts in a closing note).
func TestReplicateEngineShape(t *testing.T) {
	s := shapeOf(t, filepath.Join("..", "..", "replicate"))
	var bad []string
	for name, n := range s.structs {
		if n > maxStructFields && !documents[name] {
			bad = append(bad, fmt.Sprintf("struct %s has %d fields (limit %d)", name, n, maxStructFields))
		}
	}
	long := 0
	for name, n := range s.funcs {
		if n > maxFuncLines {
			long++
			bad = append(bad, fmt.Sprintf("func %s is %d lines (limit %d)", name, n, maxFuncLines))
		}
	}
	for _, m := range s.uncovered {
		bad = append(bad, "mutex "+m+" has no comment saying what it guards")
	}
	sort.Strings(bad)
	widest, widestName := 0, ""
	for name, n := range s.structs {
		if documents[name] {
			continue
		}
		if n > widest || n == widest && name < widestName {
			widest, widestName = n, name
		}
	}
	t.Logf("replicate: %d structs (widest %s, %d fields), %d funcs (%d over %d lines), %d mutexes",
		len(s.structs), widestName, widest, len(s.funcs), long, maxFuncLines, len(s.mutexes))
	for _, b := range bad {
		t.Error(b)
	}
}
