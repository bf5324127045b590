package settings

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// OutputFormats are the values of output, as internal/output names its
// formats (a test in internal/cli keeps the two lists equal; this package
// stays below the rendering layer, as internal/archtest requires).
var OutputFormats = []string{"table", "json", "csv", "tsv"}

// Validate checks value for key (one of [ContextKeys]) and returns it in its
// canonical spelling: no-color a Go bool ("true"/"false"; true, false, 1, 0
// and their strconv.ParseBool spellings accepted), verbose a count of -v
// (0 or more), output one of OutputFormats (case-insensitive). Other keys
// are free text, returned as given. The error says what is wanted, without
// the value's origin; callers add it (the environment variable, or the
// settings file, line and context), so MIRRORCTL_* variables and contexts
// are checked by this one function.
func Validate(key, value string) (string, error) {
	switch key {
	case KeyNoColor:
		b, err := strconv.ParseBool(strings.TrimSpace(value))
		if err != nil {
			return "", fmt.Errorf("want true or false (also 1 or 0)")
		}
		return strconv.FormatBool(b), nil
	case KeyVerbose:
		n, err := strconv.Atoi(strings.TrimSpace(value))
		if err != nil || n < 0 {
			return "", fmt.Errorf("want a count of -v, 0 or more (1 info, 2 debug)")
		}
		return strconv.Itoa(n), nil
	case KeyOutput:
		v := strings.ToLower(strings.TrimSpace(value))
		if !slices.Contains(OutputFormats, v) {
			return "", fmt.Errorf("want one of {%s}", strings.Join(OutputFormats, "|"))
		}
		return v, nil
	}
	return value, nil
}

// didYouMean returns ` (did you mean "x"?)` for the candidate at most two
// edits from key, or "".
func didYouMean(key string, cands []string) string {
	best, bestD := "", 3
	for _, c := range cands {
		if d := editDistance(key, c); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	row := make([]int, len(b)+1)
	for j := range row {
		row[j] = j
	}
	for i := 1; i <= len(a); i++ {
		diag := row[0]
		row[0] = i
		for j := 1; j <= len(b); j++ {
			sub := diag
			if a[i-1] != b[j-1] {
				sub++
			}
			diag = row[j]
			row[j] = min(row[j]+1, row[j-1]+1, sub)
		}
	}
	return row[len(b)]
}

// DisplayPath returns p with any credentials before an '@' masked:
// "https://alice:pw@host/x" becomes "https://***@host/x" and
// "alice:pw@host/x" becomes "***@host/x" (in each '/'-separated segment, a
// part before '@' holding a ':' is taken for user:password). A context holds no secrets, but
// a path or URL written with userinfo must not reach output, logs or errors.
func DisplayPath(p string) string {
	if !strings.Contains(p, "@") {
		return p
	}
	segs := strings.Split(p, "/")
	for i, seg := range segs {
		if at := strings.LastIndex(seg, "@"); at > 0 && strings.Contains(seg[:at], ":") {
			segs[i] = "***" + seg[at:]
		}
	}
	return strings.Join(segs, "/")
}
