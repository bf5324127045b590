package settings

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPath(t *testing.T) {
	t.Setenv(EnvPath, "")
	t.Setenv("XDG_CONFIG_HOME", "/xdg")
	if got := Path(); got != "/xdg/mirrorctl/config.yaml" {
		t.Errorf("Path() = %q with XDG_CONFIG_HOME=/xdg", got)
	}
	t.Setenv("XDG_CONFIG_HOME", "relative/dir") // ignored, as XDG says
	t.Setenv("HOME", "/home/op")
	if got := Path(); got != "/home/op/.config/mirrorctl/config.yaml" {
		t.Errorf("Path() = %q with a relative XDG_CONFIG_HOME", got)
	}
	t.Setenv(EnvPath, "/etc/mirrorctl/settings.yaml")
	if got := Path(); got != "/etc/mirrorctl/settings.yaml" {
		t.Errorf("Path() = %q with %s set", got, EnvPath)
	}
}

func TestLoad(t *testing.T) {
	p := write(t, `# two pairs
current-context: prod
contexts:
  - name: prod
    description: us-east to eu-west
    config: /etc/mm2/prod.properties
    source: us-east
    target: eu-west
    output: json
    no-color: true
    verbose: 2
  - name: Staging
    config: staging.properties
`)
	f, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Exists || f.Current != "prod" || f.CurrentLine != 2 || len(f.Contexts) != 2 {
		t.Fatalf("file = %+v", f)
	}
	c, ok := f.Context("prod")
	if !ok {
		t.Fatal("no context prod")
	}
	want := map[string]string{KeyConfig: "/etc/mm2/prod.properties", KeySource: "us-east", KeyTarget: "eu-west",
		KeyOutput: "json", KeyNoColor: "true", KeyVerbose: "2", KeyDescription: "us-east to eu-west"}
	for k, v := range want {
		if got := c.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if c.Line(KeySource) != 7 || c.Line(KeyVerbose) != 11 || c.Line(KeyName) != 4 {
		t.Errorf("lines = %v", c.Lines)
	}
	if got := f.Names(); strings.Join(got, ",") != "Staging,prod" {
		t.Errorf("Names() = %v (case kept, sorted)", got)
	}
}

func TestLoadMissingAndEmpty(t *testing.T) {
	f, err := Load(filepath.Join(t.TempDir(), "none.yaml"))
	if err != nil || f.Exists || len(f.Contexts) != 0 {
		t.Fatalf("missing file: %+v, %v", f, err)
	}
	f, err = Load(write(t, ""))
	if err != nil || !f.Exists || len(f.Contexts) != 0 || f.Current != "" {
		t.Fatalf("empty file: %+v, %v", f, err)
	}
}

// Every problem in the file is an *Error naming the file, the line and the
// key; an unknown key is never skipped.
func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, content string
		line          int
		key, msg      string
	}{
		{"syntax", "current-context: prod\ncontexts:\n  - name: prod\n    source: us-east: x\n", 4, "", "not valid YAML: mapping values are not allowed in this context"},
		{"unknown top-level key", "current-contxt: prod\n", 1, "current-contxt", `unknown key (did you mean "current-context"?)`},
		{"unknown context key, near miss", "contexts:\n  - name: prod\n    outptu: json\n", 3, "outptu", `unknown context key (did you mean "output"?)`},
		{"unknown context key, far", "contexts:\n  - name: prod\n    password: hunter2\n", 3, "password", "unknown context key (keys: name, description,"},
		{"value not scalar", "contexts:\n  - name: prod\n    source: [a, b]\n", 3, "source", "want a single value"},
		{"null value", "contexts:\n  - name: prod\n    source:\n", 3, "source", "want a single value"},
		{"contexts not a list", "contexts:\n  prod: {}\n", 2, "contexts", "want a list of contexts"},
		{"no name", "contexts:\n  - source: a\n", 2, "name", "a context needs a name"},
		{"twice", "contexts:\n  - name: a\n  - name: a\n", 3, "name", `context "a" defined twice (first on line 2)`},
		{"key twice", "contexts:\n  - name: a\n    source: x\n    source: y\n", 4, "source", "set twice in one context (first on line 3)"},
		{"not a mapping", "- a\n- b\n", 1, "", "want a mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := write(t, tt.content)
			_, err := Load(p)
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("Load = %v, want *Error", err)
			}
			if se.File != p || se.Line != tt.line || se.Key != tt.key || !strings.Contains(se.Msg, tt.msg) {
				t.Fatalf("error = %+v (%q), want line %d key %q msg containing %q", se, err, tt.line, tt.key, tt.msg)
			}
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("error %q does not name the file", err)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("error %q echoes a value", err)
			}
		})
	}
}

func TestCurrentContext(t *testing.T) {
	f, err := Load(write(t, "current-context: gone\ncontexts:\n  - name: a\n  - name: b\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.CurrentContext("", "")
	var se *Error
	if !errors.As(err, &se) || se.Line != 1 || se.Key != "current-context" || !strings.Contains(se.Msg, `no context "gone" in the file (contexts: a, b)`) {
		t.Fatalf("dangling current-context: %v", err)
	}
	if c, err := f.CurrentContext("b", "--context"); err != nil || c.Name != "b" {
		t.Fatalf("--context b: %v, %v", c, err)
	}
	if _, err := f.CurrentContext("c", "MIRRORCTL_CONTEXT"); err == nil || !strings.Contains(err.Error(), "MIRRORCTL_CONTEXT c: no such context in") {
		t.Fatalf("unknown name: %v", err)
	}
	f.Current = ""
	if c, err := f.CurrentContext("", ""); c != nil || err != nil {
		t.Fatalf("no current context: %v, %v", c, err)
	}
}

// Save writes a file Load reads back the same, mode 0600, and replaces the
// old file whole.
func TestSaveRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sub", "config.yaml")
	f := &File{Path: p, Current: "prod"}
	f.Contexts = append(f.Contexts,
		&Context{Name: "prod", Config: "/etc/mm2: prod.properties", Source: "us-east", Target: "eu-west", NoColor: "true", Verbose: "1", Output: "json"},
		&Context{Name: "yes", Description: "no", Source: "123"})
	if err := f.Save(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("stat: %v, mode %v", err, st.Mode())
	}
	g, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if g.Current != "prod" || len(g.Contexts) != 2 {
		t.Fatalf("read back %+v", g)
	}
	for i, c := range f.Contexts {
		for _, k := range ContextKeys {
			if got, want := g.Contexts[i].Get(k), c.Get(k); got != want {
				t.Errorf("context %s %s = %q, want %q", c.Name, k, got, want)
			}
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Errorf("directory holds %d files, want the settings file alone", len(entries))
	}
}

// A write that fails half-way leaves the old file as it was, and no
// temporary file behind.
func TestSaveFailureLeavesFileUnchanged(t *testing.T) {
	p := write(t, "current-context: a\ncontexts:\n  - name: a\n    source: x\n")
	before, _ := os.ReadFile(p)
	f, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Contexts[0].Source = "changed"
	err = f.save(func(w *os.File, data []byte) error {
		_, _ = w.Write(data[:len(data)/2])
		return errors.New("disk full")
	})
	if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "(unchanged)") || !strings.Contains(err.Error(), p) {
		t.Fatalf("save error = %v", err)
	}
	after, _ := os.ReadFile(p)
	if string(after) != string(before) {
		t.Fatalf("file changed by a failed write:\n%s", after)
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Fatalf("temporary file left behind: %d entries", len(entries))
	}
}

func TestDelete(t *testing.T) {
	f := &File{Current: "a", Contexts: []*Context{{Name: "a"}, {Name: "b"}}}
	if !f.Delete("a") || f.Current != "" || len(f.Contexts) != 1 || f.Contexts[0].Name != "b" {
		t.Fatalf("after Delete(a): %+v", f)
	}
	if f.Delete("zz") {
		t.Fatal("Delete of an unknown context reported true")
	}
}

func TestValidate(t *testing.T) {
	tests := []struct{ key, in, want, err string }{
		{KeyNoColor, "true", "true", ""},
		{KeyNoColor, "1", "true", ""},
		{KeyNoColor, "0", "false", ""},
		{KeyNoColor, "yes", "", "want true or false (also 1 or 0)"},
		{KeyVerbose, "2", "2", ""},
		{KeyVerbose, "lots", "", "want a count of -v, 0 or more (1 info, 2 debug)"},
		{KeyVerbose, "-1", "", "want a count of -v, 0 or more (1 info, 2 debug)"},
		{KeyOutput, "JSON", "json", ""},
		{KeyOutput, "yaml", "", "want one of {table|json|csv|tsv}"},
		{KeySource, "us-east", "us-east", ""},
	}
	for _, tt := range tests {
		got, err := Validate(tt.key, tt.in)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("Validate(%s, %q) error = %v, want %q", tt.key, tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Validate(%s, %q) = %q, %v; want %q", tt.key, tt.in, got, err, tt.want)
		}
	}
}

func TestDisplayPath(t *testing.T) {
	for in, want := range map[string]string{
		"/etc/mm2.properties":                "/etc/mm2.properties",
		"https://alice:pw@host/mm2":          "https://***@host/mm2",
		"alice:pw@host/mm2.properties":       "***@host/mm2.properties",
		"/tmp/alice:pw@host/mm2.properties":  "/tmp/***@host/mm2.properties",
		"/srv/team@example/mm2.properties":   "/srv/team@example/mm2.properties",
		"s3://bob:s3cr3t@bucket/a@b/x.props": "s3://***@bucket/a@b/x.props",
	} {
		if got := DisplayPath(in); got != want {
			t.Errorf("DisplayPath(%q) = %q, want %q", in, got, want)
		}
	}
}
