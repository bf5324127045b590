package kafka

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

func TestParseJAAS(t *testing.T) {
	const plainMod = "org.apache.kafka.common.security.plain.PlainLoginModule"
	const scramMod = "org.apache.kafka.common.security.scram.ScramLoginModule"
	tests := []struct {
		name   string
		in     string
		module string
		flag   string
		opts   map[string]string
	}{
		{
			name:   "plain, one line",
			in:     plainMod + ` required username="u" password="p";`,
			module: plainMod, flag: "required",
			opts: map[string]string{"username": "u", "password": "p"},
		},
		{
			name:   "scram, multi-line with extra options and tokenauth",
			in:     scramMod + " required\n  username=\"replicator\"\n\tpassword=\"pw\"\r\n  tokenauth=true\n  serviceName=kafka;\n",
			module: scramMod, flag: "required",
			opts: map[string]string{"username": "replicator", "password": "pw", "tokenauth": "true", "serviceName": "kafka"},
		},
		{
			name:   "escaped quote and backslash in a value",
			in:     plainMod + ` required username="u" password="a\"b\\c";`,
			module: plainMod, flag: "required",
			opts: map[string]string{"username": "u", "password": `a"b\c`},
		},
		{
			name:   "single quotes, spaces and = inside a value",
			in:     plainMod + ` required username='svc user' password='x=y; "z"';`,
			module: plainMod, flag: "required",
			opts: map[string]string{"username": "svc user", "password": `x=y; "z"`},
		},
		{
			name:   "missing semicolon, spaces around =, bare values",
			in:     "  " + plainMod + " Required username = u password = p  ",
			module: plainMod, flag: "required",
			opts: map[string]string{"username": "u", "password": "p"},
		},
		{
			name:   "comments and empty quoted value",
			in:     plainMod + " optional /* who */ username=\"u\" // note\n password=\"\" ;",
			module: plainMod, flag: "optional",
			opts: map[string]string{"username": "u", "password": ""},
		},
		{
			name:   "escape sequences",
			in:     plainMod + ` sufficient username="u" password="tab\tnl\n";`,
			module: plainMod, flag: "sufficient",
			opts: map[string]string{"username": "u", "password": "tab\tnl\n"},
		},
		{
			name:   "no options",
			in:     "Foo requisite;",
			module: "Foo", flag: "requisite",
			opts: map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := parseJAAS(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if e.module != tt.module || e.flag != tt.flag {
				t.Errorf("module, flag = %q, %q; want %q, %q", e.module, e.flag, tt.module, tt.flag)
			}
			got := map[string]string{}
			for k, v := range e.options {
				got[k] = v.Reveal()
			}
			if !maps.Equal(got, tt.opts) {
				t.Errorf("options = %q, want %q", got, tt.opts)
			}
		})
	}
}

func TestParseJAASErrors(t *testing.T) {
	const secret = "Hunter2-s3cret"
	const mod = "org.apache.kafka.common.security.plain.PlainLoginModule"
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "  \n ", "empty"},
		{"unterminated quote", mod + ` required username="u" password="` + secret, "unterminated quoted value at byte 87"},
		{"trailing backslash", mod + ` required password="` + secret + `\`, "unterminated quoted value"},
		{"missing flag", mod, "missing control flag"},
		{"bad flag", mod + " " + secret, "control flag must be"},
		{"missing =", mod + ` required password "` + secret + `"`, "expected '=' after an option name"},
		{"missing value", mod + ` required password=`, `missing value for option "password"`},
		{"value then junk key", mod + ` required password=` + secret + ` "x"`, "expected an option name"},
		{"two modules", mod + ` required password="` + secret + `"; Other required;`, "exactly one login module"},
		{"unterminated comment", mod + ` required /* password="` + secret + `"`, "unterminated /* comment"},
		{"module with quote", `"` + secret + `" required`, "expected a login module class name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseJAAS(tt.in)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, errJAAS) {
				t.Errorf("error %v does not wrap errJAAS", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "Hunter") {
				t.Errorf("error leaks the secret: %q", err)
			}
		})
	}
}

func TestSASLMechanism(t *testing.T) {
	const pw = "Sasl-Pa55-77q"
	plainJAAS := `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="` + pw + `";`
	scramJAAS := `org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="` + pw + `";`
	tests := []struct {
		mech, jaas string
		wantName   string // mechanism name, or "" when an error is expected
		wantErr    string
	}{
		{"PLAIN", plainJAAS, "PLAIN", ""},
		{"scram-sha-256", scramJAAS, "SCRAM-SHA-256", ""},
		{"SCRAM-SHA-512", scramJAAS, "SCRAM-SHA-512", ""},
		{"", plainJAAS, "", "sasl.mechanism: not set, and the Java default GSSAPI"},
		{"OAUTHBEARER", plainJAAS, "", "sasl.mechanism: OAUTHBEARER is not supported"},
		{"GSSAPI", plainJAAS, "", "sasl.mechanism: GSSAPI is not supported"},
		{"FOO", plainJAAS, "", `sasl.mechanism: unknown mechanism "FOO"`},
		{"PLAIN", "", "", "sasl.jaas.config: required for sasl.mechanism PLAIN"},
		{"PLAIN", scramJAAS, "", "sasl.jaas.config: login module org.apache.kafka.common.security.scram.ScramLoginModule does not fit sasl.mechanism PLAIN"},
		{"SCRAM-SHA-512", plainJAAS, "", "does not fit sasl.mechanism SCRAM-SHA-512 (want ScramLoginModule)"},
		{"PLAIN", `Hunter2secret required username="u" password="x";`, "", "sasl.jaas.config: login module class does not fit sasl.mechanism PLAIN"},
		{"PLAIN", `org.apache.kafka.common.security.plain.PlainLoginModule required password="` + pw + `";`, "", "sasl.jaas.config: missing username option"},
		{"PLAIN", `org.apache.kafka.common.security.plain.PlainLoginModule required username="u";`, "", "sasl.jaas.config: missing password option"},
		{"PLAIN", `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="` + pw, "", "sasl.jaas.config: invalid JAAS configuration: unterminated quoted value"},
	}
	for _, tt := range tests {
		m, err := saslMechanism(tt.mech, tt.jaas)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: error = %v, want %q", tt.mech, err, tt.wantErr)
			}
			if err != nil && (strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), "Hunter2")) {
				t.Errorf("%s: error leaks the password: %v", tt.mech, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.mech, err)
			continue
		}
		if m.Name() != tt.wantName {
			t.Errorf("%s: mechanism %s, want %s", tt.mech, m.Name(), tt.wantName)
		}
	}
}

// FuzzParseJAAS checks that parsing never panics and that an error never
// repeats the input (which may be a secret).
func FuzzParseJAAS(f *testing.F) {
	f.Add(`org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";`)
	f.Add(`x.ScramLoginModule required username='a\'b' password="c\"d" tokenauth=true`)
	f.Add(`m required /* c */ k=v // x` + "\n;")
	f.Add(`m required password="unterminated-secret-value`)
	f.Fuzz(func(t *testing.T, s string) {
		e, err := parseJAAS(s)
		if err != nil {
			if len(s) >= 12 && strings.Contains(err.Error(), s) {
				t.Fatalf("error repeats the input: %v", err)
			}
			return
		}
		if e.module == "" || e.flag == "" {
			t.Fatalf("parsed without module or flag: %+v", e)
		}
	})
}
