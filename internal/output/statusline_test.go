package output

import (
	"strings"
	"testing"

	"github.com/mirrorctl/mirrorctl/internal/iostreams"
)

func TestStatusLineOnlyOnATerminal(t *testing.T) {
	ios, _, out, errOut := iostreams.Test() // stderr not a terminal
	s := NewStatusLine(ios)
	s.Set("replicating")
	called := false
	s.Interrupt(func() { called = true })
	s.Stop()
	if !called {
		t.Fatal("Interrupt off a terminal did not call write")
	}
	if s.Enabled() || out.Len() != 0 || errOut.Len() != 0 {
		t.Fatalf("status line off a terminal wrote stdout %q stderr %q", out, errOut)
	}
}

func TestStatusLineInPlace(t *testing.T) {
	ios, _, out, errOut := iostreams.Test()
	ios.SetStderrTTY(true)
	ios.SetTerminalWidth(40)
	s := NewStatusLine(ios)
	s.Set("first")
	s.Set("second, a text far longer than forty columns of terminal")
	got := errOut.String()
	if !strings.Contains(got, "first") || !strings.Contains(got, "second, a text far longer") {
		t.Fatalf("status line lacks its texts: %q", got)
	}
	if strings.Contains(got, "\n") {
		t.Fatalf("status line wrote a newline (not redrawn in place): %q", got)
	}
	if !strings.Contains(got, "\r") {
		t.Fatalf("status line is not redrawn in place (no carriage return): %q", got)
	}
	for _, line := range strings.Split(got, "\r") {
		line = strings.NewReplacer("\x1b[2K", "", "\x1b[0K", "").Replace(line)
		if n := len([]rune(line)); n > 40-4 {
			t.Errorf("drawn text is %d columns, not 4 columns short of the terminal (room for an echoed ^C): %q", n, line)
		}
	}
	errOut.Reset()
	s.Interrupt(func() { errOut.WriteString("warning: something\n") })
	got = errOut.String()
	if i, j := strings.Index(got, "\x1b[2K"), strings.Index(got, "warning: something\n"); i < 0 || j < i {
		t.Fatalf("Interrupt did not erase the line before writing: %q", got)
	}
	if !strings.Contains(got[strings.Index(got, "warning: something\n"):], "second") {
		t.Fatalf("Interrupt did not draw the line again after writing: %q", got)
	}
	errOut.Reset()
	s.Stop()
	if !strings.Contains(errOut.String(), "\x1b[2K") {
		t.Fatalf("Stop did not erase the line: %q", errOut)
	}
	s.Set("after stop")
	s.Stop()
	if strings.Contains(errOut.String(), "after stop") || strings.Contains(errOut.String(), "✓") || out.Len() != 0 {
		t.Fatalf("drew after Stop, printed a success mark or wrote stdout: %q / %q", errOut, out)
	}
}

func TestReplicateStatusString(t *testing.T) {
	for _, tt := range []struct {
		s    ReplicateStatus
		want string
	}{
		{ReplicateStatus{Records: 1204332, Bytes: 118_200_000, Rate: 10512.4, Behind: 3200, Partitions: 12, Stopped: 1,
			Flows: []string{"us-east->eu-west: leader, 12 tasks"}},
			"copied 1,204,332 records (118.2 MB) at 10,512/s, 3,200 behind, 12 partitions, 1 stopped; us-east->eu-west: leader, 12 tasks"},
		{ReplicateStatus{Rate: -1, Behind: -1, Partitions: 1},
			"copied 0 records (0 B), behind unknown, 1 partition"},
	} {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("got  %q\nwant %q", got, tt.want)
		}
	}
}
