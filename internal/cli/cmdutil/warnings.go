package cmdutil

import (
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
)

// PrintWarnings writes each configuration warning to ios.ErrOut as
// "warning: file:line: key: msg", in the order given (config sorts them by
// line). Warnings never contain property values, so this cannot leak secrets.
func PrintWarnings(ios *iostreams.IOStreams, warnings []config.Warning) {
	for _, w := range warnings {
		Warnf(ios, "%s", w.String())
	}
}

// PrintNotes writes each config note (config.Config.Notes: MM2 keys read
// differently here) to stderr as "note: file:line: key: message".
func PrintNotes(ios *iostreams.IOStreams, notes []config.Warning) {
	for _, n := range notes {
		Notef(ios, "%s", n.String())
	}
}
