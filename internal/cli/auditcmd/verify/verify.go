// Package verify implements `mirrorctl audit verify`.
package verify

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/mirrorctl/mirrorctl/audit"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/output"
)

// VerifyOptions are the dependencies of `mirrorctl audit verify`.
type VerifyOptions struct {
	IO        *iostreams.IOStreams
	Output    func() output.Format
	AuditPath func() string
}

// Result is the JSON document of `audit verify -o json`.
type Result struct {
	output.Envelope
	// File is the audit log that was checked.
	File string `json:"file"`
	// Entries is the number of lines that are audit entries.
	Entries int `json:"entries"`
	// Intact is true when no problem was found.
	Intact bool `json:"intact"`
	// Problems are the defects found, in line order.
	Problems []audit.Problem `json:"problems"`
	// Unfinished are the operations with a begin entry and no end: still
	// running, killed, or the end of the file removed. They do not make
	// the log broken.
	Unfinished []Unfinished `json:"unfinished"`
}

// Unfinished is one begin entry without an end.
type Unfinished struct {
	Seq     int64  `json:"seq"`
	Op      string `json:"op"`
	Command string `json:"command"`
	Time    string `json:"time"`
}

// NewCmdVerify returns `mirrorctl audit verify`. If runF is non-nil it is
// called with the parsed options instead of runVerify (tests).
func NewCmdVerify(f *cmdutil.Factory, runF func(*VerifyOptions) error) *cobra.Command {
	opts := &VerifyOptions{IO: f.IO, Output: f.Output, AuditPath: f.AuditPath}
	return &cobra.Command{
		Use:   "verify",
		Short: "Check that no audit entry was modified, removed or reordered",
		Long: "Check the audit log's hash chain line by line: each line must be a complete\n" +
			"entry, its sequence number must follow the previous one, its prev hash\n" +
			"must be the SHA-256 of the line before it and its own hash must match its\n" +
			"content. A modified, removed, inserted or reordered entry, a garbage line\n" +
			"or a truncated last line is reported with its line number.\n\n" +
			"Operations with a begin entry and no end are listed as warnings: a command\n" +
			"still running, one that was killed, or entries removed from the end of\n" +
			"the file.\n\n" +
			"EXIT STATUS\n\n" +
			"  0  the chain is intact\n" +
			"  1  the log could not be read (missing file, I/O error)\n" +
			"  3  the chain is broken",
		Example: "$ mirrorctl audit verify\n$ mirrorctl audit verify -o json --audit-log /var/log/mirrorctl/audit.jsonl",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runVerify(cmd.Context(), opts)
		},
	}
}

func runVerify(_ context.Context, opts *VerifyOptions) error {
	path := opts.AuditPath()
	r, err := audit.Check(path)
	if err != nil {
		return err
	}
	res := Result{
		Envelope:   output.NewEnvelope(),
		File:       path,
		Entries:    len(r.Entries),
		Intact:     r.Intact(),
		Problems:   r.Problems,
		Unfinished: []Unfinished{},
	}
	if res.Problems == nil {
		res.Problems = []audit.Problem{}
	}
	for _, e := range r.Unfinished {
		res.Unfinished = append(res.Unfinished, Unfinished{Seq: e.Seq, Op: e.Op, Command: e.Command, Time: e.Time.UTC().Format("2006-01-02T15:04:05.999999999Z07:00")})
	}
	format := opts.Output()
	if format == output.FormatJSON {
		if err := output.WriteJSON(opts.IO.Out, res); err != nil {
			return err
		}
		if !res.Intact {
			return cmdutil.ErrCheckFailed
		}
		return nil
	}
	for _, u := range res.Unfinished {
		cmdutil.Warnf(opts.IO, "%s:%d: %s (operation %s, %s) has a begin entry and no end",
			path, u.Seq, u.Command, u.Op, u.Time)
	}
	if res.Intact {
		if opts.IO.IsStderrTTY() {
			cmdutil.Successf(opts.IO, "%s, chain intact", cmdutil.Plural(res.Entries, "entry", "entries"))
		}
		return nil
	}
	t := output.NewTable("line", "seq", "problem")
	for _, p := range res.Problems {
		seq := ""
		if p.Seq != 0 {
			seq = strconv.FormatInt(p.Seq, 10)
		}
		t.AddRow(strconv.Itoa(p.Line), seq, p.Msg)
	}
	if err := t.Render(opts.IO, format); err != nil {
		return err
	}
	return cmdutil.CheckFailedf("audit log %s is broken: %s in %s", path,
		plural(len(res.Problems), "problem", "problems"), plural(r.Lines, "line", "lines"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
