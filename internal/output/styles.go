package output

import (
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
}

// NewStyles returns Styles for ios.
func NewStyles(ios *iostreams.IOStreams) Styles {
	r := lipgloss.NewRenderer(ios.Out)
	r.SetHasDarkBackground(true) // never query the terminal
	enabled := ios.ColorEnabled()
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
