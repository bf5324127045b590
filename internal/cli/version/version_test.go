package version

import (
	"context"
	"strings"
	"testing"

	"github.com/mirrorctl/mirrorctl/internal/cli/clitest"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/output"
)

func TestNewCmdVersion(t *testing.T) {
	tests := []struct {
		name    string
		args    string
		wantErr bool
	}{
		{name: "no args", args: ""},
		{name: "extra arg", args: "extra", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, _, _ := iostreams.Test()
			f := &cmdutil.Factory{IO: ios, Output: func() output.Format { return output.FormatTable }}
			var got *VersionOptions
			cmd := NewCmdVersion(f, func(o *VersionOptions) error { got = o; return nil })
			cmd.SetArgs(append([]string{}, strings.Fields(tt.args)...))
			cmd.SetOut(ios.ErrOut)
			cmd.SetErr(ios.ErrOut)
			err := cmd.Execute()
			if tt.wantErr {
				if err == nil {
					t.Fatal("want an error")
				}
				return
			}
			if err != nil || got == nil || got.IO != ios {
				t.Fatalf("err = %v, opts = %+v", err, got)
			}
		})
	}
}

func TestRunVersion(t *testing.T) {
	info := func() Info {
		return Info{Envelope: output.NewEnvelope(), Version: "v0.1.0", Commit: "abc1234", GoVersion: "go1.26.8", Platform: "linux/amd64"}
	}
	tests := []struct {
		name   string
		format output.Format
		golden string
	}{
		{"table", output.FormatTable, "version.txt"},
		{"json", output.FormatJSON, "version.json"},
		{"csv", output.FormatCSV, "version.csv"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, out, errOut := iostreams.Test()
			opts := &VersionOptions{IO: ios, Output: func() output.Format { return tt.format }, Info: info}
			if err := runVersion(context.Background(), opts); err != nil {
				t.Fatal(err)
			}
			clitest.Golden(t, tt.golden, out.String())
			if errOut.Len() != 0 {
				t.Errorf("stderr = %q, want empty", errOut.String())
			}
		})
	}
}

func TestRunVersionUnknownCommit(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	opts := &VersionOptions{IO: ios, Output: func() output.Format { return output.FormatTable },
		Info: func() Info { return Info{Version: "dev", GoVersion: "go1.26.8", Platform: "linux/amd64"} }}
	if err := runVersion(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if want := "mirrorctl dev (commit unknown, go1.26.8, linux/amd64)\n"; out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
}

func TestCurrentInfo(t *testing.T) {
	i := CurrentInfo()
	if i.SchemaVersion != 1 || i.Version == "" || !strings.HasPrefix(i.GoVersion, "go") || !strings.Contains(i.Platform, "/") {
		t.Fatalf("CurrentInfo = %+v", i)
	}
}
