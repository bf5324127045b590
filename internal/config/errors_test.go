package config

import (
	"errors"
	"strings"
	"testing"
)

// problems returns "line: key" for every *Error joined in err, in order.
func problems(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var out []string
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("error is not errors.Join-ed: %T %v", err, err)
	}
	for _, e := range j.Unwrap() {
		var ce *Error
		if !errors.As(e, &ce) {
			t.Fatalf("joined error %T is not *config.Error: %v", e, e)
		}
		out = append(out, ce.Error())
	}
	return out
}

func noEnv(string) (string, bool) { return "", false }

func TestParseErrors(t *testing.T) {
	const base = "clusters = a, b\na.bootstrap.servers = 127.0.0.1:1\nb.bootstrap.servers = 127.0.0.1:2\n"
	tests := []struct {
		name string
		text string
		// want: one entry per error, "bad.properties:LINE: KEY: " prefix
		// followed by a distinctive part of the message.
		want []string
	}{
		{"missing clusters", "a.bootstrap.servers = x\n",
			[]string{"bad.properties: clusters: required key is missing"}},
		{"blank clusters", "clusters =\n",
			[]string{"bad.properties:1: clusters: no cluster aliases listed"}},
		{"unknown target alias", base + "a->x.enabled = true\n",
			[]string{`bad.properties:4: a->x.enabled: flow a->x names unknown cluster alias "x"`}},
		{"unknown source alias with suggestion", base + "aa->b.topics = t\n",
			[]string{`bad.properties:4: aa->b.topics: flow aa->b names unknown cluster alias "aa" (clusters = a, b); did you mean "a"?`}},
		{"flow to itself", base + "a->a.enabled = true\n",
			[]string{`bad.properties:4: a->a.enabled: flow from cluster "a" to itself`}},
		{"alias contains default separator", "clusters = us.east, b\nus.east.bootstrap.servers = x\n",
			[]string{`bad.properties:1: clusters: alias "us.east" contains the replication separator "."`}},
		{"alias contains custom separator", "clusters = us_east, b\nreplication.policy.separator = _\n",
			[]string{`bad.properties:1: clusters: alias "us_east" contains the replication separator "_"`}},
		{"flow separator override", base + "a->b.replication.policy.separator = a\n",
			[]string{`bad.properties:4: a->b.replication.policy.separator: cluster alias "a" contains this flow's replication separator "a"`}},
		{"empty separator", base + "replication.policy.separator =\n",
			[]string{"bad.properties:4: replication.policy.separator: must not be empty"}},
		{"bad top-level topics regex", base + "topics = ok, (unclosed\n",
			[]string{`bad.properties:4: topics: invalid regex item "(unclosed"`}},
		{"comma inside quantifier", base + "a->b.topics = x{1,3}\n",
			[]string{`bad.properties:4: a->b.topics: invalid regex item "x{1"`}},
		{"bad groups.exclude per flow", base + "\n\nb->a.groups.exclude = a(?=b)\n",
			[]string{`bad.properties:6: b->a.groups.exclude: invalid regex item "a(?=b)"`}},
		{"bad groups and config.properties.exclude", base + "groups = [\nconfig.properties.exclude = *x\n",
			[]string{`bad.properties:4: groups: invalid regex`, `bad.properties:5: config.properties.exclude: invalid regex`}},
		{"deprecated alias regex is checked too", base + "topics.blacklist = (\n",
			[]string{`bad.properties:4: topics.blacklist: invalid regex`}},
		{"enabled flow without bootstrap", "clusters = a, b\n\na->b.enabled = true\n",
			[]string{"bad.properties:3: a->b.enabled: source cluster a has no bootstrap.servers",
				"bad.properties:3: a->b.enabled: target cluster b has no bootstrap.servers"}},
		{"top-level bootstrap is enough", "clusters = a, b\nbootstrap.servers = x\na->b.enabled = true\n", nil},
		{"disabled flow without bootstrap is fine", "clusters = a, b\na->b.enabled = false\n", nil},
		{"bad int", base + "replication.factor = two\n",
			[]string{`bad.properties:4: replication.factor: "two" is not an integer`}},
		{"bad int per flow", base + "a->b.offset.lag.max = 1k\n",
			[]string{`bad.properties:4: a->b.offset.lag.max: "1k" is not an integer`}},
		{"int below minimum", base + "tasks.max = 0\n",
			[]string{"bad.properties:4: tasks.max: 0 is below the minimum 1"}},
		{"zero replication factor", base + "heartbeats.topic.replication.factor = 0\n",
			[]string{"bad.properties:4: heartbeats.topic.replication.factor: replication factor 0 is invalid"}},
		{"bad bool", base + "emit.heartbeats.enabled = yes\n",
			[]string{`bad.properties:4: emit.heartbeats.enabled: "yes" is not a boolean`}},
		{"bad enabled", base + "a->b.enabled = on\n",
			[]string{`bad.properties:4: a->b.enabled: "on" is not a boolean`}},
		{"bad offset-syncs location", base + "a->b.offset-syncs.topic.location = both\n",
			[]string{`bad.properties:4: a->b.offset-syncs.topic.location: "both" is not one of source, target`}},
		{"unknown policy class", base + "replication.policy.class = com.example.MyPolicy\n",
			[]string{`bad.properties:4: replication.policy.class: unknown replication policy "com.example.MyPolicy"`}},
		{"identity loop on default topics", base + "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\na->b.enabled = true\nb->a.enabled = true\n",
			[]string{`bad.properties:6: b->a.enabled: flows a->b and b->a both use IdentityReplicationPolicy and both replicate topics such as "a"`}},
		{"identity loop literal in other's pattern", base + "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\na->b.enabled = true\na->b.topics = orders\nb->a.enabled = true\nb->a.topics = ord.*\n",
			[]string{`bad.properties:8: b->a.topics: flows a->b and b->a both use IdentityReplicationPolicy and both replicate topics such as "orders"`}},
		{"identity loop with .* on one side", base + "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\na->b.enabled = true\na->b.topics = west-.*\nb->a.enabled = true\n",
			[]string{`bad.properties:7: b->a.enabled: flows a->b and b->a both use IdentityReplicationPolicy and both replicate topics such as "west-"`}},
		{"identity, disjoint thanks to exclude", base + "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\na->b.enabled = true\na->b.topics.exclude = west-.*\nb->a.enabled = true\nb->a.topics = west-.*\n", nil},
		{"default policy never loops", base + "a->b.enabled = true\nb->a.enabled = true\n", nil},
		{"undeclared provider", base + "a.ssl.truststore.password = ${vault:secret/x:pw}\n",
			[]string{`bad.properties:4: a.ssl.truststore.password: reference to config provider "vault", which is not declared`}},
		{"unset env var", base + "config.providers = env\nconfig.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider\na.sasl.jaas.config = x password=\"${env:NOPE}\";\n",
			[]string{`bad.properties:6: a.sasl.jaas.config: environment variable NOPE (from ${env:NOPE}) is not set`}},
		{"provider without class", base + "config.providers = env\n",
			[]string{`bad.properties:4: config.providers.env.class: provider "env" is declared but has no class`}},
		{"unknown provider class", base + "config.providers = v\nconfig.providers.v.class = com.example.Vault\n",
			[]string{`bad.properties:5: config.providers.v.class: unsupported config provider class`}},
		{"malformed unicode escape", base + "a->b.topics = \\u12x4\n",
			[]string{`bad.properties:4: a->b.topics: malformed \uXXXX escape`}},
		{"line numbers after a continuation", "clusters = a, \\\n  b\n# comment \\\nreplication.factor = \\\n   x\n",
			[]string{`bad.properties:4: replication.factor: "x" is not an integer`}},
		{"several problems, sorted by line", base + "a->c.enabled = true\ntasks.max = -3\nemit.checkpoints.enabled = maybe\n",
			[]string{`bad.properties:4: a->c.enabled: flow a->c names unknown`,
				`bad.properties:5: tasks.max: -3 is below the minimum 1`,
				`bad.properties:6: emit.checkpoints.enabled: "maybe" is not a boolean`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("bad.properties", strings.NewReader(tt.text), WithEnv(noEnv))
			got := problems(t, err)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d errors, want %d:\n%s", len(got), len(tt.want), strings.Join(got, "\n"))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("error %d:\n got %s\nwant prefix %s", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		e    Error
		want string
	}{
		{Error{File: "f", Line: 3, Key: "k", Msg: "m"}, "f:3: k: m"},
		{Error{File: "f", Key: "clusters", Msg: "m"}, "f: clusters: m"},
		{Error{File: "f", Line: 2, Msg: "m"}, "f:2: m"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
		w := Warning{File: tt.e.File, Line: tt.e.Line, Key: tt.e.Key, Msg: tt.e.Msg}
		if got := w.String(); got != tt.want {
			t.Errorf("Warning.String() = %q, want %q", got, tt.want)
		}
	}
}

func TestMoreWarnings(t *testing.T) {
	const text = `clusters = a, b
bootstrap.servers = 127.0.0.1:1
replication.policy.class = IdentityReplicationPolicy
a->b.enabled = true
a->b.topics = ab.*c
b->a.enabled = true
b->a.topics = abd.*e
topic.filter.class = com.example.MyFilter
`
	c, err := Parse("m.properties", strings.NewReader(text), WithEnv(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`m.properties:3: replication.policy.class: MM2 needs the fully qualified class name org.apache.kafka.connect.mirror.IdentityReplicationPolicy`,
		`m.properties:7: b->a.topics: flows a->b and b->a both use IdentityReplicationPolicy and their topic items "ab.*c" and "abd.*e" share a prefix`,
		`m.properties:8: topic.filter.class: custom classes are not supported; mirrorctl behaves as org.apache.kafka.connect.mirror.DefaultTopicFilter`,
	}
	if len(c.Warnings) != len(want) {
		t.Fatalf("warnings = %v", c.Warnings)
	}
	for i, w := range c.Warnings {
		if !strings.HasPrefix(w.String(), want[i]) {
			t.Errorf("warning %d:\n got %s\nwant prefix %s", i, w, want[i])
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("/nonexistent/mm2.properties")
	var ce *Error
	if !errors.As(err, &ce) || ce.File != "/nonexistent/mm2.properties" || !strings.Contains(ce.Error(), "no such file") {
		t.Fatalf("Load error = %v", err)
	}
}

func TestWarnings(t *testing.T) {
	const text = `clusters = us-east, eu-west
us-east.bootstrap.servers = 127.0.0.1:1
eu-west.bootstrap.servers = 127.0.0.1:2
topics.blacklist = y
us-east->eu-west.consumer.max.poll.records = 10
us-east.client.id = me
usest.bootstrap.servers = 127.0.0.1:3
us-east.topics = t
replication.factor = 3
replication.factor = 2
us-east->eu-west.offset.flush.interval.ms = 10
us-east->eu-west.topics = cart\..*
us-east->eu-west.emit.hartbeat.enable = false
`
	c, err := Parse("w.properties", strings.NewReader(text), WithEnv(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`w.properties:4: topics.blacklist: deprecated alias of topics.exclude`,
		`w.properties:5: us-east->eu-west.consumer.max.poll.records: client overrides per flow are ignored by mirrorctl`,
		`w.properties:6: us-east.client.id: MM2 passes only bootstrap.servers, security.protocol, ssl.* and sasl.* from cluster settings to clients`,
		`w.properties:7: usest.bootstrap.servers: "usest" is not a declared cluster alias (clusters = us-east, eu-west); did you mean "us-east"?`,
		`w.properties:8: us-east.topics: topics is a flow setting; MM2 ignores it at cluster level`,
		`w.properties:10: replication.factor: set again (first on line 9); this line wins`,
		`w.properties:11: us-east->eu-west.offset.flush.interval.ms: a Connect worker setting`,
		`w.properties:12: us-east->eu-west.topics: "\." is read as ".": .properties drops a backslash`,
		`w.properties:13: us-east->eu-west.emit.hartbeat.enable: unknown key; did you mean "us-east->eu-west.emit.heartbeats.enabled"?`,
	}
	var got []string
	for _, w := range c.Warnings {
		got = append(got, w.String())
	}
	if len(got) != len(want) {
		t.Fatalf("got %d warnings, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("warning %d:\n got %s\nwant prefix %s", i, got[i], want[i])
		}
	}
}

// A key one or two edits from a known one, or a name people write that never
// existed, is an error naming the key meant: left as a warning, a typo'd
// topics list (or exclude, or password) kept its default and the flow did
// something else than the file says. The secret's value is never echoed.
func TestNearMissKeysAreErrors(t *testing.T) {
	const text = `clusters = us-east, eu-west
us-east.bootstrap.servers = 127.0.0.1:1
eu-west.bootstrap.server = 127.0.0.1:2
topics.exlude = x
us-east->eu-west.emit.heartbeat.enabled = false
us-east->eu-west.topcs = orders
topics.whitelist = z
eu-west.ssl.truststore.pasword = hunter2
`
	_, err := Parse("w.properties", strings.NewReader(text), WithEnv(noEnv))
	if err == nil {
		t.Fatal("near misses accepted")
	}
	want := []string{
		`w.properties:3: eu-west.bootstrap.server: unknown key, meant as "eu-west.bootstrap.servers"? Correct or remove it: as written, eu-west.bootstrap.servers keeps its default`,
		`w.properties:4: topics.exlude: unknown key, meant as "topics.exclude"?`,
		`w.properties:5: us-east->eu-west.emit.heartbeat.enabled: unknown key, meant as "us-east->eu-west.emit.heartbeats.enabled"?`,
		`w.properties:6: us-east->eu-west.topcs: unknown key, meant as "us-east->eu-west.topics"? Correct or remove it: as written, us-east->eu-west.topics keeps its default`,
		`w.properties:7: topics.whitelist: unknown key, meant as "topics"?`,
		`w.properties:8: eu-west.ssl.truststore.pasword: unknown client key ssl.truststore.pasword, meant as "ssl.truststore.password"? Correct or remove it: as written, ssl.truststore.password is not set`,
	}
	msg := err.Error()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error lacks %s\ngot:\n%s", w, msg)
		}
	}
	if strings.Contains(msg, "hunter2") {
		t.Error("the error contains the secret")
	}
}
