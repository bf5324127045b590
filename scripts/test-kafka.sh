#!/usr/bin/env bash
# `make test-kafka`: fetch Kafka (cached), start the two clusters, run the
# integration tests (build tag "kafka"), and always take the clusters down.
# Extra arguments go to `go test` (e.g. -run TestRealMM2 -v).
#
# The clusters live on fixed ports and in one state directory, so two runs on
# one machine would stop, wipe or re-key each other's brokers (a broker
# restarted with another run's SCRAM passwords refuses every login). A run
# therefore holds an exclusive lock (MIRRORCTL_KAFKA_LOCK, the same file
# `make bench-kafka` locks) from before `up` to after `down`; a second run
# waits for it, bounded. Do not wrap this script in flock on the same file: it
# would wait for itself.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KAFKA="$ROOT/scripts/kafka.sh"
LOCK=${MIRRORCTL_KAFKA_LOCK:-/tmp/mirrorctl-kafka.lock}
LOCK_WAIT_S=${MIRRORCTL_KAFKA_LOCK_WAIT_S:-2400}
cd "$ROOT"

exec 9>>"$LOCK"
if ! flock -n 9; then
  echo "test-kafka: another real-Kafka run holds $LOCK; waiting up to ${LOCK_WAIT_S}s" >&2
  flock -w "$LOCK_WAIT_S" 9 || {
    echo "test-kafka: $LOCK still held after ${LOCK_WAIT_S}s; giving up" >&2
    exit 1
  }
fi

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
# The suite took 731 s on CI and 919 s on a loaded 2-CPU machine (where
# the old -timeout 15m, 900 s, cut it short): 25m keeps a margin of 1.6x
# over the slowest run measured. Each test bounds its own waits well below.
step tests go test -tags kafka -count=1 -timeout 25m "$@" ./itest/...
