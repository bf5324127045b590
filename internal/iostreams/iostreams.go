// Package iostreams is the CLI's only door to the terminal: it owns stdin,
// stdout and stderr, decides per stream whether it is a terminal, whether
// colour may be used, whether the user can be prompted, and how wide the
// terminal is.
//
// Commands never touch os.Stdin/os.Stdout/os.Stderr; they receive an
// *IOStreams. Production code builds one with System; tests build one with
// Test, which fixes width 80, colour off and no TTY, and returns the buffers.
// The design follows cli/cli's pkg/iostreams.
package iostreams

import (
	"bytes"
	"io"
	"os"

	"github.com/charmbracelet/x/term"
)

// DefaultWidth is the terminal width, in columns, assumed when the width
// cannot be read (not a terminal, or the ioctl fails).
const DefaultWidth = 80

// tristate is an optional override: unset, on or off.
type tristate int8

const (
	unset tristate = iota
	on
	off
)

func tri(b bool) tristate {
	if b {
		return on
	}
	return off
}

// IOStreams holds the three standard streams and the terminal facts derived
// from them. The zero value is not usable; build one with System or Test.
// Its methods are not safe for concurrent mutation (set overrides before
// running a command).
type IOStreams struct {
	// In is the command's standard input.
	In io.Reader
	// Out carries a command's data (tables, JSON, CSV) and nothing else.
	Out io.Writer
	// ErrOut carries status lines, warnings, errors and logs.
	ErrOut io.Writer

	stdinTTY, stdoutTTY, stderrTTY tristate // overrides; unset means detect

	colorDisabled bool     // --no-color, NO_COLOR or MIRRORCTL_NO_COLOR
	colorForced   tristate // test override of the whole colour decision
	width         int      // override in columns; 0 means detect
	wide          bool     // --wide: tables are never narrowed
}

// System returns IOStreams bound to the process's os.Stdin, os.Stdout and
// os.Stderr. TTY state is detected lazily per stream. NO_COLOR (any non-empty
// value, see https://no-color.org) disables colour.
func System() *IOStreams {
	s := &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	if os.Getenv("NO_COLOR") != "" {
		s.colorDisabled = true
	}
	return s
}

// Test returns IOStreams whose In reads from in and whose Out and ErrOut write
// to out and errOut. No stream is a TTY, colour is off and the terminal width
// is DefaultWidth (80); override with SetStdoutTTY and friends.
func Test() (s *IOStreams, in, out, errOut *bytes.Buffer) {
	in, out, errOut = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	s = &IOStreams{
		In: in, Out: out, ErrOut: errOut,
		stdinTTY: off, stdoutTTY: off, stderrTTY: off,
		width: DefaultWidth,
	}
	return s, in, out, errOut
}

// isTerminal reports whether v is an *os.File attached to a terminal. One
// library answers both this and the width (charmbracelet/x/term, lipgloss's
// own); a mintty window without ConPTY (old Cygwin/MSYS) is a pipe to it, so
// there mirrorctl prints as it does to a pipe (--wide aligns tables).
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	return term.IsTerminal(f.Fd())
}

func (s *IOStreams) isTTY(override tristate, stream any) bool {
	if override != unset {
		return override == on
	}
	return isTerminal(stream)
}

// IsStdinTTY reports whether In is a terminal, or the SetStdinTTY override.
func (s *IOStreams) IsStdinTTY() bool { return s.isTTY(s.stdinTTY, s.In) }

// IsStdoutTTY reports whether Out is a terminal, or the SetStdoutTTY override.
// Output formats depend on it: aligned tables and relative times on a TTY,
// tab-separated fields and RFC3339 times otherwise.
func (s *IOStreams) IsStdoutTTY() bool { return s.isTTY(s.stdoutTTY, s.Out) }

// IsStderrTTY reports whether ErrOut is a terminal, or the SetStderrTTY
// override. Status lines ("✓ ...") are printed only when it is.
func (s *IOStreams) IsStderrTTY() bool { return s.isTTY(s.stderrTTY, s.ErrOut) }

// SetStdinTTY overrides TTY detection for In.
func (s *IOStreams) SetStdinTTY(b bool) { s.stdinTTY = tri(b) }

// SetStdoutTTY overrides TTY detection for Out.
func (s *IOStreams) SetStdoutTTY(b bool) { s.stdoutTTY = tri(b) }

// SetStderrTTY overrides TTY detection for ErrOut.
func (s *IOStreams) SetStderrTTY(b bool) { s.stderrTTY = tri(b) }

// SetColorDisabled records --no-color / NO_COLOR / MIRRORCTL_NO_COLOR. Once
// disabled, ColorEnabled returns false whatever the TTY state.
func (s *IOStreams) SetColorDisabled(b bool) { s.colorDisabled = b }

// SetColorEnabled forces the colour decision (tests rendering styled output
// into a buffer). It still yields to SetColorDisabled(true).
func (s *IOStreams) SetColorEnabled(b bool) { s.colorForced = tri(b) }

// ColorEnabled reports whether output to Out may contain ANSI escapes: Out is
// a TTY (or colour was forced with SetColorEnabled), and neither --no-color
// nor NO_COLOR is set.
func (s *IOStreams) ColorEnabled() bool {
	if s.colorDisabled {
		return false
	}
	if s.colorForced != unset {
		return s.colorForced == on
	}
	return s.IsStdoutTTY()
}

// CanPrompt reports whether the user can be asked a question: both In and Out
// are terminals. Acting commands must refuse, not prompt, when it is false
// (CI jobs, pipes).
func (s *IOStreams) CanPrompt() bool { return s.IsStdinTTY() && s.IsStdoutTTY() }

// SetTerminalWidth overrides the detected terminal width, in columns.
// A value <= 0 restores detection.
func (s *IOStreams) SetTerminalWidth(cols int) {
	if cols < 0 {
		cols = 0
	}
	s.width = cols
}

// TerminalWidth returns the width of Out in columns: the override if set, the
// terminal's width if Out is a terminal, else DefaultWidth (80).
func (s *IOStreams) TerminalWidth() int {
	if s.width > 0 {
		return s.width
	}
	if f, ok := s.Out.(*os.File); ok && isTerminal(f) {
		if w, _, err := term.GetSize(f.Fd()); err == nil && w > 0 {
			return w
		}
	}
	return DefaultWidth
}

// SetWideTables sets whether tables are printed in full (the --wide flag):
// aligned with a header even off a TTY, and never narrowed to the terminal.
func (s *IOStreams) SetWideTables(b bool) { s.wide = b }

// WideTables reports whether --wide was given (see SetWideTables).
func (s *IOStreams) WideTables() bool { return s.wide }

// ErrColorEnabled is ColorEnabled for ErrOut: false when colour is disabled,
// the test override when set, else whether stderr is a terminal.
func (s *IOStreams) ErrColorEnabled() bool {
	if s.colorDisabled {
		return false
	}
	if s.colorForced != unset {
		return s.colorForced == on
	}
	return s.IsStderrTTY()
}
