package iostreams

import (
	"os"
	"testing"
)

func TestTestDefaults(t *testing.T) {
	s, in, out, errOut := Test()
	if s.IsStdinTTY() || s.IsStdoutTTY() || s.IsStderrTTY() {
		t.Fatalf("Test() streams report a TTY: in=%v out=%v err=%v", s.IsStdinTTY(), s.IsStdoutTTY(), s.IsStderrTTY())
	}
	if s.ColorEnabled() {
		t.Fatal("Test() colour enabled, want off")
	}
	if s.CanPrompt() {
		t.Fatal("Test() CanPrompt = true, want false")
	}
	if got := s.TerminalWidth(); got != 80 {
		t.Fatalf("TerminalWidth = %d, want 80", got)
	}
	in.WriteString("x")
	if s.In != in || s.Out != out || s.ErrOut != errOut {
		t.Fatal("Test() buffers are not the streams")
	}
}

func TestColorDecision(t *testing.T) {
	tests := []struct {
		name     string
		tty      bool
		disabled bool
		forced   *bool
		want     bool
	}{
		{name: "tty", tty: true, want: true},
		{name: "not tty", tty: false, want: false},
		{name: "tty no-color", tty: true, disabled: true, want: false},
		{name: "forced on, not tty", forced: ptr(true), want: true},
		{name: "forced off on tty", tty: true, forced: ptr(false), want: false},
		{name: "forced on but disabled", forced: ptr(true), disabled: true, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, _, _ := Test()
			s.SetStdoutTTY(tt.tty)
			s.SetColorDisabled(tt.disabled)
			if tt.forced != nil {
				s.SetColorEnabled(*tt.forced)
			}
			if got := s.ColorEnabled(); got != tt.want {
				t.Fatalf("ColorEnabled = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCanPrompt(t *testing.T) {
	tests := []struct {
		in, out, want bool
	}{
		{true, true, true},
		{true, false, false},
		{false, true, false},
		{false, false, false},
	}
	for _, tt := range tests {
		s, _, _, _ := Test()
		s.SetStdinTTY(tt.in)
		s.SetStdoutTTY(tt.out)
		if got := s.CanPrompt(); got != tt.want {
			t.Errorf("stdin=%v stdout=%v: CanPrompt = %v, want %v", tt.in, tt.out, got, tt.want)
		}
	}
}

func TestTerminalWidthOverride(t *testing.T) {
	s, _, _, _ := Test()
	s.SetTerminalWidth(132)
	if got := s.TerminalWidth(); got != 132 {
		t.Fatalf("TerminalWidth = %d, want 132", got)
	}
	s.SetTerminalWidth(-1)
	if got := s.TerminalWidth(); got != DefaultWidth {
		t.Fatalf("TerminalWidth after reset = %d, want %d", got, DefaultWidth)
	}
}

func TestSystemNoColor(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	s := System()
	s.SetStdoutTTY(true)
	if s.ColorEnabled() {
		t.Fatal("NO_COLOR=1: ColorEnabled = true, want false")
	}
	t.Setenv("NO_COLOR", "")
	s = System()
	s.SetStdoutTTY(true)
	if !s.ColorEnabled() {
		t.Fatal("NO_COLOR empty: ColorEnabled = false, want true (empty value is ignored per no-color.org)")
	}
	if s.Out != os.Stdout || s.ErrOut != os.Stderr || s.In != os.Stdin {
		t.Fatal("System() not bound to os streams")
	}
}

func TestNonFileIsNotTTY(t *testing.T) {
	s, _, _, _ := Test()
	s.stdoutTTY = unset // detect: a buffer is never a terminal
	if s.IsStdoutTTY() {
		t.Fatal("bytes.Buffer detected as TTY")
	}
}

func ptr[T any](v T) *T { return &v }
