package contextcmd

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
)

func TestNewCmdSet(t *testing.T) {
	tests := []struct {
		args    []string
		values  map[string]string
		unset   []string
		use     bool
		wantErr string
	}{
		{args: []string{"prod", "--config", "a.properties", "--source", "us-east", "--target", "eu-west"},
			values: map[string]string{"config": "a.properties", "source": "us-east", "target": "eu-west"}},
		{args: []string{"prod", "--no-color", "--verbose", "2", "--use"}, values: map[string]string{"no-color": "true", "verbose": "2"}, use: true},
		{args: []string{"prod", "--source", ""}, values: map[string]string{"source": ""}},
		{args: []string{"prod", "--unset", "target", "--unset", "output"}, values: map[string]string{}, unset: []string{"target", "output"}},
		{args: []string{"prod", "--unset", "name"}, wantErr: `--unset "name": not a context key`},
		{args: []string{"prod", "--unset", "outptu"}, wantErr: `--unset "outptu": not a context key`},
		{args: []string{"prod", "--target", "x", "--unset", "target"}, wantErr: "--target and --unset target contradict each other"},
		{args: []string{"-bad"}, wantErr: "unknown shorthand flag"},
		{args: []string{"has space"}, wantErr: `invalid context name "has space"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			ios, _, _, _ := iostreams.Test()
			var got *Options
			cmd := NewCmdSet(&cmdutil.Factory{IO: ios}, func(o *Options) error { got = o; return nil })
			cmd.SetArgs(tt.args)
			cmd.SetOut(ios.ErrOut)
			cmd.SetErr(ios.ErrOut)
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.Execute()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				var fe *cmdutil.FlagError
				if strings.HasPrefix(tt.wantErr, "--") || strings.HasPrefix(tt.wantErr, "invalid") {
					if !errors.As(err, &fe) {
						t.Fatalf("error %v is not a *FlagError (exit 2)", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != "prod" || !maps.Equal(got.Values, tt.values) || strings.Join(got.Unset, ",") != strings.Join(tt.unset, ",") || got.Use != tt.use {
				t.Fatalf("opts = name %q values %v unset %v use %v", got.Name, got.Values, got.Unset, got.Use)
			}
		})
	}
}
