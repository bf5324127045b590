package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/mirrorctl/mirrorctl/internal/cli/clitest"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
)

func TestMain(m *testing.M) {
	// No test reads the real user's settings file (contexts): every run
	// here sees an XDG config directory without one (tests that write
	// settings set their own with t.Setenv).
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(os.TempDir(), fmt.Sprintf("mirrorctl-cli-test-%d-no-settings", os.Getpid())))
	for _, k := range []string{"MIRRORCTL_SETTINGS", "MIRRORCTL_CONTEXT", "MIRRORCTL_SOURCE", "MIRRORCTL_TARGET"} {
		os.Unsetenv(k)
	}
	testscript.Main(m, map[string]func(){
		"mirrorctl": func() { os.Exit(Main()) },
	})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		UpdateScripts:       *clitest.Update,
	})
}

func TestExitCode(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	cfgErr := &config.Error{File: "mm2.properties", Line: 3, Key: "clusters", Msg: "missing"}
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want int
	}{
		{"nil", context.Background(), nil, 0},
		{"plain error", context.Background(), errors.New("broker down"), 1},
		{"silent", context.Background(), cmdutil.ErrSilent, 1},
		{"flag error", context.Background(), cmdutil.FlagErrorf("bad --flow"), 2},
		{"config error", context.Background(), cfgErr, 2},
		{"joined config errors", context.Background(), errors.Join(cfgErr, cfgErr), 2},
		{"wrapped config error", context.Background(), fmt.Errorf("loading: %w", cfgErr), 2},
		{"check failed", context.Background(), cmdutil.CheckFailedf("lag 10 > 5"), 3},
		{"silent check failed", context.Background(), cmdutil.ErrCheckFailed, 3},
		{"wrapped check failed", context.Background(), fmt.Errorf("verify: %w", cmdutil.ErrCheckFailed), 3},
		{"context canceled without a signal", context.Background(), fmt.Errorf("fetch: %w", context.Canceled), 1},
		{"any error after signal", cancelled, errors.New("broker down"), 130},
		{"nil after signal", cancelled, nil, 0},
	}
	for _, tt := range tests {
		if got := exitCode(tt.ctx, tt.err); got != tt.want {
			t.Errorf("%s: exitCode = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// run executes args in-process and returns the exit code and both streams.
func run(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	code := Run(ctx, ios, args, nil)
	return code, out.String(), errOut.String()
}

func TestRunErrors(t *testing.T) {
	t.Setenv("MIRRORCTL_CONFIG", "")
	t.Setenv("MIRRORCTL_OUTPUT", "")
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{"unknown command", []string{"bogus"}, 2,
			"mirrorctl: unknown command \"bogus\" for \"mirrorctl\"\nRun 'mirrorctl --help' for usage.\n"},
		{"unknown flag", []string{"version", "--bogus"}, 2,
			"mirrorctl: unknown flag: --bogus\nRun 'mirrorctl version --help' for usage.\n"},
		{"bad enum", []string{"-o", "yaml", "version"}, 2,
			"mirrorctl: invalid argument \"yaml\" for \"-o, --output\" flag: valid values are {table|json|csv|tsv}\nRun 'mirrorctl version --help' for usage.\n"},
		{"extra arg", []string{"version", "x"}, 2,
			"mirrorctl: unknown command \"x\" for \"mirrorctl version\"\nRun 'mirrorctl version --help' for usage.\n"},
		{"unknown subcommand", []string{"config", "valdate"}, 2,
			"mirrorctl: unknown command \"valdate\" for \"mirrorctl config\" (did you mean validate?)\nRun 'mirrorctl config --help' for usage.\n"},
		{"missing config", []string{"config", "validate", "-c", "testdata/none.properties"}, 2,
			"mirrorctl: testdata/none.properties: open testdata/none.properties: no such file or directory (use -c <file>, set MIRRORCTL_CONFIG, or name it in a context: mirrorctl context set)\n"},
		{"missing config json", []string{"config", "validate", "-c", "testdata/none.properties", "-o", "json"}, 2,
			"mirrorctl: testdata/none.properties: open testdata/none.properties: no such file or directory (use -c <file>, set MIRRORCTL_CONFIG, or name it in a context: mirrorctl context set)\n" +
				`{"schema_version":1,"error":{"message":"testdata/none.properties: open testdata/none.properties: no such file or directory (use -c <file>, set MIRRORCTL_CONFIG, or name it in a context: mirrorctl context set)","exit_code":2}}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, context.Background(), tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d", code, tt.wantCode)
			}
			if errOut != tt.wantStderr {
				t.Errorf("stderr =\n%q\nwant\n%q", errOut, tt.wantStderr)
			}
			if out != "" {
				t.Errorf("stdout = %q, want empty", out)
			}
		})
	}
}

func TestPrintError(t *testing.T) {
	tests := []struct {
		name string
		err  error
		json bool
		want string
	}{
		{"plain", errors.New("broker down"), false, "mirrorctl: broker down\n"},
		{"multi-line", errors.Join(errors.New("a.properties:1: x: bad"), errors.New("a.properties:2: y: bad")), false,
			"mirrorctl: a.properties:1: x: bad\nmirrorctl: a.properties:2: y: bad\n"},
		{"silent", cmdutil.ErrSilent, false, ""},
		{"silent json", cmdutil.ErrSilent, true, `{"schema_version":1,"error":{"message":"silent error","exit_code":1}}` + "\n"},
		{"silent check", cmdutil.ErrCheckFailed, false, ""},
		{"check", cmdutil.CheckFailedf("lag 10 > 5"), true,
			"mirrorctl: lag 10 > 5\n" + `{"schema_version":1,"error":{"message":"lag 10 > 5","exit_code":3}}` + "\n"},
		{"flag", cmdutil.FlagErrorf("bad"), false, "mirrorctl: bad\nRun 'mirrorctl x --help' for usage.\n"},
	}
	for _, tt := range tests {
		ios, _, out, errOut := iostreams.Test()
		printError(ios, "mirrorctl x", tt.json, tt.err, exitCode(context.Background(), tt.err))
		if errOut.String() != tt.want || out.Len() != 0 {
			t.Errorf("%s: stderr %q, want %q (stdout %q)", tt.name, errOut.String(), tt.want, out.String())
		}
	}
}

func TestRunInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// validate on a missing file fails; with the root context cancelled the
	// failure is reported as an interruption.
	code, _, errOut := run(t, ctx, "config", "validate", "-c", "testdata/none.properties")
	if code != 130 || errOut != "mirrorctl: interrupted\n" {
		t.Fatalf("code %d stderr %q, want 130 and \"mirrorctl: interrupted\"", code, errOut)
	}
}

func TestEnvBinding(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string // prefix of stdout
	}{
		{"default table", nil, []string{"version"}, "mirrorctl "},
		{"MIRRORCTL_OUTPUT=json", map[string]string{"MIRRORCTL_OUTPUT": "json"}, []string{"version"}, "{\n  \"schema_version\": 1,"},
		{"flag wins over env", map[string]string{"MIRRORCTL_OUTPUT": "json"}, []string{"version", "-o", "csv"}, "version,commit,go_version,platform\n"},
		{"MIRRORCTL_CONFIG", map[string]string{"MIRRORCTL_CONFIG": "configcmd/validate/testdata/good.properties", "MIRRORCTL_OUTPUT": "json"},
			[]string{"config", "validate"}, "{\n  \"schema_version\": 1,\n  \"file\": \"configcmd/validate/testdata/good.properties\","},
		{"-c wins over MIRRORCTL_CONFIG", map[string]string{"MIRRORCTL_CONFIG": "nope.properties", "MIRRORCTL_OUTPUT": "json"},
			[]string{"config", "validate", "-c", "configcmd/validate/testdata/good.properties"}, "{\n  \"schema_version\": 1,\n  \"file\": \"configcmd/validate/testdata/good.properties\","},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"MIRRORCTL_OUTPUT", "MIRRORCTL_CONFIG", "MIRRORCTL_NO_COLOR", "MIRRORCTL_VERBOSE"} {
				t.Setenv(k, tt.env[k])
			}
			code, out, errOut := run(t, context.Background(), tt.args...)
			if code != 0 || !strings.HasPrefix(out, tt.want) {
				t.Fatalf("code %d stdout %q stderr %q; want 0 and prefix %q", code, out, errOut, tt.want)
			}
		})
	}
	for _, bad := range []struct{ env, val, want string }{
		{"MIRRORCTL_VERBOSE", "lots", "mirrorctl: invalid MIRRORCTL_VERBOSE \"lots\": want a count of -v, 0 or more (1 info, 2 debug)\n"},
		{"MIRRORCTL_VERBOSE", "-1", "mirrorctl: invalid MIRRORCTL_VERBOSE \"-1\": want a count of -v, 0 or more (1 info, 2 debug)\n"},
		{"MIRRORCTL_NO_COLOR", "yes", "mirrorctl: invalid MIRRORCTL_NO_COLOR \"yes\": want true or false (also 1 or 0)\n"},
	} {
		t.Run("bad "+bad.env+"="+bad.val, func(t *testing.T) {
			for _, k := range []string{"MIRRORCTL_OUTPUT", "MIRRORCTL_CONFIG", "MIRRORCTL_NO_COLOR", "MIRRORCTL_VERBOSE"} {
				t.Setenv(k, "")
			}
			t.Setenv(bad.env, bad.val)
			code, out, errOut := run(t, context.Background(), "version")
			if code != 2 || out != "" || !strings.HasPrefix(errOut, bad.want) {
				t.Fatalf("code %d stdout %q stderr %q; want 2, no stdout and %q", code, out, errOut, bad.want)
			}
		})
	}
	t.Run("flag wins over a bad MIRRORCTL_VERBOSE", func(t *testing.T) {
		t.Setenv("MIRRORCTL_OUTPUT", "")
		t.Setenv("MIRRORCTL_VERBOSE", "lots")
		if code, _, errOut := run(t, context.Background(), "version", "-v"); code != 0 {
			t.Fatalf("code %d stderr %q", code, errOut)
		}
	})
	t.Run("bad MIRRORCTL_OUTPUT", func(t *testing.T) {
		t.Setenv("MIRRORCTL_OUTPUT", "xml")
		code, _, errOut := run(t, context.Background(), "version")
		want := "mirrorctl: invalid MIRRORCTL_OUTPUT \"xml\": want one of {table|json|csv|tsv}\n"
		if code != 2 || !strings.HasPrefix(errOut, want) {
			t.Fatalf("code %d stderr %q", code, errOut)
		}
	})
}

func TestNoColor(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want bool
	}{
		{"tty default", nil, nil, true},
		{"--no-color", nil, []string{"--no-color"}, false},
		{"NO_COLOR", map[string]string{"NO_COLOR": "1"}, nil, false},
		{"MIRRORCTL_NO_COLOR", map[string]string{"MIRRORCTL_NO_COLOR": "true"}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"NO_COLOR", "MIRRORCTL_NO_COLOR", "MIRRORCTL_OUTPUT"} {
				t.Setenv(k, tt.env[k])
			}
			ios, _, _, _ := iostreams.Test()
			ios.SetStdoutTTY(true)
			if code := Run(context.Background(), ios, append(tt.args, "version"), nil); code != 0 {
				t.Fatalf("exit %d", code)
			}
			if got := ios.ColorEnabled(); got != tt.want {
				t.Fatalf("ColorEnabled = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestVerbosity(t *testing.T) {
	tests := []struct {
		args []string
		env  string
		want slog.Level
	}{
		{nil, "", slog.LevelWarn},
		{[]string{"-v"}, "", slog.LevelInfo},
		{[]string{"-vv"}, "", slog.LevelDebug},
		{[]string{"-v", "-v", "-v"}, "", slog.LevelDebug},
		{nil, "1", slog.LevelInfo},
	}
	for _, tt := range tests {
		t.Setenv("MIRRORCTL_VERBOSE", tt.env)
		ios, _, _, _ := iostreams.Test()
		var logs bytes.Buffer
		logger := NewLogger(&logs)
		if code := Run(context.Background(), ios, append(tt.args, "version"), logger); code != 0 {
			t.Fatalf("%v: exit %d", tt.args, code)
		}
		h := logger.Handler()
		for _, l := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn} {
			if got, want := h.Enabled(context.Background(), l), l >= tt.want; got != want {
				t.Errorf("%v env %q: level %v enabled = %v, want %v", tt.args, tt.env, l, got, want)
			}
		}
	}
}

func TestHelpListsExitCodes(t *testing.T) {
	code, out, _ := run(t, context.Background(), "--help")
	if code != 0 || !strings.Contains(out, exitCodesHelp) || !strings.Contains(strings.Join(strings.Fields(out), " "), "-o, --output string Output format: {table|json|csv|tsv}") {
		t.Fatalf("root help (exit %d) lacks the exit-code table or enum values:\n%s", code, out)
	}
	code, out, _ = run(t, context.Background(), "help", "exit-codes")
	if code != 0 || out != exitCodesHelp+"\n" {
		t.Fatalf("help exit-codes (exit %d):\n%s", code, out)
	}
}

func TestOutputCompletion(t *testing.T) {
	code, out, _ := run(t, context.Background(), "__complete", "--output", "")
	if code != 0 || !strings.HasPrefix(out, "table\njson\ncsv\ntsv\n:4\n") {
		t.Fatalf("completion (exit %d) = %q", code, out)
	}
}

func TestLoggerWarnsInOneVoice(t *testing.T) {
	var logs bytes.Buffer
	l := NewLogger(&logs).With("cluster", "us-east")
	l.Warn("kafka client property not applied", "property", "evil\x1b[2J", "n", 3)
	l.Info("not shown at the default level")
	l.WithGroup("g").Error("broken", "k", "a b")
	want := "warning: kafka client property not applied cluster=us-east property=evil\\x1b[2J n=3\n" +
		"error: broken cluster=us-east g.k=\"a b\"\n"
	if logs.String() != want {
		t.Fatalf("got %q\nwant %q", logs.String(), want)
	}
}
