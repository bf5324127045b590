package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// lag, status, translate and failover refuse a flow whose two aliases reach one
// Kafka cluster, as replicate does (exit 2, naming both aliases and the
// cluster ID): they would read the "target" from the cluster being failed
// over from.
func TestOneClusterTwoAliasesRefused(t *testing.T) {
	t.Setenv("MIRRORCTL_CONFIG", "")
	t.Setenv("MIRRORCTL_OUTPUT", "")
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.ClusterID("one-cluster-id"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := strings.Join(c.ListenAddrs(), ",")
	file := filepath.Join(t.TempDir(), "mm2.properties")
	cfg := "clusters = us-east, eu-west\nus-east.bootstrap.servers = " + addr + "\neu-west.bootstrap.servers = " + addr + "\n" +
		"us-east->eu-west.enabled = true\nus-east->eu-west.topics = orders\nreplication.factor = 1\n"
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	want := `clusters "eu-west" and "us-east" are one cluster (cluster ID one-cluster-id)`
	for _, args := range [][]string{
		{"lag"},
		{"lag", "--watch", "--count", "1"},
		{"status"},
		{"translate", "--group", "billing"},
		{"failover", "plan", "--type", "planned", "--group", "billing"},
		{"failover", "plan", "--type", "restore", "--group", "billing"},
		{"failover", "--group", "billing"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		code, _, errOut := run(t, ctx, append(args, "-c", file, "--audit-log", audit)...)
		cancel()
		if code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 naming both aliases", strings.Join(args, " "), code, errOut)
		}
	}
}
