package output

import (
	"fmt"
	"strconv"
	"time"

	"github.com/mirrorctl/mirrorctl/internal/iostreams"
)

// Time formats t for a table cell: relative to now ("3 minutes ago",
// "in 2 hours") when Out is a TTY, else RFC3339 in UTC
// ("2024-05-01T12:00:00Z"). A zero t renders as "" on either. Pass the
// command's injected Now(), never time.Now, so output is testable.
func Time(ios *iostreams.IOStreams, t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	if ios.IsStdoutTTY() {
		return Relative(t, now)
	}
	return t.UTC().Format(time.RFC3339)
}

// Relative describes t relative to now in whole units, rounding down:
// "just now" (under a second either way), "5 seconds ago", "1 minute ago",
// "in 3 hours", "2 days ago". Beyond 30 days it gives the UTC date
// ("2024-05-01").
func Relative(t, now time.Time) string {
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	if d < time.Second {
		return "just now"
	}
	if d > 30*24*time.Hour {
		return t.UTC().Format(time.DateOnly)
	}
	var n int64
	var unit string
	switch {
	case d < time.Minute:
		n, unit = int64(d/time.Second), "second"
	case d < time.Hour:
		n, unit = int64(d/time.Minute), "minute"
	case d < 24*time.Hour:
		n, unit = int64(d/time.Hour), "hour"
	default:
		n, unit = int64(d/(24*time.Hour)), "day"
	}
	if n != 1 {
		unit += "s"
	}
	if future {
		return fmt.Sprintf("in %d %s", n, unit)
	}
	return fmt.Sprintf("%d %s ago", n, unit)
}

// Count formats an integer count (records, offsets, bytes) for a table cell:
// grouped with commas on a TTY ("1,234,567"), raw otherwise ("1234567").
func Count(ios *iostreams.IOStreams, n int64) string {
	raw := strconv.FormatInt(n, 10)
	if !ios.IsStdoutTTY() {
		return raw
	}
	return groupThousands(raw)
}

func groupThousands(raw string) string {
	sign := ""
	if raw != "" && raw[0] == '-' {
		sign, raw = "-", raw[1:]
	}
	if len(raw) <= 3 {
		return sign + raw
	}
	out := make([]byte, 0, len(raw)+len(raw)/3)
	head := len(raw) % 3
	if head > 0 {
		out = append(out, raw[:head]...)
	}
	for i := head; i < len(raw); i += 3 {
		if len(out) > 0 {
			out = append(out, ',')
		}
		out = append(out, raw[i:i+3]...)
	}
	return sign + string(out)
}

// Duration is the one human format for a duration in tables and messages
// (JSON keeps integer milliseconds): "0s", "850ms" under a second, "12.3s"
// under a minute, then "4m05s", "2h03m" and "3d04h", each rounded down.
// Negative durations keep their sign.
func Duration(d time.Duration) string {
	if d < 0 {
		return "-" + Duration(-d)
	}
	switch {
	case d == 0:
		return "0s"
	case d < time.Second:
		return fmt.Sprintf("%dms", d/time.Millisecond)
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", float64(d/(100*time.Millisecond))/10)
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", d/time.Minute, (d%time.Minute)/time.Second)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", d/time.Hour, (d%time.Hour)/time.Minute)
	default:
		return fmt.Sprintf("%dd%02dh", d/(24*time.Hour), (d%(24*time.Hour))/time.Hour)
	}
}
