package replicate

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/mirrorctl/mirrorctl/replicate/filter"
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

// topicACLStrings lists the LITERAL topic ACLs of a cluster as
// "PERM principal OP topic", sorted.
func topicACLStrings(ctx context.Context, t *testing.T, adm *kadm.Client) []string {
	t.Helper()
	acls, err := describeTopicACLs(ctx, adm)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, a := range acls {
		out = append(out, fmt.Sprintf("%s %s %s %s", a.Permission, a.Principal, a.Operation, a.Topic))
	}
	sort.Strings(out)
	return out
}

func TestSyncTopicACLs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, src := aclCluster(t)
	_, tgt := aclCluster(t)
	lit := kadm.ACLPatternLiteral
	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:reader").Topics("orders", "payments").Operations(kadm.OpRead).ResourcePatternType(lit),
		kadm.NewACLs().Allow("User:owner").Topics("orders").Operations(kadm.OpAll).ResourcePatternType(lit),
		kadm.NewACLs().Allow("User:writer").Topics("orders").Operations(kadm.OpWrite, kadm.OpDescribe).ResourcePatternType(lit),
		kadm.NewACLs().Deny("User:mallory").Topics("orders").Operations(kadm.OpWrite).ResourcePatternType(lit),
		kadm.NewACLs().Allow("User:prefixed").Topics("ord").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed),
		kadm.NewACLs().Allow("User:reader").Topics("secret", "__consumer_offsets", "eu-west.back").Operations(kadm.OpRead).ResourcePatternType(lit),
		kadm.NewACLs().Allow("User:reader").Groups("g1").Operations(kadm.OpRead).ResourcePatternType(lit),
	} {
		createACL(ctx, t, src, b)
	}
	cfg := DefaultFlowConfig("us-east", "eu-west")
	cfg.Topics.Exclude = filter.MustCompileList("topics.exclude", `secret, .*[\-\.]internal, __.*`)

	n, err := SyncTopicACLs(ctx, cfg, src, tgt)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ALLOW User:owner READ us-east.orders", // ALL became READ
		"ALLOW User:reader READ us-east.orders",
		"ALLOW User:reader READ us-east.payments",
		"ALLOW User:writer DESCRIBE us-east.orders", // WRITE dropped, DESCRIBE kept
		"DENY User:mallory WRITE us-east.orders",    // DENY WRITE copied as is
	}
	if got := topicACLStrings(ctx, t, tgt); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("target topic ACLs:\n got %q\nwant %q", got, want)
	}
	if n != len(want) {
		t.Fatalf("created = %d, want %d", n, len(want))
	}
	// Additive and repeatable: a second run changes nothing and deletes nothing.
	createACL(ctx, t, tgt, kadm.NewACLs().Allow("User:local").Topics("us-east.orders").Operations(kadm.OpRead).ResourcePatternType(lit))
	if _, err := SyncTopicACLs(ctx, cfg, src, tgt); err != nil {
		t.Fatal(err)
	}
	want = append([]string{"ALLOW User:local READ us-east.orders"}, want...)
	if got := topicACLStrings(ctx, t, tgt); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after a second run:\n got %q\nwant %q", got, want)
	}
	// No prefixed or group ACL reached the target.
	all, err := tgt.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Deny().DenyHosts().Operations().ResourcePatternType(kadm.ACLPatternAny))
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, r := range all {
		total += len(r.Described)
	}
	if total != len(want) {
		t.Fatalf("target holds %d ACLs, want %d", total, len(want))
	}
}

func TestSyncTopicACLsNoAuthorizer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srcCluster, src := aclCluster(t)
	_, tgt := aclCluster(t)
	srcCluster.ControlKey(int16(kmsg.DescribeACLs), func(req kmsg.Request) (kmsg.Response, error, bool) {
		srcCluster.KeepControl()
		resp := req.(*kmsg.DescribeACLsRequest).ResponseKind().(*kmsg.DescribeACLsResponse)
		resp.ErrorCode = kerr.SecurityDisabled.Code
		return resp, nil, true
	})
	n, err := SyncTopicACLs(ctx, DefaultFlowConfig("us-east", "eu-west"), src, tgt)
	if !errors.Is(err, ErrNoAuthorizer) || n != 0 {
		t.Fatalf("got (%d, %v), want (0, ErrNoAuthorizer)", n, err)
	}
}

func TestSyncTopicACLsNeedsClusterRights(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srcCluster, srcRoot := aclCluster(t, kfake.User("SCRAM-SHA-256", "mm2", "pw"))
	tgtCluster, tgtRoot := aclCluster(t, kfake.User("SCRAM-SHA-256", "mm2", "pw"))
	lit := kadm.ACLPatternLiteral
	createACL(ctx, t, srcRoot, kadm.NewACLs().Allow("User:reader").Topics("orders").Operations(kadm.OpRead).ResourcePatternType(lit))
	src, tgt := aclAdmin(t, srcCluster, "mm2", "pw"), aclAdmin(t, tgtCluster, "mm2", "pw")
	cfg := DefaultFlowConfig("us-east", "eu-west")

	// Without DESCRIBE on the source cluster: DescribeAcls is refused.
	if _, err := SyncTopicACLs(ctx, cfg, src, tgt); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("without source CLUSTER DESCRIBE: got %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	createACL(ctx, t, srcRoot, kadm.NewACLs().Allow("User:mm2").Clusters().Operations(kadm.OpDescribe).ResourcePatternType(lit))
	// Without ALTER on the target cluster: CreateAcls is refused.
	if _, err := SyncTopicACLs(ctx, cfg, src, tgt); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("without target CLUSTER ALTER: got %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	createACL(ctx, t, tgtRoot, kadm.NewACLs().Allow("User:mm2").Clusters().Operations(kadm.OpAlter).ResourcePatternType(lit))
	n, err := SyncTopicACLs(ctx, cfg, src, tgt)
	if err != nil || n != 1 {
		t.Fatalf("with both rights: got (%d, %v), want (1, nil)", n, err)
	}
	if got := topicACLStrings(ctx, t, tgtRoot); fmt.Sprint(got) != "[ALLOW User:reader READ us-east.orders]" {
		t.Fatalf("target topic ACLs: %q", got)
	}
}
