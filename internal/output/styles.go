package output

import (
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/mirrorctl/mirrorctl/internal/iostreams"
)

// Styles colours status text. Its lipgloss renderer is bound to the
// IOStreams' Out writer; when ios.ColorEnabled() is false (not a TTY,
// NO_COLOR, --no-color) every method returns its input unchanged, with no
// escape sequences. Colours are the 16 basic ANSI ones, so they follow the
// user's terminal theme and no background query is sent to the terminal.
type Styles struct {
	enabled bool
	ok      lipgloss.Style
	warn    lipgloss.Style
	err     lipgloss.Style
	bold    lipgloss.Style
	header  lipgloss.Style
	muted   lipgloss.Style
	action  lipgloss.Style
}

// NewStyles returns Styles for text written to ios.Out.
func NewStyles(ios *iostreams.IOStreams) Styles {
	return newStyles(ios, ios.ColorEnabled())
}

// NewErrStyles returns Styles for text written to ios.ErrOut: coloured only
// when stderr is a terminal (and colour is not disabled), whatever stdout is.
func NewErrStyles(ios *iostreams.IOStreams) Styles {
	return newStyles(ios, ios.ErrColorEnabled())
}

func newStyles(ios *iostreams.IOStreams, enabled bool) Styles {
	r := lipgloss.NewRenderer(ios.Out)
	r.SetHasDarkBackground(true) // never query the terminal
	if enabled {
		r.SetColorProfile(termenv.ANSI)
	} else {
		r.SetColorProfile(termenv.Ascii)
	}
	return Styles{
		enabled: enabled,
		ok:      r.NewStyle().Foreground(lipgloss.Color("2")),
		warn:    r.NewStyle().Foreground(lipgloss.Color("3")),
		err:     r.NewStyle().Foreground(lipgloss.Color("1")),
		bold:    r.NewStyle().Bold(true),
		header:  r.NewStyle().Bold(true),
		muted:   r.NewStyle().Foreground(lipgloss.Color("8")),
		action:  r.NewStyle().Foreground(lipgloss.Color("6")),
	}
}

// Enabled reports whether these styles emit escape sequences.
func (s Styles) Enabled() bool { return s.enabled }

func (s Styles) render(st lipgloss.Style, text string) string {
	if !s.enabled || text == "" {
		return text
	}
	return st.Render(text)
}

// OK renders text in green (success).
func (s Styles) OK(text string) string { return s.render(s.ok, text) }

// Warn renders text in yellow (warning).
func (s Styles) Warn(text string) string { return s.render(s.warn, text) }

// Error renders text in red (failure).
func (s Styles) Error(text string) string { return s.render(s.err, text) }

// Bold renders text in bold.
func (s Styles) Bold(text string) string { return s.render(s.bold, text) }

// Muted renders text in grey (secondary detail such as origins).
func (s Styles) Muted(text string) string { return s.render(s.muted, text) }

// Header renders a table header cell in bold. (lipgloss underlines rune by
// rune, which bloats the output, so headers are not underlined.)
func (s Styles) Header(text string) string { return s.render(s.header, text) }

// SuccessIcon returns a green "✓".
func (s Styles) SuccessIcon() string { return s.OK("✓") }

// WarningIcon returns a yellow "!".
func (s Styles) WarningIcon() string { return s.Warn("!") }

// FailureIcon returns a red "✗".
func (s Styles) FailureIcon() string { return s.Error("✗") }

// Tone is the meaning a piece of text carries, which decides its colour on a
// colour TTY.
type Tone int

const (
	// ToneNone is plain text.
	ToneNone Tone = iota
	// ToneOK is a success or healthy state (green).
	ToneOK
	// ToneWarn is a skip, a stale or unknown state (yellow).
	ToneWarn
	// ToneError is a failure, a breach or a refusal (red).
	ToneError
	// ToneAction is something that will be, or was, written (cyan).
	ToneAction
	// ToneMuted is secondary detail (grey).
	ToneMuted
)

// Tone renders text in tone's colour (unchanged when colour is off or tone
// is ToneNone).
func (s Styles) Tone(tone Tone, text string) string {
	switch tone {
	case ToneOK:
		return s.OK(text)
	case ToneWarn:
		return s.Warn(text)
	case ToneError:
		return s.Error(text)
	case ToneAction:
		return s.render(s.action, text)
	case ToneMuted:
		return s.Muted(text)
	default:
		return text
	}
}

// StatusTone maps the state and action words mirrorctl's tables print to a
// Tone: ok, yes, pass, in-sync, unchanged, present, up, committed, applied,
// created, granted, match → ToneOK; commit, create, add-partitions, grant,
// apply → ToneAction; any skip-*, stale, unknown, warn, absent, partial,
// not-* → ToneWarn; fail, failed, error, no, breach, breached, mismatch,
// missing, refused, down, stopped, lost, aborted, interrupted → ToneError.
// Only the first word of the cell counts ("fail: record differs" is an
// error); anything else is ToneNone.
func StatusTone(cell string) Tone {
	w := strings.ToLower(strings.TrimSpace(cell))
	if i := strings.IndexAny(w, " :;,("); i >= 0 {
		w = w[:i]
	}
	switch {
	case w == "":
		return ToneNone
	case strings.HasPrefix(w, "skip"), strings.HasPrefix(w, "not-"), strings.HasPrefix(w, "warn"):
		return ToneWarn
	}
	switch w {
	case "ok", "yes", "pass", "passed", "in-sync", "unchanged", "present", "up", "committed", "applied", "created", "granted", "match", "done":
		return ToneOK
	case "commit", "create", "add-partitions", "grant", "apply", "would-commit":
		return ToneAction
	case "stale", "unknown", "absent", "partial", "pending", "dry-run":
		return ToneWarn
	case "fail", "failed", "error", "no", "breach", "breached", "mismatch", "missing", "refused", "down", "stopped", "lost", "aborted", "interrupted":
		return ToneError
	}
	return ToneNone
}

// defaultTone is the Tone function a Table column gets from its header:
// StatusTone for action, status, outcome, result, match and verified;
// every non-empty error cell red.
func defaultTone(header string) func(string) Tone {
	switch strings.ToLower(strings.TrimSpace(header)) {
	case "action", "status", "outcome", "result", "match", "verified":
		return StatusTone
	case "error":
		return func(c string) Tone {
			if c == "" {
				return ToneNone
			}
			return ToneError
		}
	}
	return nil
}
