package translate_test

import (
	"strings"
	"testing"

	"github.com/mirrorctl/mirrorctl/failover"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/cli/translate"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
)

func TestNewCmdTranslate(t *testing.T) {
	tests := []struct {
		args    string
		want    translate.TranslateOptions
		wantErr string
	}{
		{args: "--group g", want: translate.TranslateOptions{Groups: []string{"g"}, Mode: "auto"}},
		{args: "--source us-east --target eu-west --groups b.* --mode checkpoint", want: translate.TranslateOptions{Source: "us-east", Target: "eu-west", GroupsRE: "b.*", Mode: "checkpoint"}},
		{args: "--group a --group b --mode EXACT", want: translate.TranslateOptions{Groups: []string{"a", "b"}, Mode: "exact"}},
		{args: "--source us-east", wantErr: "name the groups with --group (repeatable) or --groups <regex>"},
		{args: "--group g --mode x", wantErr: `invalid argument "x" for "--mode" flag: valid values are {auto|checkpoint|exact}`},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			ios, _, _, _ := iostreams.Test()
			var got *translate.TranslateOptions
			cmd := translate.NewCmdTranslate(&cmdutil.Factory{IO: ios}, func(o *translate.TranslateOptions) error { got = o; return nil })
			cmd.SetArgs(strings.Fields(tt.args))
			cmd.SetOut(ios.ErrOut)
			cmd.SetErr(ios.ErrOut)
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.Execute()
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Source != tt.want.Source || got.Target != tt.want.Target || got.GroupsRE != tt.want.GroupsRE || got.Mode != tt.want.Mode ||
				strings.Join(got.Groups, ",") != strings.Join(tt.want.Groups, ",") {
				t.Fatalf("options %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestOpt(t *testing.T) {
	v := int64(42)
	if cmdutil.Opt(nil) != "-" || cmdutil.Opt(&v) != "42" {
		t.Fatal("Opt")
	}
}

func TestWarnEmpty(t *testing.T) {
	ios, _, _, errOut := iostreams.Test()
	res := &failover.TranslateResult{Source: "us-east", Target: "eu-west", Groups: []failover.GroupTranslation{
		{Group: "billing", Partitions: []failover.Translation{{SourceTopic: "orders", Topic: "us-east.orders"}}},
		{Group: "ghost"},
	}}
	translate.WarnEmpty(ios, res)
	got := errOut.String()
	want := "warning: group ghost has no committed offset on the topics flow us-east->eu-west mirrors; " +
		"if it has commits there, the principal may lack DESCRIBE (or READ) on those topics on us-east " +
		"(see mirrorctl acl-plan --failover-principal)\n"
	if got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
}
