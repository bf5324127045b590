#!/usr/bin/env bash
# `make fuzz`: run every fuzz target of the module for FUZZTIME each (a Go
# duration, default 5s).
#
# A target fails the run when go test fails and wrote a failing input to the
# package's testdata/fuzz/<target>/ (go test prints it, and the file is the
# reproducer to commit with the fix). A failure that wrote none and says
# "context deadline exceeded" is the Go fuzz coordinator's race at the end
# of -fuzztime (go.dev/issue/75804, fixed in Go 1.27), not an input: that
# target is run once more, and a second failure of any kind fails the run.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-5s}
cd "$ROOT"

# inputs prints the failing inputs saved for target $2 in package dir $1.
inputs() { ls -1 "$1/testdata/fuzz/$2" 2>/dev/null || true; }

fuzz_one() { # pkg dir target
	local pkg=$1 dir=$2 f=$3 out before
	before=$(inputs "$dir" "$f")
	out=$(mktemp)
	if "$GO" test -run '^$' -fuzz "^$f\$" -fuzztime "$FUZZTIME" "$pkg" 2>&1 | tee "$out"; then
		rm -f "$out"
		return 0
	fi
	if [ "$(inputs "$dir" "$f")" != "$before" ] || ! grep -q 'context deadline exceeded' "$out"; then
		rm -f "$out"
		return 1
	fi
	rm -f "$out"
	echo "fuzz $pkg $f: failed at the end of -fuzztime with no failing input (go.dev/issue/75804); running it once more"
	"$GO" test -run '^$' -fuzz "^$f\$" -fuzztime "$FUZZTIME" "$pkg"
}

"$GO" list -f '{{.ImportPath}} {{.Dir}}' ./... | while read -r pkg dir; do
	for f in $("$GO" test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "fuzz $pkg $f"
		fuzz_one "$pkg" "$dir" "$f"
	done
done
