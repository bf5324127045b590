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
	// ExpectHead is --expect-head, "" when not given.
	ExpectHead string
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
	// Head is the chain's head now: the last entry's seq and the SHA-256
	// of its line. Keep it outside the log; --expect-head with it later
	// detects entries removed from the end, which the chain alone cannot.
	Head audit.Head `json:"head"`
	// ExpectedHead is --expect-head as parsed, absent when not given; a
	// log that no longer holds it is not intact (a problem with line 0).
	ExpectedHead *audit.Head `json:"expected_head,omitempty"`
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
	cmd := &cobra.Command{
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
			"Whole entries removed from the END leave a valid, shorter chain, which no\n" +
			"check of the file alone can tell from a log that simply has fewer entries.\n" +
			"So verify reports the chain's head, <seq>:<sha256 of the last line> (on a\n" +
			"terminal and in JSON as \"head\"): keep it somewhere the log's writers\n" +
			"cannot change (a ticket, a CI artefact, another host), and\n" +
			"--expect-head <seq>:<sha256> later fails (exit 3) unless the log still holds\n" +
			"that entry with that hash. Entries appended since are fine. Someone who can\n" +
			"rewrite the file can still rewrite every hash after the recorded head.\n\n" +
			"EXIT STATUS\n\n" +
			"  0  the chain is intact\n" +
			"  1  the log could not be read (missing file, I/O error)\n" +
			"  3  the chain is broken",
		Example: "$ mirrorctl audit verify\n$ mirrorctl audit verify -o json --audit-log /var/log/mirrorctl/audit.jsonl\n" +
			"$ mirrorctl audit verify --expect-head 42:9f2c4e1b07a3d5e6",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runVerify(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.ExpectHead, "expect-head", "", "Fail unless the log still holds this head, `<seq>:<sha256>` as an earlier verify printed it (a hash prefix of 12+ hex digits is enough)")
	return cmd
}

func runVerify(_ context.Context, opts *VerifyOptions) error {
	var want *audit.Head
	if opts.ExpectHead != "" {
		h, err := audit.ParseHead(opts.ExpectHead)
		if err != nil {
			return cmdutil.FlagErrorf("--expect-head: %s", err)
		}
		want = &h
	}
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
		Head:       r.Head(),
	}
	if res.Problems == nil {
		res.Problems = []audit.Problem{}
	}
	if want != nil {
		res.ExpectedHead = want
		if err := r.CheckHead(*want); err != nil {
			res.Intact = false
			res.Problems = append(res.Problems, audit.Problem{Line: 0, Seq: want.Seq, Msg: err.Error()})
		}
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
			cmdutil.Successf(opts.IO, "%s, chain intact, head %s", cmdutil.Plural(res.Entries, "entry", "entries"), res.Head)
		}
		return nil
	}
	t := output.NewTable("line", "seq", "problem")
	for _, p := range res.Problems {
		seq := ""
		if p.Seq != 0 {
			seq = strconv.FormatInt(p.Seq, 10)
		}
		line := strconv.Itoa(p.Line)
		if p.Line == 0 {
			line = "-" // the expected head: no one line
		}
		t.AddRow(line, seq, p.Msg)
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
