// Command gen-docs writes mirrorctl's command reference from its command
// tree: Markdown pages into docs/commands and man pages into man/man1 (or
// the directories given as arguments), and the configuration reference from
// the code's key table into docs/config-reference.md and the fields of
// every JSON document into docs/json-fields.md (beside the Markdown
// directory). `make docs` runs it; `make docs-check` fails when the
// committed pages differ from what it writes.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/mirrorctl/mirrorctl/internal/cli"
)

func main() {
	md, man := "docs/commands", "man/man1"
	if len(os.Args) == 3 {
		md, man = os.Args[1], os.Args[2]
	} else if len(os.Args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: gen-docs [<markdown dir> <man dir>]")
		os.Exit(2)
	}
	if err := cli.GenerateDocs(md, man); err != nil {
		fmt.Fprintln(os.Stderr, "gen-docs:", err)
		os.Exit(1)
	}
	docs := filepath.Dir(filepath.Clean(md))
	if err := cli.GenerateConfigReference(filepath.Join(docs, "config-reference.md")); err != nil {
		fmt.Fprintln(os.Stderr, "gen-docs:", err)
		os.Exit(1)
	}
	if err := cli.GenerateJSONReference(filepath.Join(docs, "json-fields.md")); err != nil {
		fmt.Fprintln(os.Stderr, "gen-docs:", err)
		os.Exit(1)
	}
}
