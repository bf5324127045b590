package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/internal/settings"
	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

// mirrorctlEnv are the variables these tests control; each test starts
// with all of them empty and its own XDG directories, so no test reads the
// real user's settings file.
var mirrorctlEnv = []string{"MIRRORCTL_CONFIG", "MIRRORCTL_OUTPUT", "MIRRORCTL_NO_COLOR", "MIRRORCTL_VERBOSE",
	"MIRRORCTL_AUDIT_LOG", "MIRRORCTL_SOURCE", "MIRRORCTL_TARGET", "MIRRORCTL_CONTEXT", "MIRRORCTL_SETTINGS", "NO_COLOR"}

// isolate clears mirrorctlEnv, points XDG_CONFIG_HOME and XDG_STATE_HOME
// at fresh directories and returns the settings file's path there.
func isolate(t *testing.T) string {
	t.Helper()
	for _, k := range mirrorctlEnv {
		t.Setenv(k, "")
	}
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	return filepath.Join(dir, "config", "mirrorctl", "config.yaml")
}

func writeSettings(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestOutputFormatsMatchSettings(t *testing.T) {
	if !slices.Equal(settings.OutputFormats, output.Formats()) {
		t.Fatalf("settings.OutputFormats = %v, output.Formats() = %v", settings.OutputFormats, output.Formats())
	}
}

// probe runs args against a root with an extra command "probe" that has
// --source and --target like the flow commands, and returns what probe saw
// and the resolved values.
func probe(t *testing.T, args ...string) (src, tgt string, g *globalOptions, code int, stderr string) {
	t.Helper()
	ios, _, _, errOut := iostreams.Test()
	g = &globalOptions{output: string(output.FormatTable)}
	f, cleanup := newFactory(ios, NewLogger(errOut), g, &stopWatchdog{})
	defer cleanup()
	root := NewCmdRoot(f, g)
	p := &cobra.Command{Use: "probe", RunE: func(*cobra.Command, []string) error { return nil }}
	p.Flags().StringVar(&src, "source", "", "")
	p.Flags().StringVar(&tgt, "target", "", "")
	wrapRunE(p, func(run *cobra.Command) error { return resolveGlobals(root, run, f, g) }, g)
	root.AddCommand(p)
	root.SetArgs(append([]string{"probe"}, args...))
	root.SetOut(ios.Out)
	root.SetErr(ios.ErrOut)
	_, err := root.ExecuteContextC(context.Background())
	code = exitCode(context.Background(), err)
	if err != nil {
		printError(ios, "mirrorctl probe", false, err, code)
	}
	return src, tgt, g, code, errOut.String()
}

// TestPrecedenceMatrix sets every value at each level (flag, env, context)
// and at the levels below it, and checks the highest wins, per value, with
// its origin.
func TestPrecedenceMatrix(t *testing.T) {
	values := []struct {
		key, env       string
		flag           []string  // args at the flag level
		envRaw, ctxRaw string    // as written in the variable and the context
		want           [4]string // resolved at levels flag, env, context, default
	}{
		{"config", "MIRRORCTL_CONFIG", []string{"-c", "/f/flag.properties"}, "/e/env.properties", "/c/ctx.properties",
			[4]string{"/f/flag.properties", "/e/env.properties", "/c/ctx.properties", "mm2.properties"}},
		{"output", "MIRRORCTL_OUTPUT", []string{"-o", "csv"}, "tsv", "JSON", [4]string{"csv", "tsv", "json", "table"}},
		{"no-color", "MIRRORCTL_NO_COLOR", []string{"--no-color"}, "0", "1", [4]string{"true", "false", "true", "false"}},
		{"verbose", "MIRRORCTL_VERBOSE", []string{"-vvv"}, "2", "1", [4]string{"3", "2", "1", "0"}},
		{"audit-log", "MIRRORCTL_AUDIT_LOG", []string{"--audit-log", "/f/audit.jsonl"}, "/e/audit.jsonl", "/c/audit.jsonl",
			[4]string{"/f/audit.jsonl", "/e/audit.jsonl", "/c/audit.jsonl", "(XDG_STATE_HOME)"}},
		{"source", "MIRRORCTL_SOURCE", []string{"--source", "s-flag"}, "s-env", "s-ctx", [4]string{"s-flag", "s-env", "s-ctx", ""}},
		{"target", "MIRRORCTL_TARGET", []string{"--target", "t-flag"}, "t-env", "t-ctx", [4]string{"t-flag", "t-env", "t-ctx", ""}},
	}
	origins := [4]string{cmdutil.OriginFlag, cmdutil.OriginEnv, cmdutil.OriginContext, cmdutil.OriginDefault}
	for _, v := range values {
		for lvl := range 4 {
			t.Run(v.key+"/"+origins[lvl], func(t *testing.T) {
				path := isolate(t)
				content := "current-context: prod\ncontexts:\n  - name: prod\n"
				if lvl <= 2 {
					content += "    " + v.key + ": " + v.ctxRaw + "\n"
				}
				writeSettings(t, path, content)
				if lvl <= 1 {
					t.Setenv(v.env, v.envRaw)
				}
				var args []string
				if lvl == 0 {
					args = v.flag
				}
				src, tgt, g, code, stderr := probe(t, args...)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				want := v.want[lvl]
				if want == "(XDG_STATE_HOME)" {
					want = filepath.Join(os.Getenv("XDG_STATE_HOME"), "mirrorctl", "audit.jsonl")
				}
				var r cmdutil.Resolved
				for _, x := range g.resolved {
					if x.Key == v.key {
						r = x
					}
				}
				if r.Value != want || r.Origin != origins[lvl] {
					t.Fatalf("%s = %q from %s, want %q from %s (resolved %+v)", v.key, r.Value, r.Origin, want, origins[lvl], g.resolved)
				}
				if lvl == 2 && (r.Name != "prod" || r.File != path || r.Line != 4) {
					t.Fatalf("context origin = %+v, want prod at %s:4", r, path)
				}
				// what the command itself sees
				seen := map[string]string{"config": g.configPath, "output": g.output, "audit-log": g.auditLog,
					"no-color": strconv.FormatBool(g.noColor), "verbose": strconv.Itoa(g.verbose), "source": src, "target": tgt}
				if seen[v.key] != want {
					t.Fatalf("command sees %s = %q, want %q", v.key, seen[v.key], want)
				}
			})
		}
	}
}

// A context's relative paths are taken from the settings file's directory.
func TestContextRelativePaths(t *testing.T) {
	path := isolate(t)
	writeSettings(t, path, "current-context: p\ncontexts:\n  - name: p\n    config: mm2/prod.properties\n    audit-log: audit.jsonl\n")
	_, _, g, code, stderr := probe(t)
	if code != 0 {
		t.Fatal(stderr)
	}
	dir := filepath.Dir(path)
	if g.configPath != filepath.Join(dir, "mm2", "prod.properties") || g.auditLog != filepath.Join(dir, "audit.jsonl") {
		t.Fatalf("config %q audit %q, want under %s", g.configPath, g.auditLog, dir)
	}
}

// --context and MIRRORCTL_CONTEXT pick a context for one command; an
// unknown name is exit 2 naming it.
func TestContextSelection(t *testing.T) {
	path := isolate(t)
	writeSettings(t, path, "current-context: a\ncontexts:\n  - name: a\n    source: from-a\n  - name: b\n    source: from-b\n  - name: c\n    source: from-c\n")
	if src, _, _, code, _ := probe(t); code != 0 || src != "from-a" {
		t.Fatalf("current context: source %q exit %d", src, code)
	}
	t.Setenv("MIRRORCTL_CONTEXT", "b")
	if src, _, _, code, _ := probe(t); code != 0 || src != "from-b" {
		t.Fatalf("MIRRORCTL_CONTEXT=b: source %q exit %d", src, code)
	}
	if src, _, _, code, _ := probe(t, "--context", "c"); code != 0 || src != "from-c" {
		t.Fatalf("--context c over MIRRORCTL_CONTEXT: source %q exit %d", src, code)
	}
	_, _, _, code, stderr := probe(t, "--context", "zz")
	if code != 2 || !strings.Contains(stderr, "--context zz: no such context in "+path+" (contexts: a, b, c)") {
		t.Fatalf("--context zz: exit %d, %q", code, stderr)
	}
	t.Setenv("MIRRORCTL_CONTEXT", "yy")
	_, _, _, code, stderr = probe(t)
	if code != 2 || !strings.Contains(stderr, "MIRRORCTL_CONTEXT yy: no such context") {
		t.Fatalf("MIRRORCTL_CONTEXT=yy: exit %d, %q", code, stderr)
	}
}

// Bad values fail alike from a variable or a context, naming where they
// came from; the settings file's problems name file, line and key.
func TestBadValuesNameTheirOrigin(t *testing.T) {
	tests := []struct {
		name, settings string
		env            map[string]string
		want           string
	}{
		{"context output yaml", "current-context: p\ncontexts:\n  - name: p\n    output: yaml\n", nil,
			`settings file %s:4: output: invalid value "yaml" in context p: want one of {table|json|csv|tsv}`},
		{"context no-color yes", "current-context: p\ncontexts:\n  - name: p\n    no-color: yes\n", nil,
			`settings file %s:4: no-color: invalid value "yes" in context p: want true or false (also 1 or 0)`},
		{"context verbose lots", "current-context: p\ncontexts:\n  - name: p\n    verbose: lots\n", nil,
			`settings file %s:4: verbose: invalid value "lots" in context p: want a count of -v, 0 or more (1 info, 2 debug)`},
		{"env beats a bad context, but is checked itself", "current-context: p\ncontexts:\n  - name: p\n    verbose: 1\n", map[string]string{"MIRRORCTL_VERBOSE": "lots"},
			`invalid MIRRORCTL_VERBOSE "lots": want a count of -v, 0 or more (1 info, 2 debug)`},
		{"MIRRORCTL_NO_COLOR yes", "", map[string]string{"MIRRORCTL_NO_COLOR": "yes"},
			`invalid MIRRORCTL_NO_COLOR "yes": want true or false (also 1 or 0)`},
		{"unknown key", "current-context: p\ncontexts:\n  - name: p\n    sorce: nyc\n", nil,
			`settings file %s:4: sorce: unknown context key (did you mean "source"?) (keys: name, description, config, source, target, audit-log, output, no-color, verbose)`},
		{"malformed", "current-context: p\ncontexts:\n  - name: p\n    source: a: b\n", nil,
			`settings file %s:4: not valid YAML: mapping values are not allowed in this context`},
		{"dangling current-context", "current-context: q\ncontexts:\n  - name: p\n", nil,
			`settings file %s:1: current-context: no context "q" in the file (contexts: p)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := isolate(t)
			if tt.settings != "" {
				writeSettings(t, path, tt.settings)
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			code, out, errOut := run(t, context.Background(), "version")
			want := "mirrorctl: " + strings.ReplaceAll(tt.want, "%s", path) + "\n"
			if code != 2 || out != "" || !strings.HasPrefix(errOut, want) {
				t.Fatalf("exit %d stdout %q stderr %q; want 2 and %q", code, out, errOut, want)
			}
		})
	}
}

const twoClusters = "clusters = nyc, fra\n" +
	"nyc.bootstrap.servers = 127.0.0.1:1\n" +
	"fra.bootstrap.servers = 127.0.0.1:1\n" +
	"nyc->fra.enabled = true\n"

// A context's (or a variable's) alias the mm2.properties does not define is
// exit 2 naming the context, line and alias.
func TestContextAliasNotInConfig(t *testing.T) {
	path := isolate(t)
	cfg := filepath.Join(t.TempDir(), "mm2.properties")
	if err := os.WriteFile(cfg, []byte(twoClusters), 0o600); err != nil {
		t.Fatal(err)
	}
	writeSettings(t, path, "current-context: p\ncontexts:\n  - name: p\n    config: "+cfg+"\n    source: nyc\n    target: ams\n")
	code, _, errOut := run(t, context.Background(), "translate", "--group", "g")
	want := "mirrorctl: settings file " + path + ":6: target: context p: target \"ams\" is not a cluster of " + cfg + " (clusters: nyc, fra)\n"
	if code != 2 || errOut != want {
		t.Fatalf("exit %d stderr %q; want 2 and %q", code, errOut, want)
	}
	// The flag wins, and the context's bad alias is then not used.
	t.Setenv("MIRRORCTL_TARGET", "lon")
	code, _, errOut = run(t, context.Background(), "translate", "--group", "g")
	if code != 2 || !strings.Contains(errOut, `MIRRORCTL_TARGET: target "lon" is not a cluster of `+cfg) {
		t.Fatalf("MIRRORCTL_TARGET=lon: exit %d stderr %q", code, errOut)
	}
}

// The context commands, end to end on a settings file of the test's own.
func TestContextCommands(t *testing.T) {
	path := isolate(t)
	cfg := filepath.Join(t.TempDir(), "mm2.properties")
	if err := os.WriteFile(cfg, []byte(twoClusters), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if code, _, errOut := run(t, ctx, "context", "set", "prod", "--config", cfg, "--source", "nyc", "--target", "fra"); code != 0 ||
		!strings.Contains(errOut, "created context prod in "+path+"; it is the current context") {
		t.Fatalf("set prod: exit %d %q", code, errOut)
	}
	if code, _, errOut := run(t, ctx, "context", "set", "dr", "--config", cfg, "--source", "fra", "--target", "nyc", "--output", "JSON"); code != 0 ||
		strings.Contains(errOut, "current") {
		t.Fatalf("set dr: exit %d %q", code, errOut)
	}
	if code, _, errOut := run(t, ctx, "context", "set", "bad", "--config", cfg, "--source", "ams"); code != 2 ||
		!strings.Contains(errOut, `context bad: source "ams" is not a cluster of `+cfg+" (clusters: nyc, fra)") {
		t.Fatalf("set bad alias: exit %d %q", code, errOut)
	}
	if code, _, errOut := run(t, ctx, "context", "set", "bad", "--verbose", "lots"); code != 2 || !strings.Contains(errOut, `--verbose "lots": want a count of -v`) {
		t.Fatalf("set bad verbose: exit %d %q", code, errOut)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("settings file: %v mode %v", err, st.Mode())
	}

	code, out, errOut := run(t, ctx, "context", "list", "-o", "json")
	var list struct {
		SchemaVersion int    `json:"schema_version"`
		Current       string `json:"current"`
		Contexts      []struct {
			Name, Source, Target, Output string
			Current                      bool
		} `json:"contexts"`
	}
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil {
		t.Fatalf("list: exit %d %v %q %q", code, err, out, errOut)
	}
	if list.SchemaVersion != 1 || list.Current != "prod" || len(list.Contexts) != 2 ||
		list.Contexts[0].Name != "dr" || list.Contexts[0].Current || list.Contexts[0].Output != "json" ||
		list.Contexts[1].Name != "prod" || !list.Contexts[1].Current || list.Contexts[1].Source != "nyc" {
		t.Fatalf("list = %+v", list)
	}
	if code, out, _ := run(t, ctx, "context", "list"); code != 0 || out != "\tdr\t"+cfg+"\tfra\tnyc\tjson\t\n*\tprod\t"+cfg+"\tnyc\tfra\t\t\n" {
		t.Fatalf("list table: exit %d %q", code, out)
	}

	// use: an unknown name is exit 2 naming it; the file is unchanged.
	before, _ := os.ReadFile(path)
	if code, _, errOut := run(t, ctx, "context", "use", "nope"); code != 2 ||
		!strings.HasPrefix(errOut, `mirrorctl: no context "nope" in `+path+" (contexts: dr, prod)\n") {
		t.Fatalf("use nope: exit %d %q", code, errOut)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("a refused use changed the file")
	}
	if code, _, errOut := run(t, ctx, "context", "use", "dr"); code != 0 || !strings.Contains(errOut, "current context is now dr") {
		t.Fatalf("use dr: exit %d %q", code, errOut)
	}
	// dr's output (json) is now in force; show names its lines.
	code, out, _ = run(t, ctx, "context", "show")
	var shown struct {
		Context struct{ Name, Source string } `json:"context"`
	}
	if err := json.Unmarshal([]byte(out), &shown); code != 0 || err != nil || shown.Context.Name != "dr" || shown.Context.Source != "fra" {
		t.Fatalf("show (json from context dr): exit %d %v %q", code, err, out)
	}
	if code, out, _ := run(t, ctx, "context", "show", "prod", "-o", "tsv"); code != 0 ||
		out != "key\tvalue\tline\nname\tprod\t4\nconfig\t"+cfg+"\t5\nsource\tnyc\t6\ntarget\tfra\t7\n" {
		t.Fatalf("show prod: exit %d %q", code, out)
	}
	if code, _, errOut := run(t, ctx, "context", "delete", "dr"); code != 0 || !strings.Contains(errOut, "dr was the current context: none is current now") {
		t.Fatalf("delete dr: exit %d %q", code, errOut)
	}
	if code, _, errOut := run(t, ctx, "context", "delete", "dr"); code != 2 || !strings.Contains(errOut, `no context "dr"`) {
		t.Fatalf("delete dr again: exit %d %q", code, errOut)
	}
	if code, _, errOut := run(t, ctx, "context", "show"); code != 2 || !strings.Contains(errOut, "no current context in "+path) {
		t.Fatalf("show without a current context: exit %d %q", code, errOut)
	}
}

// The context commands run without a broken current context (after a
// warning), so it can be mended with them.
func TestContextCommandsMendABadContext(t *testing.T) {
	path := isolate(t)
	writeSettings(t, path, "current-context: p\ncontexts:\n  - name: p\n    output: yaml\n")
	code, _, errOut := run(t, ctx0(), "context", "set", "p", "--output", "json")
	if code != 0 || !strings.Contains(errOut, `output: invalid value "yaml" in context p`) || !strings.Contains(errOut, "running without a context") {
		t.Fatalf("set p: exit %d %q", code, errOut)
	}
	if code, out, errOut := run(t, ctx0(), "version"); code != 0 || !strings.HasPrefix(out, "{") {
		t.Fatalf("version after mending: exit %d %q %q", code, out, errOut)
	}
}

func ctx0() context.Context { return context.Background() }

// config show says where each of mirrorctl's own values came from.
func TestConfigShowOrigins(t *testing.T) {
	path := isolate(t)
	cfg := filepath.Join(t.TempDir(), "mm2.properties")
	if err := os.WriteFile(cfg, []byte(twoClusters), 0o600); err != nil {
		t.Fatal(err)
	}
	writeSettings(t, path, "current-context: prod\ncontexts:\n  - name: prod\n    config: "+cfg+"\n    source: nyc\n    verbose: 0\n")
	t.Setenv("MIRRORCTL_TARGET", "fra")
	code, out, errOut := run(t, context.Background(), "config", "show", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d %q", code, errOut)
	}
	var res struct {
		SchemaVersion int                `json:"schema_version"`
		Resolved      []cmdutil.Resolved `json:"resolved"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range res.Resolved {
		got[r.Key] = r.Value + " | " + r.Describe()
		if r.Origin == cmdutil.OriginContext && r.Line == 0 {
			t.Errorf("%s from a context without a line", r.Key)
		}
	}
	audit := filepath.Join(os.Getenv("XDG_STATE_HOME"), "mirrorctl", "audit.jsonl")
	want := map[string]string{
		"config":    cfg + " | context prod in " + path,
		"output":    "json | flag --output",
		"no-color":  "false | default",
		"verbose":   "0 | context prod in " + path,
		"audit-log": audit + " | default",
		"source":    "nyc | context prod in " + path,
		"target":    "fra | env MIRRORCTL_TARGET",
	}
	if res.SchemaVersion != 1 || len(res.Resolved) != len(want) {
		t.Fatalf("resolved = %+v", res)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	// the table (piped) carries the same rows first
	code, out, _ = run(t, context.Background(), "config", "show")
	if code != 0 || !strings.HasPrefix(out, "\tmirrorctl\tconfig\t"+cfg+"\tcontext prod\t"+path+":4\n") {
		t.Fatalf("table: exit %d\n%s", code, out)
	}
}

// A context holds no secrets, but credentials written into a path before
// '@' are never printed: not by context list/show, config show, nor errors.
func TestContextPathCredentialsNeverPrinted(t *testing.T) {
	const pass = "s3cr3t-ctx-pw"
	path := isolate(t)
	dir := filepath.Join(t.TempDir(), "alice:"+pass+"@host")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "mm2.properties")
	if err := os.WriteFile(cfg, []byte(twoClusters), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var all strings.Builder
	for _, args := range [][]string{
		{"context", "set", "p", "--config", cfg, "--source", "nyc", "--audit-log", filepath.Join(dir, "audit.jsonl")},
		{"context", "set", "q", "--config", cfg, "--source", "zzz"},
		{"context", "list"}, {"context", "list", "-o", "json"},
		{"context", "show"}, {"context", "show", "-o", "json"},
		{"config", "show"}, {"config", "show", "-o", "json"}, {"config", "show", "-o", "csv"},
	} {
		code, out, errOut := run(t, ctx, args...)
		all.WriteString(out + errOut)
		if args[1] != "set" || args[2] != "q" {
			if code != 0 {
				t.Fatalf("%v: exit %d %q", args, code, errOut)
			}
		}
	}
	writeSettings(t, path, "current-context: p\ncontexts:\n  - name: p\n    config: "+cfg+"\n    source: nope\n")
	_, _, errOut := run(t, ctx, "translate", "--group", "g")
	all.WriteString(errOut)
	if !strings.Contains(errOut, `source "nope" is not a cluster of`) {
		t.Fatalf("bad alias error missing: %q", errOut)
	}
	// a config path with credentials that does not exist: the error masks it
	writeSettings(t, path, "current-context: p\ncontexts:\n  - name: p\n    config: "+filepath.Join(dir, "gone.properties")+"\n")
	code, _, errOut := run(t, ctx, "config", "validate")
	all.WriteString(errOut)
	if code != 2 || !strings.Contains(errOut, "***@host/gone.properties") {
		t.Fatalf("missing config: exit %d %q", code, errOut)
	}
	if s := all.String(); strings.Contains(s, pass) {
		t.Fatalf("the password in the path was printed:\n%s", s)
	}
	if !strings.Contains(all.String(), "***@host") {
		t.Fatal("the path was not shown masked anywhere")
	}
}

// Shell completion, which runs before the globals are resolved, reads the
// current context's mm2.properties too: aliases complete from it.
func TestCompletionUsesContextConfig(t *testing.T) {
	path := isolate(t)
	cfg := filepath.Join(t.TempDir(), "mm2.properties")
	if err := os.WriteFile(cfg, []byte(twoClusters), 0o600); err != nil {
		t.Fatal(err)
	}
	writeSettings(t, path, "current-context: p\ncontexts:\n  - name: p\n    config: "+cfg+"\n")
	got, _ := complete(t, "translate", "--source", "")
	if !slices.Equal(got, []string{"nyc", "fra"}) && !slices.Equal(got, []string{"fra", "nyc"}) {
		t.Fatalf("completions = %v, want the context's clusters nyc and fra", got)
	}
}

// A config file that does not exist is an error saying which context (file
// and line) or variable named it.
func TestMissingConfigNamesItsOrigin(t *testing.T) {
	path := isolate(t)
	missing := filepath.Join(t.TempDir(), "gone.properties")
	writeSettings(t, path, "current-context: p\ncontexts:\n  - name: p\n    config: "+missing+"\n")
	code, _, errOut := run(t, context.Background(), "config", "validate")
	want := "(the config of context p, " + path + ":4; change it with 'mirrorctl context set p --config <file>')\n"
	if code != 2 || !strings.HasSuffix(errOut, want) {
		t.Fatalf("exit %d stderr %q; want 2 ending %q", code, errOut, want)
	}
	t.Setenv("MIRRORCTL_CONFIG", missing)
	if code, _, errOut := run(t, context.Background(), "config", "validate"); code != 2 || !strings.HasSuffix(errOut, "(from MIRRORCTL_CONFIG)\n") {
		t.Fatalf("MIRRORCTL_CONFIG: exit %d stderr %q", code, errOut)
	}
}

func TestContextFlagCompletion(t *testing.T) {
	path := isolate(t)
	writeSettings(t, path, "contexts:\n  - name: prod\n  - name: dr\n")
	got, _ := complete(t, "lag", "--context", "")
	if !slices.Equal(got, []string{"dr", "prod"}) {
		t.Fatalf("--context completes %v, want [dr prod]", got)
	}
	got, _ = complete(t, "context", "use", "")
	if !slices.Equal(got, []string{"dr", "prod"}) {
		t.Fatalf("context use completes %v, want [dr prod]", got)
	}
}

// config validate and config show check the context's aliases too.
func TestConfigCommandsCheckContextAliases(t *testing.T) {
	path := isolate(t)
	cfg := filepath.Join(t.TempDir(), "mm2.properties")
	if err := os.WriteFile(cfg, []byte(twoClusters), 0o600); err != nil {
		t.Fatal(err)
	}
	writeSettings(t, path, "current-context: p\ncontexts:\n  - name: p\n    config: "+cfg+"\n    source: nyk\n")
	for _, args := range [][]string{{"config", "validate"}, {"config", "show"}} {
		code, out, errOut := run(t, context.Background(), args...)
		want := "mirrorctl: settings file " + path + ":5: source: context p: source \"nyk\" is not a cluster of " + cfg + " (clusters: nyc, fra)\n"
		if code != 2 || out != "" || errOut != want {
			t.Fatalf("%v: exit %d stdout %q stderr %q; want 2 and %q", args, code, out, errOut, want)
		}
	}
	if code, _, errOut := run(t, context.Background(), "version"); code != 0 {
		t.Fatalf("version (uses no flow): exit %d %q", code, errOut)
	}
}

// End to end on two embedded clusters: with both flows enabled, lag reads
// both; a context naming one makes lag read that flow alone, and a flag
// still picks the other.
func TestContextPicksTheFlowOfLag(t *testing.T) {
	path := isolate(t)
	p := testkit.NewPair(t)
	cfg := p.WriteConfig(t, testkit.West+"->"+testkit.East+".enabled = true\n")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	flows := func(args ...string) []string {
		t.Helper()
		code, out, errOut := run(t, ctx, append([]string{"lag", "-o", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("lag %v: exit %d %q", args, code, errOut)
		}
		var res struct {
			Flows []struct{ Source, Target string } `json:"flows"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, f := range res.Flows {
			names = append(names, f.Source+"->"+f.Target)
		}
		slices.Sort(names)
		return names
	}
	east, west := testkit.East, testkit.West
	both := []string{east + "->" + west, west + "->" + east}
	slices.Sort(both)
	if got := flows("-c", cfg); !slices.Equal(got, both) {
		t.Fatalf("without a context lag reads %v, want both flows", got)
	}
	writeSettings(t, path, "current-context: back\ncontexts:\n  - name: back\n    config: "+cfg+"\n    source: "+west+"\n    target: "+east+"\n")
	if got := flows(); !slices.Equal(got, []string{west + "->" + east}) {
		t.Fatalf("with context back lag reads %v, want %s->%s alone", got, west, east)
	}
	if got := flows("--source", east, "--target", west); !slices.Equal(got, []string{east + "->" + west}) {
		t.Fatalf("flags over the context: lag reads %v, want %s->%s", got, east, west)
	}
}
