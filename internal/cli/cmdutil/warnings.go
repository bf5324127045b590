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

// SummarizeWarnings writes one line to stderr for a config with warnings,
// counting them and pointing at `mirrorctl config validate`, which lists
// them: a command other than validate and replicate does not repeat them
// all at every run. Nothing for a config without warnings.
func SummarizeWarnings(ios *iostreams.IOStreams, cfg *config.Config) {
	if cfg == nil || len(cfg.Warnings) == 0 {
		return
	}
	n := len(cfg.Warnings)
	Warnf(ios, "%s has %s about its keys: mirrorctl config validate -c %s lists %s (list a key in %s once it is read and accepted)",
		cfg.File, Plural(n, "warning", "warnings"), cfg.File, map[bool]string{true: "it", false: "them"}[n == 1], config.KeyAcknowledged)
}
