package replicate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	replicatecmd "github.com/mirrorctl/mirrorctl/internal/cli/replicate"
	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// aclEnv is a pair with an authorizer on both clusters (kfake with SCRAM
// and ACLs), mirrorctl logged in as the super user.
func aclEnv(t *testing.T, extra string) (*env, *kadm.Client, *kadm.Client) {
	t.Helper()
	p := testkit.NewPairWith(t, kfake.EnableSASL(), kfake.EnableACLs(), kfake.Superuser("SCRAM-SHA-256", "root", "rootpw"))
	root := kgo.SASL(scram.Auth{User: "root", Pass: "rootpw"}.AsSha256Mechanism())
	p.Clients.Opts = append(p.Clients.Opts, root)
	sasl := ""
	for _, a := range []string{testkit.East, testkit.West} {
		sasl += a + ".security.protocol = SASL_PLAINTEXT\n" + a + ".sasl.mechanism = SCRAM-SHA-256\n" +
			a + ".sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required username=\"root\" password=\"rootpw\";\n"
	}
	e := &env{Pair: p, config: p.WriteConfig(t, sasl+extra)}
	return e, e.Admin(t, testkit.East), e.Admin(t, testkit.West)
}

func mustCreateACL(ctx context.Context, t *testing.T, adm *kadm.Client, b *kadm.ACLBuilder) {
	t.Helper()
	res, err := adm.CreateACLs(ctx, b)
	for _, r := range res {
		err = errors.Join(err, r.Err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func targetTopicACLs(ctx context.Context, t *testing.T, adm *kadm.Client) []string {
	t.Helper()
	res, err := adm.DescribeACLs(ctx, kadm.NewACLs().Topics().Allow().AllowHosts().Deny().DenyHosts().Operations().ResourcePatternType(kadm.ACLPatternAny))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	seen := map[string]bool{}
	for _, r := range res {
		for _, d := range r.Described {
			s := fmt.Sprintf("%s %s %s %s %s", d.Permission, d.Principal, d.Operation, d.Pattern, d.Name)
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Every source binding the ACL sync leaves out is reported with its
// reason by --dry-run (stderr and JSON) and by the run's log; a prefixed
// ACL is renamed; a grant revoked on the source is reported by the next
// run and, with sync.topic.acls.prune, removed.
func TestACLSyncReported(t *testing.T) {
	e, src, tgt := aclEnv(t, "")
	ctx := testkit.Context(t)
	e.CreateTopic(t, testkit.East, "orders", 1, nil)
	lit, pre := kadm.ACLPatternLiteral, kadm.ACLPatternPrefixed
	alice := kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("orders").Operations(kadm.OpRead).ResourcePatternType(lit)
	for _, b := range []*kadm.ACLBuilder{
		alice,
		kadm.NewACLs().Allow("User:bob").AllowHosts("*").Topics("ord").Operations(kadm.OpAll).ResourcePatternType(pre),
		kadm.NewACLs().Allow("User:app").AllowHosts("*").Topics("orders").Operations(kadm.OpWrite).ResourcePatternType(lit),
		kadm.NewACLs().Allow("User:alice").AllowHosts("*").Groups("billing").Operations(kadm.OpRead).ResourcePatternType(lit),
	} {
		mustCreateACL(ctx, t, src, b)
	}

	code, out, stderr := run(t, "replicate", "--dry-run", "-o", "json", "-c", e.config)
	if code != 0 {
		t.Fatalf("dry run: exit %d\n%s", code, stderr)
	}
	var res replicatecmd.PlanResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.ACLSync) != 1 {
		t.Fatalf("acl_sync: %+v", res.ACLSync)
	}
	a := res.ACLSync[0]
	wantCreate := "[ALLOW User:bob READ TOPIC PREFIXED us-east.ord host=* ALLOW User:alice READ TOPIC LITERAL us-east.orders host=*]"
	if fmt.Sprint(a.Created) != wantCreate || !a.Tracked {
		t.Fatalf("dry run would create %v (tracked %v), want %s", a.Created, a.Tracked, wantCreate)
	}
	reasons := map[string]string{}
	for _, s := range a.Skipped {
		reasons[s.Binding.String()] = s.Reason
	}
	if len(reasons) != 2 || reasons["ALLOW User:app WRITE TOPIC LITERAL orders host=*"] != replicate.ACLSkipAllowWrite ||
		reasons["ALLOW User:alice READ GROUP LITERAL billing host=*"] != replicate.ACLSkipNotTopic {
		t.Fatalf("dry run skipped %v", reasons)
	}
	if got := targetTopicACLs(ctx, t, tgt); len(got) != 0 {
		t.Fatalf("the dry run created ACLs: %q", got)
	}
	_, _, stderr = run(t, "replicate", "--dry-run", "-c", e.config)
	for _, s := range []string{
		"topic ACL binding not synced (allow-write): ALLOW User:app WRITE TOPIC LITERAL orders host=*",
		"topic ACL binding not synced (not-a-topic-acl): ALLOW User:alice READ GROUP LITERAL billing host=*",
		"topic ACL sync: 2 target bindings from the source, 2 to create",
	} {
		if !strings.Contains(stderr, s) {
			t.Errorf("dry run stderr lacks %q:\n%s", s, stderr)
		}
	}

	code, out, stderr = run(t, "replicate", "--once", "-o", "json", "-c", e.config)
	if code != 0 {
		t.Fatalf("--once: exit %d\n%s", code, stderr)
	}
	var once replicatecmd.RunResult
	if err := json.Unmarshal([]byte(out), &once); err != nil {
		t.Fatal(err)
	}
	if len(once.ACLSync) != 1 || fmt.Sprint(once.ACLSync[0].Created) != wantCreate || len(once.ACLSync[0].Skipped) != 2 {
		t.Fatalf("--once -o json acl_sync %+v: want the 2 created bindings and the 2 left out", once.ACLSync)
	}
	if !strings.Contains(stderr, "source ACL bindings not synced") || !strings.Contains(stderr, "allow-write 1, not-a-topic-acl 1") {
		t.Errorf("--once log does not report the bindings left out:\n%s", stderr)
	}
	want := []string{"ALLOW User:alice READ LITERAL us-east.orders", "ALLOW User:bob READ PREFIXED us-east.ord"}
	if got := targetTopicACLs(ctx, t, tgt); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("target ACLs %q, want %q", got, want)
	}

	// Revoked on the source: reported, kept; then pruned.
	if _, err := src.DeleteACLs(ctx, alice); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = run(t, "replicate", "--once", "-c", e.config)
	revoked := "binding=\"ALLOW User:alice READ TOPIC LITERAL us-east.orders host=*\""
	if code != 0 || !strings.Contains(stderr, "revoked on the source is still on the target") || !strings.Contains(stderr, revoked) {
		t.Fatalf("--once after a revoke: exit %d, log does not name the revoked binding:\n%s", code, stderr)
	}
	if got := targetTopicACLs(ctx, t, tgt); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("without prune the target changed: %q", got)
	}
	f, err := os.OpenFile(e.config, os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString("sync.topic.acls.prune = true\n")
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		t.Fatal(err)
	}
	code, out, stderr = run(t, "replicate", "--once", "-o", "json", "-c", e.config)
	if code != 0 || !strings.Contains(stderr, "topic ACL binding pruned from the target") || !strings.Contains(stderr, revoked) {
		t.Fatalf("--once with prune: exit %d, log does not name the pruned binding:\n%s", code, stderr)
	}
	once = replicatecmd.RunResult{}
	if err := json.Unmarshal([]byte(out), &once); err != nil {
		t.Fatal(err)
	}
	if len(once.ACLSync) != 1 || fmt.Sprint(once.ACLSync[0].Pruned) != "[ALLOW User:alice READ TOPIC LITERAL us-east.orders host=*]" {
		t.Fatalf("--once -o json with prune: acl_sync %+v, want the pruned binding", once.ACLSync)
	}
	if got := targetTopicACLs(ctx, t, tgt); fmt.Sprint(got) != "[ALLOW User:bob READ PREFIXED us-east.ord]" {
		t.Fatalf("after prune the target holds %q", got)
	}
}

// A running replicate serves its flow's ACL sync in /status (acl_sync) and
// mirrorctl_acl_revoked_bindings: 0 after the first sync, 1 naming the
// binding once its source grant is revoked.
func TestACLSyncStatusAndMetric(t *testing.T) {
	e, src, _ := aclEnv(t, "sync.topic.acls.interval.seconds = 1\n")
	ctx := testkit.Context(t)
	e.CreateTopic(t, testkit.East, "orders", 1, nil)
	alice := kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("orders").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)
	mustCreateACL(ctx, t, src, alice)
	mustCreateACL(ctx, t, src, kadm.NewACLs().Allow("User:alice").AllowHosts("*").Groups("billing").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	p := startProc(t, e, "replicate")
	get := func(path string) string {
		if p.metricsAddr() == "" {
			return ""
		}
		cl := http.Client{Timeout: time.Second}
		resp, err := cl.Get("http://" + p.metricsAddr() + path)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	gauge := `mirrorctl_acl_revoked_bindings{source="us-east",target="eu-west"} `
	testkit.WaitFor(t, "the revoked gauge at 0", func() bool { return strings.Contains(get("/metrics"), gauge+"0\n") })
	var st struct {
		Flows []struct {
			ACLSync *replicatecmd.FlowACLSync `json:"acl_sync"`
		} `json:"flows"`
	}
	if err := json.Unmarshal([]byte(get("/status")), &st); err != nil || len(st.Flows) != 1 || st.Flows[0].ACLSync == nil {
		t.Fatalf("/status: %+v %v", st, err)
	}
	if a := st.Flows[0].ACLSync; len(a.Planned) != 1 || len(a.Skipped) != 1 || a.Skipped[0].Reason != replicate.ACLSkipNotTopic {
		t.Fatalf("/status acl_sync: planned %v skipped %v", a.Planned, a.Skipped)
	}
	if _, err := src.DeleteACLs(ctx, alice); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the revoked gauge at 1", func() bool { return strings.Contains(get("/metrics"), gauge+"1\n") })
	st.Flows = nil
	if err := json.Unmarshal([]byte(get("/status")), &st); err != nil || len(st.Flows) != 1 || st.Flows[0].ACLSync == nil {
		t.Fatalf("/status: %+v %v", st, err)
	}
	if r := st.Flows[0].ACLSync.Revoked; fmt.Sprint(r) != "[ALLOW User:alice READ TOPIC LITERAL us-east.orders host=*]" {
		t.Fatalf("/status acl_sync.revoked = %v, want alice's copy", r)
	}
}
