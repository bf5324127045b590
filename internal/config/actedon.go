package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mirrorctl/mirrorctl/replicate/policy"
)

// notActedOn describes an MM2 or Connect key that Load accepts without an
// "unknown key" warning but that mirrorctl does not act on, for every value
// or for some. docs/config-keys.md lists the same keys for users.
type notActedOn struct {
	// actsOn reports the values (trimmed, lower-cased) whose behaviour
	// mirrorctl has anyway, so setting them draws no warning; nil means no
	// value is acted on.
	actsOn func(v string) bool
	// instead says what mirrorctl does in place of the key.
	instead string
}

func is(want string) func(string) bool { return func(v string) bool { return v == want } }

const insteadGroups = "the source's consumer groups are listed again at every checkpoint pass (emit.checkpoints.interval.seconds)"

// notActedOnKeys are the knownKeys that mirrorctl accepts, shows in
// `config show` and ignores (MirrorSourceConfig, MirrorCheckpointConfig,
// MirrorConnectorConfig and Connect's WorkerConfig). tasks.max is acted on:
// it is the most processes that copy a flow at once. The filter and
// forwarding-admin class keys are handled by checkClass (a custom class is
// warned about; the default is what mirrorctl does).
var notActedOnKeys = map[string]notActedOn{
	"refresh.groups.enabled":          {actsOn: is("true"), instead: insteadGroups},
	"refresh.groups.interval.seconds": {instead: insteadGroups},
	"consumer.poll.timeout.ms": {instead: "the source consumer waits for records as long as its fetch.max.wait.ms " +
		"allows (set A.consumer.fetch.max.wait.ms)"},
	"admin.timeout.ms": {instead: "admin requests are bounded by the admin client's request.timeout.ms and " +
		"default.api.timeout.ms (set A.admin.request.timeout.ms, A.admin.default.api.timeout.ms)"},
	"metric.reporters": {instead: "mirrorctl loads no metrics reporters and has no JMX; " +
		"`replicate --metrics-addr` serves Prometheus metrics"},
	"add.source.alias.to.metrics": {actsOn: is("true"), instead: "mirrorctl's metrics always carry the source label, " +
		"as MM2 4.0's do (the key was removed in Kafka 4.0)"},
	"use.incremental.alter.configs": {actsOn: func(v string) bool { return v != "never" }, instead: "mirrorctl always " +
		"syncs topic configs with IncrementalAlterConfigs (KIP-894) and never falls back to AlterConfigs, " +
		"as MM2 4.0 does (the key was removed in Kafka 4.0)"},
	"dedicated.mode.enable.internal.rest": {actsOn: is("false"), instead: "mirrorctl processes expose no internal " +
		"REST API to each other"},
}

// intervalSwitch maps each interval key that `mirrorctl replicate` refuses
// when it is 0 or negative to the key that turns its task off. MM2's
// Scheduler reads a negative interval as "never"; mirrorctl wants the switch.
var intervalSwitch = map[string]string{
	"refresh.topics.interval.seconds":     "refresh.topics.enabled",
	"sync.topic.configs.interval.seconds": "sync.topic.configs.enabled",
	"sync.topic.acls.interval.seconds":    "sync.topic.acls.enabled",
	"emit.heartbeats.interval.seconds":    "emit.heartbeats.enabled",
	"emit.checkpoints.interval.seconds":   "emit.checkpoints.enabled",
	"sync.group.offsets.interval.seconds": "sync.group.offsets.enabled",
	"offset.flush.interval.ms":            "emit.offset-syncs.enabled",
}

// classByteArrayConverter is Connect's pass-through converter, which
// MirrorMakerConfig uses for keys, values and headers by default.
const classByteArrayConverter = "org.apache.kafka.connect.converters.ByteArrayConverter"

// workerKeyInstead says what mirrorctl does in place of a Connect worker key
// family (workerPrefixes) that is not one of the typed knownKeys, and
// whether the value set is what mirrorctl does anyway (no warning).
func workerKeyInstead(k, v string) (instead string, actsOn bool) {
	for _, p := range []string{"key.converter", "value.converter", "header.converter"} {
		if k == p || strings.HasPrefix(k, p+".") {
			return "mirrorctl copies keys, values and headers as bytes, as MM2 does with its default " + classByteArrayConverter,
				k == p && (v == classByteArrayConverter || v == "ByteArrayConverter")
		}
	}
	for _, p := range []string{"offset.storage", "config.storage", "status.storage"} {
		if k == p || strings.HasPrefix(k, p+".") {
			return "mirrorctl runs no Connect worker, so it writes no Connect offsets, configs or status topics and ignores their settings; " +
				"it keeps its own progress in mirrorctl-progress.<source>.internal on the target, and reads MM2's offsets topic " +
				"(offset.storage.topic) only to take a flow over from MM2", false
		}
	}
	return "mirrorctl runs no Connect worker", false
}

// connectorKeyInstead says what mirrorctl does in place of a Connect
// connector key (ConnectorConfig: single message transforms, predicates and
// error handling) that MM2 passes to its connectors; ok is false for other
// keys.
func connectorKeyInstead(k string) (instead string, ok bool) {
	switch {
	case k == "transforms" || strings.HasPrefix(k, "transforms.") || k == "predicates" || strings.HasPrefix(k, "predicates."):
		return "mirrorctl applies no single message transforms: records are copied unchanged", true
	case strings.HasPrefix(k, "errors.") && k != "errors.":
		return "mirrorctl skips no record: one the target refuses stops its partition with an error", true
	}
	return "", false
}

// checkActedOn warns about a known key k (written as e.key, value v as
// validated by checkValue) that mirrorctl accepts but does not act on.
func (l *loader) checkActedOn(k string, e *entry, v string) {
	if n, ok := notActedOnKeys[k]; ok && (n.actsOn == nil || !n.actsOn(strings.ToLower(v))) {
		l.warnf(e.line, e.key, "accepted but not acted on: %s", n.instead)
		return
	}
	if d, ok := differsKeys[k]; ok {
		l.notef(e.line, e.key, "%s", d)
	}
}

// differsKeys are MM2 keys mirrorctl acts on with a meaning that differs
// from MM2's (docs/config-keys.md, "acted on, differs"): set in a file,
// each gets a note (Config.Notes), which `config validate` and
// `replicate --dry-run` print, so that a file carried over from MM2 is not
// read as MM2 would read it without a word.
var differsKeys = map[string]string{
	"tasks.max": "read differently from MM2: MM2 spreads a flow's partitions over up to tasks.max tasks of its Connect workers; " +
		"here it is the most replicate processes that copy the flow at once, further processes waiting as standbys " +
		"(set it to the number of processes you run)",
	"sync.group.offsets.enabled": "read differently from MM2: offsets are committed only to groups absent or Empty on the target, " +
		"and never lower a group's committed offset there",
	"offset-syncs.topic.replication.factor": "read differently from MM2: also the replication factor of mirrorctl's progress topic on the target",
	"offset.flush.interval.ms": "read differently from MM2: how often delayed offset syncs are written; copy progress is written every " +
		KeyProgressInterval + " instead",
}

// differsRoleKeys are the client role keys of differsKeys' kind, by
// role-stripped key.
var differsRoleKeys = map[string]string{
	"auto.offset.reset": "read differently from MM2: latest starts a partition without progress at the log end (KAFKA-13988); " +
		"none stops a partition whose next records were deleted before they were copied (loss kind gap) instead of failing the task",
}

func (l *loader) notef(line int, key, format string, args ...any) {
	l.notes = append(l.notes, Warning{File: l.file, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)})
}

// checkInterval warns about an interval of n (seconds or ms) that MM2 reads
// as "disabled" and `mirrorctl replicate` refuses.
func (l *loader) checkInterval(k string, e *entry, n int64) {
	if sw, ok := intervalSwitch[k]; ok && n <= 0 {
		l.warnf(e.line, e.key, "MM2 reads a negative interval as \"disabled\"; mirrorctl replicate refuses an interval "+
			"that is not positive while %s is true: turn the task off with %s = false instead", sw, sw)
	}
}

// checkWorkerKey warns about a Connect worker key k (written as e.key) that
// is not one of the typed knownKeys: mirrorctl accepts it as MM2 does and
// ignores it.
func (l *loader) checkWorkerKey(k string, e *entry) {
	instead, ok := workerKeyInstead(k, strings.TrimSpace(e.value))
	if !ok {
		l.warnf(e.line, e.key, "a Connect worker setting, accepted but not acted on: %s", instead)
	}
}

// policyKeys are the replication.policy.* keys the built-in policies read
// (policy.FromProps).
var policyKeys = []string{policy.KeyClass, policy.KeySeparator, policy.KeyInternalSeparatorEnabled}

// checkPolicyKey warns about a replication.policy.* key k (written as e.key,
// prefix being "" or "A->B.") that neither built-in policy reads. MM2 hands
// every such key to a custom policy's configure; mirrorctl has no custom
// policies.
func (l *loader) checkPolicyKey(prefix, k string, e *entry) {
	if slices.Contains(policyKeys, k) {
		return
	}
	if s := suggest(k, policyKeys); s != "" {
		l.warnf(e.line, e.key, "not read by DefaultReplicationPolicy or IdentityReplicationPolicy; did you mean %q?", prefix+s)
		return
	}
	l.warnf(e.line, e.key, "accepted but not acted on: only DefaultReplicationPolicy and "+
		"IdentityReplicationPolicy exist, and they read %s", strings.Join(policyKeys, ", "))
}
