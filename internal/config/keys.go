package config

import (
	"strings"

	"github.com/mirrorctl/mirrorctl/replicate/filter"
	"github.com/mirrorctl/mirrorctl/replicate/policy"
)

// kind is the ConfigDef type of a known key, which decides how its value is
// validated at Load and read by the Flow getters.
type kind int

const (
	kString kind = iota
	kInt         // a Java INT/LONG/SHORT: decimal, trimmed
	kBool        // "true" or "false", case-insensitive, trimmed
	kEnum        // one of keyInfo.enum, case-insensitive
	kList        // a regex list (topics, groups, ...), compiled at Load
	kClass       // a Java class name
)

// scope says where a key takes effect.
type scope int

const (
	// scopeConnector keys are MM2 connector settings: default < top-level <
	// A->B override (MirrorMakerConfig.connectorBaseConfig).
	scopeConnector scope = iota
	// scopeWorker keys belong to the Connect worker of herder A->B, which is
	// built from the TARGET cluster's props: default < top-level < B.<key>.
	scopeWorker
	// scopeTop keys are read by MirrorMakerConfig itself, top-level only.
	scopeTop
)

type keyInfo struct {
	kind   kind
	scope  scope
	def    string   // the default as MM2 would show it; "" = none
	enum   []string // allowed values for kEnum, lower case
	min    int64    // minimum for kInt when hasMin
	hasMin bool
}

// Fully qualified MM2 class names used as defaults.
const (
	classDefaultTopicFilter          = "org.apache.kafka.connect.mirror.DefaultTopicFilter"
	classDefaultGroupFilter          = "org.apache.kafka.connect.mirror.DefaultGroupFilter"
	classDefaultConfigPropertyFilter = "org.apache.kafka.connect.mirror.DefaultConfigPropertyFilter"
	classForwardingAdmin             = "org.apache.kafka.clients.admin.ForwardingAdmin"
)

// knownKeys are the MM2 keys that mirrorctl understands (the connector and
// filter keys of MirrorMakerConfig; docs/config-keys.md), with their Kafka 4.0
// defaults.
var knownKeys = map[string]keyInfo{
	"enabled":                               {kind: kBool, def: "false"},
	"tasks.max":                             {kind: kInt, def: "1", min: 1, hasMin: true},
	policy.KeyClass:                         {kind: kClass, def: policy.ClassDefault},
	policy.KeySeparator:                     {kind: kString, def: policy.DefaultSeparator},
	policy.KeyInternalSeparatorEnabled:      {kind: kBool, def: "true"},
	"source.cluster.alias":                  {kind: kString},
	"target.cluster.alias":                  {kind: kString},
	"topics":                                {kind: kList, def: filter.DefaultTopics},
	"topics.exclude":                        {kind: kList, def: filter.DefaultTopicsExclude},
	"groups":                                {kind: kList, def: filter.DefaultGroups},
	"groups.exclude":                        {kind: kList, def: filter.DefaultGroupsExclude},
	"config.properties.exclude":             {kind: kList, def: filter.DefaultConfigPropertiesExclude},
	"use.defaults.from":                     {kind: kEnum, def: "target", enum: []string{"source", "target"}},
	"replication.factor":                    {kind: kInt, def: "2", min: -1, hasMin: true},
	"offset-syncs.topic.replication.factor": {kind: kInt, def: "3", min: -1, hasMin: true},
	"checkpoints.topic.replication.factor":  {kind: kInt, def: "3", min: -1, hasMin: true},
	"heartbeats.topic.replication.factor":   {kind: kInt, def: "3", min: -1, hasMin: true},
	"offset-syncs.topic.location":           {kind: kEnum, def: "source", enum: []string{"source", "target"}},
	"emit.offset-syncs.enabled":             {kind: kBool, def: "true"},
	"offset.lag.max":                        {kind: kInt, def: "100"},
	"emit.heartbeats.enabled":               {kind: kBool, def: "true"},
	"emit.heartbeats.interval.seconds":      {kind: kInt, def: "1"},
	"emit.checkpoints.enabled":              {kind: kBool, def: "true"},
	"emit.checkpoints.interval.seconds":     {kind: kInt, def: "60"},
	"sync.group.offsets.enabled":            {kind: kBool, def: "false"},
	"sync.group.offsets.interval.seconds":   {kind: kInt, def: "60"},
	"refresh.topics.enabled":                {kind: kBool, def: "true"},
	"refresh.topics.interval.seconds":       {kind: kInt, def: "600"},
	"refresh.groups.enabled":                {kind: kBool, def: "true"},
	"refresh.groups.interval.seconds":       {kind: kInt, def: "600"},
	"sync.topic.configs.enabled":            {kind: kBool, def: "true"},
	"sync.topic.configs.interval.seconds":   {kind: kInt, def: "600"},
	"sync.topic.acls.enabled":               {kind: kBool, def: "true"},
	"sync.topic.acls.interval.seconds":      {kind: kInt, def: "600"},
	// mirrorctl's own, though named in MM2's family: delete the target ACL
	// bindings mirrorctl created whose source binding is gone
	// (replicate/acltrack.go). Off by default: revoked grants are only
	// reported.
	KeySyncTopicACLsPrune:                 {kind: kBool, def: "false"},
	"heartbeats.replication.enabled":      {kind: kBool, def: "true"},
	"consumer.poll.timeout.ms":            {kind: kInt, def: "1000"},
	"admin.timeout.ms":                    {kind: kInt, def: "60000"},
	"topic.filter.class":                  {kind: kClass, def: classDefaultTopicFilter},
	"group.filter.class":                  {kind: kClass, def: classDefaultGroupFilter},
	"config.property.filter.class":        {kind: kClass, def: classDefaultConfigPropertyFilter},
	"forwarding.admin.class":              {kind: kClass, def: classForwardingAdmin},
	"metric.reporters":                    {kind: kString, def: "org.apache.kafka.common.metrics.JmxReporter"},
	"use.incremental.alter.configs":       {kind: kEnum, def: "requested", enum: []string{"requested", "required", "never"}},
	"add.source.alias.to.metrics":         {kind: kBool, def: "false"},
	"offset.flush.interval.ms":            {kind: kInt, scope: scopeWorker, def: "60000"},
	"exactly.once.source.support":         {kind: kEnum, scope: scopeWorker, def: "disabled", enum: []string{"disabled", "enabled", "preparing"}},
	"dedicated.mode.enable.internal.rest": {kind: kBool, scope: scopeTop, def: "false"},
	// mirrorctl's own: the flow's consumer group on the source, through
	// which replicate processes share its partitions. The default,
	// mirrorctl-<source>-<target>, is filled in per flow (buildFlow).
	KeyGroupID: {kind: kString},
	// How often a replicate process writes the acknowledged positions of its
	// partition tasks to the progress topic: what a crash can re-copy.
	KeyProgressInterval: {kind: kInt, def: "1000", min: 10, hasMin: true},
	// Reverse checkpoints (KIP-1098's intent): the flow leader also
	// checkpoints the target's groups on the remote topics back to the
	// source, for failback with the target down.
	KeyReverseCheckpoints: {kind: kBool, def: "false"},
	// Copies carry the header naming the cluster a record was first written
	// on, so that a ring closed by another configuration stops where it
	// closes (replicate/ring.go). Off by default: copies stay byte-exact.
	KeyProvenanceHeader: {kind: kBool, def: "false"},
	// How often an exactly-once partition task commits the records it
	// copied with the progress that covers them: what a read_committed
	// consumer of the target waits, at most, past the copy.
	KeyTransactionInterval: {kind: kInt, def: "200", min: 10, hasMin: true},
	// The most transactional producers an exactly-once flow holds open at
	// once in this process; partitions beyond it take turns.
	KeyTransactionProducersMax: {kind: kInt, def: "1000", min: 1, hasMin: true},
	// The process's own settings (top level only): its group.instance.id
	// in the flows' groups (static membership; "none" for dynamic; the
	// CLI's default names the host and a slot) and the stop budget, in ms.
	KeyInstanceID: {kind: kString, scope: scopeTop},
	KeyStopBudget: {kind: kInt, scope: scopeTop, def: "10000", min: 100, hasMin: true},
	// Keys whose warnings the operator has read and accepts (top level
	// only): they no longer warn; config validate still lists them.
	KeyAcknowledged: {kind: kString, scope: scopeTop},
	// How long, in ms, a cluster of the process's flows may stay
	// unreachable before the process is not ready (/readyz 503).
	KeyUnreachableGrace: {kind: kInt, scope: scopeTop, def: "15000", min: 0, hasMin: true},
	// Taking over from MM2 (replicate/mm2resume.go): where MM2's Connect
	// source offsets are, under which connector name, MM2's Connect worker
	// group (defaults per flow, filled in by the CLI), and what a partition
	// with nothing known does when its remote partition holds records.
	KeyMM2OffsetsTopic: {kind: kString},
	KeyMM2Connector:    {kind: kString, def: "MirrorSourceConnector"},
	KeyMM2ConnectGroup: {kind: kString},
	KeyResumeUnknown:   {kind: kEnum, def: "refuse", enum: []string{"refuse", "log-start", "log-end"}},
	// A source topic recreated under a flow (a new topic ID): stop its
	// partitions with an error, or copy the new topic from its start,
	// appended to the remote topic (replicate/topicid.go).
	KeySourceRecreated: {kind: kEnum, def: "stop", enum: []string{"stop", "copy-from-start"}},
	// The Connect worker's offsets topic: in dedicated mode MM2 keeps its
	// source offsets there (default mm2-offsets.<source>.internal).
	"offset.storage.topic": {kind: kString, scope: scopeWorker},
}

// Keys of the MM2 takeover (mirrorctl's own).
const (
	KeyMM2OffsetsTopic = "mirrorctl.mm2.offsets.topic"
	KeyMM2Connector    = "mirrorctl.mm2.connector.name"
	KeyMM2ConnectGroup = "mirrorctl.mm2.connect.group"
	KeyResumeUnknown   = "mirrorctl.resume.unknown"
)

// KeySourceRecreated says what a flow does when a source topic's ID changed
// (deleted and created again): stop (default) or copy-from-start.
const KeySourceRecreated = "mirrorctl.source.recreated"

// KeyProgressInterval is mirrorctl's progress write interval, in ms.
const KeyProgressInterval = "mirrorctl.progress.interval.ms"

// KeyExactlyOnce is MM2's exactly-once switch (KIP-618), a Connect worker
// key: B.exactly.once.source.support = enabled makes every flow into B
// exactly-once.
const KeyExactlyOnce = "exactly.once.source.support"

// KeyTransactionInterval is how often, in ms, an exactly-once partition task
// commits its transaction (mirrorctl's key).
const KeyTransactionInterval = "mirrorctl.transaction.interval.ms"

// KeyTransactionProducersMax is the most transactional producers an
// exactly-once flow holds open at once in one process (mirrorctl's key).
const KeyTransactionProducersMax = "mirrorctl.transaction.producers.max"

// KeyInstanceID is this process's group.instance.id in its flows' groups
// (KIP-345 static membership; mirrorctl's key, top level only).
const KeyInstanceID = "mirrorctl.instance.id"

// KeyStopBudget bounds, in ms, how long a replicate process takes to stop
// (mirrorctl's key, top level only).
const KeyStopBudget = "mirrorctl.stop.budget.ms"

// KeyUnreachableGrace is how long, in ms, a replicate process may fail to
// reach a source or target cluster of its flows before its /readyz answers
// 503 naming the cluster (mirrorctl's key, top level only; default 15000, 0
// fails readiness at the first failed probe).
const KeyUnreachableGrace = "mirrorctl.health.unreachable.grace.ms"

// KeyGroupID names the consumer group of a flow (mirrorctl's key, not MM2's).
const KeyGroupID = "mirrorctl.group.id"

// KeyReverseCheckpoints turns on a flow's reverse checkpoints (mirrorctl's
// key; KIP-1098 is not shipped by MM2): <target>.checkpoints.internal on the
// source, read by `failback --mode checkpoint`.
const KeyReverseCheckpoints = "mirrorctl.reverse.checkpoints.enabled"

// KeyAcknowledged lists, comma-separated, keys as written in the file
// (e.g. offset.storage.replication.factor, us-east.config.storage.topic)
// whose warnings the operator acknowledges (mirrorctl's key, top level
// only): they move from Config.Warnings to Config.Acknowledged.
const KeyAcknowledged = "mirrorctl.warnings.acknowledged"

// KeySyncTopicACLsPrune makes a flow's ACL sync delete the target bindings
// it created whose source binding is gone (mirrorctl's key, default false;
// MM2's ACL sync never deletes). It has no "mirrorctl." prefix: it
// belongs with sync.topic.acls.enabled, and ownKeyDocs marks it as
// mirrorctl's own.
const KeySyncTopicACLsPrune = "sync.topic.acls.prune"

// KeyProvenanceHeader makes a flow stamp every copy with the
// mirrorctl-origin header (mirrorctl's key, default false).
const KeyProvenanceHeader = "mirrorctl.provenance.header.enabled"

// deprecatedKeys maps the KIP-629 aliases (deprecated in 2.7, removed in
// 4.0) to their new names. If both are set the new name wins, as
// ConfigUtils.translateDeprecatedConfigs does on the merged connector config.
var deprecatedKeys = map[string]string{
	"topics.blacklist":            "topics.exclude",
	"groups.blacklist":            "groups.exclude",
	"config.properties.blacklist": "config.properties.exclude",
}

// hintKeys are names people write that never existed, with what they meant.
var hintKeys = map[string]string{
	"topics.whitelist":            "topics",
	"groups.whitelist":            "groups",
	"topics.include":              "topics",
	"groups.include":              "groups",
	"config.properties.whitelist": "config.properties.exclude",
}

// workerPrefixes are Connect worker key families MirrorMakerConfig copies
// from the top level (and that B.<key> sets for herders targeting B). They
// are accepted without further checks.
var workerPrefixes = []string{
	"offset.storage", "config.storage", "status.storage",
	"key.converter", "value.converter", "header.converter",
	"task", "worker",
}

// roles are the client-override prefixes: consumer.*, producer.*, admin.*.
var roles = []Role{RoleConsumer, RoleProducer, RoleAdmin}

// clientSecurityKeys are the client keys MM2 copies from a cluster's props
// (and the top level) into its consumer, producer and admin clients
// (MirrorClientConfig's CLIENT_CONFIG_DEF: bootstrap, security protocol, SSL
// and SASL). Keys starting with ssl. or sasl. that are not listed are still
// passed on, with a warning.
var clientSecurityKeys = map[string]bool{
	"bootstrap.servers": true,
	"security.protocol": true,
}

var sslKeys = []string{
	"ssl.protocol", "ssl.enabled.protocols", "ssl.provider", "ssl.cipher.suites",
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password",
	"ssl.key.password", "ssl.keystore.key", "ssl.keystore.certificate.chain",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
	"ssl.truststore.certificates", "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm",
	"ssl.endpoint.identification.algorithm", "ssl.secure.random.implementation",
	"ssl.engine.factory.class",
}

var saslKeys = []string{
	"sasl.mechanism", "sasl.jaas.config", "sasl.client.callback.handler.class",
	"sasl.login.callback.handler.class", "sasl.login.class",
	"sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd",
	"sasl.kerberos.ticket.renew.window.factor", "sasl.kerberos.ticket.renew.jitter",
	"sasl.kerberos.min.time.before.relogin",
	"sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter",
	"sasl.login.refresh.min.period.seconds", "sasl.login.refresh.buffer.seconds",
	"sasl.login.connect.timeout.ms", "sasl.login.read.timeout.ms",
	"sasl.login.retry.backoff.ms", "sasl.login.retry.backoff.max.ms",
	"sasl.oauthbearer.token.endpoint.url", "sasl.oauthbearer.jwks.endpoint.url",
	"sasl.oauthbearer.jwks.endpoint.refresh.ms", "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
	"sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", "sasl.oauthbearer.scope.claim.name",
	"sasl.oauthbearer.sub.claim.name", "sasl.oauthbearer.expected.audience",
	"sasl.oauthbearer.expected.issuer", "sasl.oauthbearer.clock.skew.seconds",
}

// genericClientKeys are common Kafka client keys that MM2 does NOT copy from
// a cluster's props into its clients: written as A.<key> or at the top
// level they are ignored, and belong under A.consumer./A.producer./A.admin.
var genericClientKeys = []string{
	"client.id", "client.dns.lookup", "request.timeout.ms", "retry.backoff.ms",
	"retry.backoff.max.ms", "reconnect.backoff.ms", "reconnect.backoff.max.ms",
	"connections.max.idle.ms", "metadata.max.age.ms", "receive.buffer.bytes",
	"send.buffer.bytes", "socket.connection.setup.timeout.ms",
	"socket.connection.setup.timeout.max.ms", "default.api.timeout.ms",
	"max.poll.records", "fetch.min.bytes", "fetch.max.bytes", "fetch.max.wait.ms",
	"max.partition.fetch.bytes", "isolation.level", "auto.offset.reset",
	"acks", "linger.ms", "batch.size", "compression.type", "buffer.memory",
	"max.request.size", "delivery.timeout.ms", "enable.idempotence",
	"max.in.flight.requests.per.connection",
}

var (
	sslKeySet  = toSet(sslKeys)
	saslKeySet = toSet(saslKeys)
	genericSet = toSet(genericClientKeys)
)

func toSet(ks []string) map[string]bool {
	m := make(map[string]bool, len(ks))
	for _, k := range ks {
		m[k] = true
	}
	return m
}

// isClientSecurityKey reports whether MM2 passes key, set at the top level
// or as A.<key>, to every client of a cluster.
func isClientSecurityKey(key string) bool {
	return clientSecurityKeys[key] || strings.HasPrefix(key, "ssl.") || strings.HasPrefix(key, "sasl.")
}

// isKnownSecurityKey reports whether a client security key is one Kafka
// defines (as opposed to a misspelt ssl.*/sasl.* name).
func isKnownSecurityKey(key string) bool {
	return clientSecurityKeys[key] || sslKeySet[key] || saslKeySet[key]
}

// roleOf splits "consumer.max.poll.records" into (consumer, max.poll.records).
func roleOf(key string) (Role, string, bool) {
	for _, r := range roles {
		if rest, ok := strings.CutPrefix(key, string(r)+"."); ok && rest != "" {
			return r, rest, true
		}
	}
	return "", "", false
}

func isWorkerKey(key string) bool {
	if ki, ok := knownKeys[key]; ok {
		return ki.scope == scopeWorker
	}
	for _, p := range workerPrefixes {
		// MirrorMakerConfig copies "task*" and "worker*" by plain prefix.
		if strings.HasPrefix(key, p) && (p == "task" || p == "worker" || key == p || strings.HasPrefix(key, p+".")) {
			return true
		}
	}
	return false
}

// Config provider classes (org.apache.kafka.common.config.provider.*).
const (
	classEnvProvider       = "org.apache.kafka.common.config.provider.EnvVarConfigProvider"
	classFileProvider      = "org.apache.kafka.common.config.provider.FileConfigProvider"
	classDirectoryProvider = "org.apache.kafka.common.config.provider.DirectoryConfigProvider"
)

// candidates returns the names an unknown key at a level is compared with
// for a "did you mean" suggestion.
func candidates(level string) []string {
	var out []string
	for k, ki := range knownKeys {
		switch level {
		case "top":
			out = append(out, k)
		case "flow":
			if ki.scope == scopeConnector {
				out = append(out, k)
			}
		case "cluster":
			if ki.scope == scopeWorker {
				out = append(out, k)
			}
		}
	}
	if level != "flow" {
		out = append(out, "bootstrap.servers", "security.protocol")
		out = append(out, sslKeys...)
		out = append(out, saslKeys...)
	}
	if level == "top" {
		out = append(out, "clusters", "config.providers")
	}
	return out
}

// suggest returns the candidate closest to key by edit distance, if it is
// close enough to be a plausible misspelling, or "".
func suggest(key string, cands []string) string {
	s, _ := suggestKey(key, cands)
	return s
}

// nearMissDistance is the most edits (in bytes) an unknown key may be from a
// known one to be taken for a misspelling of it, and refused: one or two
// letters dropped, doubled or swapped ("topcs", "bootstrap.server").
const nearMissDistance = 2

// suggestKey is suggest, and says whether key is a near miss: a name from
// hintKeys or one at most nearMissDistance edits from a known key. A near
// miss is an error rather than a warning, since the key it was meant to be
// keeps its default (a mistyped topics list mirrors every topic).
func suggestKey(key string, cands []string) (s string, nearMiss bool) {
	if h, ok := hintKeys[key]; ok {
		return h, true
	}
	best, bestD := "", 1<<30
	for _, c := range cands {
		if d := editDistance(key, c); d < bestD || d == bestD && c < best {
			best, bestD = c, d
		}
	}
	if bestD <= 3 && bestD*3 <= len(key) {
		return best, bestD <= nearMissDistance
	}
	return "", false
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// suggestAlias returns the declared alias closest to an unknown one (at most
// two edits away), or "".
func suggestAlias(name string, aliases []string) string {
	best, bestD := "", 3
	for _, a := range aliases {
		if d := editDistance(name, a); d < bestD && d < len(name) {
			best, bestD = a, d
		}
	}
	return best
}
