// Package show implements `mirrorctl audit show`.
package show

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mirrorctl/mirrorctl/audit"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/output"
)

// ShowOptions are the dependencies and flags of `mirrorctl audit show`.
type ShowOptions struct {
	IO        *iostreams.IOStreams
	Output    func() output.Format
	Now       func() time.Time
	AuditPath func() string

	// Since keeps entries written at or after Now()-Since; 0 keeps all.
	Since time.Duration
}

// Result is the JSON document of `audit show -o json`.
type Result struct {
	output.Envelope
	// Entries are the entries shown, in file order, as stored.
	Entries []audit.Entry `json:"entries"`
}

// NewCmdShow returns `mirrorctl audit show`. If runF is non-nil it is
// called with the parsed options instead of runShow (tests).
func NewCmdShow(f *cmdutil.Factory, runF func(*ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{IO: f.IO, Output: f.Output, Now: f.Now, AuditPath: f.AuditPath}
	var since string
	cmd := &cobra.Command{
		Use:   "show [--since <duration>]",
		Short: "List the entries of the audit log",
		Long: "List the audit log's entries in the order they were written: sequence\n" +
			"number, time, kind (begin, end, note), command, end status and operation\n" +
			"id (shared by a begin and its end). With -o json each entry is shown in\n" +
			"full (user, host, masked command line, config digest, plan or results).\n\n" +
			"--since keeps the entries written in the last <duration> (30m, 2h, 7d).\n" +
			"Lines that are not entries are skipped with a warning; run\n" +
			"`mirrorctl audit verify` to check the chain.",
		Example: "$ mirrorctl audit show --since 2h\n$ mirrorctl audit show -o json --audit-log /var/log/mirrorctl/audit.jsonl",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if since != "" {
				d, err := ParseDuration(since)
				if err != nil {
					return cmdutil.FlagErrorf("--since: %w", err)
				}
				opts.Since = d
			}
			if runF != nil {
				return runF(opts)
			}
			return runShow(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "Only entries newer than this `duration` (30m, 2h, 7d)")
	return cmd
}

// ParseDuration parses a positive Go duration ("90m", "2h30m") or a whole
// number of days ("7d"). Errors quote the value.
func ParseDuration(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days <= 0 {
			return 0, fmt.Errorf("invalid duration %q (use e.g. 30m, 2h or 7d)", s)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("invalid duration %q (use e.g. 30m, 2h or 7d)", s)
	}
	return d, nil
}

func runShow(_ context.Context, opts *ShowOptions) error {
	path := opts.AuditPath()
	entries, err := audit.Read(path)
	if errors.Is(err, fs.ErrNotExist) {
		// Nothing has been audited yet: an empty list, not a failure.
		entries, err = nil, nil
		if opts.IO.IsStderrTTY() {
			fmt.Fprintf(opts.IO.ErrOut, "no audit log at %s yet\n", path)
		}
	}
	if err != nil {
		if entries == nil {
			return err
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			cmdutil.Warnf(opts.IO, "%s (skipped; run `mirrorctl audit verify`)", line)
		}
	}
	now := opts.Now()
	res := Result{Envelope: output.NewEnvelope(), Entries: []audit.Entry{}}
	for _, e := range entries {
		if opts.Since > 0 && e.Time.Before(now.Add(-opts.Since)) {
			continue
		}
		res.Entries = append(res.Entries, e)
	}
	format := opts.Output()
	if format == output.FormatJSON {
		return output.WriteJSON(opts.IO.Out, res)
	}
	if format != output.FormatCSV && len(res.Entries) == 0 {
		return nil // no header over nothing
	}
	t := output.NewTable("seq", "time", "kind", "command", "status", "op")
	for _, e := range res.Entries {
		tm := e.Time.UTC().Format(time.RFC3339Nano)
		if format != output.FormatCSV {
			tm = output.Time(opts.IO, e.Time, now)
		}
		t.AddRow(strconv.FormatInt(e.Seq, 10), tm, e.Kind, e.Command, e.Status, e.Op)
	}
	return t.Render(opts.IO, format)
}
