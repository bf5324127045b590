//go:build kafka

package itest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/aclplan"
	"github.com/mirrorctl/mirrorctl/internal/cli"
	aclplancmd "github.com/mirrorctl/mirrorctl/internal/cli/aclplan"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// TestACLPlanOnRealAuthorizer proves acl-plan's bindings on the harness's
// SASL_SSL listeners (SCRAM, StandardAuthorizer) for two principals: the
// mirror principal (the harness's app user, which has no ACLs of its own)
// and a failover principal (a fresh SCRAM user, ops-<random>, created on
// both clusters for the test). Each gets exactly the plan's bindings, and
// every operation of the enabled features succeeds: the mirror's replicate
// --once runs and ACL sync as the app user, then translate (checkpoint and
// auto mode), a planned failover with a write fence, fence status and
// remove, a restore, a drill and lag as the failover principal.
// Then, for each binding in turn, the principals get every binding but
// that one, and some operation fails (minimality). It prints the table
// binding -> operation that failed. It runs for the default offset-syncs
// location (source) and for target, where the plan has no write right on
// the source at all.
//
// Each run uses fresh cluster aliases and topic and group names, so every
// CREATE is exercised; the bindings whose resource names are the same in
// every run (the target's heartbeats topic and the CLUSTER rights) are
// removed in sequential runs, the others in parallel runs.
func TestACLPlanOnRealAuthorizer(t *testing.T) {
	for _, loc := range []string{replicate.LocationSource, replicate.LocationTarget} {
		t.Run("offset-syncs-on-"+loc, func(t *testing.T) { aclProof(t, loc) })
	}
}

// aclEnv holds the harness clients of one proof.
type aclEnv struct {
	t          *testing.T
	loc        string
	principal  string
	eastAdmin  *kadm.Client // SASL_SSL super user: ACL changes
	westAdmin  *kadm.Client
	eastPlain  *kgo.Client // PLAINTEXT (ANONYMOUS super user): data setup
	westPlain  *kgo.Client
	eastApp    *kadm.Client // the app user: the ACL sync operation
	westApp    *kadm.Client
	appOpts    []kgo.Opt // the app user's client options
	eastSASL   string
	westSASL   string
	ca, appUsr string
	// foUsr is the failover principal's SCRAM user (ops-<random>) and
	// foPrincipal its principal, "User:" + foUsr.
	foUsr, foPrincipal string
	// revoking counts the revokes of run-specific bindings still going on
	// (tryUnique does not wait for them).
	revoking sync.WaitGroup
}

// aclRun is one run: fresh names, its config, its plan.
type aclRun struct {
	u          string // unique id in every name of the run
	east, west string // cluster aliases
	topic      string // source topic
	remote     string // its remote name
	group      string
	path       string // mm2.properties, logged in as the app user
	foPath     string // the same clusters and flows, logged in as the failover user
	audit      string // failover's audit log
	fo         string // the failover principal
	flow       replicate.FlowConfig
	plan       []aclplan.Binding
}

// aclOperation is one operation of the enabled features, run as the app
// user (the mirror) or the failover user (operators). It returns nil when it
// succeeded and its results are all there.
type aclOperation struct {
	name string
	run  func(ctx context.Context, e *aclEnv, r *aclRun) error
}

// aclOperations are run in order; the first failure ends a run.
var aclOperations = []aclOperation{
	{"replicate --once (first run: create, copy, offset syncs, checkpoints, group offset sync, heartbeats, config sync)", opReplicateFirst},
	{"replicate --once (after partition growth and a config change: resume from progress, reload checkpoints, grow, sync configs)", opReplicateSecond},
	{"sync.topic.acls (replicate.SyncTopicACLs)", opSyncACLs},
	{"translate --mode checkpoint, then auto (failover principal)", opTranslate},
	{"failover apply --type planned --fence-principal, fence status, fence remove (failover principal)", opFailover},
	{"failover apply --type restore (failover principal)", opRestore},
	{"failover drill --type planned (failover principal)", opDrill},
	{"lag (failover principal)", opLag},
}

func aclProof(t *testing.T, loc string) {
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	admin, adminPW := mustEnv(t, "MIRRORCTL_KAFKA_SCRAM_USER"), mustEnv(t, "MIRRORCTL_KAFKA_SCRAM_PASSWORD")
	app, appPW := mustEnv(t, "MIRRORCTL_KAFKA_APP_USER"), mustEnv(t, "MIRRORCTL_KAFKA_APP_PASSWORD")
	t.Setenv("ITEST_APP_PASSWORD", appPW)
	e := &aclEnv{t: t, loc: loc, principal: "User:" + app, appUsr: app,
		eastSASL: mustEnv(t, "MIRRORCTL_KAFKA_US_EAST_SASL"), westSASL: mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST_SASL"),
		ca: mustEnv(t, "MIRRORCTL_KAFKA_CA_PEM")}
	e.eastAdmin = kadm.NewClient(newClient(t, e.eastSASL, saslOpts(t, admin, adminPW)...))
	e.westAdmin = kadm.NewClient(newClient(t, e.westSASL, saslOpts(t, admin, adminPW)...))
	e.eastPlain = newClient(t, mustEnv(t, "MIRRORCTL_KAFKA_US_EAST"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	e.westPlain = newClient(t, mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST"))
	appOpts := append(saslOpts(t, app, appPW), kgo.RetryTimeout(10*time.Second))
	e.appOpts = appOpts
	e.eastApp = kadm.NewClient(newClient(t, e.eastSASL, appOpts...))
	e.westApp = kadm.NewClient(newClient(t, e.westSASL, appOpts...))
	e.foUsr = "ops-" + uniq(t)
	e.foPrincipal = "User:" + e.foUsr
	foPW := uniq(t) + uniq(t) + uniq(t) + uniq(t)
	t.Setenv("ITEST_OPS_PASSWORD", foPW)
	e.createSCRAMUser(ctx, e.foUsr, foPW)

	// Baseline: every binding granted, every operation succeeds.
	base := e.newRun(ctx)
	e.printPlan(base)
	e.deleteTopic(ctx, e.westPlain, "heartbeats") // so that CREATE on it is exercised
	if err := e.try(ctx, base, nil); err != nil {
		t.Fatalf("with every planned binding, an operation failed: %v", err)
	}
	t.Logf("baseline: all %d operations succeeded with the %d planned bindings", len(aclOperations), len(base.plan))

	type result struct{ binding, op, err string }
	var (
		mu      sync.Mutex
		results []result
	)
	record := func(tmpl string, err error) {
		mu.Lock()
		defer mu.Unlock()
		var fe *opError
		if errors.As(err, &fe) {
			results = append(results, result{tmpl, fe.op, fe.short()})
		} else {
			results = append(results, result{tmpl, "NONE", fmt.Sprint(err)})
		}
	}
	var shared, unique []string
	for _, b := range base.plan {
		tmpl := base.template(b)
		if strings.Contains(tmpl, "{u}") {
			unique = append(unique, tmpl)
		} else {
			shared = append(shared, tmpl)
		}
	}
	// Shared resources: one run at a time. Without one of the mirror's
	// heartbeats bindings, the topic must not exist for the run to need it.
	mirrorHeartbeats := func(tmpl string) bool {
		return strings.HasSuffix(tmpl, " heartbeats") && strings.Contains(tmpl, " "+e.principal+" ")
	}
	for _, tmpl := range shared {
		r := e.newRun(ctx)
		if mirrorHeartbeats(tmpl) {
			e.deleteTopic(ctx, e.westPlain, "heartbeats")
		}
		err := e.try(ctx, r, &tmpl)
		if !isAuthz(err) {
			e.t.Logf("without %s: %v; retrying with fresh names", tmpl, err)
			r = e.newRun(ctx)
			if mirrorHeartbeats(tmpl) {
				e.deleteTopic(ctx, e.westPlain, "heartbeats")
			}
			err = e.try(ctx, r, &tmpl)
		}
		record(tmpl, err)
	}
	// Run-specific resources: the shared bindings stay granted, runs in parallel.
	var sharedBindings []aclplan.Binding
	for _, b := range base.plan {
		if !strings.Contains(base.template(b), "{u}") {
			sharedBindings = append(sharedBindings, b)
		}
	}
	e.grant(ctx, sharedBindings)
	defer e.revoke(context.WithoutCancel(ctx), sharedBindings)
	work := make(chan string)
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tmpl := range work {
				err := e.tryUnique(ctx, e.newRun(ctx), tmpl)
				if !isAuthz(err) {
					// A failure without an authorization error may be a
					// flake rather than the missing binding: once more.
					e.t.Logf("without %s: %v; retrying with fresh names", tmpl, err)
					err = e.tryUnique(ctx, e.newRun(ctx), tmpl)
				}
				record(tmpl, err)
			}
		}()
	}
	for _, tmpl := range unique {
		work <- tmpl
	}
	close(work)
	wg.Wait()
	e.revoking.Wait()

	sort.Slice(results, func(i, j int) bool { return results[i].binding < results[j].binding })
	var b strings.Builder
	fmt.Fprintf(&b, "offset-syncs.topic.location=%s: binding removed -> operation that failed without it\n", loc)
	for _, r := range results {
		fmt.Fprintf(&b, "  %-95s -> %s: %s\n", r.binding, r.op, r.err)
	}
	t.Log(b.String())
	for _, r := range results {
		if r.op != "NONE" {
			continue
		}
		if src, ok := syncRestores(base, r.binding); ok {
			// The ACL sync renames the source's PREFIXED grant onto the
			// remote topics (docs/sync-fidelity.md): removing the target
			// binding proves nothing, the first sync puts it back.
			t.Logf("binding %s: restored by sync.topic.acls from the source's %s", r.binding, src)
			continue
		}
		t.Errorf("binding %s is not needed: every operation succeeded without it", r.binding)
	}
	if loc == replicate.LocationTarget {
		for _, bd := range base.plan {
			// The mirror's principal; the operators' fence is a write on
			// the source by design (CLUSTER ALTER, acl-plan --no-fence).
			if bd.Principal == e.principal && bd.Cluster == base.east && (bd.Operation == aclplan.OpWrite || bd.Operation == aclplan.OpCreate || bd.Operation == aclplan.OpAlter) {
				t.Errorf("offset-syncs on the target, yet the plan has the mirror write to the source: %s", bd)
			}
		}
	}
}

// syncRestores reports whether the target binding tmpl (a template of the
// base run) is what the flow's ACL sync makes of a PREFIXED topic binding
// the plan gives the same principal on the source: the source's name under
// the default policy's prefix, same operation (READ or DESCRIBE, which the
// sync keeps). It returns that source binding's template.
func syncRestores(base *aclRun, tmpl string) (string, bool) {
	for _, b := range base.plan {
		if base.template(b) != tmpl || b.Cluster != base.west || b.ResourceType != aclplan.TypeTopic ||
			b.PatternType != aclplan.PatternPrefixed || (b.Operation != aclplan.OpRead && b.Operation != aclplan.OpDescribe) {
			continue
		}
		for _, s := range base.plan {
			if s.Cluster == base.east && s.Principal == b.Principal && s.ResourceType == aclplan.TypeTopic &&
				s.PatternType == aclplan.PatternPrefixed && s.Operation == b.Operation && base.east+"."+s.ResourceName == b.ResourceName {
				return base.template(s), true
			}
		}
	}
	return "", false
}

// newRun makes fresh names, writes the run's config and plans it.
func (e *aclEnv) newRun(ctx context.Context) *aclRun {
	t := e.t
	u := uniq(t)
	r := &aclRun{u: u, east: "e" + u, west: "w" + u, topic: "acl" + u + ".orders", group: "acl" + u + "-app", fo: e.foPrincipal}
	r.remote = r.east + "." + r.topic
	dir := t.TempDir()
	r.path = filepath.Join(dir, "mm2.properties")
	r.foPath = filepath.Join(dir, "ops.properties")
	r.audit = filepath.Join(dir, "audit.jsonl")
	security := func(alias, bootstrap, user, passwordEnv string) string {
		return fmt.Sprintf(`%[1]s.bootstrap.servers = %[2]s
%[1]s.security.protocol = SASL_SSL
%[1]s.sasl.mechanism = SCRAM-SHA-512
%[1]s.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required \
  username="%[3]s" password="${env:%[5]s}";
%[1]s.ssl.truststore.type = PEM
%[1]s.ssl.truststore.location = %[4]s
%[1]s.admin.default.api.timeout.ms = 8000
%[1]s.consumer.default.api.timeout.ms = 8000
%[1]s.producer.default.api.timeout.ms = 8000
`, alias, bootstrap, user, e.ca, passwordEnv)
	}
	flows := "config.providers = env\nconfig.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider\n" +
		fmt.Sprintf(`%[1]s->%[2]s.enabled = true
%[1]s->%[2]s.topics = acl%[3]s\\..*
%[1]s->%[2]s.groups = acl%[3]s-.*
%[1]s->%[2]s.sync.group.offsets.enabled = true
%[1]s->%[2]s.offset-syncs.topic.location = %[4]s
%[1]s->%[2]s.heartbeats.replication.enabled = false
%[2]s->%[1]s.emit.heartbeats.enabled = false
replication.factor = 1
offset-syncs.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
checkpoints.topic.replication.factor = 1
`, r.east, r.west, u, e.loc)
	if e.loc == replicate.LocationTarget {
		// One of the two proofs runs the flow exactly-once, so the
		// TRANSACTIONAL_ID binding is proven needed (and enough) too.
		flows += r.west + ".exactly.once.source.support = enabled\n"
	}
	header := fmt.Sprintf("clusters = %[1]s, %[2]s\n", r.east, r.west)
	writeFile(t, r.path, header+security(r.east, e.eastSASL, e.appUsr, "ITEST_APP_PASSWORD")+security(r.west, e.westSASL, e.appUsr, "ITEST_APP_PASSWORD")+flows)
	writeFile(t, r.foPath, header+security(r.east, e.eastSASL, e.foUsr, "ITEST_OPS_PASSWORD")+security(r.west, e.westSASL, e.foUsr, "ITEST_OPS_PASSWORD")+flows)
	cfg, err := config.Load(r.path)
	if err != nil {
		t.Fatal(err)
	}
	planFlows := aclplancmd.Flows(cfg)
	plan, err := aclplan.Build(aclplan.Input{Principal: e.principal, FailoverPrincipal: e.foPrincipal, Flows: planFlows})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range planFlows {
		if f.Enabled {
			r.flow = f.FlowConfig
		}
	}
	r.plan = plan.Bindings

	// Source data: a 2-partition topic with a config override, 20 records
	// per partition, and a group that committed halfway.
	adm := kadm.NewClient(e.eastPlain)
	if _, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"retention.ms": ptrTo("3600000")}, r.topic); err != nil {
		t.Fatal(err)
	}
	produceAll(ctx, t, e.eastPlain, shapes(r.topic, 2, 0, 20))
	offs := kadm.Offsets{}
	offs.AddOffset(r.topic, 0, 10, -1)
	offs.AddOffset(r.topic, 1, 10, -1)
	if _, err := adm.CommitOffsets(ctx, r.group, offs); err != nil {
		t.Fatal(err)
	}
	// A cluster's group coordinator answers COORDINATOR_NOT_AVAILABLE
	// until __consumer_offsets exists: warm it up on the target.
	pollUntil(ctx, t, 30*time.Second, "group coordinator on the target", func(ctx context.Context) (bool, string) {
		_, err := kadm.NewClient(e.westPlain).DescribeGroups(ctx, r.group)
		return err == nil, fmt.Sprint(err)
	})
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = adm.DeleteGroup(ctx, r.group)
		_, _ = adm.DeleteTopics(ctx, r.topic)
		syncAlias, syncTopic := r.flow.OffsetSyncsTopic()
		west := kadm.NewClient(e.westPlain)
		_, _ = west.DeleteGroup(ctx, r.group)
		_, _ = west.DeleteTopics(ctx, r.remote, r.flow.Policy.CheckpointsTopic(r.east), replicate.ProgressTopic(r.flow.Policy, r.east))
		if syncAlias == r.east {
			_, _ = adm.DeleteTopics(ctx, syncTopic)
		} else {
			_, _ = west.DeleteTopics(ctx, syncTopic)
		}
	})
	return r
}

func ptrTo(s string) *string { return &s }

// template returns the binding with the run's unique id replaced by {u}
// and the failover principal by User:ops, the same string for the same
// binding of every run.
func (r *aclRun) template(b aclplan.Binding) string {
	b.Reason = ""
	if b.Principal == r.fo {
		b.Principal = "User:ops"
	}
	s := b.String()
	s = strings.Replace(s, r.east+" ", "us-east ", 1)
	s = strings.Replace(s, r.west+" ", "eu-west ", 1)
	return strings.ReplaceAll(s, r.u, "{u}")
}

func (r *aclRun) binding(tmpl string) (aclplan.Binding, bool) {
	for _, b := range r.plan {
		if r.template(b) == tmpl {
			return b, true
		}
	}
	return aclplan.Binding{}, false
}

func (e *aclEnv) printPlan(r *aclRun) {
	code, stdout, stderr := mirrorctl(e.t, "acl-plan", "-c", r.path, "--principal", e.principal, "--failover-principal", e.foPrincipal)
	if code != 0 {
		e.t.Fatalf("acl-plan: exit %d: %s", code, stderr)
	}
	e.t.Logf("acl-plan for offset-syncs.topic.location=%s (run %s):\n%s%s", e.loc, r.u, stdout, stderr)
}

// try grants the run's plan, minus the binding whose template is without
// (nil: none), runs the operations, and revokes what it granted.
func (e *aclEnv) try(ctx context.Context, r *aclRun, without *string) error {
	var grant []aclplan.Binding
	for _, b := range r.plan {
		if without == nil || r.template(b) != *without {
			grant = append(grant, b)
		}
	}
	if without != nil && len(grant) == len(r.plan) {
		e.t.Fatalf("run %s has no binding %s", r.u, *without)
	}
	e.grant(ctx, grant)
	defer e.revoke(context.WithoutCancel(ctx), grant)
	return e.operations(ctx, r)
}

// tryUnique is try for a run-specific binding, with the shared bindings
// already granted.
func (e *aclEnv) tryUnique(ctx context.Context, r *aclRun, without string) error {
	var grant []aclplan.Binding
	for _, b := range r.plan {
		tmpl := r.template(b)
		if strings.Contains(tmpl, "{u}") && tmpl != without {
			grant = append(grant, b)
		}
	}
	if _, ok := r.binding(without); !ok {
		e.t.Fatalf("run %s has no binding %s", r.u, without)
	}
	e.grant(ctx, grant)
	// The revoke touches only this run's names, so the worker need not
	// wait for it: it goes on with its next run. aclProof waits for every
	// revoke (e.revoking) before it reports.
	e.revoking.Add(1)
	defer func() {
		go func() {
			defer e.revoking.Done()
			e.revoke(context.WithoutCancel(ctx), grant)
		}()
	}()
	return e.operations(ctx, r)
}

func (e *aclEnv) operations(ctx context.Context, r *aclRun) error {
	for _, op := range aclOperations {
		octx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := op.run(octx, e, r)
		cancel()
		if err != nil {
			return &opError{op: op.name, err: err}
		}
	}
	return nil
}

// opError names the operation that failed.
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string { return e.op + ": " + e.err.Error() }

var authzRE = regexp.MustCompile(`[A-Z_]*AUTHORIZATION_FAILED|UNKNOWN_TOPIC_OR_PARTITION`)

// isAuthz reports whether err names an authorization failure (or the
// UNKNOWN_TOPIC_OR_PARTITION a refused CREATE leads to).
func isAuthz(err error) bool { return err != nil && authzRE.MatchString(err.Error()) }

// short returns the Kafka error names in the failure, or its first line.
func (e *opError) short() string {
	msg := e.err.Error()
	if loc := authzRE.FindStringIndex(msg); loc != nil {
		// The call that failed: the text before the first error name.
		from := strings.LastIndexAny(msg[:loc[0]], "\n\"") + 1
		if loc[0]-from > 120 {
			from = loc[0] - 120
		}
		return msg[from:loc[1]]
	}
	if m := authzRE.FindAllString(msg, -1); len(m) > 0 {
		seen := map[string]bool{}
		var out []string
		for _, s := range m {
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
		return strings.Join(out, ", ")
	}
	if i := strings.IndexByte(msg, '\n'); i > 0 {
		msg = msg[:i]
	}
	if len(msg) > 160 {
		msg = msg[:160] + "..."
	}
	return msg
}

// grant creates bindings with the super user and waits until each
// cluster's authorizer lists them.
func (e *aclEnv) grant(ctx context.Context, bs []aclplan.Binding) {
	e.t.Helper()
	e.changeACLs(ctx, bs, true)
}

func (e *aclEnv) revoke(ctx context.Context, bs []aclplan.Binding) {
	e.t.Helper()
	e.changeACLs(ctx, bs, false)
}

func (e *aclEnv) changeACLs(ctx context.Context, bs []aclplan.Binding, add bool) {
	t := e.t
	t.Helper()
	byCluster := map[*kadm.Client][]aclplan.Binding{}
	for _, b := range bs {
		adm := e.westAdmin
		if strings.HasPrefix(b.Cluster, "e") {
			adm = e.eastAdmin
		}
		byCluster[adm] = append(byCluster[adm], b)
	}
	// One request per binding, as aclplan.Create sends them, but all at
	// once, on both clusters: a change of ~40 bindings one request after
	// the other took 1.8 s, the largest share of the test's time.
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for adm, bs := range byCluster {
		for _, b := range bs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var err error
				if add {
					_, err = aclplan.Create(ctx, adm, []aclplan.Binding{b})
				} else {
					var builder *kadm.ACLBuilder
					if builder, err = aclplan.Builder(b); err == nil {
						_, err = adm.DeleteACLs(ctx, builder)
					}
					if err != nil {
						err = fmt.Errorf("revoke %s: %w", b, err)
					}
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		if add {
			t.Fatalf("grant: %v", err)
		}
		t.Errorf("%v", err)
	}
	for adm, bs := range byCluster {
		// Wait until DescribeAcls agrees.
		alias := bs[0].Cluster
		pollUntil(ctx, t, 30*time.Second, fmt.Sprintf("ACL change on %s visible", alias), func(ctx context.Context) (bool, string) {
			have, err := aclplan.Describe(ctx, adm, alias, e.principal, e.foPrincipal)
			if err != nil {
				return false, err.Error()
			}
			set := map[string]bool{}
			for _, h := range have {
				set[h.String()] = true
			}
			for _, b := range bs {
				b.Reason = ""
				if set[b.String()] != add {
					return false, "not yet: " + b.String()
				}
			}
			return true, ""
		})
	}
}

func (e *aclEnv) deleteTopic(ctx context.Context, cl *kgo.Client, topic string) {
	adm := kadm.NewClient(cl)
	if resp, err := adm.DeleteTopics(ctx, topic); err != nil {
		e.t.Fatalf("delete %s: %v", topic, err)
	} else if r, ok := resp[topic]; ok && r.Err != nil && !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		e.t.Fatalf("delete %s: %v", topic, r.Err)
	}
	pollUntil(ctx, e.t, 30*time.Second, "topic "+topic+" deleted", func(ctx context.Context) (bool, string) {
		td, err := adm.ListTopics(kadm.WithAuthorizedOps(ctx), topic) // fresh metadata, not kadm's cache
		if err != nil {
			return false, err.Error()
		}
		return !td.Has(topic), "still listed"
	})
}

// runCLI runs mirrorctl in-process with its own deadline.
func runCLI(ctx context.Context, args ...string) (int, string, string) {
	ios, _, out, errOut := iostreams.Test()
	code := cli.Run(ctx, ios, args, nil)
	return code, out.String(), errOut.String()
}

// replicateOnce runs replicate --once -o json and returns its result, or an
// error naming the exit code and the Kafka errors in its output. A warning
// naming an authorization error (config sync, group offset sync) is a
// failure too.
func replicateOnce(ctx context.Context, r *aclRun) (*replicateResult, error) {
	code, stdout, stderr := runCLI(ctx, "replicate", "--once", "-o", "json", "-c", r.path)
	if code != 0 {
		return nil, fmt.Errorf("exit %d: %s%s", code, stderr, stdout)
	}
	if authzRE.MatchString(stderr) {
		return nil, fmt.Errorf("exit 0 with errors logged: %s", stderr)
	}
	var res replicateResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		return nil, fmt.Errorf("decoding %q: %w", stdout, err)
	}
	return &res, nil
}

type replicateResult struct {
	Topics []struct {
		Topic   string `json:"topic"`
		Records int64  `json:"records"`
	} `json:"topics"`
	Groups []struct {
		Group     string `json:"group"`
		Sync      string `json:"sync"`
		Committed int    `json:"committed"`
		Error     string `json:"error"`
	} `json:"groups"`
	Errors []string `json:"errors"`
}

func opReplicateFirst(ctx context.Context, e *aclEnv, r *aclRun) error {
	res, err := replicateOnce(ctx, r)
	if err != nil {
		return err
	}
	var copied int64
	for _, tr := range res.Topics {
		if tr.Topic == r.topic {
			copied = tr.Records
		}
	}
	if copied != 40 {
		return fmt.Errorf("copied %d records of %s, want 40 (result %+v)", copied, r.topic, res)
	}
	synced := false
	for _, g := range res.Groups {
		if g.Group == r.group {
			if g.Error != "" {
				return fmt.Errorf("group %s: %s", g.Group, g.Error)
			}
			synced = g.Sync == "committed" && g.Committed == 2
		}
	}
	if !synced {
		return fmt.Errorf("group %s: no checkpoint committed on the target (result %+v)", r.group, res.Groups)
	}
	// The super user's metadata may still remember the deleted heartbeats
	// topic for a moment: look for the heartbeat for up to 10s.
	west := kadm.NewClient(e.westPlain)
	var hbErr error
	for deadline := time.Now().Add(10 * time.Second); ; {
		ends, err := west.ListEndOffsets(ctx, "heartbeats")
		o, ok := ends.Lookup("heartbeats", 0)
		if err == nil && ok && o.Err == nil && o.Offset >= 1 {
			hbErr = nil
			break
		}
		hbErr = fmt.Errorf("no heartbeat on %s: %v %v", r.west, err, o.Err)
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if hbErr != nil {
		return hbErr
	}
	// Between the runs: the source grows a partition and changes a config.
	east := kadm.NewClient(e.eastPlain)
	if _, err := east.UpdatePartitions(ctx, 3, r.topic); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if _, err := east.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: ptrTo("7200000")}}, r.topic); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	// A fresh client, retried, so the new partition is known.
	var perr error
	pending, failed := shapes(r.topic, 3, 20, 25), []*kgo.Record(nil)
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		var cl *kgo.Client
		cl, perr = kgo.NewClient(kgo.SeedBrokers(mustEnvNoT("MIRRORCTL_KAFKA_US_EAST")), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if perr != nil {
			break
		}
		perr = nil
		for _, res := range cl.ProduceSync(ctx, pending...) {
			if res.Err != nil {
				perr = res.Err
				failed = append(failed, res.Record)
			}
		}
		cl.Close()
		if perr == nil {
			break
		}
		pending, failed = failed, nil // retry only what was refused: no duplicates
	}
	if perr != nil {
		return fmt.Errorf("setup: %w", perr)
	}
	return nil
}

func opReplicateSecond(ctx context.Context, e *aclEnv, r *aclRun) error {
	res, err := replicateOnce(ctx, r)
	if err != nil {
		return err
	}
	var copied int64
	for _, tr := range res.Topics {
		if tr.Topic == r.topic {
			copied = tr.Records
		}
	}
	// 5 new records in each of the 3 partitions: the old partitions
	// resumed from progress instead of copying everything again.
	if copied != 15 {
		return fmt.Errorf("second run copied %d records of %s, want 15", copied, r.topic)
	}
	west := kadm.NewClient(e.westPlain)
	// WithAuthorizedOps makes kadm send a fresh Metadata request instead of
	// answering from its cache.
	td, err := west.ListTopics(kadm.WithAuthorizedOps(ctx), r.remote)
	if err != nil {
		return err
	}
	if n := len(td[r.remote].Partitions); n != 3 {
		return fmt.Errorf("%s has %d partitions, want 3", r.remote, n)
	}
	rcs, err := west.DescribeTopicConfigs(ctx, r.remote)
	if err != nil {
		return err
	}
	rc, err := rcs.On(r.remote, nil)
	if err != nil {
		return err
	}
	for _, c := range rc.Configs {
		if c.Key == "retention.ms" && (c.Value == nil || *c.Value != "7200000") {
			return fmt.Errorf("%s retention.ms = %v, want 7200000 (config sync)", r.remote, c.MaybeValue())
		}
	}
	return nil
}

func opSyncACLs(ctx context.Context, e *aclEnv, r *aclRun) error {
	// Something for the sync to copy: a LITERAL READ for another principal.
	probe := "User:probe" + r.u
	b := kadm.NewACLs().Allow(probe).AllowHosts("*").Topics(r.topic).Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)
	if _, err := e.eastAdmin.CreateACLs(ctx, b); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	defer func() {
		ctx := context.WithoutCancel(ctx)
		_, _ = e.eastAdmin.DeleteACLs(ctx, kadm.NewACLs().Allow(probe).AllowHosts("*").Topics(r.topic).Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
		_, _ = e.westAdmin.DeleteACLs(ctx, kadm.NewACLs().Allow(probe).AllowHosts("*").Topics(r.remote).Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	}()
	// The ledger is read and written as the app user: its topic rights
	// are part of the plan.
	ledger := replicate.NewACLLedger(r.flow, &appClients{e: e, west: r.west}, false)
	var rep replicate.ACLSyncReport
	var err error
	// The source authorizer may take a moment to list the new ACL.
	for i := 0; i < 20; i++ {
		rep, err = replicate.SyncTopicACLs(ctx, r.flow, e.eastApp, e.westApp, ledger)
		if err != nil || len(rep.Created) > 0 {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	if len(rep.Created) != 1 || !rep.Tracked {
		return fmt.Errorf("ACL sync created %d bindings (tracked %v: %s), want 1, tracked", len(rep.Created), rep.Tracked, rep.TrackingError)
	}
	recorded, err := ledger.Load(ctx)
	if err != nil {
		return err
	}
	// The replicate runs before recorded the copies of the app user's own
	// source grants; the probe's copy must be there too.
	for _, b := range recorded {
		if b.Principal == probe && b.Name == r.remote {
			return nil
		}
	}
	return fmt.Errorf("the ACL ledger holds %v, not the probe's copy", recorded)
}

// appClients hands out the app user's clients on the harness's SASL_SSL
// listeners (replicate.Clients), for the ACL ledger.
type appClients struct {
	e      *aclEnv
	west   string     // the run's target alias; any other is the source
	mu     sync.Mutex // guards admins
	admins map[string]*kadm.Client
}

func (c *appClients) addr(alias string) string {
	if alias == c.west {
		return c.e.westSASL
	}
	return c.e.eastSASL
}

func (c *appClients) Client(alias string, _ replicate.ClientRole, extra ...kgo.Opt) (*kgo.Client, error) {
	opts := append([]kgo.Opt{kgo.SeedBrokers(strings.Split(c.addr(alias), ",")...)}, c.e.appOpts...)
	return kgo.NewClient(append(opts, extra...)...)
}

func (c *appClients) Admin(alias string) (*kadm.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.admins[alias]; ok {
		return a, nil
	}
	cl, err := c.Client(alias, replicate.RoleAdmin)
	if err != nil {
		return nil, err
	}
	c.e.t.Cleanup(cl.Close)
	if c.admins == nil {
		c.admins = map[string]*kadm.Client{}
	}
	c.admins[alias] = kadm.NewClient(cl)
	return c.admins[alias], nil
}

// mustEnvNoT is mustEnv for goroutines that may not fail the test: the
// variable was already checked by the test's own goroutine.
func mustEnvNoT(name string) string { return os.Getenv(name) }

// createSCRAMUser creates a SCRAM-SHA-512 user on both clusters as the
// super user, removes it when the test ends, and waits until it can log in
// on both. The password is never logged.
func (e *aclEnv) createSCRAMUser(ctx context.Context, user, password string) {
	t := e.t
	t.Helper()
	for _, adm := range []*kadm.Client{e.eastAdmin, e.westAdmin} {
		res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: kadm.ScramSha512, Iterations: 8192, Password: password}})
		if err == nil {
			err = res[user].Err
		}
		if err != nil {
			t.Fatalf("create SCRAM user %s: %v", user, err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, adm := range []*kadm.Client{e.eastAdmin, e.westAdmin} {
			_, _ = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: user, Mechanism: kadm.ScramSha512}}, nil)
		}
	})
	for _, bootstrap := range []string{e.eastSASL, e.westSASL} {
		pollUntil(ctx, t, 30*time.Second, "SCRAM login as "+user+" on "+bootstrap, func(ctx context.Context) (bool, string) {
			cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(bootstrap)}, saslOpts(t, user, password)...)...)
			if err != nil {
				return false, err.Error()
			}
			defer cl.Close()
			if _, err := kadm.NewClient(cl).ListBrokers(ctx); err != nil {
				return false, err.Error()
			}
			return true, ""
		})
	}
}

// failoverCLI runs mirrorctl as the failover principal (the run's
// ops.properties). A non-zero exit, or an authorization error in what it
// logged (translate's auto mode falls back to checkpoints with a warning
// when the source refuses), is an error naming both.
func failoverCLI(ctx context.Context, r *aclRun, args ...string) (string, error) {
	code, stdout, stderr := runCLI(ctx, append([]string{"-c", r.foPath, "-o", "json"}, args...)...)
	if code != 0 {
		return "", fmt.Errorf("%s: exit %d: %s%s", args[0], code, stderr, stdout)
	}
	if authzRE.MatchString(stderr) {
		return "", fmt.Errorf("%s: exit 0 with errors logged: %s", args[0], stderr)
	}
	return stdout, nil
}

type translateResult struct {
	Groups []struct {
		Group      string `json:"group"`
		Partitions []struct {
			Topic        string `json:"topic"`
			Partition    int32  `json:"partition"`
			SourceOffset *int64 `json:"source_offset"`
			TargetOffset *int64 `json:"target_offset"`
			Mode         string `json:"mode"`
			Reason       string `json:"reason"`
		} `json:"partitions"`
	} `json:"groups"`
}

// opTranslate translates the group's commits (10 on partitions 0 and 1) in
// checkpoint mode (reads the checkpoints) and in auto mode (the source
// answers: exact, from the offset syncs and both clusters' records).
func opTranslate(ctx context.Context, e *aclEnv, r *aclRun) error {
	for _, mode := range []string{"checkpoint", "auto"} {
		out, err := failoverCLI(ctx, r, "translate", "--group", r.group, "--mode", mode)
		if err != nil {
			return fmt.Errorf("--mode %s: %w", mode, err)
		}
		var res translateResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			return fmt.Errorf("--mode %s: decoding %q: %w", mode, out, err)
		}
		want := "exact"
		if mode == "checkpoint" {
			want = "checkpoint"
		}
		translated, rows := 0, 0
		for _, g := range res.Groups {
			for _, p := range g.Partitions {
				rows++
				if g.Group == r.group && p.Topic == r.remote && p.TargetOffset != nil && p.Mode == want {
					translated++
				}
			}
		}
		if rows == 0 {
			// Kafka's OffsetFetch for all of a group's topics leaves out,
			// without an error, those the principal may not DESCRIBE.
			return fmt.Errorf("--mode %s: no rows: the group shows no commits on %s (OffsetFetch omits topics the principal may not describe)", mode, r.east)
		}
		if translated != 2 {
			return fmt.Errorf("--mode %s: %d partitions translated in mode %s, want 2: %s", mode, translated, want, out)
		}
	}
	return nil
}

// verbResult is the part of the failover verbs' JSON the proofs read.
type verbResult struct {
	Plans []struct {
		Applied bool `json:"applied"`
		Groups  []struct {
			Group      string `json:"group"`
			Partitions []struct {
				Partition int32  `json:"partition"`
				Outcome   string `json:"outcome"`
				Verified  *bool  `json:"verified"`
			} `json:"partitions"`
		} `json:"groups"`
	} `json:"plans"`
	Evidence *struct {
		Passed   bool `json:"passed"`
		Verified int  `json:"verified"`
	} `json:"evidence"`
}

// committedVerified counts the partitions of group committed and verified
// in out, the JSON of a failover verb.
func committedVerified(out, group string) (int, error) {
	var res verbResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		return 0, fmt.Errorf("decoding %q: %w", out, err)
	}
	done := 0
	for _, pl := range res.Plans {
		for _, g := range pl.Groups {
			for _, p := range g.Partitions {
				if g.Group == group && p.Outcome == "committed" && p.Verified != nil && *p.Verified {
					done++
				}
			}
		}
	}
	if res.Evidence == nil || !res.Evidence.Passed {
		return done, fmt.Errorf("no passed evidence: %s", out)
	}
	return done, nil
}

// opFailover moves the source group ahead of what sync.group.offsets
// committed on the target (15, 15 and 3 on partitions 0, 1 and 2), then
// runs a planned failover with a write fence (of a principal that does not
// write: the rights are what is proven here): three partitions must be
// committed and verified; then fence status lists the binding and fence
// remove deletes it.
func opFailover(ctx context.Context, e *aclEnv, r *aclRun) error {
	offs := kadm.Offsets{}
	offs.AddOffset(r.topic, 0, 15, -1)
	offs.AddOffset(r.topic, 1, 15, -1)
	offs.AddOffset(r.topic, 2, 3, -1)
	if _, err := kadm.NewClient(e.eastPlain).CommitOffsets(ctx, r.group, offs); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	fenced := "User:fenced-" + r.u
	out, err := failoverCLI(ctx, r, "failover", "apply", "--type", "planned", "--audit-log", r.audit, "--group", r.group,
		"--fence-principal", fenced, "--settle", "300ms", "--drain", "30s", "--evidence-dir", e.t.TempDir(), "--yes")
	if err != nil {
		return err
	}
	if done, err := committedVerified(out, r.group); err != nil || done != 3 {
		return fmt.Errorf("%d partitions committed and verified, want 3 (%v): %s", done, err, out)
	}
	if audit, err := os.ReadFile(r.audit); err != nil || !strings.Contains(string(audit), r.group) {
		return fmt.Errorf("no audit entry for the commits in %s: %v", r.audit, err)
	}
	out, err = failoverCLI(ctx, r, "fence", "status", "--group", r.group)
	if err != nil {
		return err
	}
	var st struct {
		Bindings []struct {
			Principal string `json:"principal"`
			Topic     string `json:"topic"`
		} `json:"bindings"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || len(st.Bindings) != 1 || st.Bindings[0].Principal != fenced || st.Bindings[0].Topic != r.topic {
		return fmt.Errorf("fence status: want one binding of %s on %s (%v): %s", fenced, r.topic, err, out)
	}
	_, err = failoverCLI(ctx, r, "fence", "remove", "--audit-log", r.audit, "--principal", fenced, "--group", r.group)
	return err
}

// opRestore moves the group on the target ahead (18, 18 and 4), then fails
// it back: three partitions committed on the source and verified.
func opRestore(ctx context.Context, e *aclEnv, r *aclRun) error {
	offs := kadm.Offsets{}
	offs.AddOffset(r.remote, 0, 18, -1)
	offs.AddOffset(r.remote, 1, 18, -1)
	offs.AddOffset(r.remote, 2, 4, -1)
	if _, err := kadm.NewClient(e.westPlain).CommitOffsets(ctx, r.group, offs); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	out, err := failoverCLI(ctx, r, "failover", "apply", "--type", "restore", "--audit-log", r.audit, "--group", r.group, "--evidence-dir", e.t.TempDir(), "--yes")
	if err != nil {
		return err
	}
	if done, err := committedVerified(out, r.group); err != nil || done != 3 {
		return fmt.Errorf("%d partitions committed on %s and verified, want 3 (%v): %s", done, r.east, err, out)
	}
	return nil
}

// opDrill rehearses a planned failover on the shadow groups: it passes
// (every shadow partition verified, the shadows deleted).
func opDrill(ctx context.Context, e *aclEnv, r *aclRun) error {
	out, err := failoverCLI(ctx, r, "failover", "drill", "--type", "planned", "--audit-log", r.audit, "--group", r.group, "--evidence-dir", e.t.TempDir())
	if err != nil {
		return err
	}
	var res verbResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Evidence == nil || !res.Evidence.Passed || res.Evidence.Verified != 3 {
		return fmt.Errorf("drill: want passed evidence with 3 partitions verified (%v): %s", err, out)
	}
	return nil
}

// opLag reports the flow: every partition caught up according to the
// progress topic, a heartbeat age, and the group's checkpoint age.
func opLag(ctx context.Context, e *aclEnv, r *aclRun) error {
	out, err := failoverCLI(ctx, r, "lag")
	if err != nil {
		return err
	}
	var res struct {
		Flows []struct {
			HeartbeatAgeMs *int64 `json:"heartbeat_age_ms"`
			Partitions     []struct {
				Topic         string `json:"topic"`
				From          string `json:"from"`
				RecordsBehind int64  `json:"records_behind"`
			} `json:"partitions"`
			Groups []struct {
				Group           string `json:"group"`
				CheckpointAgeMs *int64 `json:"checkpoint_age_ms"`
			} `json:"groups"`
		} `json:"flows"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		return fmt.Errorf("decoding %q: %w", out, err)
	}
	if len(res.Flows) != 1 {
		return fmt.Errorf("%d flows, want 1: %s", len(res.Flows), out)
	}
	f := res.Flows[0]
	caught, checkpointed := 0, false
	for _, p := range f.Partitions {
		if p.Topic == r.remote && p.From == "progress" && p.RecordsBehind == 0 {
			caught++
		}
	}
	for _, g := range f.Groups {
		checkpointed = checkpointed || (g.Group == r.group && g.CheckpointAgeMs != nil)
	}
	if caught != 3 || f.HeartbeatAgeMs == nil || !checkpointed {
		return fmt.Errorf("want 3 partitions caught up by progress (got %d), a heartbeat age and the group's checkpoint age: %s", caught, out)
	}
	return nil
}
