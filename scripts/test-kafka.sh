#!/usr/bin/env bash
# `make test-kafka`: fetch Kafka (cached), start the two clusters, run the
# integration tests (build tag "kafka"), and always take the clusters down.
# Extra arguments go to `go test` (e.g. -run TestRealMM2 -v).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KAFKA="$ROOT/scripts/kafka.sh"
cd "$ROOT"

timings=()
step() { # step NAME CMD...: run CMD, record its wall time
  local name=$1 t0=$SECONDS rc=0
  shift
  "$@" || rc=$?
  timings+=("$(printf '%-8s %4ds%s' "$name" $((SECONDS - t0)) "$( ((rc)) && echo " (failed, exit $rc)")")")
  return $rc
}

finish() {
  local rc=$?
  trap - EXIT INT TERM
  if ((rc != 0)); then
    KAFKA_LOG_LINES=40 "$KAFKA" logs >&2 || true
  fi
  step down "$KAFKA" down || true
  printf '\ntest-kafka timings:\n' >&2
  printf '  %s\n' "${timings[@]}" >&2
  exit $rc
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step install "$KAFKA" install
envfile=$(mktemp)
step up bash -c '"$1" up >"$2"' _ "$KAFKA" "$envfile"
# shellcheck disable=SC1090
. "$envfile"
rm -f "$envfile"
step tests go test -tags kafka -count=1 -timeout 15m "$@" ./itest/...
