package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"

	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
)

// manDate matches the date field of a man page's .TH line, which cobra fills
// with the month of generation ("Dec 2026").
var manDate = regexp.MustCompile(`(?m)^(\.TH "[^"]*" "[^"]*" )"[^"]*"`)

// GenerateDocs writes the command reference built from the command tree:
// one Markdown page per command into mdDir (docs/commands/mirrorctl_*.md,
// cobra/doc's naming, plus an index README.md) and one man page per command
// into manDir (man/man1/mirrorctl-*.1, section 1). Help topics such as
// exit-codes get a page of their own, which cobra/doc leaves out. Pages carry
// no generation date, so the same tree always gives the same bytes and CI can
// tell stale pages from current ones (`make docs-check`). Existing
// mirrorctl*.md / mirrorctl*.1 files are removed first, so a removed command
// leaves no page behind. Errors are the file system's.
func GenerateDocs(mdDir, manDir string) error {
	for _, d := range []struct{ dir, glob string }{{mdDir, "mirrorctl*.md"}, {manDir, "mirrorctl*.1"}} {
		if err := os.MkdirAll(d.dir, 0o755); err != nil {
			return err
		}
		old, _ := filepath.Glob(filepath.Join(d.dir, d.glob))
		for _, p := range old {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	// Both generators read the long help as Markdown, which would reflow
	// its aligned tables and drop <placeholders> as HTML: each gets a tree
	// of its own whose long help is preformatted (a fenced block for
	// Markdown, an indented one for the man pages' Markdown source) and
	// whose synopsis and flag texts have their angle brackets escaped.
	root, done := docsTree(func(long string) string { return "```\n" + long + "\n```" }, nil)
	defer done()
	if err := doc.GenMarkdownTree(root, mdDir); err != nil {
		return err
	}
	manRoot, manDone := docsTree(func(long string) string {
		return "    " + strings.ReplaceAll(long, "\n", "\n    ")
	}, strings.NewReplacer("<", `\<`, ">", `\>`))
	defer manDone()
	header := &doc.GenManHeader{Title: "MIRRORCTL", Section: "1", Source: "mirrorctl", Manual: "mirrorctl manual"}
	if err := doc.GenManTree(manRoot, header, manDir); err != nil {
		return err
	}
	if err := undateManPages(manDir); err != nil {
		return err
	}
	topics := helpTopicCommands(root)
	for _, c := range topics {
		if err := writeTopic(c, mdDir, manDir); err != nil {
			return err
		}
	}
	return writeIndex(root, topics, mdDir)
}

// GenerateConfigReference writes the configuration reference built from the
// config package's key table (config.WriteReference) to path, the generated
// docs/config-reference.md. Errors are the file system's.
func GenerateConfigReference(path string) error {
	var b bytes.Buffer
	if err := config.WriteReference(&b); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// docsTree builds a command tree for the generators, with every long help
// passed through long and, when esc is set, every use line and flag usage
// through esc. done closes what the tree's factory opened (nothing, unless a
// command ran).
func docsTree(long func(string) string, esc *strings.Replacer) (root *cobra.Command, done func()) {
	ios, _, _, _ := iostreams.Test()
	g := &globalOptions{}
	f, cleanup := newFactory(ios, NewLogger(ios.ErrOut), g, &stopWatchdog{})
	root = NewCmdRoot(f, g)
	root.DisableAutoGenTag = true
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Long != "" && !c.IsAdditionalHelpTopicCommand() {
			c.Long = long(c.Long)
		}
		if esc != nil {
			c.Use = esc.Replace(c.Use)
			escFlag := func(fl *pflag.Flag) { fl.Usage = esc.Replace(fl.Usage) }
			c.LocalFlags().VisitAll(escFlag)
			c.InheritedFlags().VisitAll(escFlag)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return root, cleanup
}

// helpTopicCommands returns root's help-only children (see newHelpTopic).
func helpTopicCommands(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, c := range root.Commands() {
		if c.IsAdditionalHelpTopicCommand() {
			out = append(out, c)
		}
	}
	return out
}

// undateManPages blanks the .TH date of every page in dir.
func undateManPages(dir string) error {
	pages, err := filepath.Glob(filepath.Join(dir, "mirrorctl*.1"))
	if err != nil {
		return err
	}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(p, manDate.ReplaceAll(b, []byte(`$1""`)), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// writeTopic writes a help topic's text as mirrorctl_help_<name>.md and
// mirrorctl-help-<name>.1.
func writeTopic(c *cobra.Command, mdDir, manDir string) error {
	name := c.Name()
	md := fmt.Sprintf("## mirrorctl help %s\n\n%s\n\n```\n%s\n```\n\n### SEE ALSO\n\n* [mirrorctl](mirrorctl.md)\t - %s\n",
		name, c.Short, c.Long, c.Root().Short)
	if err := os.WriteFile(filepath.Join(mdDir, "mirrorctl_help_"+name+".md"), []byte(md), 0o644); err != nil {
		return err
	}
	var man bytes.Buffer
	fmt.Fprintf(&man, ".TH \"MIRRORCTL\" \"1\" \"\" \"mirrorctl\" \"mirrorctl manual\"\n.SH NAME\nmirrorctl-help-%s \\- %s\n.SH DESCRIPTION\n.nf\n%s\n.fi\n.SH SEE ALSO\n\\fBmirrorctl(1)\\fP\n",
		name, c.Short, strings.ReplaceAll(c.Long, `\`, `\e`))
	return os.WriteFile(filepath.Join(manDir, "mirrorctl-help-"+name+".1"), man.Bytes(), 0o644)
}

// writeIndex writes README.md in mdDir: every command and help topic with
// its one-line summary, in tree order.
func writeIndex(root *cobra.Command, topics []*cobra.Command, mdDir string) error {
	var b strings.Builder
	b.WriteString("# Command reference\n\n")
	b.WriteString("Generated from the command tree by `make docs` (CI fails when it is stale); the same text is\n")
	b.WriteString("`mirrorctl <command> --help` and `man mirrorctl-<command>` after `make install`.\n\n")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() || c.IsAdditionalHelpTopicCommand() {
			return
		}
		file := strings.ReplaceAll(c.CommandPath(), " ", "_") + ".md"
		fmt.Fprintf(&b, "- [`%s`](%s): %s\n", c.CommandPath(), file, c.Short)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, c := range topics {
		fmt.Fprintf(&b, "- [`mirrorctl help %s`](mirrorctl_help_%s.md): %s\n", c.Name(), c.Name(), c.Short)
	}
	return os.WriteFile(filepath.Join(mdDir, "README.md"), []byte(b.String()), 0o644)
}
