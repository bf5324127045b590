package completion

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
)

func TestNewCmdCompletion(t *testing.T) {
	tests := []struct {
		args    []string
		want    string
		wantErr bool
	}{
		{args: []string{"bash"}, want: "bash"},
		{args: []string{"powershell"}, want: "powershell"},
		{args: []string{}, wantErr: true},
		{args: []string{"tcsh"}, wantErr: true},
		{args: []string{"bash", "zsh"}, wantErr: true},
	}
	for _, tt := range tests {
		ios, _, _, _ := iostreams.Test()
		var got *CompletionOptions
		cmd := NewCmdCompletion(&cmdutil.Factory{IO: ios}, func(o *CompletionOptions) error { got = o; return nil })
		cmd.SetArgs(tt.args)
		cmd.SetOut(ios.ErrOut)
		cmd.SetErr(ios.ErrOut)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		err := cmd.Execute()
		if tt.wantErr {
			if err == nil {
				t.Errorf("%v: want an error", tt.args)
			}
			continue
		}
		if err != nil || got.Shell != tt.want {
			t.Errorf("%v: shell %v, err %v", tt.args, got, err)
		}
	}
}

func TestRunCompletion(t *testing.T) {
	root := &cobra.Command{Use: "mirrorctl"}
	root.AddCommand(&cobra.Command{Use: "version", Run: func(*cobra.Command, []string) {}})
	wants := map[string]string{
		"bash":       "__start_mirrorctl",
		"zsh":        "#compdef mirrorctl",
		"fish":       "complete -c mirrorctl",
		"powershell": "Register-ArgumentCompleter",
	}
	for shell, want := range wants {
		ios, _, out, _ := iostreams.Test()
		opts := &CompletionOptions{IO: ios, Shell: shell, Root: func() *cobra.Command { return root }}
		if err := runCompletion(context.Background(), opts); err != nil {
			t.Fatalf("%s: %v", shell, err)
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("%s script lacks %q", shell, want)
		}
	}
	ios, _, _, _ := iostreams.Test()
	err := runCompletion(context.Background(), &CompletionOptions{IO: ios, Shell: "tcsh", Root: func() *cobra.Command { return root }})
	var fe *cmdutil.FlagError
	if !errors.As(err, &fe) {
		t.Fatalf("unsupported shell error = %v, want *FlagError", err)
	}
}
