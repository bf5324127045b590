package show

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirrorctl/mirrorctl/internal/cli/clitest"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/output"
)

const secret = "hunter2-secret"

func TestNewCmdShow(t *testing.T) {
	tests := []struct {
		args       []string
		wantFlow   string
		wantSource string
		wantTarget string
		wantErr    string
	}{
		{args: []string{}},
		{args: []string{"--flow", "nyc->fra"}, wantFlow: "nyc->fra", wantSource: "nyc", wantTarget: "fra"},
		{args: []string{"--flow=us-east->eu-west"}, wantFlow: "us-east->eu-west", wantSource: "us-east", wantTarget: "eu-west"},
		{args: []string{"--flow", "nyc"}, wantErr: `invalid --flow "nyc": want <source>-><target>, e.g. us-east->eu-west`},
		{args: []string{"--flow", "->fra"}, wantErr: `invalid --flow "->fra": want <source>-><target>, e.g. us-east->eu-west`},
		{args: []string{"--flow", "a->b->c"}, wantErr: `invalid --flow "a->b->c": want <source>-><target>, e.g. us-east->eu-west`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			ios, _, _, _ := iostreams.Test()
			var got *ShowOptions
			cmd := NewCmdShow(&cmdutil.Factory{IO: ios}, func(o *ShowOptions) error { got = o; return nil })
			cmd.SetArgs(tt.args)
			cmd.SetOut(ios.ErrOut)
			cmd.SetErr(ios.ErrOut)
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.Execute()
			if tt.wantErr != "" {
				var fe *cmdutil.FlagError
				if !errors.As(err, &fe) || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want *FlagError %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Flow != tt.wantFlow || got.Source != tt.wantSource || got.Target != tt.wantTarget {
				t.Fatalf("opts = flow %q source %q target %q", got.Flow, got.Source, got.Target)
			}
		})
	}
}

// resolved are mirrorctl's own settings as internal/cli resolves them, one
// of each origin.
var resolved = []cmdutil.Resolved{
	{Key: "config", Value: "testdata/mm2.properties", Origin: cmdutil.OriginFlag, Name: "--config"},
	{Key: "output", Value: "table", Origin: cmdutil.OriginEnv, Name: "MIRRORCTL_OUTPUT"},
	{Key: "no-color", Value: "false", Origin: cmdutil.OriginDefault},
	{Key: "verbose", Value: "1", Origin: cmdutil.OriginContext, Name: "prod", File: "/home/op/.config/mirrorctl/config.yaml", Line: 9},
	{Key: "audit-log", Value: "/home/op/.local/state/mirrorctl/audit.jsonl", Origin: cmdutil.OriginDefault},
	{Key: "source", Value: "nyc", Origin: cmdutil.OriginContext, Name: "prod", File: "/home/op/.config/mirrorctl/config.yaml", Line: 6},
	{Key: "target", Value: "", Origin: cmdutil.OriginDefault},
}

func options(ios *iostreams.IOStreams, format output.Format, flow string) *ShowOptions {
	path := filepath.Join("testdata", "mm2.properties")
	o := &ShowOptions{
		IO:         ios,
		Output:     func() output.Format { return format },
		ConfigPath: func() string { return path },
		Config:     func() (*config.Config, error) { return config.Load(path) },
		Resolved:   func() []cmdutil.Resolved { return resolved },
		Flow:       flow,
	}
	o.Source, o.Target, _ = strings.Cut(flow, "->")
	return o
}

func TestRunShow(t *testing.T) {
	tests := []struct {
		name   string
		format output.Format
		tty    bool
		flow   string
		golden string
	}{
		{name: "pipe", format: output.FormatTable, golden: "show.tsv"},
		{name: "tty", format: output.FormatTable, tty: true, golden: "show-tty.txt"},
		{name: "json", format: output.FormatJSON, golden: "show.json"},
		{name: "csv", format: output.FormatCSV, golden: "show.csv"},
		{name: "disabled flow by name", format: output.FormatTable, flow: "fra->nyc", golden: "show-fra-nyc.tsv"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, out, errOut := iostreams.Test()
			ios.SetStdoutTTY(tt.tty)
			ios.SetColorDisabled(true) // styled headers are tested in internal/output
			ios.SetTerminalWidth(120)
			if err := runShow(context.Background(), options(ios, tt.format, tt.flow)); err != nil {
				t.Fatal(err)
			}
			clitest.Golden(t, tt.golden, out.String())
			if errOut.Len() != 0 {
				t.Errorf("stderr = %q, want empty", errOut.String())
			}
		})
	}
}

// TestShowNeverPrintsSecret renders every format, on and off a TTY, and
// checks the JAAS password appears in neither stream.
func TestShowNeverPrintsSecret(t *testing.T) {
	for _, format := range []output.Format{output.FormatTable, output.FormatJSON, output.FormatCSV} {
		for _, tty := range []bool{false, true} {
			ios, _, out, errOut := iostreams.Test()
			ios.SetStdoutTTY(tty)
			ios.SetStderrTTY(tty)
			if err := runShow(context.Background(), options(ios, format, "")); err != nil {
				t.Fatal(err)
			}
			all := out.String() + errOut.String()
			if strings.Contains(all, secret) || strings.Contains(all, "password=") {
				t.Errorf("%s tty=%v: secret leaked:\n%s", format, tty, all)
			}
			if !strings.Contains(all, "**redacted**") {
				t.Errorf("%s tty=%v: sasl.jaas.config not shown as **redacted**", format, tty)
			}
		}
	}
}

func TestRunShowUnknownFlow(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	err := runShow(context.Background(), options(ios, output.FormatTable, "nyc->ams"))
	var fe *cmdutil.FlagError
	want := "flow nyc->ams is not in testdata/mm2.properties (clusters: nyc, fra)"
	if !errors.As(err, &fe) || err.Error() != want {
		t.Fatalf("error = %v, want *FlagError %q", err, want)
	}
}
