package replicate_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

// TestAliasesOfOneClusterExit2: an mm2.properties whose "us-east-again"
// names the us-east cluster again. `replicate --once` and `--dry-run` exit 2
// naming both aliases and the clusters line, and nothing reaches any
// cluster (before: each run added a prefix, us-east.us-east.orders).
func TestAliasesOfOneClusterExit2(t *testing.T) {
	p := testkit.NewPair(t)
	orders := testkit.Name("orders")
	p.CreateTopic(t, testkit.East, orders, 1, nil)
	p.Produce(t, testkit.East, &kgo.Record{Topic: orders, Value: []byte("a1")})
	path := filepath.Join(t.TempDir(), "mm2.properties")
	props := fmt.Sprintf(`clusters = us-east, us-east-again
us-east.bootstrap.servers = %[1]s
us-east-again.bootstrap.servers = %[1]s
us-east->us-east-again.enabled = true
replication.factor = 1
offset-syncs.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
checkpoints.topic.replication.factor = 1
`, strings.Join(p.Addrs(testkit.East), ","))
	if err := os.WriteFile(path, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"replicate", "--once", "-c", path}, {"replicate", "--dry-run", "-c", path}} {
		code, _, stderr := run(t, args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2; stderr %q", args, code, stderr)
		}
		if !strings.Contains(stderr, path+":1: clusters: clusters \"us-east\" and \"us-east-again\" are one cluster (cluster ID ") {
			t.Errorf("%v: stderr does not name the file, line and both aliases: %q", args, stderr)
		}
	}
	topics, err := p.Admin(t, testkit.East).ListTopicsWithInternal(testkit.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	if names := topics.Names(); len(names) != 1 || names[0] != orders {
		t.Errorf("topics on us-east after the refused runs: %v, want only %s", names, orders)
	}
}
