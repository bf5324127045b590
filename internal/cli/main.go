// Package cli is mirrorctl's command-line front end: Main (signals, logger,
// exit codes), the root command with its global flags, and the wiring of the
// lazy cmdutil.Factory. Each command lives in its own subpackage
// (internal/cli/version, internal/cli/configcmd, ...) with an XOptions
// struct, NewCmdX(f, runF) and runX(ctx, opts), after cli/cli. There is no
// Kafka or MM2 logic here.
package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/kafka"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/internal/settings"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// Main runs mirrorctl with os.Args and the process's streams and returns the
// exit code for os.Exit. SIGINT and SIGTERM cancel the root context; a second
// signal kills the process the default way. After the first, the command has
// its stop budget (replicate's, else DefaultStopBudget) to return: a process
// still running then says so and exits 130, so that a stop never waits on a
// broker beyond what it promised. (replicate's flows stop within a part of
// it, and report what they left undone, before that.)
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	budget := &stopWatchdog{}
	go func() {
		<-ctx.Done()
		stop() // restore default handling: a second Ctrl-C kills at once
		time.Sleep(budget.get())
		fmt.Fprintf(os.Stderr, "mirrorctl: the stop budget (%s) ran out before the command returned: exiting now\n", budget.get())
		os.Exit(cmdutil.ExitInterrupted)
	}()
	ios := iostreams.System()
	return runWith(ctx, ios, os.Args[1:], NewLogger(os.Stderr), budget)
}

// stopWatchdog holds the stop budget the running command declared
// (cmdutil.Factory.SetStopBudget).
type stopWatchdog struct{ d atomic.Int64 }

func (w *stopWatchdog) set(d time.Duration) { w.d.Store(int64(d)) }

func (w *stopWatchdog) get() time.Duration {
	if d := time.Duration(w.d.Load()); d > 0 {
		return d
	}
	return replicate.DefaultStopBudget
}

// Run executes the command line args (without the program name) against ios
// and returns the process exit code (see `mirrorctl help exit-codes`).
// Nothing below Run reads os.Args or the os streams. logger receives log
// records; when it was built by NewLogger, -v sets its level, and when nil a
// NewLogger(ios.ErrOut) is used. Everything the run opened (Kafka clients) is
// closed before Run returns.
func Run(ctx context.Context, ios *iostreams.IOStreams, args []string, logger *slog.Logger) int {
	return runWith(ctx, ios, args, logger, &stopWatchdog{})
}

func runWith(ctx context.Context, ios *iostreams.IOStreams, args []string, logger *slog.Logger, budget *stopWatchdog) int {
	if logger == nil {
		logger = NewLogger(ios.ErrOut)
	}
	g := &globalOptions{output: string(output.FormatTable)}
	f, cleanup := newFactory(ios, logger, g, budget)
	defer cleanup()

	root := NewCmdRoot(f, g)
	root.SetArgs(args)
	root.SetIn(ios.In)
	root.SetOut(ios.Out)
	root.SetErr(ios.ErrOut)

	cmd, err := root.ExecuteContextC(ctx)
	if err != nil && !g.started && !isTyped(err) {
		// cobra rejected the command line before any command ran: unknown
		// command or flag, wrong argument count, missing required flag.
		err = cmdutil.FlagErrorWrap(err)
	}
	code := exitCode(ctx, err)
	if err != nil {
		printError(ios, cmd.CommandPath(), g.output == string(output.FormatJSON), err, code)
	}
	return code
}

// isTyped reports whether err already carries its exit code.
func isTyped(err error) bool {
	var fe *cmdutil.FlagError
	var ce *cmdutil.CheckFailedError
	var se *settings.Error
	return errors.As(err, &fe) || errors.As(err, &ce) || errors.As(err, &se) || errors.Is(err, cmdutil.ErrSilent)
}

// exitCode is the one place errors become exit codes. ctx is the root
// context: once a signal has cancelled it, any error is reported as an
// interruption, since the failure is most likely the cancellation itself.
func exitCode(ctx context.Context, err error) int {
	var (
		flagErr  *cmdutil.FlagError
		cfgErr   *config.Error
		checkErr *cmdutil.CheckFailedError
		setErr   *replicate.SettingError
		fileErr  *settings.Error
	)
	switch {
	case err == nil:
		return cmdutil.ExitOK
	case ctx.Err() != nil:
		// Only a signal (the root context) is an interruption: a
		// cancellation without one is a step stopped by a sibling's
		// failure, and hides a cause; it is an error (exit 1), printed.
		return cmdutil.ExitInterrupted
	case errors.As(err, &flagErr), errors.As(err, &cfgErr), errors.As(err, &setErr), errors.As(err, &fileErr):
		return cmdutil.ExitUsage
	case errors.As(err, &checkErr):
		return cmdutil.ExitCheckFailed
	default:
		return cmdutil.ExitError
	}
}

// printError reports err on stderr once, each line prefixed "mirrorctl: "
// (red on a colour terminal) and escaped (errors name things read from
// clusters).
// Silent errors print nothing; interruptions print "interrupted"; usage
// errors add a pointer to the command's --help. With -o json a final
// output.ErrorDocument line follows.
func printError(ios *iostreams.IOStreams, cmdPath string, jsonOut bool, err error, code int) {
	msg := err.Error()
	var (
		flagErr  *cmdutil.FlagError
		checkErr *cmdutil.CheckFailedError
	)
	switch {
	case code == cmdutil.ExitInterrupted:
		msg = "interrupted"
		fmt.Fprintln(ios.ErrOut, "mirrorctl: interrupted")
	case errors.Is(err, cmdutil.ErrSilent), errors.As(err, &checkErr) && checkErr.Silent():
		// already reported by the command
	default:
		prefix := output.NewErrStyles(ios).Error("mirrorctl:")
		for _, line := range strings.Split(strings.TrimRight(msg, "\n"), "\n") {
			fmt.Fprintf(ios.ErrOut, "%s %s\n", prefix, output.Escape(line))
		}
		if hint := kafka.Explain(err); hint != "" {
			fmt.Fprintf(ios.ErrOut, "%s hint: %s\n", prefix, hint)
		}
		if errors.As(err, &flagErr) {
			fmt.Fprintf(ios.ErrOut, "Run '%s --help' for usage.\n", cmdPath)
		}
	}
	if jsonOut {
		_ = output.WriteJSONError(ios.ErrOut, msg, code)
	}
}
