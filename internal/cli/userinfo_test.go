package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A password written as userinfo in bootstrap.servers (SASL://user:pass@host)
// is ignored by Kafka's clients and by mirrorctl, but it is a secret: no
// command prints it, in its output, its warnings or its errors, and the
// address dialled is the host:port alone.
func TestBootstrapUserinfoNeverPrinted(t *testing.T) {
	t.Setenv("MIRRORCTL_CONFIG", "")
	t.Setenv("MIRRORCTL_OUTPUT", "")
	const pass1, pass2 = "pa55word-east", "s3cr3t-west"
	file := filepath.Join(t.TempDir(), "userinfo.properties")
	// Port 1 on loopback refuses at once: every command fails fast at its
	// first dial, which is where an address would reach an error message.
	cfg := "clusters = us-east, eu-west\n" +
		"us-east.bootstrap.servers = SASL://alice:" + pass1 + "@127.0.0.1:1\n" +
		"eu-west.bootstrap.servers = bob:" + pass2 + "@127.0.0.1:1, 127.0.0.1:1\n" +
		"us-east->eu-west.enabled = true\n" +
		"us-east->eu-west.topics = orders\n"
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	commands := [][]string{
		{"config", "show"},
		{"config", "validate"},
		{"replicate", "--dry-run"},
		{"failover", "plan", "--group", "g", "--from", "us-east", "--to", "eu-west"},
		{"lag"},
		{"translate", "--group", "g"},
		{"checkpoints", "dump"},
		{"acl-plan"},
	}
	for _, c := range commands {
		for _, format := range []string{"table", "json"} {
			args := append(append([]string{}, c...), "-c", file, "-o", format)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			code, out, errOut := run(t, ctx, args...)
			cancel()
			all := out + errOut
			if strings.Contains(all, pass1) || strings.Contains(all, pass2) || strings.Contains(all, "alice:") {
				t.Errorf("%s (exit %d) printed the userinfo:\n%s", strings.Join(args, " "), code, all)
			}
			if c[0] == "config" && c[1] == "validate" && !strings.Contains(errOut, "carries credentials before '@'") {
				t.Errorf("config validate does not warn about the credentials:\n%s", all)
			}
			if strings.Contains(all, "SASL://") && !strings.Contains(all, "SASL://***@127.0.0.1:1") {
				t.Errorf("%s: the server list is shown other than masked:\n%s", strings.Join(args, " "), all)
			}
		}
	}
}
