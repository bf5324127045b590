package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirrorctl/mirrorctl/internal/iostreams"
)

func TestFactoryAudit(t *testing.T) {
	dir := t.TempDir()
	flagPath := filepath.Join(dir, "flag", "audit.jsonl")
	envPath := filepath.Join(dir, "env", "audit.jsonl")
	t.Setenv("MIRRORCTL_AUDIT_LOG", envPath)
	ios, _, _, _ := iostreams.Test()

	f, cleanup := newFactory(ios, nil, &globalOptions{}, &stopWatchdog{})
	if got := f.AuditPath(); got != envPath {
		t.Fatalf("AuditPath with MIRRORCTL_AUDIT_LOG = %q, want %q", got, envPath)
	}
	cleanup()

	f, cleanup = newFactory(ios, nil, &globalOptions{auditLog: flagPath}, &stopWatchdog{})
	if got := f.AuditPath(); got != flagPath {
		t.Fatalf("AuditPath with --audit-log = %q, want %q", got, flagPath)
	}
	l1, err := f.Audit()
	if err != nil {
		t.Fatal(err)
	}
	l2, _ := f.Audit()
	if l1 != l2 || l1.Path() != flagPath {
		t.Fatalf("Audit not memoised: %p %p %q", l1, l2, l1.Path())
	}
	if fi, err := os.Stat(flagPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("audit file: %v %v", fi, err)
	}
	cleanup()
	if _, err := l1.Begin(context.Background(), "x", nil, "", nil); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("Begin after cleanup = %v, want closed", err)
	}
	if _, err := os.Stat(envPath); !os.IsNotExist(err) {
		t.Fatalf("a factory that never called Audit created %s", envPath)
	}
}
