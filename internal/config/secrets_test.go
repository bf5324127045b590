package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const leak = "hunter2"

// TestSecretsNeverShown renders everything Parse returns for a file full
// of secrets and of mistakes next to them, and checks that no secret
// appears anywhere.
func TestSecretsNeverShown(t *testing.T) {
	const text = `clusters = a, b
config.providers = env
config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider
a.bootstrap.servers = 127.0.0.1:1
b.bootstrap.servers = 127.0.0.1:2
a.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required \
   username="u" password="hunter2-inline";
a.ssl.keystore.password = ${env:KS}
b.consumer.ssl.key.password = hunter2-consumer
a->b.enabled = true
a->b.emit.heartbeats.enabled = ${env:KS}
a->b.topics = ${env:KS_RE}
a->x.sasl.jaas.config = password=hunter2-unknown-alias
a.ssl.keystore.pasword = hunter2-typo
bad.password = \uZZZZhunter2-malformed
b.ssl.truststore.password = hunter2-in\line
b.ssl.truststore.password = hunter2-dup
a.ssl.keystore.key = -----BEGIN PRIVATE KEY----- hunter2-pem
a.consumer.sasl.jaas.config = ${env:NOT_SET} hunter2-unresolved
`
	env := envMap(map[string]string{"KS": "hunter2-env", "KS_RE": "hunter2-(re"})
	c, err := Parse("s.properties", strings.NewReader(text), env)
	if err == nil || c == nil {
		t.Fatalf("want errors and a config, got %v, %v", c, err)
	}
	var out strings.Builder
	fmt.Fprintln(&out, err)
	for _, e := range problems(t, err) {
		fmt.Fprintln(&out, e)
	}
	for _, w := range c.Warnings {
		fmt.Fprintln(&out, w)
	}
	for _, f := range c.Flows {
		for _, s := range f.Settings() {
			fmt.Fprintf(&out, "%+v\n", s)
		}
		fmt.Fprintf(&out, "%+v %#v\n", f, f)
	}
	for _, a := range c.Clusters {
		cl, _ := c.Cluster(a)
		for _, r := range roles {
			for _, s := range cl.ClientSettings(r) {
				fmt.Fprintf(&out, "%+v\n", s)
			}
			for k, v := range cl.ClientProps(r) {
				fmt.Fprintln(&out, k, Display(k, v))
			}
		}
		fmt.Fprintf(&out, "%+v %#v\n", cl, cl)
	}
	fmt.Fprintf(&out, "%+v %#v %s\n", c, c, c.Digest())
	if strings.Contains(out.String(), leak) {
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.Contains(l, leak) {
				t.Errorf("secret in output: %s", l)
			}
		}
	}
	// Make sure the checks above had something to look at.
	for _, want := range []string{
		`s.properties:11: a->b.emit.heartbeats.enabled: the value is not a boolean`,
		`s.properties:12: a->b.topics: invalid regex list (it comes from a config provider`,
		`s.properties:13: a->x.sasl.jaas.config: flow a->x names unknown cluster alias "x"`,
		`s.properties:15: bad.password: malformed \uXXXX escape`,
		`s.properties:19: a.consumer.sasl.jaas.config: environment variable NOT_SET`,
		`s.properties:14: a.ssl.keystore.pasword: unknown client key`,
		`s.properties:16: b.ssl.truststore.password: a backslash before a character that is not an escape is dropped`,
		`s.properties:17: b.ssl.truststore.password: set again (first on line 16)`,
		`{Key:sasl.jaas.config Value:**redacted** Origin:cluster`,
		`{Key:ssl.keystore.key Value:**redacted**`,
		`{Key:ssl.key.password Value:**redacted** Origin:cluster`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// The secrets did reach the clients.
	a, _ := c.Cluster("a")
	if a.ClientProps(RoleAdmin)["ssl.keystore.password"] != "hunter2-env" {
		t.Error("env secret not resolved")
	}
}

func TestDigest(t *testing.T) {
	const text = `clusters = a, b
config.providers = env
config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider
a.bootstrap.servers = 127.0.0.1:1
b.bootstrap.servers = 127.0.0.1:2
a.sasl.jaas.config = x password="${env:PW}";
b.ssl.key.password = inline-secret-1
a->b.enabled = true
a->b.topics = orders
`
	digest := func(text string, pw string) string {
		t.Helper()
		c, err := Parse("d.properties", strings.NewReader(text), envMap(map[string]string{"PW": pw}))
		if err != nil {
			t.Fatal(err)
		}
		return c.Digest()
	}
	d := digest(text, "pw-1")
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(d) {
		t.Fatalf("Digest = %q, want 64 hex digits", d)
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	reordered := strings.Join(append([]string{lines[len(lines)-1]}, lines[:len(lines)-1]...), "\n") + "\n"
	tests := []struct {
		name     string
		text, pw string
		same     bool
	}{
		{"same input", text, "pw-1", true},
		{"other file name and key order", reordered, "pw-1", true},
		{"other secret from env", text, "pw-2", true},
		{"other inline secret", strings.Replace(text, "inline-secret-1", "inline-secret-2", 1), "pw-1", true},
		{"other topics", strings.Replace(text, "= orders", "= orders, refunds", 1), "pw-1", false},
		{"other bootstrap", strings.Replace(text, "127.0.0.1:2", "127.0.0.1:3", 1), "pw-1", false},
		{"default written out", text + "offset.lag.max = 100\n", "pw-1", true},
		{"flow disabled", strings.Replace(text, "a->b.enabled = true", "a->b.enabled = false", 1), "pw-1", false},
	}
	for _, tt := range tests {
		if got := digest(tt.text, tt.pw); (got == d) != tt.same {
			t.Errorf("%s: digest %s vs %s, want same=%v", tt.name, got, d, tt.same)
		}
	}
}

// TestLoadExampleFilesFromShared makes sure the copies in testdata stay in
// step with shared/examples: same keys on the same lines.
func TestLoadExampleFilesFromShared(t *testing.T) {
	shared, _ := filepath.Glob("../../../../shared/examples/*.properties")
	if len(shared) == 0 {
		shared, _ = filepath.Glob("/work/shared/examples/*.properties")
	}
	if len(shared) == 0 {
		t.Fatal("shared/examples not found")
	}
	for _, p := range shared {
		c, err := Load(p, exampleEnv)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		local, err := Load(filepath.Join("..", "..", "testdata", "config", filepath.Base(p)), exampleEnv)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		for i, f := range c.Flows {
			lf := local.Flows[i]
			if f.Name() != lf.Name() || f.Enabled != lf.Enabled || f.String("topics") != lf.String("topics") {
				t.Errorf("%s: flow %s differs from the testdata copy", p, f.Name())
			}
		}
	}
	if _, err := os.Stat("../../testdata/config"); errors.Is(err, os.ErrNotExist) {
		t.Fatal("testdata/config missing")
	}
}

func TestSeedAddressAndMaskServers(t *testing.T) {
	for _, tt := range []struct{ in, addr, masked string }{
		{"127.0.0.1:9092", "127.0.0.1:9092", "127.0.0.1:9092"},
		{"SASL_SSL://broker-1:9093", "broker-1:9093", "SASL_SSL://broker-1:9093"},
		{"SASL://alice:pw@127.0.0.1:1", "127.0.0.1:1", "SASL://***@127.0.0.1:1"},
		{"bob:p@ss@h:2", "h:2", "***@h:2"},
		{"[::1]:9092", "[::1]:9092", "[::1]:9092"},
	} {
		addr, ui := SeedAddress(tt.in)
		if addr != tt.addr || ui != (tt.masked != tt.in) {
			t.Errorf("SeedAddress(%q) = %q, %v; want %q, %v", tt.in, addr, ui, tt.addr, tt.masked != tt.in)
		}
		if got := MaskServers(tt.in); got != tt.masked {
			t.Errorf("MaskServers(%q) = %q, want %q", tt.in, got, tt.masked)
		}
	}
	if got := MaskServers("a:1, u:p@b:2"); got != "a:1,***@b:2" {
		t.Errorf("MaskServers(list) = %q", got)
	}
	if got := Display("us-east.bootstrap.servers", "u:p@b:2"); got != "***@b:2" {
		t.Errorf("Display(bootstrap.servers) = %q", got)
	}
}
