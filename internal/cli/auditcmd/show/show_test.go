package show

import (
	"strings"
	"testing"
	"time"

	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{in: "30m", want: 30 * time.Minute},
		{in: "2h30m", want: 150 * time.Minute},
		{in: "7d", want: 168 * time.Hour},
		{in: "1d", want: 24 * time.Hour},
		{in: "0d", wantErr: true},
		{in: "-2h", wantErr: true},
		{in: "1.5d", wantErr: true},
		{in: "2", wantErr: true},
		{in: "d", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), `"`+tt.in+`"`) {
			t.Errorf("error %q does not quote the value", err)
		}
	}
}

func TestNewCmdShow(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	var got *ShowOptions
	cmd := NewCmdShow(&cmdutil.Factory{IO: ios, AuditPath: func() string { return "a.jsonl" }}, func(o *ShowOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--since", "2h"})
	if err := cmd.Execute(); err != nil || got.Since != 2*time.Hour || got.AuditPath() != "a.jsonl" {
		t.Fatalf("err %v, opts %+v", err, got)
	}
}
