package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

// Warnings about keys are config validate's job: it lists each one, and
// other commands (lag, translate, dumps, ...) print one line counting them
// and pointing at it, instead of every warning at every run.
func TestKeyWarningsListedByValidateOnly(t *testing.T) {
	t.Setenv("MIRRORCTL_CONFIG", "")
	t.Setenv("MIRRORCTL_OUTPUT", "")
	p := testkit.NewPair(t)
	config := p.WriteConfig(t, "offset.storage.replication.factor = 1\nmetric.reporters = x.Y\n")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, _, stderr := run(t, ctx, "config", "validate", "-c", config)
	if strings.Count(stderr, "warning: ") != 2 || !strings.Contains(stderr, "offset.storage.replication.factor: a Connect worker setting, accepted but not acted on: mirrorctl runs no Connect worker, so it writes no Connect offsets") {
		t.Errorf("config validate:\n%s", stderr)
	}
	summary := "warning: " + config + " has 2 warnings about its keys: mirrorctl config validate -c " + config + " lists them"
	for _, args := range [][]string{{"lag"}, {"translate", "--group", "g", "--allow-empty"}, {"heartbeats", "dump"}} {
		_, _, stderr := run(t, ctx, append(args, "-c", config)...)
		if !strings.Contains(stderr, summary) || strings.Contains(stderr, "accepted but not acted on") {
			t.Errorf("%s: want the one summary line, not the warnings:\n%s", strings.Join(args, " "), stderr)
		}
	}
	// Acknowledged, the warning is gone from every command.
	acked := filepath.Join(t.TempDir(), "acked.properties")
	b, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(acked, append(b, []byte("mirrorctl.warnings.acknowledged = offset.storage.replication.factor\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, stderr := run(t, ctx, "config", "validate", "-c", acked); strings.Count(stderr, "warning: ") != 1 || !strings.Contains(stderr, "1 warning acknowledged") {
		t.Errorf("config validate with the key acknowledged:\n%s", stderr)
	}
}
