// Package validate implements `mirrorctl config validate`.
package validate

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/output"
)

// ValidateOptions are the dependencies of `mirrorctl config validate`.
type ValidateOptions struct {
	IO         *iostreams.IOStreams
	Output     func() output.Format
	ConfigPath func() string
	Config     func() (*config.Config, error)
}

// Result is the JSON document `config validate -o json` writes to stdout
// when the file is valid. (An invalid file exits 2 with the error object
// on stderr.)
type Result struct {
	output.Envelope
	// File is the path that was read.
	File string `json:"file"`
	// Valid is always true in a written Result.
	Valid bool `json:"valid"`
	// Clusters is the number of aliases in `clusters`.
	Clusters int `json:"clusters"`
	// EnabledFlows names the enabled flows, "source->target", sorted.
	EnabledFlows []string `json:"enabled_flows"`
	// Warnings are the non-fatal remarks, "file:line: key: msg", by line.
	Warnings []string `json:"warnings"`
}

// NewCmdValidate returns `mirrorctl config validate`. If runF is non-nil it
// is called with the options instead of runValidate (tests).
func NewCmdValidate(f *cmdutil.Factory, runF func(*ValidateOptions) error) *cobra.Command {
	opts := &ValidateOptions{IO: f.IO, Output: f.Output, ConfigPath: f.ConfigPath, Config: f.Config}
	return &cobra.Command{
		Use:   "validate",
		Short: "Check mm2.properties for errors",
		Long: "Parse mm2.properties as MirrorMaker 2 would and report every problem with its\n" +
			"file:line and key. Warnings (unknown or misspelt keys, ignored or deprecated\n" +
			"settings, duplicates) go to stderr and do not fail the check. Nothing is\n" +
			"sent to any cluster. Secret values never appear in the report.\n\n" +
			"EXIT STATUS\n\n" +
			"  0  the file is valid (it may have warnings)\n" +
			"  1  the file could not be checked\n" +
			"  2  the file has errors; each is listed on stderr",
		Example: "$ mirrorctl config validate -c mm2.properties\n$ MIRRORCTL_CONFIG=dr.properties mirrorctl config validate -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runValidate(cmd.Context(), opts)
		},
	}
}

func runValidate(_ context.Context, opts *ValidateOptions) error {
	cfg, err := opts.Config()
	if cfg != nil {
		cmdutil.PrintWarnings(opts.IO, cfg.Warnings)
	}
	if err != nil {
		return err
	}
	res := Result{
		Envelope:     output.NewEnvelope(),
		File:         opts.ConfigPath(),
		Valid:        true,
		Clusters:     len(cfg.Clusters),
		EnabledFlows: []string{},
		Warnings:     []string{},
	}
	for _, fl := range cfg.EnabledFlows() {
		res.EnabledFlows = append(res.EnabledFlows, fl.Name())
	}
	for _, w := range cfg.Warnings {
		res.Warnings = append(res.Warnings, w.String())
	}
	if opts.Output() == output.FormatJSON {
		return output.WriteJSON(opts.IO.Out, res)
	}
	if opts.IO.IsStderrTTY() {
		cmdutil.Successf(opts.IO, "%s is valid: %s, %s", res.File,
			plural(res.Clusters, "cluster"), plural(len(res.EnabledFlows), "enabled flow"))
	}
	return nil
}

func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
