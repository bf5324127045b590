package cmdutil

import (
	"fmt"
	"strings"
	"time"

	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/output"
)

// The one voice for what commands say on stderr besides their data. Every
// warning, per-item failure, note and success line goes through these, so
// they read the same in every command:
//
//	warning: group orders-app has no committed offset ...   (yellow "warning:")
//	error: orders-app/us-east.orders/3: refused: ...        (red "error:")
//	note: 12 regex items expanded against us-east           (grey "note:")
//	✓ committed 12 partitions on eu-west                    (green "✓")
//
// Colour follows stderr (a terminal, no NO_COLOR or --no-color). The message
// is escaped line by line with output.Escape, since it usually names things
// read from a cluster. The engine's slog warnings are printed in the same
// "warning: msg key=value" shape by internal/cli's logger.

// Warnf writes "warning: <message>" to ios.ErrOut.
func Warnf(ios *iostreams.IOStreams, format string, args ...any) {
	say(ios, output.NewErrStyles(ios).Warn("warning:"), format, args...)
}

// Errorf writes "error: <message>" to ios.ErrOut, for one failed item of a
// command that goes on (or exits non-zero afterwards); the command's own
// fatal error is printed by internal/cli as "mirrorctl: <message>".
func Errorf(ios *iostreams.IOStreams, format string, args ...any) {
	say(ios, output.NewErrStyles(ios).Error("error:"), format, args...)
}

// Notef writes "note: <message>" to ios.ErrOut, for information that
// changes nothing about the result.
func Notef(ios *iostreams.IOStreams, format string, args ...any) {
	say(ios, output.NewErrStyles(ios).Muted("note:"), format, args...)
}

// Successf writes "✓ <message>" to ios.ErrOut. Never call it for a run that
// was interrupted or did less than asked.
func Successf(ios *iostreams.IOStreams, format string, args ...any) {
	say(ios, output.NewErrStyles(ios).OK("✓"), format, args...)
}

func say(ios *iostreams.IOStreams, label, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	lines := strings.Split(strings.TrimRight(msg, "\n"), "\n")
	var b strings.Builder
	for i, l := range lines {
		if i == 0 {
			b.WriteString(label)
			b.WriteByte(' ')
		} else {
			b.WriteString("  ")
		}
		b.WriteString(output.Escape(l))
		b.WriteByte('\n')
	}
	output.AroundStatusLine(func() { fmt.Fprint(ios.ErrOut, b.String()) })
}

// Plural returns "1 group", "3 groups": n and the singular or plural noun.
func Plural(n int, singular, plural string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, singular)
	}
	return fmt.Sprintf("%d %s", n, plural)
}

// Duration is the one human format for a duration (tables and messages;
// JSON keeps integer milliseconds): "850ms" under a second, "12.3s" under a
// minute, then "4m05s", "2h03m", "3d04h". Negative durations keep their
// sign.
func Duration(d time.Duration) string { return output.Duration(d) }
