package cmdutil

import (
	"fmt"

	"github.com/mirrorctl/mirrorctl/internal/settings"
)

// Origins of a resolved value ([Resolved.Origin]), in precedence order:
// a flag beats a MIRRORCTL_* variable, which beats the current context,
// which beats the default.
const (
	OriginFlag    = "flag"
	OriginEnv     = "env"
	OriginContext = "context"
	OriginDefault = "default"
)

// Resolved is one of mirrorctl's own settings (a global flag, or the
// default --source/--target of the commands that take a flow) after
// resolution, with where its value came from.
type Resolved struct {
	// Key is the setting's name in a context (settings.ContextKeys):
	// config, source, target, output, audit-log, verbose, no-color.
	Key string `json:"key"`
	// Value is the value in force; paths are shown through
	// settings.DisplayPath (credentials before '@' masked). "" when unset
	// (source and target without a default).
	Value string `json:"value"`
	// Origin is one of OriginFlag, OriginEnv, OriginContext, OriginDefault.
	Origin string `json:"origin"`
	// Name is the flag ("--config"), the variable ("MIRRORCTL_CONFIG") or
	// the context's name that set it; "" for a default.
	Name string `json:"name,omitempty"`
	// File and Line locate a context's value in the settings file.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

// Describe renders the origin for people: "flag --config",
// "env MIRRORCTL_CONFIG", "context prod in /home/me/.config/mirrorctl/config.yaml",
// "default".
func (r Resolved) Describe() string {
	switch r.Origin {
	case OriginFlag, OriginEnv:
		return r.Origin + " " + r.Name
	case OriginContext:
		return fmt.Sprintf("context %s in %s", r.Name, settings.DisplayPath(r.File))
	}
	return r.Origin
}

// AnnotationEditsSettings marks a command (cobra Annotations key) that edits
// the settings file (`mirrorctl context ...`): when the current context
// cannot be used (it names no context, or holds a bad value) such a
// command runs without it, after a warning, so the context can be mended.
const AnnotationEditsSettings = "mirrorctl/edits-settings"

// AnnotationChecksFlowDefaults marks a command (cobra Annotations key)
// without --source/--target whose job is to check the config (`config
// validate`, `config show`): a default source or target from the context or
// a MIRRORCTL_* variable that the mm2.properties does not define fails it
// too, as it fails the commands that would use it.
const AnnotationChecksFlowDefaults = "mirrorctl/checks-flow-defaults"
