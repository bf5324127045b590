package validate

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mirrorctl/mirrorctl/internal/cli/clitest"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/output"
)

func TestNewCmdValidate(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	f := &cmdutil.Factory{IO: ios, ConfigPath: func() string { return "x.properties" }}
	var got *ValidateOptions
	cmd := NewCmdValidate(f, func(o *ValidateOptions) error { got = o; return nil })
	cmd.SetArgs([]string{})
	if err := cmd.Execute(); err != nil || got == nil || got.IO != ios || got.ConfigPath() != "x.properties" {
		t.Fatalf("err = %v, opts = %+v", err, got)
	}
	cmd = NewCmdValidate(f, func(*ValidateOptions) error { return nil })
	cmd.SetArgs([]string{"extra"})
	cmd.SetOut(ios.ErrOut)
	cmd.SetErr(ios.ErrOut)
	if err := cmd.Execute(); err == nil {
		t.Fatal("extra argument accepted")
	}
}

func options(ios *iostreams.IOStreams, file string, format output.Format) *ValidateOptions {
	path := filepath.Join("testdata", file)
	return &ValidateOptions{
		IO:         ios,
		Output:     func() output.Format { return format },
		ConfigPath: func() string { return path },
		Config:     func() (*config.Config, error) { return config.Load(path) },
	}
}

func TestRunValidate(t *testing.T) {
	tests := []struct {
		name       string
		file       string
		format     output.Format
		stderrTTY  bool
		wantStdout string // golden name, "" for empty
		wantStderr string
	}{
		{name: "valid on a tty", file: "good.properties", stderrTTY: true,
			wantStderr: "warning: testdata/good.properties:6: nyc.sasl.jaas.config: secret written in the file; reference it instead, e.g. ${env:VAR} or ${file:/path/to/secrets.properties:key} (with config.providers = env, file), so it stays out of the file and its copies\n" + "✓ testdata/good.properties is valid: 2 clusters, 1 enabled flow\n"},
		{name: "valid off a tty has no success line", file: "good.properties", wantStderr: "warning: testdata/good.properties:6: nyc.sasl.jaas.config: secret written in the file; reference it instead, e.g. ${env:VAR} or ${file:/path/to/secrets.properties:key} (with config.providers = env, file), so it stays out of the file and its copies\n"},
		{name: "valid json", file: "good.properties", format: output.FormatJSON, wantStdout: "good.json", wantStderr: "warning: testdata/good.properties:6: nyc.sasl.jaas.config: secret written in the file; reference it instead, e.g. ${env:VAR} or ${file:/path/to/secrets.properties:key} (with config.providers = env, file), so it stays out of the file and its copies\n"},
		{name: "warnings go to stderr", file: "warn.properties", stderrTTY: true,
			wantStderr: "warning: testdata/warn.properties:5: nyc->fra.emit.hartbeat.enable: unknown key; did you mean \"nyc->fra.emit.heartbeats.enabled\"?\n" +
				"✓ testdata/warn.properties is valid: 2 clusters, 1 enabled flow\n"},
		{name: "warnings in json", file: "warn.properties", format: output.FormatJSON, wantStdout: "warn.json",
			wantStderr: "warning: testdata/warn.properties:5: nyc->fra.emit.hartbeat.enable: unknown key; did you mean \"nyc->fra.emit.heartbeats.enabled\"?\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, out, errOut := iostreams.Test()
			ios.SetStderrTTY(tt.stderrTTY)
			ios.SetColorDisabled(true)
			format := tt.format
			if format == "" {
				format = output.FormatTable
			}
			if err := runValidate(context.Background(), options(ios, tt.file, format)); err != nil {
				t.Fatal(err)
			}
			if tt.wantStdout != "" {
				clitest.Golden(t, tt.wantStdout, out.String())
			} else if out.Len() != 0 {
				t.Errorf("stdout = %q, want empty", out.String())
			}
			if errOut.String() != tt.wantStderr {
				t.Errorf("stderr = %q, want %q", errOut.String(), tt.wantStderr)
			}
		})
	}
}

func TestRunValidateErrors(t *testing.T) {
	ios, _, out, errOut := iostreams.Test()
	err := runValidate(context.Background(), options(ios, "bad.properties", output.FormatTable))
	var cfgErr *config.Error
	if !errors.As(err, &cfgErr) {
		t.Fatalf("error %v does not wrap *config.Error", err)
	}
	want := "testdata/bad.properties:3: nyc->fra.enabled: target cluster fra has no bootstrap.servers (set fra.bootstrap.servers)\n" +
		"testdata/bad.properties:4: nyc->fra.offset.lag.max: \"lots\" is not an integer"
	if err.Error() != want {
		t.Errorf("error =\n%s\nwant\n%s", err, want)
	}
	if out.Len() != 0 || errOut.Len() != 0 {
		t.Errorf("stdout %q stderr %q, want both empty (Main prints the error)", out, errOut)
	}
}

// TestValidateJSONProblems checks that an invalid file with -o json still
// writes a document listing each problem with file, line, key and message,
// and returns the config error (exit 2).
func TestValidateJSONProblems(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	err := runValidate(context.Background(), options(ios, "bad.properties", output.FormatJSON))
	var cfgErr *config.Error
	if !errors.As(err, &cfgErr) {
		t.Fatalf("error %v does not wrap *config.Error (exit 2)", err)
	}
	clitest.Golden(t, "bad.json", out.String())
	var res Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	want := []Problem{
		{Severity: "error", File: "testdata/bad.properties", Line: 3, Key: "nyc->fra.enabled", Message: "target cluster fra has no bootstrap.servers (set fra.bootstrap.servers)"},
		{Severity: "error", File: "testdata/bad.properties", Line: 4, Key: "nyc->fra.offset.lag.max", Message: `"lots" is not an integer`},
	}
	if res.Valid || !reflect.DeepEqual(res.Problems, want) {
		t.Fatalf("valid %v, problems %+v; want invalid with %+v", res.Valid, res.Problems, want)
	}
}

// TestValidateClientKeysAndLiteralSecrets checks the warnings for client
// properties the client will not apply and for secrets written in the file,
// each at its own line and key, and that no secret value is printed.
func TestValidateClientKeysAndLiteralSecrets(t *testing.T) {
	for _, format := range []output.Format{output.FormatTable, output.FormatJSON} {
		ios, _, out, errOut := iostreams.Test()
		ios.SetColorDisabled(true)
		if err := runValidate(context.Background(), options(ios, "clientkeys.properties", format)); err != nil {
			t.Fatal(err)
		}
		all := out.String() + errOut.String()
		for _, secret := range []string{"Hunt3r-Pa55-qq1", "Ch4nge-Pa55-ww2"} {
			if strings.Contains(all, secret) {
				t.Fatalf("%s: secret %q printed:\n%s", format, secret, all)
			}
		}
		if format == output.FormatJSON {
			clitest.Golden(t, "clientkeys.json", out.String())
		}
		want := []string{
			"warning: testdata/clientkeys.properties:5: nyc.consumer.max.poll.records: client property will not be applied to the consumer client: ",
			"warning: testdata/clientkeys.properties:8: fra.sasl.jaas.config: secret written in the file; reference it instead, e.g. ${env:VAR}",
			"warning: testdata/clientkeys.properties:9: fra.ssl.truststore.password: secret written in the file",
			"warning: testdata/clientkeys.properties:10: producer.batch.size: client property will not be applied to the producer client: ",
			"warning: testdata/clientkeys.properties:11: nyc.ssl.keystore.password: client property will not be applied to the consumer client: ignored (security.protocol is PLAINTEXT)",
		}
		lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
		if len(lines) != len(want) {
			t.Fatalf("%d warnings, want %d:\n%s", len(lines), len(want), errOut)
		}
		for i, w := range want {
			if !strings.HasPrefix(lines[i], w) {
				t.Errorf("warning %d = %q, want prefix %q", i, lines[i], w)
			}
		}
		if strings.Contains(errOut.String(), "keystore.password: secret") {
			t.Errorf("a ${env:...} reference was reported as a literal secret:\n%s", errOut)
		}
	}
}

// --strict turns a file with only warnings into a failed check (a config
// error, exit 2), in JSON with valid false; a file with none still passes.
func TestRunValidateStrict(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	opts := options(ios, "warn.properties", output.FormatJSON)
	opts.Strict = true
	err := runValidate(context.Background(), opts)
	var cfgErr *config.Error
	if !errors.As(err, &cfgErr) || !strings.Contains(err.Error(), "1 warning and --strict") {
		t.Fatalf("strict with a warning: %v", err)
	}
	if !strings.Contains(out.String(), `"valid": false`) || !strings.Contains(out.String(), "nyc->fra.emit.hartbeat.enable") {
		t.Fatalf("strict JSON:\n%s", out)
	}
	ios, _, _, _ = iostreams.Test()
	opts = options(ios, "clean.properties", output.FormatTable)
	opts.Strict = true
	if err := runValidate(context.Background(), opts); err != nil {
		t.Fatalf("strict on a file without warnings: %v", err)
	}
}

// MM2 keys read differently here (tasks.max counts processes, ...) get a
// note each, in text and JSON; they are no warnings: --strict passes.
func TestRunValidateNotesKeysThatDiffer(t *testing.T) {
	ios, _, out, errOut := iostreams.Test()
	opts := options(ios, "differs.properties", output.FormatJSON)
	opts.Strict = true
	if err := runValidate(context.Background(), opts); err != nil {
		t.Fatalf("strict with notes only: %v", err)
	}
	for _, want := range []string{
		"note: testdata/differs.properties:6: tasks.max: read differently from MM2: MM2 spreads a flow's partitions over up to tasks.max tasks",
		"note: testdata/differs.properties:7: nyc.consumer.auto.offset.reset: read differently from MM2: latest starts a partition without progress at the log end",
	} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if !strings.Contains(out.String(), `"severity": "note"`) || !strings.Contains(out.String(), `"valid": true`) {
		t.Errorf("JSON:\n%s", out)
	}
}
