package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// init keeps every test binary that links testkit (the command tests that
// call cli.Run, itest) away from the developer's own mirrorctl settings
// (contexts, internal/settings): MIRRORCTL_SETTINGS names a file that does
// not exist, and the variables that pick a context or a flow are cleared,
// so a current context on the machine cannot change what a test runs.
// Tests of contexts set their own with t.Setenv. It does nothing outside
// `go test`.
func init() {
	if !testing.Testing() {
		return
	}
	os.Setenv("MIRRORCTL_SETTINGS", filepath.Join(os.TempDir(), fmt.Sprintf("mirrorctl-test-%d-no-settings.yaml", os.Getpid())))
	for _, k := range []string{"MIRRORCTL_CONTEXT", "MIRRORCTL_SOURCE", "MIRRORCTL_TARGET"} {
		os.Unsetenv(k)
	}
}
