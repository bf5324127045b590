package config

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// actedOnBase is the file every case appends one line to (line 5).
const actedOnBase = `clusters = a, b
a.bootstrap.servers = 127.0.0.1:1
b.bootstrap.servers = 127.0.0.1:2
a->b.enabled = true
`

// TestNotActedOn checks that every key mirrorctl accepts but ignores is
// warned about by name at the line that sets it, with what mirrorctl does
// instead, and that keys it does act on draw no warning.
func TestNotActedOn(t *testing.T) {
	tests := []struct {
		line string
		key  string // the key as written, "" for no warning
		want string // a part of the warning
	}{
		// notActedOnKeys, top level and per flow.
		{"refresh.groups.enabled = false", "refresh.groups.enabled", "listed again at every checkpoint pass"},
		{"refresh.groups.interval.seconds = 30", "refresh.groups.interval.seconds", "listed again at every checkpoint pass"},
		{"a->b.refresh.groups.interval.seconds = 30", "a->b.refresh.groups.interval.seconds", "not acted on"},
		{"consumer.poll.timeout.ms = 250", "consumer.poll.timeout.ms", "fetch.max.wait.ms"},
		{"a->b.consumer.poll.timeout.ms = 250", "a->b.consumer.poll.timeout.ms", "fetch.max.wait.ms"},
		{"admin.timeout.ms = 5000", "admin.timeout.ms", "default.api.timeout.ms"},
		{"metric.reporters = org.apache.kafka.common.metrics.JmxReporter", "metric.reporters", "--metrics-addr"},
		{"add.source.alias.to.metrics = false", "add.source.alias.to.metrics", "always carry the source label"},
		{"use.incremental.alter.configs = never", "use.incremental.alter.configs", "IncrementalAlterConfigs"},
		{"dedicated.mode.enable.internal.rest = true", "dedicated.mode.enable.internal.rest", "no internal REST API"},
		// Custom classes (checkClass).
		{"topic.filter.class = com.example.TopicFilter", "topic.filter.class", "mirrorctl behaves as org.apache.kafka.connect.mirror.DefaultTopicFilter"},
		{"a->b.group.filter.class = com.example.GroupFilter", "a->b.group.filter.class", "DefaultGroupFilter"},
		{"config.property.filter.class = com.example.PropFilter", "config.property.filter.class", "DefaultConfigPropertyFilter"},
		{"forwarding.admin.class = com.example.Admin", "forwarding.admin.class", "ForwardingAdmin"},
		// Intervals MM2 reads as "disabled".
		{"emit.checkpoints.interval.seconds = -1", "emit.checkpoints.interval.seconds", "emit.checkpoints.enabled = false"},
		{"a->b.sync.group.offsets.interval.seconds = 0", "a->b.sync.group.offsets.interval.seconds", "sync.group.offsets.enabled = false"},
		{"emit.heartbeats.interval.seconds = -1", "emit.heartbeats.interval.seconds", "emit.heartbeats.enabled = false"},
		{"refresh.topics.interval.seconds = -1", "refresh.topics.interval.seconds", "refresh.topics.enabled = false"},
		{"sync.topic.configs.interval.seconds = -1", "sync.topic.configs.interval.seconds", "sync.topic.configs.enabled = false"},
		{"sync.topic.acls.interval.seconds = -1", "sync.topic.acls.interval.seconds", "sync.topic.acls.enabled = false"},
		{"b.offset.flush.interval.ms = 0", "b.offset.flush.interval.ms", "emit.offset-syncs.enabled = false"},
		// Connect worker families, top level, cluster level and per flow.
		{"offset.storage.replication.factor = 1", "offset.storage.replication.factor", "writes no Connect offsets, configs or status topics"},
		{"b.config.storage.topic = x", "b.config.storage.topic", "writes no Connect offsets, configs or status topics"},
		{"status.storage.partitions = 5", "status.storage.partitions", "no Connect worker"},
		{"key.converter = org.apache.kafka.connect.json.JsonConverter", "key.converter", "copies keys, values and headers as bytes"},
		{"value.converter.schemas.enable = false", "value.converter.schemas.enable", "as bytes"},
		{"b.header.converter = org.apache.kafka.connect.storage.SimpleHeaderConverter", "b.header.converter", "as bytes"},
		{"task.shutdown.graceful.timeout.ms = 1000", "task.shutdown.graceful.timeout.ms", "no Connect worker"},
		{"worker.sync.timeout.ms = 1000", "worker.sync.timeout.ms", "no Connect worker"},
		{"a->b.key.converter = org.apache.kafka.connect.json.JsonConverter", "a->b.key.converter", "as bytes"},
		// Connect connector keys MM2 applies.
		{"transforms = mask", "transforms", "no single message transforms"},
		{"a->b.transforms.mask.type = org.apache.kafka.connect.transforms.MaskField$Value", "a->b.transforms.mask.type", "no single message transforms"},
		{"predicates = p", "predicates", "no single message transforms"},
		{"errors.tolerance = all", "errors.tolerance", "stops its partition"},
		{"a->b.errors.log.enable = true", "a->b.errors.log.enable", "stops its partition"},
		// replication.policy.* keys the built-in policies do not read.
		{"replication.policy.seperator = _", "replication.policy.seperator", `did you mean "replication.policy.separator"`},
		{"a->b.replication.policy.seperator = _", "a->b.replication.policy.seperator", `did you mean "a->b.replication.policy.separator"`},
		{"replication.policy.remote.prefix = x", "replication.policy.remote.prefix", "only DefaultReplicationPolicy and IdentityReplicationPolicy"},

		// Reverse checkpoints where nothing emits them.
		{"b->a.mirrorctl.reverse.checkpoints.enabled = true", "b->a.mirrorctl.reverse.checkpoints.enabled", "the flow b->a is not enabled"},
		// ACL pruning where no ACL sync runs.
		{"b->a.sync.topic.acls.prune = true", "b->a.sync.topic.acls.prune", "the flow b->a is not enabled"},
		// Acted on: no warning.
		{"a->b.sync.topic.acls.prune = true", "", ""},
		{"sync.topic.acls.prune = true", "", ""}, // top level: only enabled flows act
		{"replication.policy.separator = _", "", ""},
		{"replication.policy.internal.topic.separator.enabled = false", "", ""},
		{"replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy", "", ""},
		{"emit.offset-syncs.enabled = false", "", ""},
		{"a->b.emit.checkpoints.enabled = false", "", ""},
		{"a->b.mirrorctl.reverse.checkpoints.enabled = true", "", ""},
		{"mirrorctl.reverse.checkpoints.enabled = true", "", ""}, // top level: only enabled flows act
		{"sync.group.offsets.interval.seconds = 30", "", ""},
		{"offset-syncs.topic.replication.factor = 1", "", ""},
		{"heartbeats.topic.replication.factor = -1", "", ""},
		{"checkpoints.topic.replication.factor = 1", "", ""},
		{"offset-syncs.topic.location = target", "", ""},
		{"offset.lag.max = 0", "", ""},
		{"b.offset.flush.interval.ms = 5000", "", ""},
		{"emit.heartbeats.interval.seconds = 5", "", ""},
		{"use.defaults.from = source", "", ""},
		{"topic.filter.class = org.apache.kafka.connect.mirror.DefaultTopicFilter", "", ""},
		{"group.filter.class = DefaultGroupFilter", "", ""},
		{"refresh.groups.enabled = true", "", ""},
		{"use.incremental.alter.configs = required", "", ""},
		{"add.source.alias.to.metrics = true", "", ""},
		{"exactly.once.source.support = disabled", "", ""},
		{"b.exactly.once.source.support = enabled", "", ""},
		{"a->b.mirrorctl.transaction.interval.ms = 500", "", ""},
		{"mirrorctl.transaction.producers.max = 50", "", ""},
		{"dedicated.mode.enable.internal.rest = false", "", ""},
		{"key.converter = org.apache.kafka.connect.converters.ByteArrayConverter", "", ""},
		{"b.value.converter = org.apache.kafka.connect.converters.ByteArrayConverter", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			c, err := Parse("m.properties", strings.NewReader(actedOnBase+tt.line+"\n"), WithEnv(noEnv))
			if err != nil {
				t.Fatal(err)
			}
			if tt.key == "" {
				if len(c.Warnings) != 0 {
					t.Fatalf("want no warning, got %v", c.Warnings)
				}
				return
			}
			if len(c.Warnings) != 1 {
				t.Fatalf("want 1 warning, got %v", c.Warnings)
			}
			w := c.Warnings[0]
			if w.File != "m.properties" || w.Line != 5 || w.Key != tt.key || !strings.Contains(w.Msg, tt.want) {
				t.Errorf("warning = %q, want m.properties:5: %s: ...%s...", w, tt.key, tt.want)
			}
		})
	}
}

// actedOnKeys are the knownKeys that mirrorctl reads (cmdutil.FlowConfig,
// the policy and filters built by Load, or Load itself), or whose default
// class is what mirrorctl does; internal/cli/cmdutil's test checks that
// changing the flow ones changes the engine's settings.
var actedOnKeys = []string{
	"enabled", "source.cluster.alias", "target.cluster.alias",
	"replication.policy.class", "replication.policy.separator", "replication.policy.internal.topic.separator.enabled",
	"topics", "topics.exclude", "groups", "groups.exclude", "config.properties.exclude",
	"use.defaults.from", "replication.factor",
	"offset-syncs.topic.replication.factor", "checkpoints.topic.replication.factor", "heartbeats.topic.replication.factor",
	"offset-syncs.topic.location", "emit.offset-syncs.enabled", "offset.lag.max",
	"emit.heartbeats.enabled", "emit.heartbeats.interval.seconds",
	"emit.checkpoints.enabled", "emit.checkpoints.interval.seconds",
	"sync.group.offsets.enabled", "sync.group.offsets.interval.seconds",
	"refresh.topics.enabled", "refresh.topics.interval.seconds",
	"sync.topic.configs.enabled", "sync.topic.configs.interval.seconds",
	"sync.topic.acls.enabled", "sync.topic.acls.interval.seconds", KeySyncTopicACLsPrune,
	"heartbeats.replication.enabled", "offset.flush.interval.ms",
	// Classes: the default is what mirrorctl does; checkClass warns about
	// (or, for the policy, refuses) any other.
	"topic.filter.class", "group.filter.class", "config.property.filter.class", "forwarding.admin.class",
	// The most processes copying a flow at once; the flow's consumer group.
	"tasks.max", KeyGroupID, KeyProgressInterval,
	// Reverse checkpoints (replicate/reverse.go).
	KeyReverseCheckpoints,
	// Copies stamped with their origin cluster (replicate/ring.go).
	KeyProvenanceHeader,
	// Warnings the operator acknowledged (config.go acknowledge).
	KeyAcknowledged,
	// Exactly-once mode, its commit interval and producer pool.
	KeyExactlyOnce, KeyTransactionInterval, KeyTransactionProducersMax,
	// Where MM2 stopped, read when mirrorctl takes over a flow.
	"offset.storage.topic", KeyMM2OffsetsTopic, KeyMM2Connector, KeyMM2ConnectGroup, KeyResumeUnknown,
	// A recreated source topic (replicate/topicid.go).
	KeySourceRecreated,
	// The replicate process's static membership, stop budget and the
	// grace of an unreachable cluster (internal/cli/replicate).
	KeyInstanceID, KeyStopBudget, KeyUnreachableGrace,
}

// TestExactlyOnceErrors: what mirrorctl cannot honour is a config error
// naming the key and line: MM2's "preparing" step, and a transactional.id
// for a cluster's producers (mirrorctl sets its own).
func TestExactlyOnceErrors(t *testing.T) {
	for _, tt := range []struct{ line, key, want string }{
		{"b.exactly.once.source.support = preparing", "b.exactly.once.source.support", "rolling upgrade"},
		{"exactly.once.source.support = PREPARING", "exactly.once.source.support", "rolling upgrade"},
		{"b.producer.transactional.id = mine", "b.producer.transactional.id", "sets the transactional ids"},
		{"producer.transactional.id = mine", "producer.transactional.id", "sets the transactional ids"},
	} {
		_, err := Parse("m.properties", strings.NewReader(actedOnBase+tt.line+"\n"), WithEnv(noEnv))
		var ce *Error
		if !errors.As(err, &ce) || ce.Line != 5 || ce.Key != tt.key || !strings.Contains(ce.Msg, tt.want) {
			t.Errorf("%s: error %v, want m.properties:5: %s: ...%s...", tt.line, err, tt.key, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "mine") {
			t.Errorf("%s: the error shows the value: %v", tt.line, err)
		}
	}
}

// TestEveryKnownKeyClassified fails when a key is added to knownKeys without
// saying whether mirrorctl acts on it.
func TestEveryKnownKeyClassified(t *testing.T) {
	acted := map[string]bool{}
	for _, k := range actedOnKeys {
		if _, ok := notActedOnKeys[k]; ok {
			t.Errorf("%s is both acted on and in notActedOnKeys", k)
		}
		if _, ok := knownKeys[k]; !ok {
			t.Errorf("%s is listed as acted on but is not a known key", k)
		}
		acted[k] = true
	}
	for k := range notActedOnKeys {
		if _, ok := knownKeys[k]; !ok {
			t.Errorf("notActedOnKeys has %s, which is not a known key", k)
		}
	}
	for k := range knownKeys {
		if _, ok := notActedOnKeys[k]; !acted[k] && !ok {
			t.Errorf("known key %s is neither acted on nor in notActedOnKeys", k)
		}
	}
	for k := range intervalSwitch {
		if _, ok := knownKeys[intervalSwitch[k]]; !ok || !acted[k] {
			t.Errorf("intervalSwitch %s -> %s: not an acted-on key with a known switch", k, intervalSwitch[k])
		}
	}
}

// TestNotActedOnKeysDocumented checks that docs/config-keys.md names every
// key that is warned about as not acted on.
func TestNotActedOnKeysDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/config-keys.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for k := range notActedOnKeys {
		if !strings.Contains(doc, fmt.Sprintf("`%s`", k)) {
			t.Errorf("docs/config-keys.md does not list %s", k)
		}
	}
}

// TestReverseCheckpointsNeedCheckpoints: reverse checkpoints on a flow
// without checkpoints are warned about at the line that turns them on.
func TestReverseCheckpointsNeedCheckpoints(t *testing.T) {
	c, err := Parse("m.properties", strings.NewReader(actedOnBase+"a->b.emit.checkpoints.enabled = false\na->b.mirrorctl.reverse.checkpoints.enabled = true\n"), WithEnv(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 1 {
		t.Fatalf("want 1 warning, got %v", c.Warnings)
	}
	if w := c.Warnings[0]; w.Line != 6 || w.Key != "a->b.mirrorctl.reverse.checkpoints.enabled" || !strings.Contains(w.Msg, "emit.checkpoints.enabled = false") {
		t.Fatalf("warning = %q", w)
	}
}

// TestACLPruneNeedsACLSync: sync.topic.acls.prune with the flow's ACL sync
// off is warned about at the line that turns it on.
func TestACLPruneNeedsACLSync(t *testing.T) {
	c, err := Parse("m.properties", strings.NewReader(actedOnBase+"a->b.sync.topic.acls.enabled = false\na->b.sync.topic.acls.prune = true\n"), WithEnv(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 1 {
		t.Fatalf("want 1 warning, got %v", c.Warnings)
	}
	if w := c.Warnings[0]; w.Line != 6 || w.Key != "a->b.sync.topic.acls.prune" || !strings.Contains(w.Msg, "sync.topic.acls.enabled = false") {
		t.Fatalf("warning = %q", w)
	}
}

// A key listed in mirrorctl.warnings.acknowledged no longer warns (its
// warning moves to Acknowledged); a listed key that draws no warning is
// warned about, so that a stale acknowledgement hides nothing later.
func TestAcknowledgedWarnings(t *testing.T) {
	c, err := Parse("m.properties", strings.NewReader(actedOnBase+
		"offset.storage.replication.factor = 1\nmetric.reporters = x.Y\n"+
		"mirrorctl.warnings.acknowledged = offset.storage.replication.factor, topics\n"), WithEnv(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, w := range c.Warnings {
		keys = append(keys, w.Key+": "+w.Msg)
	}
	got := strings.Join(keys, "\n")
	if strings.Contains(got, "offset.storage.replication.factor:") || !strings.Contains(got, "metric.reporters:") ||
		!strings.Contains(got, KeyAcknowledged+": topics draws no warning") {
		t.Errorf("warnings:\n%s", got)
	}
	if len(c.Acknowledged) != 1 || c.Acknowledged[0].Key != "offset.storage.replication.factor" {
		t.Errorf("acknowledged %v", c.Acknowledged)
	}
}
