#!/usr/bin/env bash
# Real Apache Kafka (two single-node KRaft clusters) and MirrorMaker 2 for
# mirrorctl's integration tests. No Docker: the jars come from Maven Central
# through `mvn`, and everything runs as plain `java` processes on loopback.
#
#   scripts/kafka.sh install          fetch jars into the cache, compile helpers
#   scripts/kafka.sh up               start us-east and eu-west, print env exports
#   scripts/kafka.sh env              print the env exports (no side effects)
#   scripts/kafka.sh status           which processes are up (exit 1 if a broker is down)
#   scripts/kafka.sh down             stop our processes (by pid file), remove data
#   scripts/kafka.sh stop NAME        stop one cluster (us-east or eu-west), keeping its data
#   scripts/kafka.sh start NAME       start a cluster stopped with 'stop' and wait until it answers
#   scripts/kafka.sh mm2-start FILE   run MirrorMaker 2 (dedicated mode) on mm2.properties FILE
#   scripts/kafka.sh mm2-stop         stop it
#   scripts/kafka.sh logs [NAME]      tail the logs (NAME: us-east, eu-west, mm2)
#   scripts/kafka.sh translate-offsets --bootstrap H:P --source-alias A --group G [--client-config F]
#                                     run RemoteClusterUtils.translateOffsets (JSON lines)
#   scripts/kafka.sh tool NAME ARGS...  run one of Kafka's own CLI tools (its kafka-tools jar and
#                                     dependencies are fetched from Maven Central on first use):
#                                     consumer-groups, console-producer, console-consumer, topics,
#                                     get-offsets, or a fully qualified class name, e.g.
#     scripts/kafka.sh tool consumer-groups --bootstrap-server 127.0.0.1:19092 --describe --group G
#     echo hi | scripts/kafka.sh tool console-producer --bootstrap-server 127.0.0.1:19092 --topic orders
#     scripts/kafka.sh tool console-consumer --bootstrap-server 127.0.0.1:29092 --topic us-east.orders --from-beginning
#
# Environment: MIRRORCTL_KAFKA_STATE (default /tmp/mirrorctl-kafka) holds data,
# logs, pid files, certificates and credentials; XDG_CACHE_HOME/HOME locate the
# jar cache. Every wait is bounded.
set -euo pipefail

# The one place the Kafka version is pinned. 4.4.0's connect-mirror jar is not
# served by Maven Central yet, so 4.3.1 is the newest 4.x whose full set resolves.
KAFKA_VERSION=4.3.1

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SELF="$ROOT/scripts/kafka.sh"
HARNESS="$ROOT/harness"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/mirrorctl/kafka-$KAFKA_VERSION"
LIBS="$CACHE/libs"
CLASSES="$CACHE/classes"
TOOLS="$CACHE/tools" # Kafka's CLI tools, apart from the broker's jars
STATE="${MIRRORCTL_KAFKA_STATE:-/tmp/mirrorctl-kafka}"
SECRETS="$STATE/secrets"
LOGS="$STATE/logs"
RUN="$STATE/run"

CLUSTERS=(us-east eu-west)
# name -> "plaintext sasl_ssl controller" ports
declare -A PORTS=([us-east]="19092 19093 19094" [eu-west]="29092 29093 29094")

ADMIN_USER=admin            # super user on both clusters (SASL_SSL)
APP_USER=replicator         # ordinary SASL user with no ACLs unless a test grants them
READY_TIMEOUT_S=90
STOP_TIMEOUT_S=30
JVM_HEAP=(-Xms128m -Xmx512m)

log() { printf 'kafka.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

port() { # port NAME INDEX(0 plaintext, 1 sasl, 2 controller)
  local p
  read -r -a p <<<"${PORTS[$1]}"
  echo "${p[$2]}"
}

classpath() { echo "$LIBS/*:$CLASSES"; }

tool_java() { # run a short-lived helper JVM with quiet logging
  java -Xmx256m -XX:TieredStopAtLevel=1 -Xshare:auto \
    -Dlog4j2.configurationFile="$HARNESS/config/log4j2-tool.properties" \
    -cp "$(classpath)" "$@"
}

# ---------------------------------------------------------------- install

need_tools() {
  local missing=()
  command -v java >/dev/null 2>&1 || missing+=(java)
  command -v javac >/dev/null 2>&1 || missing+=(javac)
  command -v keytool >/dev/null 2>&1 || missing+=(keytool)
  command -v mvn >/dev/null 2>&1 || missing+=(mvn)
  command -v openssl >/dev/null 2>&1 || missing+=(openssl)
  ((${#missing[@]} == 0)) && return 0
  log "missing ${missing[*]}: installing with apt-get"
  local sudo=()
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || die "need root or sudo to apt-get install ${missing[*]}"
    sudo=(sudo)
  fi
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive timeout 300 apt-get update -q
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive timeout 600 \
    apt-get install -y -q --no-install-recommends openjdk-17-jdk-headless maven openssl
}

fingerprint() { cat "$HARNESS/pom.xml" | sha256sum | cut -c1-16; }

cmd_install() {
  need_tools
  local fp
  fp=$(fingerprint)
  if [ -f "$LIBS/.complete" ] && [ "$(cat "$LIBS/.complete")" = "$fp" ]; then
    log "jars for Kafka $KAFKA_VERSION already in $LIBS"
  else
    log "fetching Kafka $KAFKA_VERSION jars with mvn into $LIBS"
    rm -rf "$LIBS" "$LIBS.tmp"
    mkdir -p "$CACHE"
    (cd "$HARNESS" && timeout 900 mvn -B -q -Dstyle.color=never -f pom.xml dependency:copy-dependencies \
      -Dkafka.version="$KAFKA_VERSION" -DincludeScope=runtime \
      -DoutputDirectory="$LIBS.tmp") || die "mvn could not fetch the Kafka $KAFKA_VERSION jars (see above)"
    ls "$LIBS.tmp"/kafka_2.13-"$KAFKA_VERSION".jar "$LIBS.tmp"/connect-mirror-"$KAFKA_VERSION".jar >/dev/null \
      || die "mvn finished but $LIBS.tmp lacks kafka_2.13/connect-mirror $KAFKA_VERSION"
    mv "$LIBS.tmp" "$LIBS"
    echo "$fp" >"$LIBS/.complete"
  fi
  # Helpers are recompiled whenever their sources change (javac takes ~2s).
  local srcfp
  srcfp=$(cat "$HARNESS"/src/mirrorctl/harness/*.java | sha256sum | cut -c1-16)
  if [ ! -f "$CLASSES/.complete" ] || [ "$(cat "$CLASSES/.complete")" != "$srcfp" ]; then
    log "compiling helper programs into $CLASSES"
    rm -rf "$CLASSES"
    mkdir -p "$CLASSES"
    javac -nowarn -d "$CLASSES" -cp "$LIBS/*" "$HARNESS"/src/mirrorctl/harness/*.java \
      || die "javac failed on $HARNESS/src"
    echo "$srcfp" >"$CLASSES/.complete"
  fi
}

installed() { [ -f "$LIBS/.complete" ] && [ -f "$CLASSES/.complete" ]; }

# ---------------------------------------------------------------- processes

pidfile() { echo "$RUN/$1.pid"; }

# alive NAME: true if the pid file names a live process that is ours (its
# command line mentions our state dir), so a recycled pid is never signalled.
alive() {
  local f pid
  f=$(pidfile "$1")
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$STATE/" || return 1
}

stop_one() { # stop_one NAME: TERM, bounded wait, then KILL
  local name=$1 f pid i
  f=$(pidfile "$name")
  if ! alive "$name"; then
    rm -f "$f"
    return 0
  fi
  pid=$(cat "$f")
  log "stopping $name (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < STOP_TIMEOUT_S * 4; i++)); do
    [ -d "/proc/$pid" ] || break
    sleep 0.25
  done
  if [ -d "/proc/$pid" ]; then
    log "$name (pid $pid) still running after ${STOP_TIMEOUT_S}s: KILL"
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 40; i++)); do
      [ -d "/proc/$pid" ] || break
      sleep 0.25
    done
  fi
  [ -d "/proc/$pid" ] && die "$name (pid $pid) would not die"
  rm -f "$f"
}

# start_bg NAME LOGFILE CMD...: start CMD detached from our stdio, record its pid.
start_bg() {
  local name=$1 logf=$2
  shift 2
  mkdir -p "$RUN" "$LOGS"
  # exec makes $! the java pid itself; stdio goes to files so callers that
  # capture our output (e.g. Go's exec) are not held open by the child. Fd 9
  # is test-kafka.sh's lock: a broker must not keep holding it after the run.
  (exec "$@" </dev/null >"$logf" 2>&1 9>&-) &
  echo $! >"$(pidfile "$name")"
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# ---------------------------------------------------------------- secrets

gen_secrets() {
  [ -f "$SECRETS/.complete" ] && return 0
  log "generating CA, broker certificate and SCRAM credentials in $SECRETS"
  rm -rf "$SECRETS"
  mkdir -p "$SECRETS"
  chmod 700 "$SECRETS"
  local pw admin_pw app_pw
  pw=$(openssl rand -hex 16)
  admin_pw=$(openssl rand -hex 16)
  app_pw=$(openssl rand -hex 16)
  (
    cd "$SECRETS"
    umask 077
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -sha256 \
      -subj "/CN=mirrorctl test CA" -keyout ca.key -out ca.pem \
      -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -sha256 -subj "/CN=localhost" \
      -keyout broker.key -out broker.csr 2>/dev/null
    printf '%s\n' "subjectAltName=DNS:localhost,IP:127.0.0.1" "basicConstraints=CA:FALSE" \
      "keyUsage=digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth,clientAuth" >broker.ext
    openssl x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 3650 -sha256 \
      -extfile broker.ext -out broker.pem 2>/dev/null
    openssl pkcs12 -export -in broker.pem -inkey broker.key -certfile ca.pem -name broker \
      -out broker.p12 -passout "pass:$pw"
    keytool -importkeystore -noprompt -srckeystore broker.p12 -srcstoretype PKCS12 -srcstorepass "$pw" \
      -destkeystore broker.jks -deststoretype JKS -deststorepass "$pw" >/dev/null 2>&1
    keytool -importcert -noprompt -alias ca -file ca.pem -keystore truststore.jks \
      -storetype JKS -storepass "$pw" >/dev/null 2>&1
    keytool -importcert -noprompt -alias ca -file ca.pem -keystore truststore.p12 \
      -storetype PKCS12 -storepass "$pw" >/dev/null 2>&1
    rm -f broker.csr broker.ext ca.srl
    cat >credentials.env <<EOF
STORE_PASSWORD=$pw
ADMIN_PASSWORD=$admin_pw
APP_PASSWORD=$app_pw
EOF
    # Java client config for the admin over SASL_SSL (used by WaitReady and
    # handy for TranslateOffsets --client-config).
    cat >admin-client.properties <<EOF
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="$ADMIN_USER" password="$admin_pw";
ssl.truststore.type=PKCS12
ssl.truststore.location=$SECRETS/truststore.p12
ssl.truststore.password=$pw
EOF
  )
  touch "$SECRETS/.complete"
}

load_credentials() {
  [ -f "$SECRETS/credentials.env" ] || die "no credentials in $SECRETS: run '$SELF up' first"
  # shellcheck disable=SC1091
  . "$SECRETS/credentials.env"
}

# ---------------------------------------------------------------- clusters

render_config() { # render_config NAME > server.properties
  local name=$1
  sed -e "s|@PLAIN_PORT@|$(port "$name" 0)|g" \
    -e "s|@SASL_PORT@|$(port "$name" 1)|g" \
    -e "s|@CONTROLLER_PORT@|$(port "$name" 2)|g" \
    -e "s|@SECRETS@|$SECRETS|g" \
    -e "s|@STORE_PASSWORD@|$STORE_PASSWORD|g" \
    -e "s|@ADMIN_USER@|$ADMIN_USER|g" \
    -e "s|@DATA_DIR@|$STATE/data/$name|g" \
    "$HARNESS/config/server.properties.in"
}

format_cluster() {
  local name=$1 conf="$STATE/config/$name.properties"
  [ -f "$STATE/data/$name/meta.properties" ] && return 0
  mkdir -p "$STATE/data/$name"
  local id
  id=$(tool_java kafka.tools.StorageTool random-uuid | tail -n 1)
  # --add-scram puts the SCRAM-SHA-512 users into the bootstrap metadata.
  tool_java kafka.tools.StorageTool format --config "$conf" --cluster-id "$id" --ignore-formatted \
    --add-scram "SCRAM-SHA-512=[name=$ADMIN_USER,password=$ADMIN_PASSWORD]" \
    --add-scram "SCRAM-SHA-512=[name=$APP_USER,password=$APP_PASSWORD]" \
    >"$LOGS/$name-format.log" 2>&1 || {
    sed -e 's/password=[^],]*/password=<redacted>/g' "$LOGS/$name-format.log" >&2
    die "formatting $name storage failed (log: $LOGS/$name-format.log)"
  }
}

# prepare_cluster NAME: check its ports are free, write its server.properties,
# format its storage once.
prepare_cluster() {
  local name=$1 p
  for p in ${PORTS[$name]}; do
    port_busy "$p" && die "port $p for $name is in use by another process (no live pid of ours in $RUN)"
  done
  mkdir -p "$STATE/config" "$LOGS"
  render_config "$name" >"$STATE/config/$name.properties"
  chmod 600 "$STATE/config/$name.properties"
  format_cluster "$name"
}

start_cluster() {
  local name=$1
  log "starting $name (PLAINTEXT 127.0.0.1:$(port "$name" 0), SASL_SSL 127.0.0.1:$(port "$name" 1))"
  start_bg "$name" "$LOGS/$name.log" java "${JVM_HEAP[@]}" -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$HARNESS/config/log4j2-server.properties" \
    -cp "$(classpath)" kafka.Kafka "$STATE/config/$name.properties"
}

wait_ready() { # wait_ready NAME [client-config [extra WaitReady args...]]
  local name=$1 cfg=${2:-} bootstrap idx=0 args=()
  if [ -n "$cfg" ]; then
    idx=1
    args=(--client-config "$cfg" "${@:3}")
  fi
  bootstrap="127.0.0.1:$(port "$name" "$idx")"
  if ! tool_java mirrorctl.harness.WaitReady --bootstrap "$bootstrap" --timeout-ms $((READY_TIMEOUT_S * 1000)) \
    "${args[@]}" >/dev/null; then
    alive "$name" || log "$name exited; last lines of $LOGS/$name.log:"
    tail -n 30 "$LOGS/$name.log" >&2 || true
    return 1
  fi
}

cmd_env() {
  load_credentials
  cat <<EOF
export MIRRORCTL_KAFKA_VERSION=$KAFKA_VERSION
export MIRRORCTL_KAFKA_SCRIPT=$SELF
export MIRRORCTL_KAFKA_STATE=$STATE
export MIRRORCTL_KAFKA_US_EAST=127.0.0.1:$(port us-east 0)
export MIRRORCTL_KAFKA_EU_WEST=127.0.0.1:$(port eu-west 0)
export MIRRORCTL_KAFKA_US_EAST_SASL=127.0.0.1:$(port us-east 1)
export MIRRORCTL_KAFKA_EU_WEST_SASL=127.0.0.1:$(port eu-west 1)
export MIRRORCTL_KAFKA_SASL_MECHANISM=SCRAM-SHA-512
export MIRRORCTL_KAFKA_CA_PEM=$SECRETS/ca.pem
export MIRRORCTL_KAFKA_TRUSTSTORE_JKS=$SECRETS/truststore.jks
export MIRRORCTL_KAFKA_TRUSTSTORE_P12=$SECRETS/truststore.p12
export MIRRORCTL_KAFKA_STORE_PASSWORD=$STORE_PASSWORD
export MIRRORCTL_KAFKA_SCRAM_USER=$ADMIN_USER
export MIRRORCTL_KAFKA_SCRAM_PASSWORD=$ADMIN_PASSWORD
export MIRRORCTL_KAFKA_APP_USER=$APP_USER
export MIRRORCTL_KAFKA_APP_PASSWORD=$APP_PASSWORD
export MIRRORCTL_KAFKA_ADMIN_CLIENT_PROPERTIES=$SECRETS/admin-client.properties
EOF
}

cmd_up() {
  installed || cmd_install
  local n all=1
  for n in "${CLUSTERS[@]}"; do alive "$n" || all=0; done
  if ((all)); then
    log "already up"
    cmd_env
    return 0
  fi
  mkdir -p "$STATE" "$LOGS" "$RUN"
  gen_secrets
  load_credentials
  local t0=$SECONDS pids=() rc=0 todo=()
  for n in "${CLUSTERS[@]}"; do alive "$n" || todo+=("$n"); done
  # Format in parallel (each is a JVM start), then start.
  for n in "${todo[@]}"; do
    prepare_cluster "$n" &
    pids+=($!)
  done
  for n in "${pids[@]}"; do wait "$n" || rc=1; done
  ((rc == 0)) || die "could not prepare ${todo[*]}"
  for n in "${todo[@]}"; do start_cluster "$n"; done
  pids=()
  for n in "${CLUSTERS[@]}"; do
    (wait_ready "$n" && wait_ready "$n" "$SECRETS/admin-client.properties") &
    pids+=($!)
  done
  for n in "${pids[@]}"; do wait "$n" || rc=1; done
  ((rc == 0)) || die "clusters did not become ready within ${READY_TIMEOUT_S}s (run '$SELF down' to clean up)"
  log "up: us-east and eu-west answer on PLAINTEXT and SASL_SSL ($((SECONDS - t0))s)"
  cmd_env
}

cmd_down() {
  stop_one mm2
  local n
  for n in "${CLUSTERS[@]}"; do stop_one "$n"; done
  # Keep logs/ for post-mortems; everything else (data, keys, passwords) goes.
  rm -rf "$STATE/data" "$STATE/config" "$SECRETS" "$STATE/mm2" "$RUN"
  log "down: stopped and removed data under $STATE (logs kept in $LOGS)"
}

# cluster_name NAME: fail unless NAME is one of CLUSTERS.
cluster_name() {
  local n
  for n in "${CLUSTERS[@]}"; do [ "$n" = "${1:-}" ] && return 0; done
  die "unknown cluster '${1:-}': ${CLUSTERS[*]}"
}

# cmd_stop_cluster NAME: stop one broker (TERM, bounded wait, then KILL),
# keeping its data, config and secrets, so 'start' brings it back as it was.
cmd_stop_cluster() {
  cluster_name "${1:-}"
  stop_one "$1"
}

# cmd_start_cluster NAME: start a broker stopped with 'stop' and wait until
# it answers on both listeners (bounded by READY_TIMEOUT_S).
cmd_start_cluster() {
  cluster_name "${1:-}"
  local name=$1
  if alive "$name"; then
    log "$name is already up"
    return 0
  fi
  [ -f "$STATE/config/$name.properties" ] && [ -f "$STATE/data/$name/meta.properties" ] ||
    die "$name was never prepared: run '$SELF up' first"
  load_credentials
  start_cluster "$name"
  wait_ready "$name" || die "$name did not become ready within ${READY_TIMEOUT_S}s"
  if ! READY_TIMEOUT_S=20 wait_ready "$name" "$SECRETS/admin-client.properties" --auth-fail-fast true 2>/dev/null; then
    # Kafka 4.3.1: once any SCRAM user was removed (the ACL tests add and
    # remove theirs), a restarted KRaft node refuses every SCRAM login,
    # the format-time users' too, and lists no SCRAM users, although its
    # log replays their records. Setting them again over PLAINTEXT (the
    # ANONYMOUS super user) brings the logins back. The wait above ends at
    # the first refused login (retrying does not help; it took the whole
    # 20 s before); setting the users again when a refusal had been
    # passing would be harmless, the same users and passwords.
    log "$name refuses SCRAM logins after its restart; setting the harness's SCRAM users again"
    set_scram "$name" "$ADMIN_USER" "$ADMIN_PASSWORD" && set_scram "$name" "$APP_USER" "$APP_PASSWORD" ||
      die "could not set the SCRAM users on $name again"
    wait_ready "$name" "$SECRETS/admin-client.properties" ||
      die "$name did not accept SCRAM logins within ${READY_TIMEOUT_S}s"
  fi
  log "$name is up again"
}

# set_scram NAME USER PASSWORD: upsert USER's SCRAM-SHA-512 credential on
# NAME over PLAINTEXT. Nothing is printed (the password is on the tool's
# command line, as for the format's --add-scram, never in its output).
set_scram() {
  tool_java kafka.admin.ConfigCommand --bootstrap-server "127.0.0.1:$(port "$1" 0)" --alter \
    --add-config "SCRAM-SHA-512=[password=$3]" --entity-type users --entity-name "$2" >/dev/null 2>&1
}

cmd_status() {
  local n rc=0
  for n in "${CLUSTERS[@]}" mm2; do
    if alive "$n"; then
      echo "$n: up (pid $(cat "$(pidfile "$n")"))"
    else
      echo "$n: down"
      [ "$n" = mm2 ] || rc=1
    fi
  done
  return $rc
}

cmd_mm2_start() {
  local props=${1:-}
  [ -n "$props" ] || die "usage: $SELF mm2-start <mm2.properties>"
  [ -f "$props" ] || die "mm2-start: no such file: $props"
  installed || die "not installed: run '$SELF install' first"
  alive mm2 && die "MirrorMaker 2 is already running (pid $(cat "$(pidfile mm2)")); run '$SELF mm2-stop' first"
  mkdir -p "$STATE/mm2"
  # Copy the file into the state dir so the running config survives the
  # caller's temp dir and the process is recognisably ours.
  cp "$props" "$STATE/mm2/mm2.properties"
  chmod 600 "$STATE/mm2/mm2.properties"
  start_bg mm2 "$LOGS/mm2.log" java "${JVM_HEAP[@]}" -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$HARNESS/config/log4j2-server.properties" \
    -cp "$(classpath)" org.apache.kafka.connect.mirror.MirrorMaker "$STATE/mm2/mm2.properties"
  local i
  for ((i = 0; i < 8; i++)); do
    sleep 0.25
    alive mm2 || { tail -n 30 "$LOGS/mm2.log" >&2; die "MirrorMaker 2 exited at start (log: $LOGS/mm2.log)"; }
  done
  log "MirrorMaker 2 started (pid $(cat "$(pidfile mm2)"), log $LOGS/mm2.log)"
}

cmd_logs() {
  local names=("$@") n
  ((${#names[@]})) || names=("${CLUSTERS[@]}" mm2)
  for n in "${names[@]}"; do
    [ -f "$LOGS/$n.log" ] || { log "no log for $n"; continue; }
    echo "==> $LOGS/$n.log <=="
    tail -n "${KAFKA_LOG_LINES:-60}" "$LOGS/$n.log"
  done
}

cmd_translate_offsets() {
  installed || die "not installed: run '$SELF install' first"
  tool_java mirrorctl.harness.TranslateOffsets "$@"
}

# Kafka's CLI tools: the class behind each bin/kafka-*.sh script of the
# Kafka 4.x distribution.
tool_class() {
  case "$1" in
  consumer-groups) echo org.apache.kafka.tools.consumer.group.ConsumerGroupCommand ;;
  console-consumer) echo org.apache.kafka.tools.consumer.ConsoleConsumer ;;
  console-producer) echo org.apache.kafka.tools.ConsoleProducer ;;
  topics) echo org.apache.kafka.tools.TopicCommand ;;
  get-offsets) echo org.apache.kafka.tools.GetOffsetShell ;;
  *.*) echo "$1" ;;
  *) die "unknown tool '$1': consumer-groups, console-producer, console-consumer, topics, get-offsets or a class name" ;;
  esac
}

install_tools() {
  local fp
  fp=$(sha256sum <"$HARNESS/tools/pom.xml" | cut -c1-16)
  [ -f "$TOOLS/.complete" ] && [ "$(cat "$TOOLS/.complete")" = "$fp" ] && return 0
  need_tools
  log "fetching Kafka $KAFKA_VERSION's CLI tools (kafka-tools) with mvn into $TOOLS"
  rm -rf "$TOOLS.tmp"
  mkdir -p "$CACHE"
  (cd "$HARNESS/tools" && timeout 900 mvn -B -q -Dstyle.color=never -f pom.xml dependency:copy-dependencies \
    -Dkafka.version="$KAFKA_VERSION" -DincludeScope=runtime \
    -DoutputDirectory="$TOOLS.tmp") || die "mvn could not fetch kafka-tools $KAFKA_VERSION (see above)"
  [ -f "$TOOLS.tmp/kafka-tools-$KAFKA_VERSION.jar" ] || die "mvn finished but $TOOLS.tmp lacks kafka-tools-$KAFKA_VERSION.jar"
  rm -rf "$TOOLS"
  mv "$TOOLS.tmp" "$TOOLS"
  echo "$fp" >"$TOOLS/.complete"
}

cmd_tool() {
  (($#)) || die "usage: $SELF tool NAME ARGS... (NAME: consumer-groups, console-producer, console-consumer, topics, get-offsets)"
  local class
  class=$(tool_class "$1")
  shift
  install_tools
  exec java -Xmx256m -XX:TieredStopAtLevel=1 -Xshare:auto \
    -Dlog4j2.configurationFile="$HARNESS/config/log4j2-tool.properties" \
    -cp "$TOOLS/*" "$class" "$@"
}

usage() {
  sed -n '2,/^set -euo/p' "$SELF" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
  exit 2
}

main() {
  local cmd=${1:-}
  (($#)) && shift
  case "$cmd" in
  install) cmd_install ;;
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  env) cmd_env ;;
  mm2-start) cmd_mm2_start "$@" ;;
  mm2-stop) stop_one mm2 ;;
  stop) cmd_stop_cluster "$@" ;;
  start) cmd_start_cluster "$@" ;;
  logs) cmd_logs "$@" ;;
  translate-offsets) cmd_translate_offsets "$@" ;;
  tool) cmd_tool "$@" ;;
  *) usage ;;
  esac
}

main "$@"
