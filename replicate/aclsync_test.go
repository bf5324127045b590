package replicate

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate/filter"
	"github.com/mirrorctl/mirrorctl/replicate/policy"
)

// aclCluster starts a kfake cluster with ACLs on and returns an admin
// client logged in as its super user.
func aclCluster(t *testing.T, opts ...kfake.Opt) (*kfake.Cluster, *kadm.Client) {
	t.Helper()
	opts = append([]kfake.Opt{kfake.NumBrokers(1), kfake.Ports(0), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("SCRAM-SHA-256", "root", "rootpw")}, opts...)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, aclAdmin(t, c, "root", "rootpw")
}

func aclAdmin(t *testing.T, c *kfake.Cluster, user, pass string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...),
		kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()), kgo.RetryTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

func createACL(ctx context.Context, t *testing.T, adm *kadm.Client, b *kadm.ACLBuilder) {
	t.Helper()
	res, err := adm.CreateACLs(ctx, b)
	if err == nil {
		for _, r := range res {
			err = errors.Join(err, r.Err)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

// topicACLStrings lists the topic ACLs of a cluster as
// "PERM principal OP PATTERN name", sorted.
func topicACLStrings(ctx context.Context, t *testing.T, adm *kadm.Client) []string {
	t.Helper()
	acls, err := describeACLs(ctx, adm, kmsg.ACLResourceTypeTopic)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, a := range acls {
		out = append(out, fmt.Sprintf("%s %s %s %s %s", a.Permission, a.Principal, a.Operation, a.Pattern, a.Name))
	}
	sort.Strings(out)
	return out
}

func bindingStrings(bs []ACLBinding) []string {
	out := []string{}
	for _, b := range bs {
		out = append(out, b.String())
	}
	return out
}

// skipStrings lists skips as "reason: binding".
func skipStrings(ss []ACLSkip) []string {
	out := []string{}
	for _, s := range ss {
		out = append(out, s.Reason+": "+s.Binding.String())
	}
	sort.Strings(out)
	return out
}

// ledgerFor returns the flow's ACL ledger on the kfake cluster c, logged in
// as the super user.
func ledgerFor(t *testing.T, cfg FlowConfig, c *kfake.Cluster) ACLLedger {
	cfg.ProgressReplicationFactor = 1
	cl := testkit.NewClients(t, map[string][]string{cfg.Target: c.ListenAddrs()})
	cl.Opts = []kgo.Opt{kgo.SASL(scram.Auth{User: "root", Pass: "rootpw"}.AsSha256Mechanism()), kgo.RetryTimeout(5 * time.Second)}
	return NewACLLedger(cfg, cl, false)
}

func readOnlyLedger(t *testing.T, cfg FlowConfig, c *kfake.Cluster) ACLLedger {
	cl := testkit.NewClients(t, map[string][]string{cfg.Target: c.ListenAddrs()})
	cl.Opts = []kgo.Opt{kgo.SASL(scram.Auth{User: "root", Pass: "rootpw"}.AsSha256Mechanism()), kgo.RetryTimeout(5 * time.Second)}
	return NewACLLedger(cfg, cl, true)
}

func tb(rt kmsg.ACLResourceType, pat kmsg.ACLResourcePatternType, name, principal string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) ACLBinding {
	return ACLBinding{ResourceType: rt, Pattern: pat, Name: name, Principal: principal, Host: "*", Operation: op, Permission: perm}
}

// Every rule of the plan, MM2's and mirrorctl's, with the reason of every
// binding left out.
func TestPlanTopicACLs(t *testing.T) {
	const (
		topic, group, cluster, txn = kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeCluster, kmsg.ACLResourceTypeTransactionalId
		lit, pre                   = kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
		allow, deny                = kmsg.ACLPermissionTypeAllow, kmsg.ACLPermissionTypeDeny
		read, write, all, desc     = kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationAll, kmsg.ACLOperationDescribe
	)
	source := []ACLBinding{
		tb(topic, lit, "orders", "User:reader", read, allow),
		tb(topic, lit, "orders", "User:reader", all, allow), // ALL -> READ: the same binding once
		tb(topic, lit, "orders", "User:owner", all, allow),
		tb(topic, lit, "orders", "User:writer", write, allow),
		tb(topic, lit, "orders", "User:writer", desc, allow),
		tb(topic, lit, "orders", "User:mallory", write, deny),
		tb(topic, lit, "orders", "User:mallory", all, deny),
		tb(topic, lit, "secret", "User:reader", read, allow),
		tb(topic, lit, "__consumer_offsets", "User:reader", read, allow),
		tb(topic, lit, "eu-west.back", "User:reader", read, allow),
		tb(topic, lit, "*", "User:ops", desc, allow),
		tb(topic, pre, "ord", "User:pre", read, allow),
		tb(topic, pre, "ord", "User:pre", write, allow),
		tb(topic, pre, "pay", "User:pre", read, allow),
		tb(topic, pre, "new-", "User:pre", all, allow),
		tb(group, lit, "g1", "User:reader", read, allow),
		tb(cluster, lit, "kafka-cluster", "User:admin", all, allow),
		tb(txn, pre, "app-", "User:writer", write, allow),
	}
	sourceTopics := []string{"orders", "ordinals", "pay.in", "pay.secret", "secret", "__consumer_offsets", "eu-west.back"}
	cfg := DefaultFlowConfig("us-east", "eu-west")
	cfg.Topics.Exclude = filter.MustCompileList("topics.exclude", `secret, pay\.secret, .*[\-\.]internal, __.*`)

	plan := PlanTopicACLs(cfg, source, sourceTopics)
	want := []string{
		"ALLOW User:ops DESCRIBE TOPIC LITERAL us-east.* host=*", // MM2's "*" quirk: a name no topic can have
		"ALLOW User:pre READ TOPIC PREFIXED us-east.new- host=*", // no source topic under it yet: ALL -> READ
		"ALLOW User:pre READ TOPIC PREFIXED us-east.ord host=*",
		"ALLOW User:owner READ TOPIC LITERAL us-east.orders host=*",
		"ALLOW User:reader READ TOPIC LITERAL us-east.orders host=*",
		"ALLOW User:writer DESCRIBE TOPIC LITERAL us-east.orders host=*",
		"DENY User:mallory ALL TOPIC LITERAL us-east.orders host=*",
		"DENY User:mallory WRITE TOPIC LITERAL us-east.orders host=*",
	}
	got := bindingStrings(plan.Bindings)
	sort.Strings(got)
	sort.Strings(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("bindings:\n got %q\nwant %q", got, want)
	}
	wantSkips := []string{
		"allow-write: ALLOW User:pre WRITE TOPIC PREFIXED ord host=*",
		"allow-write: ALLOW User:writer WRITE TOPIC LITERAL orders host=*",
		"not-a-topic-acl: ALLOW User:admin ALL CLUSTER LITERAL kafka-cluster host=*",
		"not-a-topic-acl: ALLOW User:reader READ GROUP LITERAL g1 host=*",
		"not-a-topic-acl: ALLOW User:writer WRITE TRANSACTIONAL_ID PREFIXED app- host=*",
		"prefix-covers-unmirrored-topic: ALLOW User:pre READ TOPIC PREFIXED pay host=*",
		"topic-not-mirrored: ALLOW User:reader READ TOPIC LITERAL __consumer_offsets host=*",
		"topic-not-mirrored: ALLOW User:reader READ TOPIC LITERAL eu-west.back host=*",
		"topic-not-mirrored: ALLOW User:reader READ TOPIC LITERAL secret host=*",
	}
	if got := skipStrings(plan.Skipped); fmt.Sprint(got) != fmt.Sprint(wantSkips) {
		t.Fatalf("skipped:\n got %q\nwant %q", got, wantSkips)
	}
	for _, s := range plan.Skipped {
		if s.Detail == "" {
			t.Errorf("skip %s has no detail", s.Binding)
		}
		if s.Reason == ACLSkipPrefixUnmirrored && !strings.Contains(s.Detail, `"pay.secret"`) {
			t.Errorf("unmirrored prefix detail does not name the topic: %s", s.Detail)
		}
	}

	// Identity: names are kept, so a prefix and "*" would grant on target
	// topics that are not copies; literal topics are copied as MM2 does.
	idc := cfg
	idc.Policy = policy.NewIdentity(policy.DefaultSeparator, true, "us-east")
	plan = PlanTopicACLs(idc, source, sourceTopics)
	if got := bindingStrings(plan.Bindings); !slicesContain(got, "ALLOW User:reader READ TOPIC LITERAL orders host=*") || len(got) != 6 {
		t.Fatalf("identity bindings: %q", got)
	}
	reasons := map[string]string{}
	for _, s := range plan.Skipped {
		reasons[s.Binding.String()] = s.Reason
	}
	for b, want := range map[string]string{
		"ALLOW User:pre READ TOPIC PREFIXED ord host=*":       ACLSkipPrefixNotRenamed,
		"ALLOW User:pre ALL TOPIC PREFIXED new- host=*":       ACLSkipPrefixNotRenamed,
		"ALLOW User:ops DESCRIBE TOPIC LITERAL * host=*":      ACLSkipWildcard,
		"ALLOW User:pre READ TOPIC PREFIXED pay host=*":       ACLSkipPrefixNotRenamed,
		"ALLOW User:writer WRITE TOPIC LITERAL orders host=*": ACLSkipAllowWrite,
	} {
		if reasons[b] != want {
			t.Errorf("identity: %s skipped for %q, want %q", b, reasons[b], want)
		}
	}
}

func slicesContain(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// The renamed-prefix check holds for the default policy under any
// separator and fails for identity.
func TestPrefixRenamed(t *testing.T) {
	cfg := DefaultFlowConfig("us-east", "eu-west")
	for _, sep := range []string{".", "_", "--"} {
		cfg.Policy = policy.NewDefault(sep, true)
		if !prefixRenamed(cfg, "orders") {
			t.Errorf("default policy, separator %q: prefix not renamed", sep)
		}
	}
	cfg.Policy = policy.NewIdentity(".", true, "us-east")
	if prefixRenamed(cfg, "orders") {
		t.Error("identity policy: prefix renamed")
	}
}

func TestSyncTopicACLs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, src := aclCluster(t)
	tgtCluster, tgt := aclCluster(t)
	lit, pre := kadm.ACLPatternLiteral, kadm.ACLPatternPrefixed
	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:reader").Topics("orders", "payments").Operations(kadm.OpRead).ResourcePatternType(lit),
		kadm.NewACLs().Allow("User:owner").Topics("orders").Operations(kadm.OpAll).ResourcePatternType(lit),
		kadm.NewACLs().Allow("User:writer").Topics("orders").Operations(kadm.OpWrite, kadm.OpDescribe).ResourcePatternType(lit),
		kadm.NewACLs().Deny("User:mallory").Topics("orders").Operations(kadm.OpWrite).ResourcePatternType(lit),
		kadm.NewACLs().Allow("User:prefixed").Topics("ord").Operations(kadm.OpRead).ResourcePatternType(pre),
		kadm.NewACLs().Allow("User:prefixed").Topics("sec").Operations(kadm.OpRead).ResourcePatternType(pre),
		kadm.NewACLs().Allow("User:reader").Topics("secret", "__consumer_offsets", "eu-west.back").Operations(kadm.OpRead).ResourcePatternType(lit),
		kadm.NewACLs().Allow("User:reader").Groups("g1").Operations(kadm.OpRead).ResourcePatternType(lit),
	} {
		createACL(ctx, t, src, b)
	}
	if _, err := src.CreateTopic(ctx, 1, 1, nil, "secret"); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultFlowConfig("us-east", "eu-west")
	cfg.Topics.Exclude = filter.MustCompileList("topics.exclude", `secret, .*[\-\.]internal, __.*`)
	ledger := ledgerFor(t, cfg, tgtCluster)

	// --dry-run: what would be created, and nothing written, not even
	// the ledger topic.
	dry, err := PlanACLSync(ctx, cfg, src, tgt, readOnlyLedger(t, cfg, tgtCluster))
	if err != nil || !dry.Tracked || len(dry.Created) != 6 || len(dry.Skipped) != 6 {
		t.Fatalf("dry run: %d to create, %d skipped, tracked %v (%s), err %v; want 6, 6, true", len(dry.Created), len(dry.Skipped), dry.Tracked, dry.TrackingError, err)
	}
	if got := topicACLStrings(ctx, t, tgt); len(got) != 0 {
		t.Fatalf("dry run changed the target's ACLs: %q", got)
	}
	if td, err := tgt.ListTopics(ctx); err != nil || len(td) != 0 {
		t.Fatalf("dry run created topics %v (err %v)", td.Names(), err)
	}

	r, err := SyncTopicACLs(ctx, cfg, src, tgt, ledger)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ALLOW User:owner READ LITERAL us-east.orders",  // ALL became READ
		"ALLOW User:prefixed READ PREFIXED us-east.ord", // renamed prefix
		"ALLOW User:reader READ LITERAL us-east.orders",
		"ALLOW User:reader READ LITERAL us-east.payments",
		"ALLOW User:writer DESCRIBE LITERAL us-east.orders", // WRITE dropped, DESCRIBE kept
		"DENY User:mallory WRITE LITERAL us-east.orders",    // DENY WRITE copied as is
	}
	if got := topicACLStrings(ctx, t, tgt); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("target topic ACLs:\n got %q\nwant %q", got, want)
	}
	if !r.Tracked || len(r.Created) != len(want) || len(r.Planned) != len(want) {
		t.Fatalf("report: tracked %v, created %d, planned %d; want true, %d, %d (%s)", r.Tracked, len(r.Created), len(r.Planned), len(want), len(want), r.TrackingError)
	}
	wantSkips := []string{
		"allow-write: ALLOW User:writer WRITE TOPIC LITERAL orders host=*",
		"not-a-topic-acl: ALLOW User:reader READ GROUP LITERAL g1 host=*",
		"prefix-covers-unmirrored-topic: ALLOW User:prefixed READ TOPIC PREFIXED sec host=*",
		"topic-not-mirrored: ALLOW User:reader READ TOPIC LITERAL __consumer_offsets host=*",
		"topic-not-mirrored: ALLOW User:reader READ TOPIC LITERAL eu-west.back host=*",
		"topic-not-mirrored: ALLOW User:reader READ TOPIC LITERAL secret host=*",
	}
	if got := skipStrings(r.Skipped); fmt.Sprint(got) != fmt.Sprint(wantSkips) {
		t.Fatalf("skipped:\n got %q\nwant %q", got, wantSkips)
	}
	// Additive and repeatable: a second run creates nothing and deletes nothing.
	createACL(ctx, t, tgt, kadm.NewACLs().Allow("User:local").Topics("us-east.orders").Operations(kadm.OpRead).ResourcePatternType(lit))
	r, err = SyncTopicACLs(ctx, cfg, src, tgt, ledger)
	if err != nil || len(r.Created) != 0 || len(r.Revoked) != 0 {
		t.Fatalf("second run: created %d, revoked %d, err %v; want 0, 0, nil", len(r.Created), len(r.Revoked), err)
	}
	want = append([]string{"ALLOW User:local READ LITERAL us-east.orders"}, want...)
	if got := topicACLStrings(ctx, t, tgt); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after a second run:\n got %q\nwant %q", got, want)
	}
	// No group ACL reached the target.
	all, err := describeACLs(ctx, tgt, kmsg.ACLResourceTypeAny)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(want) {
		t.Fatalf("target holds %d ACLs, want %d", len(all), len(want))
	}
}

// A grant revoked on the source is reported while its copy stays on the
// target; with sync.topic.acls.prune it is removed, and only the bindings
// mirrorctl created: one the operator had put on the target before the
// first sync is never removed.
func TestSyncTopicACLsRevokedAndPrune(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, src := aclCluster(t)
	tgtCluster, tgt := aclCluster(t)
	lit, pre := kadm.ACLPatternLiteral, kadm.ACLPatternPrefixed
	grants := []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("orders").Operations(kadm.OpRead).ResourcePatternType(lit),
		kadm.NewACLs().Allow("User:bob").AllowHosts("*").Topics("ord").Operations(kadm.OpRead).ResourcePatternType(pre),
		kadm.NewACLs().Allow("User:carol").AllowHosts("*").Topics("orders").Operations(kadm.OpRead).ResourcePatternType(lit),
	}
	for _, b := range grants {
		createACL(ctx, t, src, b)
	}
	// The operator's own binding, equal to carol's copy, before any sync.
	createACL(ctx, t, tgt, kadm.NewACLs().Allow("User:carol").Topics("us-east.orders").Operations(kadm.OpRead).ResourcePatternType(lit))
	cfg := DefaultFlowConfig("us-east", "eu-west")
	ledger := ledgerFor(t, cfg, tgtCluster)
	r, err := SyncTopicACLs(ctx, cfg, src, tgt, ledger)
	if err != nil || len(r.Created) != 2 {
		t.Fatalf("first sync: created %q, err %v; want alice's and bob's", bindingStrings(r.Created), err)
	}
	recorded, err := ledger.Load(ctx)
	if err != nil || len(recorded) != 2 {
		t.Fatalf("ledger holds %q (err %v), want the 2 created bindings only", bindingStrings(recorded), err)
	}
	// Revoke all three on the source.
	for _, b := range grants {
		if _, err := src.DeleteACLs(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	r, err = SyncTopicACLs(ctx, cfg, src, tgt, ledger)
	wantRevoked := []string{ // sorted by name
		"ALLOW User:bob READ TOPIC PREFIXED us-east.ord host=*",
		"ALLOW User:alice READ TOPIC LITERAL us-east.orders host=*",
	}
	if err != nil || fmt.Sprint(bindingStrings(r.Revoked)) != fmt.Sprint(wantRevoked) || len(r.Pruned) != 0 {
		t.Fatalf("revoked %q pruned %d err %v; want %q, 0, nil", bindingStrings(r.Revoked), len(r.Pruned), err, wantRevoked)
	}
	if got := topicACLStrings(ctx, t, tgt); len(got) != 3 {
		t.Fatalf("without prune the target keeps all 3 bindings, has %q", got)
	}
	cfg.SyncTopicACLsPrune = true
	dry, err := PlanACLSync(ctx, cfg, src, tgt, readOnlyLedger(t, cfg, tgtCluster))
	if err != nil || fmt.Sprint(bindingStrings(dry.Pruned)) != fmt.Sprint(wantRevoked) {
		t.Fatalf("dry run with prune: would prune %q (err %v), want %q", bindingStrings(dry.Pruned), err, wantRevoked)
	}
	if got := topicACLStrings(ctx, t, tgt); len(got) != 3 {
		t.Fatalf("a dry run pruned: the target holds %q", got)
	}
	r, err = SyncTopicACLs(ctx, cfg, src, tgt, ledger)
	if err != nil || fmt.Sprint(bindingStrings(r.Pruned)) != fmt.Sprint(wantRevoked) || len(r.Revoked) != 0 {
		t.Fatalf("prune: pruned %q revoked %d err %v; want %q, 0, nil", bindingStrings(r.Pruned), len(r.Revoked), err, wantRevoked)
	}
	if got := topicACLStrings(ctx, t, tgt); fmt.Sprint(got) != "[ALLOW User:carol READ LITERAL us-east.orders]" {
		t.Fatalf("after prune the target holds %q, want the operator's binding only", got)
	}
	if recorded, err := ledger.Load(ctx); err != nil || len(recorded) != 0 {
		t.Fatalf("after prune the ledger holds %q (err %v), want nothing", bindingStrings(recorded), err)
	}
	r, err = SyncTopicACLs(ctx, cfg, src, tgt, ledger)
	if err != nil || len(r.Pruned)+len(r.Revoked)+len(r.Created) != 0 {
		t.Fatalf("a sync after prune: %+v, %v; want nothing done", r, err)
	}
}

func TestSyncTopicACLsNoAuthorizer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srcCluster, src := aclCluster(t)
	tgtCluster, tgt := aclCluster(t)
	srcCluster.ControlKey(int16(kmsg.DescribeACLs), func(req kmsg.Request) (kmsg.Response, error, bool) {
		srcCluster.KeepControl()
		resp := req.(*kmsg.DescribeACLsRequest).ResponseKind().(*kmsg.DescribeACLsResponse)
		resp.ErrorCode = kerr.SecurityDisabled.Code
		return resp, nil, true
	})
	cfg := DefaultFlowConfig("us-east", "eu-west")
	r, err := SyncTopicACLs(ctx, cfg, src, tgt, ledgerFor(t, cfg, tgtCluster))
	if !errors.Is(err, ErrNoAuthorizer) || len(r.Created) != 0 {
		t.Fatalf("got (%d, %v), want (0, ErrNoAuthorizer)", len(r.Created), err)
	}
}

func TestSyncTopicACLsNeedsClusterRights(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srcCluster, srcRoot := aclCluster(t, kfake.User("SCRAM-SHA-256", "mm2", "pw"))
	tgtCluster, tgtRoot := aclCluster(t, kfake.User("SCRAM-SHA-256", "mm2", "pw"))
	lit := kadm.ACLPatternLiteral
	createACL(ctx, t, srcRoot, kadm.NewACLs().Allow("User:reader").Topics("orders").Operations(kadm.OpRead).ResourcePatternType(lit))
	src, tgt := aclAdmin(t, srcCluster, "mm2", "pw"), aclAdmin(t, tgtCluster, "mm2", "pw")
	cfg := DefaultFlowConfig("us-east", "eu-west")
	ledger := ledgerFor(t, cfg, tgtCluster)

	// Without DESCRIBE on the source cluster: DescribeAcls is refused.
	if _, err := SyncTopicACLs(ctx, cfg, src, tgt, ledger); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("without source CLUSTER DESCRIBE: got %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	createACL(ctx, t, srcRoot, kadm.NewACLs().Allow("User:mm2").Clusters().Operations(kadm.OpDescribe).ResourcePatternType(lit))
	// Without ALTER on the target cluster: CreateAcls is refused, and
	// without DESCRIBE there revoked grants cannot be tracked: the report
	// says so.
	r, err := SyncTopicACLs(ctx, cfg, src, tgt, ledger)
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) || r.Tracked || !strings.Contains(r.TrackingError, "DESCRIBE") {
		t.Fatalf("without target CLUSTER ALTER and DESCRIBE: got %v, tracked %v (%s); want CLUSTER_AUTHORIZATION_FAILED, untracked", err, r.Tracked, r.TrackingError)
	}
	// ALTER on the target CLUSTER implies DESCRIBE there: CreateAcls,
	// DescribeAcls and DeleteAcls all work.
	createACL(ctx, t, tgtRoot, kadm.NewACLs().Allow("User:mm2").Clusters().Operations(kadm.OpAlter).ResourcePatternType(lit))
	r, err = SyncTopicACLs(ctx, cfg, src, tgt, ledger)
	if err != nil || len(r.Created) != 1 || !r.Tracked {
		t.Fatalf("with target CLUSTER ALTER: got (%d created, %v, tracked %v %s), want (1, nil, tracked)", len(r.Created), err, r.Tracked, r.TrackingError)
	}
	if got := topicACLStrings(ctx, t, tgtRoot); fmt.Sprint(got) != "[ALLOW User:reader READ LITERAL us-east.orders]" {
		t.Fatalf("target topic ACLs: %q", got)
	}
}

// A prefix wider than the topics list is left out: a topic created under it
// later would not be copied, yet the renamed prefix would grant on its name.
func TestPlanTopicACLsPrefixWiderThanFilter(t *testing.T) {
	cfg := DefaultFlowConfig("us-east", "eu-west")
	cfg.Topics.Include = filter.MustCompileList("topics", `orders, pay\..*`)
	pre := func(name string) ACLBinding {
		return tb(kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypePrefixed, name, "User:p", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow)
	}
	plan := PlanTopicACLs(cfg, []ACLBinding{pre("ord"), pre("pay.eu"), pre("pay")}, []string{"orders", "pay.eu1"})
	if got := bindingStrings(plan.Bindings); fmt.Sprint(got) != "[ALLOW User:p READ TOPIC PREFIXED us-east.pay.eu host=*]" {
		t.Fatalf("bindings %q, want the prefix inside pay\\..* only", got)
	}
	if got := skipStrings(plan.Skipped); fmt.Sprint(got) != fmt.Sprint([]string{
		"prefix-wider-than-topic-filter: ALLOW User:p READ TOPIC PREFIXED ord host=*",
		"prefix-wider-than-topic-filter: ALLOW User:p READ TOPIC PREFIXED pay host=*",
	}) {
		t.Fatalf("skipped %q", got)
	}
	for _, tc := range []struct {
		items, prefix string
		want          bool
	}{
		{".*", "x", true},
		{`orders\..*`, "orders.eu", true},
		{`orders\..*`, "orders", false},
		{"orders.*", "ordersX", true},
		{"(?i)orders.*", "orders", false},
		{"orders|pay.*", "pay", false},
		{"orders, .*", "zzz", true},
		{"orders..*", "orders.", true}, // orders\..* once a .properties file ate the backslash
		{"orders..*", "orders", false},
		{"orders.+", "ordersX", true},
		{"orders.+", "orders", false},
		{"orders.x.*", "orders.x", false},
	} {
		f := filter.TopicFilter{Include: filter.MustCompileList("topics", tc.items)}
		if got := filterAdmitsPrefix(f, tc.prefix); got != tc.want {
			t.Errorf("filterAdmitsPrefix(%q, %q) = %v, want %v", tc.items, tc.prefix, got, tc.want)
		}
	}
}
