// Package cmdutil holds what every mirrorctl command shares: the Factory of
// lazy dependencies, the typed errors that decide the process exit code, and
// flag helpers. It sits below internal/cli (the root command) and the command
// subpackages (internal/cli/version, internal/cli/configcmd, ...), so they can
// all import it without a cycle, as cli/cli's pkg/cmdutil does.
package cmdutil

import (
	"errors"
	"fmt"
)

// Process exit codes. They are a public contract for scripts and CI jobs and
// are listed by `mirrorctl help exit-codes`; unknown codes must be treated as
// failure. internal/cli maps errors to them in one switch.
const (
	// ExitOK: the command did what was asked.
	ExitOK = 0
	// ExitError: the command failed (network, broker, I/O, a bug).
	ExitError = 1
	// ExitUsage: bad flags or arguments, or a configuration file that is
	// missing, unreadable or invalid.
	ExitUsage = 2
	// ExitCheckFailed: the command ran, and a check it performs failed (lag
	// over threshold, group active on the target, verification mismatch).
	ExitCheckFailed = 3
	// ExitInterrupted: SIGINT or SIGTERM cancelled the run (128 + SIGINT).
	ExitInterrupted = 130
)

// FlagError is a usage error: a bad flag, flag combination or argument found
// before the command did anything. It exits with ExitUsage, and the message
// is followed by a pointer to the command's --help.
type FlagError struct{ err error }

// FlagErrorf returns a *FlagError formatted like fmt.Errorf (so %w wraps).
func FlagErrorf(format string, args ...any) error {
	return &FlagError{err: fmt.Errorf(format, args...)}
}

// FlagErrorWrap wraps err in a *FlagError; nil stays nil.
func FlagErrorWrap(err error) error {
	if err == nil {
		return nil
	}
	return &FlagError{err: err}
}

// Error returns the wrapped error's message.
func (e *FlagError) Error() string { return e.err.Error() }

// Unwrap returns the wrapped error.
func (e *FlagError) Unwrap() error { return e.err }

// CheckFailedError reports that a check the command performs failed: it exits
// with ExitCheckFailed (3). If Err is nil the failure is silent: the command
// has already printed per-item results, and nothing more is written to stderr
// (except the JSON error object under -o json).
type CheckFailedError struct{ Err error }

// CheckFailedf returns a *CheckFailedError whose message is formatted like
// fmt.Errorf, e.g. CheckFailedf("lag on %s is %d records, over --max-lag %d", ...).
func CheckFailedf(format string, args ...any) error {
	return &CheckFailedError{Err: fmt.Errorf(format, args...)}
}

// ErrCheckFailed is a silent check failure: exit 3 with nothing printed.
var ErrCheckFailed error = &CheckFailedError{}

// Error returns the message, or "check failed" when silent.
func (e *CheckFailedError) Error() string {
	if e.Err == nil {
		return "check failed"
	}
	return e.Err.Error()
}

// Unwrap returns the wrapped error, or nil.
func (e *CheckFailedError) Unwrap() error { return e.Err }

// Silent reports whether nothing should be printed for e.
func (e *CheckFailedError) Silent() bool { return e.Err == nil }

// ErrSilent makes the process exit with ExitError (1) without printing
// anything: the command has already reported the failure on stderr.
var ErrSilent = errors.New("silent error")
