package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mirrorctl/mirrorctl/replicate/policy"
)

func envMap(m map[string]string) Option {
	return WithEnv(func(k string) (string, bool) { v, ok := m[k]; return v, ok })
}

func mustParse(t *testing.T, text string, opts ...Option) *Config {
	t.Helper()
	c, err := Parse("t.properties", strings.NewReader(text), opts...)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

func mustFlow(t *testing.T, c *Config, s, d string) *Flow {
	t.Helper()
	f, ok := c.Flow(s, d)
	if !ok {
		t.Fatalf("no flow %s->%s", s, d)
	}
	return f
}

func flowNames(fs []*Flow) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name())
	}
	return out
}

const secretEnv = "Sup3r-S3cret!"

var exampleEnv = envMap(map[string]string{
	"REPLICATOR_SECRET":   secretEnv,
	"TRUSTSTORE_PASSWORD": secretEnv + "-ts",
	"KEYSTORE_PASSWORD":   secretEnv + "-ks",
	"KEY_PASSWORD":        secretEnv + "-key",
})

// TestExamples parses every sample in testdata/config (copies of
// shared/examples with 127.0.0.1 addresses) and checks flows and values.
func TestExamples(t *testing.T) {
	type val struct{ flow, key, want string }
	tests := []struct {
		file     string
		clusters []string
		enabled  []string
		values   []val
		ints     []val
		warnings int
	}{
		{
			file: "active-active-sasl.properties", clusters: []string{"us-east", "eu-west"},
			enabled: []string{"eu-west->us-east", "us-east->eu-west"},
			values: []val{
				// .properties drops the backslash of "\.", exactly as MM2 does.
				{"us-east->eu-west", "topics", "cart..*, billing..*, audit-log"},
				{"eu-west->us-east", "topics", "cart..*, billing..*, audit-log"},
				{"us-east->eu-west", "replication.policy.class", policy.ClassDefault},
				{"us-east->eu-west", "emit.heartbeats.enabled", "true"},
				{"us-east->eu-west", "sync.topic.acls.enabled", "false"},
				{"us-east->eu-west", "sync.group.offsets.enabled", "false"},
				{"us-east->eu-west", "offset-syncs.topic.location", "source"},
			},
			ints: []val{
				{"us-east->eu-west", "refresh.topics.interval.seconds", "45"},
				{"eu-west->us-east", "refresh.groups.interval.seconds", "45"},
				{"us-east->eu-west", "heartbeats.topic.replication.factor", "3"},
				{"us-east->eu-west", "replication.factor", "2"},
			},
			warnings: 3, // the two "\." escapes and refresh.groups.interval.seconds (not acted on)
		},
		{
			file: "active-passive.properties", clusters: []string{"nyc", "fra"},
			enabled: []string{"nyc->fra"},
			values: []val{
				{"nyc->fra", "topics", "checkout, refunds, stock..*"},
				{"nyc->fra", "groups", "checkout-.*, refunds-worker"},
				{"nyc->fra", "sync.group.offsets.enabled", "true"},
				{"fra->nyc", "sync.group.offsets.enabled", "false"},
				{"fra->nyc", "enabled", "false"},
				{"fra->nyc", "topics", ".*"},
			},
			ints: []val{
				{"nyc->fra", "emit.checkpoints.interval.seconds", "15"},
				{"fra->nyc", "emit.checkpoints.interval.seconds", "60"},
				{"nyc->fra", "offset.lag.max", "50"},
				{"fra->nyc", "offset.lag.max", "100"},
				{"nyc->fra", "replication.factor", "3"},
				{"nyc->fra", "checkpoints.topic.replication.factor", "3"},
			},
			warnings: 1,
		},
		{
			file: "identity-acyclic.properties", clusters: []string{"us-east", "eu-west"},
			enabled: []string{"eu-west->us-east", "us-east->eu-west"},
			values: []val{
				{"us-east->eu-west", "topics", "east.(orders|refunds)"},
				{"eu-west->us-east", "topics", "west..*"},
				{"eu-west->us-east", "replication.policy.class", policy.ClassIdentity},
			},
			warnings: 2,
		},
		{
			file: "mtls.properties", clusters: []string{"us-east", "eu-west"},
			enabled: []string{"us-east->eu-west"},
			values: []val{
				{"us-east->eu-west", "topics", "telemetry, alerts"},
				{"eu-west->us-east", "enabled", "false"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			c, err := Load(filepath.Join("..", "..", "testdata", "config", tt.file), exampleEnv)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !slices.Equal(c.Clusters, tt.clusters) {
				t.Errorf("Clusters = %v, want %v", c.Clusters, tt.clusters)
			}
			if got := flowNames(c.EnabledFlows()); !slices.Equal(got, tt.enabled) {
				t.Errorf("EnabledFlows = %v, want %v", got, tt.enabled)
			}
			if n := len(c.Flows); n != len(tt.clusters)*(len(tt.clusters)-1) {
				t.Errorf("%d flows", n)
			}
			for _, v := range tt.values {
				f := mustFlow(t, c, strings.Split(v.flow, "->")[0], strings.Split(v.flow, "->")[1])
				if got := f.String(v.key); got != v.want {
					t.Errorf("%s String(%s) = %q, want %q", v.flow, v.key, got, v.want)
				}
			}
			for _, v := range tt.ints {
				f := mustFlow(t, c, strings.Split(v.flow, "->")[0], strings.Split(v.flow, "->")[1])
				if got := f.Int(v.key); got != parseInt(t, v.want) {
					t.Errorf("%s Int(%s) = %d, want %s", v.flow, v.key, got, v.want)
				}
			}
			if len(c.Warnings) != tt.warnings {
				t.Errorf("%d warnings, want %d: %v", len(c.Warnings), tt.warnings, c.Warnings)
			}
		})
	}
}

func parseInt(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	for _, c := range s {
		n = n*10 + int64(c-'0')
	}
	return n
}

func TestExampleClients(t *testing.T) {
	c, err := Load("../../testdata/config/active-active-sasl.properties", exampleEnv)
	if err != nil {
		t.Fatal(err)
	}
	us, ok := c.Cluster("us-east")
	if !ok {
		t.Fatal("no us-east")
	}
	got := us.ClientProps(RoleProducer)
	want := map[string]string{
		"bootstrap.servers": "127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094",
		"security.protocol": "SASL_SSL",
		"sasl.mechanism":    "SCRAM-SHA-512",
		// The continuation lines are joined with their leading blanks dropped.
		"sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="replicator" password="` + secretEnv + `";`,
	}
	if len(got) != len(want) {
		t.Errorf("ClientProps = %d keys, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("ClientProps[%s] = %q, want %q", k, Display(k, got[k]), Display(k, v))
		}
	}
	if bs := us.BootstrapServers(); !slices.Equal(bs, []string{"127.0.0.1:19092", "127.0.0.1:19093", "127.0.0.1:19094"}) {
		t.Errorf("BootstrapServers = %v", bs)
	}

	m, err := Load("../../testdata/config/mtls.properties", exampleEnv)
	if err != nil {
		t.Fatal(err)
	}
	eu, _ := m.Cluster("eu-west")
	cp := eu.ClientProps(RoleConsumer)
	for k, v := range map[string]string{
		"ssl.truststore.type":     "PKCS12",
		"ssl.truststore.password": secretEnv + "-ts",
		"ssl.keystore.type":       "PEM",
		"ssl.keystore.location":   "/etc/kafka/secrets/eu-west.client.pem",
		"security.protocol":       "SSL",
	} {
		if cp[k] != v {
			t.Errorf("eu-west %s = %q, want %q", k, Display(k, cp[k]), Display(k, v))
		}
	}
}

func TestPrecedence(t *testing.T) {
	const text = `clusters = a, b, c
bootstrap.servers = 127.0.0.1:9
ssl.truststore.location = /top.jks
security.protocol = SSL
a.security.protocol = SASL_SSL
consumer.security.protocol = SASL_PLAINTEXT
a.consumer.security.protocol = PLAINTEXT
consumer.max.poll.records = 100
consumer.poll.timeout.ms = 250
admin.timeout.ms = 5000
b.admin.request.timeout.ms = 7
topics = top-.*
emit.checkpoints.interval.seconds = 30
a->b.enabled = true
a->b.topics = flow-.*
a->b.offset.lag.max = 7
offset.flush.interval.ms = 1000
b.offset.flush.interval.ms = 2000
topics.exclude = ex-new
a->b.topics.blacklist = ex-old
b->c.groups.blacklist = g-old
`
	c := mustParse(t, text)
	ab, bc, ac := mustFlow(t, c, "a", "b"), mustFlow(t, c, "b", "c"), mustFlow(t, c, "a", "c")
	tests := []struct {
		f         *Flow
		key, want string
		origin    string
		line      int
	}{
		{ab, "topics", "flow-.*", OriginFlow, 15},
		{ac, "topics", "top-.*", OriginTopLevel, 12},
		{ab, "emit.checkpoints.interval.seconds", "30", OriginTopLevel, 13},
		{ab, "offset.lag.max", "7", OriginFlow, 16},
		{ac, "offset.lag.max", "100", OriginDefault, 0},
		{ab, "consumer.poll.timeout.ms", "250", OriginTopLevel, 9},
		{ab, "admin.timeout.ms", "5000", OriginTopLevel, 10},
		// Worker keys: the target cluster's B.<key> beats the top level.
		{ab, "offset.flush.interval.ms", "2000", OriginCluster, 18},
		{ac, "offset.flush.interval.ms", "1000", OriginTopLevel, 17},
		// KIP-629: top-level topics.exclude beats a flow-level topics.blacklist.
		{ab, "topics.exclude", "ex-new", OriginTopLevel, 19},
		{bc, "groups.exclude", "g-old", OriginFlow, 21},
		{ab, "enabled", "true", OriginFlow, 14},
		{ac, "enabled", "false", OriginDefault, 0},
		{ab, "source.cluster.alias", "a", OriginDefault, 0},
		{ab, "target.cluster.alias", "b", OriginDefault, 0},
	}
	for _, tt := range tests {
		if got := tt.f.String(tt.key); got != tt.want {
			t.Errorf("%s %s = %q, want %q", tt.f.Name(), tt.key, got, tt.want)
		}
		i := slices.IndexFunc(tt.f.Settings(), func(s Setting) bool { return s.Key == tt.key })
		if i < 0 {
			t.Errorf("%s Settings has no %s", tt.f.Name(), tt.key)
			continue
		}
		s := tt.f.Settings()[i]
		if s.Value != tt.want || s.Origin != tt.origin || s.Line != tt.line {
			t.Errorf("%s Setting %s = %+v, want value %q origin %s line %d", tt.f.Name(), tt.key, s, tt.want, tt.origin, tt.line)
		}
		if (s.File == "") != (tt.origin == OriginDefault) {
			t.Errorf("%s Setting %s File = %q", tt.f.Name(), tt.key, s.File)
		}
	}
	if slices.ContainsFunc(ab.Settings(), func(s Setting) bool { return strings.Contains(s.Key, "blacklist") }) {
		t.Error("deprecated alias left in Settings after translation")
	}
	if !slices.IsSortedFunc(ab.Settings(), func(x, y Setting) int { return strings.Compare(x.Key, y.Key) }) {
		t.Error("Settings not sorted")
	}

	// Getters.
	if got := ab.Duration("emit.checkpoints.interval.seconds"); got != 30*time.Second {
		t.Errorf("Duration(seconds) = %v", got)
	}
	if got := ab.Duration("admin.timeout.ms"); got != 5*time.Second {
		t.Errorf("Duration(ms) = %v", got)
	}
	if got := ac.Duration("emit.heartbeats.interval.seconds"); got != time.Second {
		t.Errorf("default heartbeat interval = %v", got)
	}
	if got := ab.Duration("topics"); got != 0 {
		t.Errorf("Duration(topics) = %v", got)
	}
	if !ab.Bool("emit.heartbeats.enabled") || ab.Bool("sync.group.offsets.enabled") || ab.Bool("no.such.key") {
		t.Error("Bool defaults wrong")
	}
	if ab.Int("tasks.max") != 1 || ab.Int("topics") != 0 || ab.String("no.such.key") != "" {
		t.Error("Int/String defaults wrong")
	}
	if !ab.TopicFilter().Accept("flow-x") || ab.TopicFilter().Accept("top-x") || ab.TopicFilter().Accept("ex-new") {
		t.Error("a->b topic filter wrong")
	}
	if !ac.TopicFilter().Accept("top-x") || ac.TopicFilter().Accept("top.internal") {
		t.Error("a->c topic filter wrong")
	}
	if bc.GroupFilter().Accept("g-old") || !bc.GroupFilter().Accept("g-new") {
		t.Error("b->c group filter wrong")
	}
	if ab.ConfigPropertyFilter().Accept("min.insync.replicas") || !ab.ConfigPropertyFilter().Accept("retention.ms") {
		t.Error("config property filter wrong")
	}
	if got := ab.Policy().FormatRemoteTopic("a", "t"); got != "a.t" {
		t.Errorf("policy FormatRemoteTopic = %q", got)
	}

	// Client props: top-level < cluster < top-level consumer.* < A.consumer.*.
	a, _ := c.Cluster("a")
	b, _ := c.Cluster("b")
	clientTests := []struct {
		cl        *Cluster
		role      Role
		key, want string
	}{
		{a, RoleConsumer, "security.protocol", "PLAINTEXT"},
		{a, RoleProducer, "security.protocol", "SASL_SSL"},
		{b, RoleConsumer, "security.protocol", "SASL_PLAINTEXT"},
		{b, RoleProducer, "security.protocol", "SSL"},
		{b, RoleProducer, "ssl.truststore.location", "/top.jks"},
		{a, RoleConsumer, "bootstrap.servers", "127.0.0.1:9"},
		{a, RoleConsumer, "max.poll.records", "100"},
		{a, RoleProducer, "max.poll.records", ""},
		{b, RoleAdmin, "request.timeout.ms", "7"},
		{a, RoleAdmin, "request.timeout.ms", ""},
		// connector keys are not client keys
		{a, RoleConsumer, "poll.timeout.ms", ""},
		{a, RoleAdmin, "timeout.ms", ""},
	}
	for _, tt := range clientTests {
		if got := tt.cl.ClientProps(tt.role)[tt.key]; got != tt.want {
			t.Errorf("%s %s %s = %q, want %q", tt.cl.Alias, tt.role, tt.key, got, tt.want)
		}
	}
}

func TestIdentityPolicyUsesSource(t *testing.T) {
	c := mustParse(t, `clusters = a, b
bootstrap.servers = x
replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy
a->b.enabled = true
a->b.replication.policy.separator = _
`)
	p := mustFlow(t, c, "a", "b").Policy()
	if src, ok := p.TopicSource("orders"); !ok || src != "a" {
		t.Errorf("TopicSource = %q, %v; want a", src, ok)
	}
	if got := p.FormatRemoteTopic("a", "heartbeats"); got != "a_heartbeats" {
		t.Errorf("heartbeats remote name = %q", got)
	}
	if got := mustFlow(t, c, "b", "a").Policy().Separator(); got != "." {
		t.Errorf("b->a separator = %q", got)
	}
}

func TestSyntax(t *testing.T) {
	text := "! bang comment\r\n" +
		"clusters:a,b\r\n" +
		"  # indented comment ending in a backslash does not continue \\\r\n" +
		"a.bootstrap.servers 127.0.0.1:1\r\n" +
		"b.bootstrap.servers=127.0.0.1:\\\r\n" +
		"      2\r\n" +
		"a->b.topics = one,\\\n" +
		"  # not a comment here\n" +
		"a->b.groups = \\u0067roup\\ x\n" +
		"b->a.topics = trailing\\"
	c := mustParse(t, text)
	if !slices.Equal(c.Clusters, []string{"a", "b"}) {
		t.Errorf("Clusters = %q", c.Clusters)
	}
	b, _ := c.Cluster("b")
	if got := b.ClientProps(RoleAdmin)["bootstrap.servers"]; got != "127.0.0.1:2" {
		t.Errorf("continued value = %q", got)
	}
	a, _ := c.Cluster("a")
	if got := a.ClientProps(RoleAdmin)["bootstrap.servers"]; got != "127.0.0.1:1" {
		t.Errorf("space-separated value = %q", got)
	}
	ab, ba := mustFlow(t, c, "a", "b"), mustFlow(t, c, "b", "a")
	for _, tt := range []struct {
		f         *Flow
		key, want string
		line      int
	}{
		{ab, "topics", "one,# not a comment here", 7},
		{ab, "groups", "group x", 9},
		{ba, "topics", "trailing", 10},
	} {
		if got := tt.f.String(tt.key); got != tt.want {
			t.Errorf("%s %s = %q, want %q", tt.f.Name(), tt.key, got, tt.want)
		}
		for _, s := range tt.f.Settings() {
			if s.Key == tt.key && s.Line != tt.line {
				t.Errorf("%s %s line = %d, want %d", tt.f.Name(), tt.key, s.Line, tt.line)
			}
		}
	}
}

func TestProviders(t *testing.T) {
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets.properties")
	if err := os.WriteFile(secrets, []byte("truststore.password = file-secret-1\nuser: mm2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "jaas"), []byte("dir-secret-2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	text := `clusters = a, b
config.providers = env, file, dir
config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider
config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider
config.providers.dir.class = org.apache.kafka.common.config.provider.DirectoryConfigProvider
config.providers.file.param.allowed.paths = ` + dir + `
a.bootstrap.servers = ${env:A_BOOT}
a.ssl.truststore.password = ${file:` + secrets + `:truststore.password}
a.sasl.jaas.config = x username="${file:` + secrets + `:user}" password="${dir:` + dir + `:jaas}";
b.bootstrap.servers = 127.0.0.1:2
a->b.enabled = ${env:ENABLED}
`
	c := mustParse(t, text, envMap(map[string]string{"A_BOOT": "127.0.0.1:1", "ENABLED": "true"}))
	a, _ := c.Cluster("a")
	cp := a.ClientProps(RoleConsumer)
	for k, v := range map[string]string{
		"bootstrap.servers":       "127.0.0.1:1",
		"ssl.truststore.password": "file-secret-1",
		"sasl.jaas.config":        "x username=\"mm2\" password=\"dir-secret-2\n\";",
	} {
		if cp[k] != v {
			t.Errorf("%s = %q, want %q", k, cp[k], v)
		}
	}
	if !mustFlow(t, c, "a", "b").Enabled {
		t.Error("a->b.enabled from env not applied")
	}
	// Settings show the reference, never the resolved value.
	for _, s := range a.ClientSettings(RoleConsumer) {
		switch s.Key {
		case "bootstrap.servers":
			if s.Value != "${env:A_BOOT}" {
				t.Errorf("bootstrap display = %q", s.Value)
			}
		case "ssl.truststore.password", "sasl.jaas.config":
			if s.Value != redacted {
				t.Errorf("%s display = %q", s.Key, s.Value)
			}
		}
	}

	bad := []struct {
		name, line, want string
	}{
		{"missing key in file", "a.ssl.key.password = ${file:" + secrets + ":nope}", `key "nope" not found in ` + secrets},
		{"missing file", "a.ssl.key.password = ${file:" + dir + "/none.properties:k}", "no such file"},
		{"path outside allowed.paths", "a.ssl.key.password = ${file:/etc/passwd:k}", "outside config.providers.file.param.allowed.paths"},
		{"env with a path", "a.ssl.key.password = ${env:/x:K}", "EnvVarConfigProvider takes only a variable name"},
		{"directory traversal", "a.ssl.key.password = ${dir:" + dir + ":../x}", "must be a plain name"},
		{"missing dir file", "a.ssl.key.password = ${dir:" + dir + ":none}", "no such file"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("p.properties", strings.NewReader(text+tt.line+"\n"), envMap(map[string]string{"A_BOOT": "x", "ENABLED": "true"}))
			got := problems(t, err)
			if len(got) != 1 || !strings.HasPrefix(got[0], "p.properties:12: a.ssl.key.password: ") || !strings.Contains(got[0], tt.want) {
				t.Fatalf("errors = %q, want one at p.properties:12: a.ssl.key.password containing %q", got, tt.want)
			}
		})
	}
}

func TestIsSensitive(t *testing.T) {
	for key, want := range map[string]bool{
		"sasl.jaas.config":                    true,
		"us-east.sasl.jaas.config":            true,
		"a.consumer.sasl.jaas.config":         true,
		"ssl.keystore.password":               true,
		"ssl.key.password":                    true,
		"ssl.truststore.password":             true,
		"ssl.keystore.key":                    true,
		"a.producer.ssl.keystore.key":         true,
		"basic.auth.user.info":                true,
		"sasl.oauthbearer.client.secret":      true,
		"ssl.keystore.certificate.chain":      false,
		"ssl.truststore.certificates":         false,
		"ssl.keystore.location":               false,
		"ssl.keystore.type":                   false,
		"sasl.mechanism":                      false,
		"bootstrap.servers":                   false,
		"sasl.oauthbearer.token.endpoint.url": false,
	} {
		if got := IsSensitive(key); got != want {
			t.Errorf("IsSensitive(%q) = %v, want %v", key, got, want)
		}
	}
	if Display("ssl.key.password", "x") != redacted || Display("ssl.key.password", "") != "" || Display("security.protocol", "SSL") != "SSL" {
		t.Error("Display wrong")
	}
}
