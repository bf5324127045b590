package cmdutil

import (
	"fmt"

	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/output"
)

// PrintWarnings writes each configuration warning to ios.ErrOut as
// "warning: file:line: key: msg", in the order given (config sorts them by
// line). Warnings never contain property values, so this cannot leak secrets.
func PrintWarnings(ios *iostreams.IOStreams, warnings []config.Warning) {
	st := output.NewStyles(ios)
	for _, w := range warnings {
		fmt.Fprintf(ios.ErrOut, "%s %s\n", st.Warn("warning:"), w.String())
	}
}
