package aclplan

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	planpkg "github.com/mirrorctl/mirrorctl/aclplan"
	"github.com/mirrorctl/mirrorctl/internal/cli/clitest"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/replicate"
)

func TestNewCmdACLPlan(t *testing.T) {
	tests := []struct {
		args    string
		want    ACLPlanOptions
		wantErr string
	}{
		{args: "--principal User:mm2", want: ACLPlanOptions{Principal: "User:mm2"}},
		{args: "--principal User:mm2 --failover-principal User:ops --format kafka-acls --diff",
			want: ACLPlanOptions{Principal: "User:mm2", FailoverPrincipal: "User:ops", Format: "kafka-acls", Diff: true}},
		{args: "--principal User:mm2 --apply", want: ACLPlanOptions{Principal: "User:mm2", Apply: true}},
		{args: "", wantErr: "--principal is required, e.g. --principal User:mm2"},
		{args: "--principal User:mm2 --diff --apply", wantErr: "--diff and --apply cannot be used together (--apply shows what it created)"},
		{args: "--principal User:mm2 --format yaml", wantErr: `invalid --format "yaml": valid values are {kafka-acls|table|json}; for CSV or TSV use -o csv or -o tsv`},
		{args: "--principal mm2", wantErr: `--principal "mm2": want <type>:<name>, e.g. User:mm2`},
		{args: "--principal User:mm2 --failover-principal ops", wantErr: `--failover-principal "ops": want <type>:<name>, e.g. User:ops`},
		{args: "--principal User:mm2 --failover-principal User:mm2", wantErr: "--failover-principal is the same as --principal (User:mm2): give the operators their own principal, or leave the flag out"},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			ios, _, _, _ := iostreams.Test()
			var got *ACLPlanOptions
			cmd := NewCmdACLPlan(&cmdutil.Factory{IO: ios}, func(o *ACLPlanOptions) error { got = o; return nil })
			cmd.SetArgs(strings.Fields(tt.args))
			cmd.SetOut(ios.ErrOut)
			cmd.SetErr(ios.ErrOut)
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.Execute()
			if tt.wantErr != "" {
				var fe *cmdutil.FlagError
				if err == nil || err.Error() != tt.wantErr || !errors.As(err, &fe) {
					t.Fatalf("error = %v, want flag error %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Principal != tt.want.Principal || got.FailoverPrincipal != tt.want.FailoverPrincipal ||
				got.Format != tt.want.Format || got.Diff != tt.want.Diff || got.Apply != tt.want.Apply {
				t.Fatalf("options = %+v, want %+v", *got, tt.want)
			}
		})
	}
}

// base is the top of every test config: two clusters with fixed (never
// dialled) bootstrap servers and one enabled flow.
const base = `clusters = us-east, eu-west
us-east.bootstrap.servers = east-1:9092,east-2:9092
eu-west.bootstrap.servers = west-1:9092
us-east->eu-west.enabled = true
`

// fakeClients hands out admin clients of kfake clusters by alias.
type fakeClients struct{ admins map[string]*kadm.Client }

func (c fakeClients) Client(alias string, role replicate.ClientRole, extra ...kgo.Opt) (*kgo.Client, error) {
	return nil, fmt.Errorf("no data clients in this test")
}

func (c fakeClients) Admin(alias string) (*kadm.Client, error) {
	if a, ok := c.admins[alias]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("no cluster %q in this test", alias)
}

func parse(t *testing.T, text string) *config.Config {
	t.Helper()
	cfg, err := config.Parse("mm2.properties", strings.NewReader(text), config.WithEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func run(t *testing.T, cfg *config.Config, clients replicate.Clients, opts ACLPlanOptions) (string, string, error) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	opts.IO = ios
	opts.Config = func() (*config.Config, error) { return cfg, nil }
	opts.Output = func() output.Format { return output.FormatTable }
	opts.Clients = func() (replicate.Clients, error) {
		if clients == nil {
			return nil, errors.New("this test has no clusters")
		}
		return clients, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := runACLPlan(ctx, &opts)
	return out.String(), errOut.String(), err
}

// newCluster starts a kfake cluster with ACLs on and returns an admin
// client logged in as its super user.
func newCluster(t *testing.T, topics ...string) *kadm.Client {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("SCRAM-SHA-256", "root", "rootpw"), kfake.SeedTopics(1, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...),
		kgo.SASL(scram.Auth{User: "root", Pass: "rootpw"}.AsSha256Mechanism()), kgo.RetryTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

func TestPlanGolden(t *testing.T) {
	cases := []struct {
		name     string
		config   string
		failover string
		clusters bool // the regex case lists the source's topics
	}{
		{name: "literal", config: base + `us-east->eu-west.topics = orders, payments
us-east->eu-west.groups = app-a, app-b
`},
		{name: "prefix", failover: "User:ops", config: base + `us-east->eu-west.topics = orders\\..*, payments.*
us-east->eu-west.groups = billing-.*
us-east->eu-west.sync.group.offsets.enabled = true
`},
		{name: "regex", clusters: true, config: base + `us-east->eu-west.topics = (orders|payments)-v[0-9]+, audit
us-east->eu-west.topics.exclude = .*-v0
`},
		{name: "wildcard", config: base},
		{name: "identity", failover: "User:ops", config: base + `replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy
us-east->eu-west.topics = orders\\..*
us-east->eu-west.groups = app-.*
`},
		{name: "separator", config: base + `replication.policy.separator = _
us-east->eu-west.topics = orders_.*
us-east->eu-west.groups = app-a
us-east->eu-west.sync.group.offsets.enabled = true
`},
		{name: "features-off", config: base + `us-east->eu-west.topics = orders
us-east->eu-west.emit.checkpoints.enabled = false
us-east->eu-west.emit.heartbeats.enabled = false
us-east->eu-west.heartbeats.replication.enabled = false
us-east->eu-west.sync.topic.configs.enabled = false
us-east->eu-west.sync.topic.acls.enabled = false
`},
		{name: "location-target", config: base + `us-east->eu-west.topics = orders
us-east->eu-west.groups = app-a
us-east->eu-west.offset-syncs.topic.location = target
us-east->eu-west.sync.topic.acls.enabled = false
eu-west->us-east.emit.heartbeats.enabled = true
`},
	}
	for _, tc := range cases {
		var clients replicate.Clients
		if tc.clusters {
			clients = fakeClients{admins: map[string]*kadm.Client{
				"us-east": newCluster(t, "orders-v0", "orders-v1", "payments-v12", "payments-vx", "audit", "other", "__consumer_offsets"),
			}}
		}
		for _, format := range []string{FormatTable, FormatJSON, FormatKafkaACLs} {
			t.Run(tc.name+"/"+format, func(t *testing.T) {
				stdout, stderr, err := run(t, parse(t, tc.config), clients,
					ACLPlanOptions{Principal: "User:mm2", FailoverPrincipal: tc.failover, Format: format})
				if err != nil {
					t.Fatal(err)
				}
				ext := map[string]string{FormatTable: "tsv", FormatJSON: "json", FormatKafkaACLs: "sh"}[format]
				clitest.Golden(t, tc.name+"."+ext, stdout)
				if format == FormatTable {
					clitest.Golden(t, tc.name+".stderr", stderr)
				}
			})
		}
	}
}

func TestPlanNeedsClusterForRegex(t *testing.T) {
	_, _, err := run(t, parse(t, base+"us-east->eu-west.topics = a|b\n"), nil, ACLPlanOptions{Principal: "User:mm2"})
	want := `mm2.properties: flow us-east->eu-west: topics = a|b: a|b is neither a name nor a prefix, and expanding it needs the source: ` +
		`list topics of us-east: this test has no clusters (in mm2.properties a prefix such as orders\..* is written orders\\..*: the reader drops a single backslash)`
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v\nwant %s", err, want)
	}
}

// fakeAudit records Begin and End calls.
type fakeAudit struct{ calls []string }

func (a *fakeAudit) Begin(_ context.Context, command string, args []string, digest string, plan any) (func(context.Context, string, any, error) error, error) {
	a.calls = append(a.calls, fmt.Sprintf("begin %s %s %d", command, strings.Join(args, " "), len(plan.([]planpkg.Binding))))
	return func(_ context.Context, status string, result any, err error) error {
		a.calls = append(a.calls, fmt.Sprintf("end %s %d %v", status, len(result.([]planpkg.ApplyResult)), err))
		return nil
	}, nil
}

func TestDiffAndApply(t *testing.T) {
	east, west := newCluster(t), newCluster(t)
	clients := fakeClients{admins: map[string]*kadm.Client{"us-east": east, "eu-west": west}}
	cfg := parse(t, base+`us-east->eu-west.topics = orders\\..*
us-east->eu-west.groups = app-a
us-east->eu-west.emit.heartbeats.enabled = false
us-east->eu-west.heartbeats.replication.enabled = false
us-east->eu-west.sync.topic.acls.enabled = false
`)
	ctx := context.Background()
	lit, pre := kadm.ACLPatternLiteral, kadm.ACLPatternPrefixed
	for _, c := range []struct {
		adm *kadm.Client
		b   *kadm.ACLBuilder
	}{
		// Exactly planned.
		{east, kadm.NewACLs().Allow("User:mm2").Topics("orders.").Operations(kadm.OpRead).ResourcePatternType(pre)},
		// Broader: ALL on every topic of eu-west covers the remote topics.
		{west, kadm.NewACLs().Allow("User:mm2").Topics("*").Operations(kadm.OpAll).ResourcePatternType(lit)},
		// A DENY, and another principal's grant (ignored).
		{east, kadm.NewACLs().Deny("User:mm2").Topics("orders.secret").Operations(kadm.OpRead).ResourcePatternType(lit)},
		{east, kadm.NewACLs().Allow("User:other").Topics("orders.").Operations(kadm.OpRead).ResourcePatternType(pre)},
	} {
		if _, err := c.adm.CreateACLs(ctx, c.b); err != nil {
			t.Fatal(err)
		}
	}
	stdout, _, err := run(t, cfg, clients, ACLPlanOptions{Principal: "User:mm2", Diff: true})
	if !errors.Is(err, cmdutil.ErrCheckFailed) && !isCheckFailed(err) {
		t.Fatalf("diff with missing bindings: err = %v, want a check failure (exit 3)", err)
	}
	clitest.Golden(t, "diff.tsv", stdout)
	stdout, _, _ = run(t, cfg, clients, ACLPlanOptions{Principal: "User:mm2", Diff: true, Format: FormatKafkaACLs})
	clitest.Golden(t, "diff.sh", stdout)

	// --apply without an audit log refuses.
	if _, _, err := run(t, cfg, clients, ACLPlanOptions{Principal: "User:mm2", Apply: true}); err == nil || !strings.Contains(err.Error(), "no audit log") {
		t.Fatalf("apply without audit: err = %v", err)
	}
	audit := &fakeAudit{}
	opts := ACLPlanOptions{Principal: "User:mm2", Apply: true, Format: FormatJSON, Args: []string{"acl-plan", "--apply"},
		Audit: func() (Auditor, error) { return audit, nil }}
	stdout, _, err = run(t, cfg, clients, opts)
	if err != nil {
		t.Fatal(err)
	}
	clitest.Golden(t, "apply.json", stdout)
	if got := strings.Join(audit.calls, "\n"); got != "begin acl-plan acl-plan --apply 12\nend  12 <nil>" {
		t.Fatalf("audit calls:\n%s", got)
	}
	// Now nothing is missing: --diff exits 0, and --apply creates nothing
	// and writes no audit entry.
	if _, _, err := run(t, cfg, clients, ACLPlanOptions{Principal: "User:mm2", Diff: true}); err != nil {
		t.Fatalf("diff after apply: %v", err)
	}
	audit.calls = nil
	if _, _, err := run(t, cfg, clients, opts); err != nil || len(audit.calls) != 0 {
		t.Fatalf("second apply: err %v, audit %q", err, audit.calls)
	}
}

func isCheckFailed(err error) bool {
	var ce *cmdutil.CheckFailedError
	return errors.As(err, &ce)
}
