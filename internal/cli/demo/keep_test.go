package demo_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mirrorctl/mirrorctl/internal/cli"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
)

// childEnv makes the test binary run as mirrorctl (see TestMain), so a test
// can start `mirrorctl demo --keep` as a process of its own.
const childEnv = "MIRRORCTL_DEMO_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(cli.Main())
	}
	os.Exit(m.Run())
}

// TestDemoKeep starts `mirrorctl demo --keep` in another process, then
// answers translate and lag from this one against the clusters it keeps,
// and stops it with SIGINT (exit 0).
func TestDemoKeep(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	child := exec.CommandContext(ctx, os.Args[0], "demo", "--keep", "--records", "40", "--dir", dir)
	child.Env = append(os.Environ(), childEnv+"=1", "MIRRORCTL_CONFIG=", "NO_COLOR=1")
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	child.Stderr = &stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill() }()

	// Ready when it prints the export line (after the check passed).
	config := ""
	sc := bufio.NewScanner(stdout)
	var seen []string
	for sc.Scan() {
		line := sc.Text()
		seen = append(seen, line)
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "export MIRRORCTL_CONFIG="); ok {
			config = v
			break
		}
	}
	if config == "" {
		t.Fatalf("demo --keep never printed its config (stderr %q):\n%s", stderr.String(), strings.Join(seen, "\n"))
	}
	go func() { // keep draining so the child never blocks on a full pipe
		for sc.Scan() {
		}
	}()

	ios, _, out, errOut := iostreams.Test()
	if code := cli.Run(ctx, ios, []string{"translate", "-c", config, "--group", "order-processor"}, nil); code != 0 {
		t.Fatalf("translate against the kept demo: exit %d: %s", code, errOut)
	}
	if n := strings.Count(out.String(), "order-processor\torders\tus-east.orders\t"); n != 3 {
		t.Fatalf("translate: %d rows for the 3 partitions of orders:\n%s", n, out)
	}
	ios, _, out, errOut = iostreams.Test()
	if code := cli.Run(ctx, ios, []string{"lag", "-c", config, "--group", "order-processor"}, nil); code != 0 {
		t.Fatalf("lag against the kept demo: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out.String(), "us-east->eu-west\tus-east.orders\t0\t") || !strings.Contains(out.String(), "order-processor") {
		t.Fatalf("lag output:\n%s", out)
	}

	if err := child.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = child.Wait()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) || err != nil {
		t.Fatalf("demo --keep after SIGINT: %v (stderr %q), want exit 0", err, stderr.String())
	}
}
