package cli

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

// complete runs cobra's hidden __complete command in-process, as a shell's
// completion script does, and returns the candidates (descriptions cut) and
// the directive line.
func complete(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	code, out, errOut := run(t, context.Background(), append([]string{"__complete"}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %v: exit %d, stderr %q", args, code, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	var cands []string
	for _, l := range lines[:len(lines)-1] {
		name, _, _ := strings.Cut(l, "\t")
		cands = append(cands, name)
	}
	return cands, lines[len(lines)-1]
}

func TestDynamicCompletion(t *testing.T) {
	p := testkit.NewPair(t)
	cfg := p.WriteConfig(t, "")
	group, topic := testkit.Name("orders-app"), testkit.Name("orders")
	p.CreateTopic(t, testkit.East, topic, 1, nil)
	p.Produce(t, testkit.East, &kgo.Record{Topic: topic, Value: []byte("x")})
	p.Commit(t, testkit.East, group, map[string]map[int32]int64{topic: {0: 1}})

	// ":4" is ShellCompDirectiveNoFileComp: never file names.
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"translate", "-c", cfg, "--source", ""}, []string{testkit.East, testkit.West}},
		{[]string{"lag", "-c", cfg, "--target", ""}, []string{testkit.East, testkit.West}},
		{[]string{"heartbeats", "dump", "-c", cfg, "--cluster", ""}, []string{testkit.East, testkit.West}},
		{[]string{"replicate", "-c", cfg, "--flow", ""}, []string{testkit.East + "->" + testkit.West, testkit.West + "->" + testkit.East}},
		{[]string{"failover", "-c", cfg, "--group", ""}, []string{group}},
		{[]string{"translate", "-c", cfg, "--source", testkit.East, "--group", ""}, []string{group}},
		{[]string{"offset-syncs", "dump", "-c", cfg, "--topic", ""}, []string{topic}},
	} {
		got, directive := complete(t, tc.args...)
		if directive != ":4" {
			t.Errorf("%v: directive %q, want :4 (no file names)", tc.args, directive)
		}
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("%v: %q not offered; got %q", tc.args, w, got)
			}
		}
	}
}

// TestCompletionSilentOnFailure: no config, or a cluster that does not
// answer, completes nothing, prints nothing and offers no file names.
func TestCompletionSilentOnFailure(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.properties")
	got, directive := complete(t, "translate", "-c", missing, "--source", "")
	if len(got) != 0 || directive != ":4" {
		t.Fatalf("missing config: %q %q", got, directive)
	}
	p := testkit.NewPair(t)
	cfg := p.WriteConfig(t, "")
	p.East.Close() // the source is down
	code, out, errOut := run(t, context.Background(), "__complete", "failover", "-c", cfg, "--group", "")
	if code != 0 || strings.TrimSpace(out) != ":4" {
		t.Fatalf("source down: exit %d, stdout %q", code, out)
	}
	if strings.Contains(errOut, "warning") || strings.Contains(errOut, "error") {
		t.Errorf("source down: stderr %q, want silence", errOut)
	}
}
