package aclplan

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/mirrorctl/mirrorctl/replicate"
	"github.com/mirrorctl/mirrorctl/replicate/filter"
)

func TestItemShape(t *testing.T) {
	for _, tc := range []struct {
		item  string
		shape int
		name  string
	}{
		{"orders", shapeLiteral, "orders"},
		{`orders\.v1`, shapeLiteral, "orders.v1"},
		{`orders\..*`, shapePrefix, "orders."},
		{"orders.*", shapePrefix, "orders"},
		{".*", shapeWildcard, ""},
		{"orders..*", shapeRegex, ""}, // what `orders\..*` becomes when a .properties file eats the backslash
		{"orders|payments", shapeRegex, ""},
		{"(?i)orders", shapeRegex, ""},
		{"orders.+", shapeRegex, ""},
		{"[a-z]+", shapeRegex, ""},
	} {
		shape, name := itemShape(tc.item)
		if shape != tc.shape || name != tc.name {
			t.Errorf("itemShape(%q) = %d %q, want %d %q", tc.item, shape, name, tc.shape, tc.name)
		}
	}
}

func TestCoversAndImplies(t *testing.T) {
	b := func(pattern, name, op string) Binding {
		return Binding{Cluster: "c", Principal: "User:p", Host: AnyHost, ResourceType: TypeTopic, PatternType: pattern, ResourceName: name, Operation: op, Permission: Allow}
	}
	for _, tc := range []struct {
		have, want Binding
		ok         bool
	}{
		{b(PatternLiteral, "a", OpRead), b(PatternLiteral, "a", OpDescribe), true},
		{b(PatternLiteral, "a", OpWrite), b(PatternLiteral, "a", OpDescribe), true},
		{b(PatternLiteral, "a", OpCreate), b(PatternLiteral, "a", OpDescribe), false},
		{b(PatternLiteral, "a", OpAlterConfigs), b(PatternLiteral, "a", OpDescribeConfigs), true},
		{b(PatternLiteral, "a", OpDescribeConfigs), b(PatternLiteral, "a", OpDescribe), false},
		{b(PatternPrefixed, "us-east.", OpRead), b(PatternLiteral, "us-east.heartbeats", OpRead), true},
		{b(PatternPrefixed, "us-east.", OpRead), b(PatternPrefixed, "us-east.orders", OpRead), true},
		{b(PatternPrefixed, "us-east.orders", OpRead), b(PatternPrefixed, "us-east.", OpRead), false},
		{b(PatternLiteral, Wildcard, OpAll), b(PatternPrefixed, "x", OpAlter), true},
		{b(PatternLiteral, "a", OpRead), b(PatternLiteral, "b", OpRead), false},
	} {
		if got := tc.have.Covers(tc.want); got != tc.ok {
			t.Errorf("%s covers %s = %v, want %v", tc.have, tc.want, got, tc.ok)
		}
	}
}

func TestBuildMinimalDefault(t *testing.T) {
	cfg := replicate.DefaultFlowConfig("us-east", "eu-west")
	cfg.Topics.Include = filter.MustCompileList("topics", "orders")
	cfg.Groups.Include = filter.MustCompileList("groups", "g")
	cfg.HeartbeatsReplication = false
	cfg.EmitHeartbeats = false
	plan, err := Build(Input{Principal: "User:mm2", Flows: []Flow{{FlowConfig: cfg}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range plan.Bindings {
		got = append(got, fmt.Sprintf("%s %s %s %s", b.Cluster, b.ResourceName, b.PatternType, b.Operation))
	}
	want := []string{
		"eu-west heartbeats LITERAL READ", // MM2 still beating? (replicate/mm2live.go)
		"eu-west mirrorctl-progress.us-east.internal LITERAL READ",
		"eu-west mirrorctl-progress.us-east.internal LITERAL WRITE",
		"eu-west mirrorctl-progress.us-east.internal LITERAL CREATE",
		"eu-west mm2-offsets.us-east.internal LITERAL READ", // where MM2 stopped
		"eu-west us-east.checkpoints.internal LITERAL READ",
		"eu-west us-east.checkpoints.internal LITERAL WRITE",
		"eu-west us-east.checkpoints.internal LITERAL CREATE",
		"eu-west us-east.orders LITERAL WRITE",
		"eu-west us-east.orders LITERAL CREATE",
		"eu-west us-east.orders LITERAL ALTER",
		"eu-west us-east.orders LITERAL ALTER_CONFIGS",
		"eu-west mirrorctl-us-east-eu-west-leader LITERAL READ",
		"eu-west us-east-mm2 LITERAL DESCRIBE", // MM2's Connect group
		"us-east mm2-offset-syncs.eu-west.internal LITERAL READ",
		"us-east mm2-offset-syncs.eu-west.internal LITERAL WRITE",
		"us-east mm2-offset-syncs.eu-west.internal LITERAL CREATE",
		"us-east orders LITERAL READ",
		"us-east orders LITERAL DESCRIBE_CONFIGS",
		"us-east g LITERAL DESCRIBE",
		"us-east mirrorctl-us-east-eu-west LITERAL READ",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("bindings:\n got %q\nwant %q", got, want)
	}
	if _, err := Build(Input{Principal: "mm2"}); err == nil {
		t.Fatal("a principal without a type was accepted")
	}
}

// TestBuildFailoverPrincipal checks the operators' bindings: reads for
// translate, failover verify and lag, commits on the target for failover
// apply and on the source for a restore, the drill's shadow group (commit
// and delete), the internal topics whether or not the mirror emits them
// (lag and translate's exact mode read them regardless), and CLUSTER ALTER
// on the source for the write fence unless NoFence.
func TestBuildFailoverPrincipal(t *testing.T) {
	common := []string{
		"eu-west heartbeats LITERAL READ",
		"eu-west mirrorctl-progress.us-east.internal LITERAL READ",
		"eu-west mm2-offsets.us-east.internal LITERAL READ", // lag reads MM2's Connect source offsets
		"eu-west us-east.checkpoints.internal LITERAL READ",
		"eu-west us-east.orders LITERAL READ",
		"eu-west g LITERAL READ",
		"eu-west g.mirrorctl-drill LITERAL READ",
		"eu-west g.mirrorctl-drill LITERAL DELETE",
	}
	for _, tc := range []struct {
		name     string
		location string
		emit     bool
		want     []string
	}{
		{"default", replicate.LocationSource, true, append(common,
			"us-east mm2-offset-syncs.eu-west.internal LITERAL READ",
			"us-east orders LITERAL READ",
			"us-east g LITERAL READ")},
		{"offset syncs on the target", replicate.LocationTarget, true, []string{
			"eu-west heartbeats LITERAL READ",
			"eu-west mirrorctl-progress.us-east.internal LITERAL READ",
			"eu-west mm2-offset-syncs.us-east.internal LITERAL READ",
			"eu-west mm2-offsets.us-east.internal LITERAL READ",
			"eu-west us-east.checkpoints.internal LITERAL READ",
			"eu-west us-east.orders LITERAL READ",
			"eu-west g LITERAL READ",
			"eu-west g.mirrorctl-drill LITERAL READ",
			"eu-west g.mirrorctl-drill LITERAL DELETE",
			"us-east orders LITERAL READ",
			"us-east g LITERAL READ"}},
		{"checkpoints and offset syncs off", replicate.LocationSource, false, append(common,
			"us-east mm2-offset-syncs.eu-west.internal LITERAL READ",
			"us-east orders LITERAL READ",
			"us-east g LITERAL READ")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := replicate.DefaultFlowConfig("us-east", "eu-west")
			cfg.Topics.Include = filter.MustCompileList("topics", "orders")
			cfg.Groups.Include = filter.MustCompileList("groups", "g")
			cfg.HeartbeatsReplication = false
			cfg.EmitHeartbeats = false
			cfg.OffsetSyncsTopicLocation = tc.location
			cfg.EmitCheckpoints, cfg.EmitOffsetSyncs = tc.emit, tc.emit
			plan, err := Build(Input{Principal: "User:mm2", FailoverPrincipal: "User:ops", Flows: []Flow{{FlowConfig: cfg}}, NoFence: true})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, b := range plan.Bindings {
				if b.Principal != "User:ops" {
					continue
				}
				shadowDelete := b.Operation == OpDelete && b.ResourceType == TypeGroup && b.Cluster == "eu-west" && b.ResourceName == "g.mirrorctl-drill"
				if b.Operation != OpRead && b.Operation != OpDescribe && !shadowDelete {
					t.Errorf("the failover principal gets more than reads and the drill's shadow group: %s", b)
				}
				if b.Reason == "" {
					t.Errorf("binding without a reason: %s", b)
				}
				got = append(got, fmt.Sprintf("%s %s %s %s", b.Cluster, b.ResourceName, b.PatternType, b.Operation))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("failover bindings:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
	// Reverse checkpoints: the mirror writes them on the source and reads
	// the target's groups; the failover principal reads them on the source.
	cfg := replicate.DefaultFlowConfig("us-east", "eu-west")
	cfg.Topics.Include = filter.MustCompileList("topics", "orders")
	cfg.Groups.Include = filter.MustCompileList("groups", "g")
	cfg.HeartbeatsReplication, cfg.EmitHeartbeats, cfg.ReverseCheckpoints = false, false, true
	plan, err := Build(Input{Principal: "User:mm2", FailoverPrincipal: "User:ops", Flows: []Flow{{FlowConfig: cfg}}})
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, b := range plan.Bindings {
		have[fmt.Sprintf("%s %s %s %s %s", b.Principal, b.Cluster, b.ResourceName, b.PatternType, b.Operation)] = true
	}
	for _, w := range []string{
		"User:mm2 us-east eu-west.checkpoints.internal LITERAL CREATE",
		"User:mm2 us-east eu-west.checkpoints.internal LITERAL WRITE",
		"User:mm2 eu-west g LITERAL DESCRIBE",
		"User:ops us-east eu-west.checkpoints.internal LITERAL READ",
	} {
		if !have[w] {
			t.Errorf("reverse checkpoints: no binding %q", w)
		}
	}
	// The write fence: CLUSTER ALTER on the source only, with a warning.
	cfg = replicate.DefaultFlowConfig("us-east", "eu-west")
	cfg.Topics.Include = filter.MustCompileList("topics", "orders")
	cfg.Groups.Include = filter.MustCompileList("groups", "g")
	plan, err = Build(Input{Principal: "User:mm2", FailoverPrincipal: "User:ops", Flows: []Flow{{FlowConfig: cfg}}})
	if err != nil {
		t.Fatal(err)
	}
	var cluster []string
	for _, b := range plan.Bindings {
		if b.Principal == "User:ops" && b.ResourceType == TypeCluster {
			cluster = append(cluster, b.Cluster+" "+b.Operation)
		}
	}
	if fmt.Sprint(cluster) != "[us-east ALTER]" || !strings.Contains(fmt.Sprint(plan.Notes), "the write fence gives User:ops CLUSTER ALTER on us-east") {
		t.Fatalf("fence: CLUSTER bindings %v, notes %v; want us-east ALTER and a warning", cluster, plan.Notes)
	}
	if _, err := Build(Input{Principal: "User:mm2", FailoverPrincipal: "ops"}); err == nil {
		t.Fatal("a failover principal without a type was accepted")
	}
}

func TestKafkaACLsLine(t *testing.T) {
	got := KafkaACLsLine(Binding{Cluster: "us-east", Principal: "User:mm2", Host: AnyHost, ResourceType: TypeGroup,
		PatternType: PatternLiteral, ResourceName: "it's", Operation: OpDescribe, Permission: Allow}, "")
	want := `kafka-acls.sh --bootstrap-server us-east-bootstrap:9092 --command-config us-east-admin.properties --add --allow-principal User:mm2 --allow-host '*' --operation Describe --group 'it'\''s' --resource-pattern-type literal`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestDiff(t *testing.T) {
	b := func(name, op, perm string) Binding {
		return Binding{Cluster: "c", Principal: "User:p", Host: AnyHost, ResourceType: TypeTopic, PatternType: PatternLiteral, ResourceName: name, Operation: op, Permission: perm}
	}
	planned := []Binding{b("a", OpRead, Allow), b("b", OpWrite, Allow), b("c", OpCreate, Allow)}
	existing := []Binding{b("a", OpRead, Allow), b(Wildcard, OpAll, Allow), b("d", OpRead, "DENY"),
		{Cluster: "other", Principal: "User:p", Host: AnyHost, ResourceType: TypeTopic, PatternType: PatternLiteral, ResourceName: "x", Operation: OpRead, Permission: Allow}}
	var got []string
	for _, e := range Diff(planned, existing) {
		got = append(got, e.Status+" "+e.Binding.ResourceName+" "+e.Via)
	}
	want := []string{"present a ", "present b c User:p ALLOW ALL TOPIC LITERAL *", "present c c User:p ALLOW ALL TOPIC LITERAL *", "broader * ", "deny d "}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("diff:\n got %q\nwant %q", got, want)
	}
}

// TestExactlyOnceBindings: exactly-once adds WRITE and DESCRIBE on the
// transactional ids <group>-* on the target (WRITE implies DESCRIBE), and
// nothing else changes.
func TestExactlyOnceBindings(t *testing.T) {
	cfg := replicate.DefaultFlowConfig("us-east", "eu-west")
	cfg.Topics.Include = filter.MustCompileList("topics", "orders")
	base, err := Build(Input{Principal: "User:mm2", Flows: []Flow{{FlowConfig: cfg}}})
	if err != nil {
		t.Fatal(err)
	}
	cfg.ExactlyOnce = true
	plan, err := Build(Input{Principal: "User:mm2", Flows: []Flow{{FlowConfig: cfg}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range plan.Bindings {
		if b.ResourceType == TypeTransactionalID {
			got = append(got, fmt.Sprintf("%s %s %s %s", b.Cluster, b.ResourceName, b.PatternType, b.Operation))
		}
	}
	// WRITE implies DESCRIBE, so the plan lists WRITE only.
	want := "[eu-west mirrorctl-us-east-eu-west- PREFIXED WRITE]"
	if fmt.Sprint(got) != want {
		t.Fatalf("transactional id bindings %q, want %s", got, want)
	}
	if len(plan.Bindings) != len(base.Bindings)+1 {
		t.Fatalf("%d bindings with exactly-once, %d without: want exactly the transactional-id one more", len(plan.Bindings), len(base.Bindings))
	}
	line := KafkaACLsLine(Binding{Cluster: "eu-west", Principal: "User:mm2", Host: AnyHost, ResourceType: TypeTransactionalID,
		PatternType: PatternPrefixed, ResourceName: "g-", Operation: OpWrite, Permission: Allow}, "")
	if !strings.Contains(line, "--transactional-id g- --resource-pattern-type prefixed") {
		t.Fatalf("kafka-acls line %s", line)
	}
}

// sync.topic.acls adds exactly: DESCRIBE on the source CLUSTER, ALTER on
// the target CLUSTER (CreateAcls; DescribeAcls and, with prune, DeleteAcls
// are implied by it) and CREATE, WRITE and READ on the ACL ledger topic on
// the target; prune adds no binding, only its reason.
func TestACLSyncBindings(t *testing.T) {
	cfg := replicate.DefaultFlowConfig("us-east", "eu-west")
	cfg.Topics.Include = filter.MustCompileList("topics", "orders")
	build := func(sync, prune bool) []Binding {
		c := cfg
		c.SyncTopicACLsPrune = prune
		plan, err := Build(Input{Principal: "User:mm2", Flows: []Flow{{FlowConfig: c, SyncTopicACLs: sync}}})
		if err != nil {
			t.Fatal(err)
		}
		return plan.Bindings
	}
	off, on, prune := build(false, false), build(true, false), build(true, true)
	have := map[string]bool{}
	for _, b := range off {
		have[b.key().String()] = true
	}
	var added []string
	for _, b := range on {
		if !have[b.key().String()] {
			added = append(added, b.String())
		}
	}
	want := []string{
		"eu-west User:mm2 ALLOW ALTER CLUSTER LITERAL kafka-cluster",
		"eu-west User:mm2 ALLOW CREATE TOPIC LITERAL mirrorctl-acls.us-east.internal",
		"eu-west User:mm2 ALLOW READ TOPIC LITERAL mirrorctl-acls.us-east.internal",
		"eu-west User:mm2 ALLOW WRITE TOPIC LITERAL mirrorctl-acls.us-east.internal",
		"us-east User:mm2 ALLOW DESCRIBE CLUSTER LITERAL kafka-cluster",
	}
	sort.Strings(added)
	if fmt.Sprint(added) != fmt.Sprint(want) {
		t.Fatalf("sync.topic.acls adds %q, want %q", added, want)
	}
	if len(prune) != len(on) {
		t.Fatalf("prune changes the binding count: %d, want %d", len(prune), len(on))
	}
	for _, b := range prune {
		if b.ResourceType == TypeCluster && b.Cluster == "eu-west" && !strings.Contains(b.Reason, "DeleteAcls") {
			t.Fatalf("with prune, the target CLUSTER ALTER does not say DeleteAcls: %s", b.Reason)
		}
	}
}
