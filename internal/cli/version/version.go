// Package version implements `mirrorctl version`.
package version

import (
	"context"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/mirrorctl/mirrorctl/internal/buildinfo"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/output"
)

// VersionOptions are the dependencies and flags of `mirrorctl version`.
type VersionOptions struct {
	IO     *iostreams.IOStreams
	Output func() output.Format

	// Info returns the build facts to print; tests pin it.
	Info func() Info
}

// Info is the JSON result of `mirrorctl version -o json`.
type Info struct {
	output.Envelope
	// Version is the release ("v0.1.0") or "dev".
	Version string `json:"version"`
	// Commit is the VCS revision the binary was built from, or "".
	Commit string `json:"commit"`
	// GoVersion is the toolchain that built the binary ("go1.26.8").
	GoVersion string `json:"go_version"`
	// Platform is GOOS/GOARCH ("linux/amd64").
	Platform string `json:"platform"`
}

// CurrentInfo returns this binary's Info from internal/buildinfo and the
// runtime.
func CurrentInfo() Info {
	return Info{
		Envelope:  output.NewEnvelope(),
		Version:   buildinfo.String(),
		Commit:    buildinfo.Commit,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
}

// NewCmdVersion returns `mirrorctl version`. If runF is non-nil it is called
// with the parsed options instead of runVersion (tests).
func NewCmdVersion(f *cmdutil.Factory, runF func(*VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{IO: f.IO, Output: f.Output, Info: CurrentInfo}
	return &cobra.Command{
		Use:   "version",
		Short: "Print the mirrorctl version, commit and Go version",
		Long: "Print the mirrorctl release, the commit it was built from, the Go toolchain\n" +
			"and the platform. With -o json the result is one JSON document.",
		Example: "$ mirrorctl version\n$ mirrorctl version -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runVersion(cmd.Context(), opts)
		},
	}
}

func runVersion(_ context.Context, opts *VersionOptions) error {
	info := opts.Info()
	switch opts.Output() {
	case output.FormatJSON:
		return output.WriteJSON(opts.IO.Out, info)
	case output.FormatCSV, output.FormatTSV:
		t := output.NewTable("version", "commit", "go_version", "platform")
		t.AddRow(info.Version, info.Commit, info.GoVersion, info.Platform)
		return t.Render(opts.IO, opts.Output())
	}
	commit := info.Commit
	if commit == "" {
		commit = "unknown"
	}
	_, err := fmt.Fprintf(opts.IO.Out, "mirrorctl %s (commit %s, %s, %s)\n", info.Version, commit, info.GoVersion, info.Platform)
	return err
}
