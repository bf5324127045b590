package cmdutil

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/replicate"
)

const flowBase = `clusters = a, b
a.bootstrap.servers = 127.0.0.1:1
b.bootstrap.servers = 127.0.0.1:2
a->b.enabled = true
`

func flowConfigOf(t *testing.T, extra string) replicate.FlowConfig {
	t.Helper()
	cfg, err := config.Parse("m.properties", strings.NewReader(flowBase+extra), config.WithEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	f, ok := cfg.Flow("a", "b")
	if !ok {
		t.Fatal("no flow a->b")
	}
	return FlowConfig(cfg, f)
}

// TestFlowConfigActsOnKeys backs the acted-on / not-acted-on split that
// `config validate` warns from (internal/config/actedon.go,
// docs/config-keys.md): setting a key mirrorctl acts on changes the engine's
// settings; setting one it warns about as not acted on changes nothing.
func TestFlowConfigActsOnKeys(t *testing.T) {
	base := flowConfigOf(t, "")
	actedOn := []string{
		"replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
		"replication.policy.separator = _",
		"topics = orders",
		"topics.exclude = x.*",
		"groups = g.*",
		"groups.exclude = g1",
		"config.properties.exclude = retention.ms",
		"use.defaults.from = source",
		"replication.factor = 3",
		"offset-syncs.topic.replication.factor = 1",
		"checkpoints.topic.replication.factor = 1",
		"heartbeats.topic.replication.factor = 1",
		"offset-syncs.topic.location = target",
		"emit.offset-syncs.enabled = false",
		"offset.lag.max = 7",
		"emit.heartbeats.enabled = false",
		"emit.heartbeats.interval.seconds = 5",
		"emit.checkpoints.enabled = false",
		"emit.checkpoints.interval.seconds = 5",
		"sync.group.offsets.enabled = true",
		"sync.group.offsets.interval.seconds = 5",
		"mirrorctl.reverse.checkpoints.enabled = true",
		"refresh.topics.enabled = false",
		"refresh.topics.interval.seconds = 5",
		"sync.topic.configs.enabled = false",
		"sync.topic.configs.interval.seconds = 5",
		"sync.topic.acls.enabled = false",
		"sync.topic.acls.interval.seconds = 5",
		"sync.topic.acls.prune = true",
		"a->b.sync.topic.acls.prune = true",
		"heartbeats.replication.enabled = false",
		"b.offset.flush.interval.ms = 5000",
		"a.consumer.isolation.level = read_uncommitted",
		"b.exactly.once.source.support = enabled",
		"a->b.mirrorctl.transaction.interval.ms = 500",
		"mirrorctl.transaction.producers.max = 10",
		"a.consumer.heartbeat.interval.ms = 500",
		"consumer.isolation.level = READ_UNCOMMITTED",
		"b.producer.enable.metrics.push = true",
		"producer.enable.metrics.push = TRUE",
	}
	for _, line := range actedOn {
		if got := flowConfigOf(t, line+"\n"); reflect.DeepEqual(got, base) {
			t.Errorf("%s: the engine's settings did not change, but the key is documented as acted on", line)
		}
	}
	notActedOn := []string{
		"refresh.groups.enabled = false",
		"refresh.groups.interval.seconds = 5",
		"consumer.poll.timeout.ms = 5",
		"admin.timeout.ms = 5",
		"metric.reporters = x.Y",
		"add.source.alias.to.metrics = false",
		"use.incremental.alter.configs = never",
		"dedicated.mode.enable.internal.rest = true",
		"topic.filter.class = com.example.F",
		"group.filter.class = com.example.F",
		"config.property.filter.class = com.example.F",
		"forwarding.admin.class = com.example.F",
		"offset.storage.replication.factor = 1",
		"key.converter = org.apache.kafka.connect.json.JsonConverter",
		"transforms = mask",
		"errors.tolerance = all",
		"replication.policy.remote.prefix = x",
	}
	for _, line := range notActedOn {
		if got := flowConfigOf(t, line+"\n"); !reflect.DeepEqual(got, base) {
			t.Errorf("%s: the engine's settings changed, but config validate warns that the key is not acted on", line)
		}
	}
}

// TestSourceIsolationLevel: the source is read committed unless the source
// consumer's isolation.level says read_uncommitted; the target's consumer
// setting does not change the data path.
func TestSourceIsolationLevel(t *testing.T) {
	for _, c := range []struct {
		extra string
		want  bool
	}{
		{"", false},
		{"a.consumer.isolation.level = read_committed\n", false},
		{"a.consumer.isolation.level = read_uncommitted\n", true},
		{"consumer.isolation.level = read_uncommitted\na.consumer.isolation.level = read_committed\n", false},
		{"b.consumer.isolation.level = read_uncommitted\n", false},
	} {
		if got := flowConfigOf(t, c.extra).ReadUncommitted; got != c.want {
			t.Errorf("%q: ReadUncommitted %v, want %v", c.extra, got, c.want)
		}
	}
}

// TestTaskMetricsPush: the exactly-once tasks' producers push client
// metrics only when the target's producer enable.metrics.push is stated
// true; the source's setting and the default leave them quiet.
func TestTaskMetricsPush(t *testing.T) {
	for _, c := range []struct {
		extra string
		want  bool
	}{
		{"", false},
		{"b.producer.enable.metrics.push = true\n", true},
		{"producer.enable.metrics.push = true\nb.producer.enable.metrics.push = false\n", false},
		{"a.producer.enable.metrics.push = true\n", false},
		{"b.consumer.enable.metrics.push = true\n", false},
	} {
		if got := flowConfigOf(t, c.extra).TaskMetricsPush; got != c.want {
			t.Errorf("%q: TaskMetricsPush %v, want %v", c.extra, got, c.want)
		}
	}
}

// TestGroupHeartbeat: the flow's memberships take the source consumer's
// heartbeat.interval.ms; a value that is not a positive number reaches
// Validate as an error, not as the default.
func TestGroupHeartbeat(t *testing.T) {
	for _, c := range []struct {
		extra string
		want  time.Duration
		valid bool
	}{
		{"", 0, true},
		{"a.consumer.heartbeat.interval.ms = 500\n", 500 * time.Millisecond, true},
		{"b.consumer.heartbeat.interval.ms = 500\n", 0, true},
		{"a.consumer.heartbeat.interval.ms = abc\n", -time.Millisecond, false},
		{"a.consumer.heartbeat.interval.ms = 0\n", -time.Millisecond, false},
		{"a.consumer.heartbeat.interval.ms = 10000\n", 10 * time.Second, false},
		{"a.consumer.heartbeat.interval.ms = 10000\na.consumer.session.timeout.ms = 30000\n", 10 * time.Second, true},
	} {
		fc := flowConfigOf(t, c.extra)
		if fc.HeartbeatInterval != c.want {
			t.Errorf("%q: HeartbeatInterval %v, want %v", c.extra, fc.HeartbeatInterval, c.want)
		}
		err := fc.Validate()
		if (err == nil) != c.valid {
			t.Errorf("%q: Validate() = %v, want valid %v", c.extra, err, c.valid)
		}
		if err != nil && !strings.Contains(err.Error(), "heartbeat.interval.ms") {
			t.Errorf("%q: %v does not name heartbeat.interval.ms", c.extra, err)
		}
	}
}
