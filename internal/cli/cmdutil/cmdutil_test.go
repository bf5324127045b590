package cmdutil

import (
	"errors"
	"io"
	"testing"

	"github.com/spf13/cobra"
)

func TestErrors(t *testing.T) {
	base := errors.New("boom")
	fe := FlagErrorf("bad --flow %q: %w", "x", base)
	var flagErr *FlagError
	if !errors.As(fe, &flagErr) || !errors.Is(fe, base) || fe.Error() != `bad --flow "x": boom` {
		t.Fatalf("FlagErrorf = %v", fe)
	}
	if FlagErrorWrap(nil) != nil {
		t.Fatal("FlagErrorWrap(nil) != nil")
	}
	ce := CheckFailedf("lag %d over %d", 10, 5)
	var checkErr *CheckFailedError
	if !errors.As(ce, &checkErr) || checkErr.Silent() || ce.Error() != "lag 10 over 5" {
		t.Fatalf("CheckFailedf = %v", ce)
	}
	if !errors.As(ErrCheckFailed, &checkErr) || !checkErr.Silent() || ErrCheckFailed.Error() != "check failed" {
		t.Fatal("ErrCheckFailed is not a silent *CheckFailedError")
	}
}

func TestStringEnumFlag(t *testing.T) {
	tests := []struct {
		args    []string
		want    string
		wantErr string
	}{
		{args: nil, want: "table"},
		{args: []string{"-o", "json"}, want: "json"},
		{args: []string{"--output=CSV"}, want: "csv"},
		{args: []string{"-o", "yaml"}, wantErr: `invalid argument "yaml" for "-o, --output" flag: valid values are {table|json|csv}`},
	}
	for _, tt := range tests {
		var got string
		cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		f := StringEnumFlag(cmd, cmd.Flags(), &got, "output", "o", "table", []string{"table", "json", "csv"}, "Output format")
		if f.Usage != "Output format: {table|json|csv}" {
			t.Fatalf("usage = %q", f.Usage)
		}
		cmd.SetArgs(tt.args)
		err := cmd.Execute()
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("%v: error = %v, want %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%v: got %q, %v; want %q", tt.args, got, err, tt.want)
		}
	}
}

func TestGroupRunE(t *testing.T) {
	group := &cobra.Command{Use: "config", RunE: GroupRunE}
	group.AddCommand(&cobra.Command{Use: "validate", Run: func(*cobra.Command, []string) {}})
	group.SetOut(io.Discard)
	err := GroupRunE(group, []string{"validat"})
	var fe *FlagError
	if !errors.As(err, &fe) || err.Error() != `unknown command "validat" for "config" (did you mean validate?)` {
		t.Fatalf("GroupRunE = %v", err)
	}
	if err := GroupRunE(group, nil); err != nil {
		t.Fatalf("GroupRunE without args = %v", err)
	}
}
