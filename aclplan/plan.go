package aclplan

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/mirrorctl/mirrorctl/failover"
	"github.com/mirrorctl/mirrorctl/replicate"
	"github.com/mirrorctl/mirrorctl/replicate/filter"
)

// Kafka ACL vocabulary, spelled as Kafka's enums print (kmsg's String).
const (
	TypeTopic   = "TOPIC"
	TypeGroup   = "GROUP"
	TypeCluster = "CLUSTER"
	// TypeTransactionalID is the resource of exactly-once producers.
	TypeTransactionalID = "TRANSACTIONAL_ID"

	PatternLiteral  = "LITERAL"
	PatternPrefixed = "PREFIXED"

	// Wildcard is the LITERAL resource name that matches every name.
	Wildcard = "*"
	// ClusterName is the name of the single CLUSTER resource.
	ClusterName = "kafka-cluster"
	// AnyHost is the host every planned binding allows.
	AnyHost = "*"
	// Allow is the permission every planned binding has.
	Allow = "ALLOW"

	OpAll             = "ALL"
	OpRead            = "READ"
	OpWrite           = "WRITE"
	OpCreate          = "CREATE"
	OpDelete          = "DELETE"
	OpAlter           = "ALTER"
	OpDescribe        = "DESCRIBE"
	OpDescribeConfigs = "DESCRIBE_CONFIGS"
	OpAlterConfigs    = "ALTER_CONFIGS"
)

// Binding is one ACL: principal, host, resource (type, pattern type, name),
// operation and permission on one cluster (alias), with the reason the plan
// needs it: the feature and the Kafka API it calls, e.g.
// "replicate: Fetch source records". JSON field names are stable
// (schema_version 1).
type Binding struct {
	Cluster      string `json:"cluster"`
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	ResourceType string `json:"resource_type"` // TypeTopic, TypeGroup, TypeCluster or TypeTransactionalID
	PatternType  string `json:"pattern_type"`  // PatternLiteral or PatternPrefixed
	ResourceName string `json:"resource_name"`
	Operation    string `json:"operation"`
	Permission   string `json:"permission"`
	Reason       string `json:"reason,omitempty"`
}

// String returns the binding on one line, without the reason, e.g.
// "us-east User:mm2 ALLOW READ TOPIC PREFIXED orders.".
func (b Binding) String() string {
	return fmt.Sprintf("%s %s %s %s %s %s %s", b.Cluster, b.Principal, b.Permission, b.Operation, b.ResourceType, b.PatternType, b.ResourceName)
}

// key identifies a binding without its reason.
func (b Binding) key() Binding { b.Reason = ""; return b }

// Covers reports whether b, an ALLOW binding, grants what o needs on the
// same cluster, principal and host: b's pattern matches o's resource
// (LITERAL "*" matches all, PREFIXED p matches names and prefixes starting
// with p) and b's operation is o's or implies it, as Kafka's authorizer
// decides: ALL implies everything; READ, WRITE, DELETE and ALTER imply
// DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS.
func (b Binding) Covers(o Binding) bool {
	return b.Cluster == o.Cluster && b.Principal == o.Principal && b.Host == o.Host &&
		b.Permission == Allow && o.Permission == Allow && b.ResourceType == o.ResourceType &&
		covers(b.PatternType, b.ResourceName, o.PatternType, o.ResourceName) && Implies(b.Operation, o.Operation)
}

// Implies reports whether an ALLOW of operation have also allows want
// (Kafka's implied operations; see [Binding.Covers]).
func Implies(have, want string) bool {
	switch {
	case have == want, have == OpAll:
		return true
	case want == OpDescribe:
		return have == OpRead || have == OpWrite || have == OpDelete || have == OpAlter
	case want == OpDescribeConfigs:
		return have == OpAlterConfigs
	}
	return false
}

// Flow is one flow's settings as the plan needs them: the engine's
// FlowConfig plus MM2's sync.topic.acls.enabled (default true), which
// FlowConfig does not carry yet.
type Flow struct {
	replicate.FlowConfig
	SyncTopicACLs bool
}

// Input is what [Build] plans from.
type Input struct {
	// Principal runs the mirror, e.g. "User:mm2". Required.
	Principal string
	// FailoverPrincipal, when set, is the operators' principal: it runs
	// translate, lag, the failover verbs (plan, apply, verify and drill, of
	// every type) and fence, e.g. "User:ops". It gets reads, the group
	// commits of a failover (on the target) and of a restore (on the
	// source), the drill's shadow groups on the target, and, unless
	// NoFence, CLUSTER ALTER on the source for the write fence's ACLs.
	FailoverPrincipal string
	// NoFence leaves the write fence's CLUSTER ALTER on the source out of
	// the failover principal's bindings (planned failovers then state
	// --producers-stopped).
	NoFence bool
	// Flows are the flows to plan: enabled flows copy data; a flow that is
	// not enabled but emits heartbeats only needs the heartbeat rights, as
	// MM2 (and replicate) emit heartbeats for every such pair.
	Flows []Flow
	// Topics and Groups list the names that exist now on a cluster (alias).
	// They are called only for a topics or groups item that is a regex but
	// neither a literal name nor a prefix; nil means no cluster access, and
	// such an item is then an error.
	Topics func(alias string) ([]string, error)
	Groups func(alias string) ([]string, error)
}

// Note levels.
const (
	NoteWarning = "warning"
	NoteInfo    = "info"
)

// Note is a remark on the plan: Level NoteWarning for grants wider than a
// name list (wildcards) and for regex snapshots that go stale, NoteInfo
// otherwise.
type Note struct {
	Level string `json:"level"`
	Flow  string `json:"flow,omitempty"`
	Text  string `json:"text"`
}

// Plan is the least-privilege ACL plan: Bindings sorted by cluster,
// principal, resource type, name, pattern type and operation, with no
// binding another one already covers; Notes in the order found.
type Plan struct {
	Bindings []Binding `json:"bindings"`
	Notes    []Note    `json:"notes"`
}

// Build derives every ACL binding the enabled features of in.Flows need,
// from the Kafka APIs the replicate engine calls and the operation Kafka's
// authorizer checks for each (Kafka's "Operations and Resources on
// Protocols" table), then drops the bindings that another planned binding
// already grants (implied operations, prefixes and wildcards). Errors name
// the flow and the config key at fault.
func Build(in Input) (*Plan, error) {
	if !strings.Contains(in.Principal, ":") {
		return nil, fmt.Errorf("principal %q: want <type>:<name>, e.g. User:mm2", in.Principal)
	}
	if in.FailoverPrincipal != "" && !strings.Contains(in.FailoverPrincipal, ":") {
		return nil, fmt.Errorf("failover principal %q: want <type>:<name>, e.g. User:ops", in.FailoverPrincipal)
	}
	b := &builder{in: in, byKey: map[Binding]*Binding{}, lists: map[string][]string{}}
	var errs []error
	for _, f := range in.Flows {
		if err := b.flow(f); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := make([]Binding, 0, len(b.byKey))
	for _, bd := range b.byKey {
		out = append(out, *bd)
	}
	Sort(out)
	out = prune(out)
	if b.notes == nil {
		b.notes = []Note{}
	}
	return &Plan{Bindings: out, Notes: b.notes}, nil
}

type builder struct {
	in    Input
	byKey map[Binding]*Binding
	notes []Note
	lists map[string][]string // "topics/us-east" -> names
}

func (b *builder) note(level, flow, format string, args ...any) {
	n := Note{Level: level, Flow: flow, Text: fmt.Sprintf(format, args...)}
	for _, o := range b.notes {
		if o == n {
			return
		}
	}
	b.notes = append(b.notes, n)
}

func (b *builder) add(cluster, principal, rtype string, r resource, op, reason string) {
	bd := Binding{Cluster: cluster, Principal: principal, Host: AnyHost, ResourceType: rtype,
		PatternType: r.pattern, ResourceName: r.name, Operation: op, Permission: Allow}
	if have, ok := b.byKey[bd]; ok {
		have.Reason = joinReason(have.Reason, reason)
		return
	}
	bd2 := bd
	bd2.Reason = reason
	b.byKey[bd] = &bd2
}

func joinReason(have, more string) string {
	for _, r := range strings.Split(have, "; ") {
		if r == more {
			return have
		}
	}
	if have == "" {
		return more
	}
	return have + "; " + more
}

func (b *builder) addAll(cluster, principal, rtype string, rs []resource, op, reason string) {
	for _, r := range rs {
		b.add(cluster, principal, rtype, r, op, reason)
	}
}

func (b *builder) list(kind, alias string) ([]string, error) {
	k := kind + "/" + alias
	if names, ok := b.lists[k]; ok {
		return names, nil
	}
	fn := b.in.Topics
	if kind == "groups" {
		fn = b.in.Groups
	}
	if fn == nil {
		return nil, fmt.Errorf("listing the %s of %s needs cluster access", kind, alias)
	}
	names, err := fn(alias)
	if err != nil {
		return nil, fmt.Errorf("list %s of %s: %w", kind, alias, err)
	}
	b.lists[k] = names
	return names, nil
}

// resources resolves an include list (topics or groups) into resources on
// the source, listing the source's names only when a regex item needs it.
func (b *builder) resources(cfg replicate.FlowConfig, kind string, include *filter.Pattern, accept func(string) bool) ([]resource, error) {
	var regexes []string
	for _, it := range include.Items() {
		if s, _ := itemShape(it); s == shapeRegex {
			regexes = append(regexes, it)
		}
	}
	var current []string
	if len(regexes) > 0 {
		var err error
		if current, err = b.list(kind, cfg.Source); err != nil {
			return nil, fmt.Errorf("flow %s: %s = %s: %s is neither a name nor a prefix, and expanding it needs the source: %w "+
				"(in mm2.properties a prefix such as orders\\..* is written orders\\\\..*: the reader drops a single backslash)",
				cfg.Name(), include.Key(), include, strings.Join(regexes, ", "), err)
		}
	}
	res, regexItems, n, wildcard := namesFor(include, current, accept)
	if wildcard {
		b.note(NoteWarning, cfg.Name(), "%s = %s matches every name: the %s grants on %s use the wildcard %q (every %s, now and later); list the %s to grant less",
			keyOr(include, kind), include, strings.TrimSuffix(kind, "s"), cfg.Source, Wildcard, strings.TrimSuffix(kind, "s"), kind)
	}
	if len(regexItems) > 0 {
		b.note(NoteWarning, cfg.Name(), "%s items %s are regexes, not names or prefixes: granted as LITERAL bindings for the %d %s of %s that match now; re-run acl-plan when new %s match",
			keyOr(include, kind), strings.Join(quoteAll(regexItems), ", "), n, kind, cfg.Source, kind)
	}
	return res, nil
}

func keyOr(p *filter.Pattern, def string) string {
	if k := p.Key(); k != "" {
		return k
	}
	return def
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// remote maps a source topic resource to the resource its remote topics
// fall under on the target, through the replication policy: LITERAL n ->
// LITERAL FormatRemoteTopic(source, n); PREFIXED p -> PREFIXED
// FormatRemoteTopic(source, p) ("us-east." + p with the default policy, p
// with the identity policy); the wildcard -> PREFIXED "us-east." (default
// policy) or the wildcard (identity policy).
func remote(cfg replicate.FlowConfig, r resource) resource {
	if r.pattern == PatternLiteral && r.name == Wildcard {
		if p := cfg.Policy.FormatRemoteTopic(cfg.Source, ""); p != "" {
			return resource{PatternPrefixed, p}
		}
		return r
	}
	return resource{r.pattern, cfg.Policy.FormatRemoteTopic(cfg.Source, r.name)}
}

func literal(name string) resource { return resource{PatternLiteral, name} }

var clusterRes = []resource{literal(ClusterName)}

// flow adds the bindings of one flow.
func (b *builder) flow(f Flow) error {
	cfg := f.FlowConfig
	src, tgt := cfg.Source, cfg.Target
	p := b.in.Principal
	if cfg.Policy == nil {
		return fmt.Errorf("flow %s: no replication policy", cfg.Name())
	}
	if cfg.EmitHeartbeats {
		hb := []resource{literal(cfg.Policy.HeartbeatsTopic())}
		b.addAll(tgt, p, TypeTopic, hb, OpCreate, "heartbeats: CreateTopics "+cfg.Policy.HeartbeatsTopic())
		b.addAll(tgt, p, TypeTopic, hb, OpWrite, "heartbeats: Produce a heartbeat every emit.heartbeats.interval.seconds")
	}
	if cfg.Enabled || cfg.EmitHeartbeats {
		// The flow leader is the member of <group>-leader on the target that
		// holds its one topic: the progress topic of an enabled flow (READ
		// below), else heartbeats.
		b.addAll(tgt, p, TypeGroup, []resource{literal(cfg.GroupID + "-leader")}, OpRead, "flow leader: JoinGroup, SyncGroup and Heartbeat of the leader group")
		if !cfg.Enabled {
			b.addAll(tgt, p, TypeTopic, []resource{literal(cfg.Policy.HeartbeatsTopic())}, OpRead, "flow leader: the leader group subscribes to heartbeats")
		}
	}
	if !cfg.Enabled {
		return nil
	}
	b.addAll(src, p, TypeGroup, []resource{literal(cfg.GroupID)}, OpRead,
		"partition tasks: JoinGroup, SyncGroup, Heartbeat of the flow's group (and DescribeGroups for tasks.max)")
	// Before it copies, replicate looks for a MirrorMaker 2 still running
	// the flow and for where one stopped (replicate/mm2live.go,
	// mm2resume.go); not being able to look is a refusal, not a pass.
	if m := cfg.MM2; m.ConnectGroup != "" {
		b.addAll(tgt, p, TypeGroup, []resource{literal(m.ConnectGroup)}, OpDescribe,
			"replicate: DescribeGroups of MirrorMaker 2's Connect group (refuses to run beside a live MM2)")
	}
	b.addAll(tgt, p, TypeTopic, []resource{literal(cfg.Policy.HeartbeatsTopic())}, OpRead,
		"replicate: ListOffsets and Fetch heartbeats (refuses while MM2's still arrive)")
	if m := cfg.MM2; m.OffsetsTopic != "" {
		b.addAll(tgt, p, TypeTopic, []resource{literal(m.OffsetsTopic)}, OpRead,
			"replicate: ListOffsets and Fetch MM2's Connect source offsets (resumes where MM2 stopped)")
	}
	accept := func(t string) bool {
		return filter.DecideTopic(cfg.Policy, cfg.Topics, t, tgt, false).Replicate
	}
	topics, err := b.resources(cfg, "topics", cfg.Topics.Include, accept)
	if err != nil {
		return err
	}
	if cfg.HeartbeatsReplication {
		topics = append(topics, literal(cfg.Policy.HeartbeatsTopic()))
	}
	var remotes []resource
	for _, r := range topics {
		remotes = append(remotes, remote(cfg, r))
	}
	var groups []resource
	if cfg.EmitCheckpoints || b.in.FailoverPrincipal != "" {
		if groups, err = b.resources(cfg, "groups", cfg.Groups.Include, cfg.Groups.Accept); err != nil {
			return err
		}
	}

	// Source: the data path.
	b.addAll(src, p, TypeTopic, topics, OpRead, "replicate: Fetch source records")
	b.addAll(src, p, TypeTopic, topics, OpDescribe, "replicate: Metadata and ListOffsets on source topics")
	b.addAll(src, p, TypeTopic, topics, OpDescribeConfigs, "replicate: DescribeConfigs to copy topic configs at creation")
	if cfg.SyncTopicConfigs {
		b.addAll(src, p, TypeTopic, topics, OpDescribeConfigs, "sync.topic.configs: DescribeConfigs")
	}
	// Target: remote topics.
	b.addAll(tgt, p, TypeTopic, remotes, OpCreate, "replicate: CreateTopics for missing remote topics")
	b.addAll(tgt, p, TypeTopic, remotes, OpWrite, "replicate: Produce copies (and InitProducerId, idempotent producer)")
	b.addAll(tgt, p, TypeTopic, remotes, OpAlter, "replicate: CreatePartitions when a source topic grows")
	b.addAll(tgt, p, TypeTopic, remotes, OpDescribe, "replicate: Metadata on target topics")
	if cfg.SyncTopicConfigs {
		b.addAll(tgt, p, TypeTopic, remotes, OpAlterConfigs, "sync.topic.configs: IncrementalAlterConfigs")
	}
	if cfg.ExactlyOnce {
		// replicate/eos.go: one transactional producer per partition task,
		// ids <group>-<topic>-<partition>. WRITE covers InitProducerId,
		// AddPartitionsToTxn, Produce and EndTxn; DESCRIBE FindCoordinator.
		// No IDEMPOTENT_WRITE: since Kafka 2.8 (KIP-679) WRITE on the
		// topic is enough for the idempotent producer, and a transactional
		// producer is authorized through its id.
		txn := []resource{{PatternPrefixed, cfg.GroupID + "-"}}
		b.addAll(tgt, p, TypeTransactionalID, txn, OpWrite, "exactly-once: InitProducerId, AddPartitionsToTxn, Produce and EndTxn of the partition tasks' transactions")
		b.addAll(tgt, p, TypeTransactionalID, txn, OpDescribe, "exactly-once: FindCoordinator of the transactional ids")
	}
	// Target: mirrorctl's progress topic.
	prog := []resource{literal(replicate.ProgressTopic(cfg.Policy, src))}
	b.addAll(tgt, p, TypeTopic, prog, OpCreate, "progress: CreateTopics")
	b.addAll(tgt, p, TypeTopic, prog, OpWrite, "progress: Produce copy positions")
	b.addAll(tgt, p, TypeTopic, prog, OpRead, "progress: ListOffsets and Fetch at start, to resume")
	// Offset syncs, on the source or the target (offset-syncs.topic.location).
	syncAlias, syncTopic := cfg.OffsetSyncsTopic()
	syncs := []resource{literal(syncTopic)}
	if cfg.EmitOffsetSyncs {
		b.addAll(syncAlias, p, TypeTopic, syncs, OpCreate, "offset-syncs: CreateTopics")
		b.addAll(syncAlias, p, TypeTopic, syncs, OpWrite, "offset-syncs: Produce offset syncs")
	}
	if cfg.EmitCheckpoints {
		b.addAll(syncAlias, p, TypeTopic, syncs, OpRead, "emit.checkpoints: ListOffsets and Fetch offset syncs")
		ck := []resource{literal(cfg.Policy.CheckpointsTopic(src))}
		b.addAll(tgt, p, TypeTopic, ck, OpCreate, "emit.checkpoints: CreateTopics")
		b.addAll(tgt, p, TypeTopic, ck, OpWrite, "emit.checkpoints: Produce checkpoints")
		b.addAll(tgt, p, TypeTopic, ck, OpRead, "emit.checkpoints: ListOffsets and Fetch at start, to reload checkpoints")
		b.addAll(src, p, TypeGroup, groups, OpDescribe, "emit.checkpoints: ListGroups, FindCoordinator and OffsetFetch of source groups")
		b.addAll(src, p, TypeTopic, topics, OpDescribe, "emit.checkpoints: OffsetFetch returns only described topics")
	}
	if cfg.EmitCheckpoints && cfg.SyncGroupOffsets {
		b.addAll(tgt, p, TypeGroup, groups, OpRead, "sync.group.offsets: OffsetCommit")
		b.addAll(tgt, p, TypeGroup, groups, OpDescribe, "sync.group.offsets: DescribeGroups and OffsetFetch")
		b.addAll(tgt, p, TypeTopic, remotes, OpRead, "sync.group.offsets: OffsetCommit needs READ on each committed topic")
	}
	if cfg.EmitCheckpoints && cfg.ReverseCheckpoints {
		// replicate/reverse.go: the target's groups, checkpointed back to
		// the source.
		_, rt := cfg.ReverseCheckpointsTopic()
		rck := []resource{literal(rt)}
		b.addAll(src, p, TypeTopic, rck, OpCreate, "reverse checkpoints: CreateTopics "+rt+" on the source")
		b.addAll(src, p, TypeTopic, rck, OpWrite, "reverse checkpoints: Produce reverse checkpoints")
		b.addAll(tgt, p, TypeGroup, groups, OpDescribe, "reverse checkpoints: ListGroups, FindCoordinator and OffsetFetch of the target's groups")
		b.addAll(tgt, p, TypeTopic, remotes, OpRead, "reverse checkpoints: OffsetFetch returns only described topics; Fetch the copies between an offset sync and a commit to pin the position")
	}
	if f.SyncTopicACLs {
		b.addAll(src, p, TypeCluster, clusterRes, OpDescribe, "sync.topic.acls: DescribeAcls")
		alter := "sync.topic.acls: CreateAcls; DescribeAcls (ALTER implies DESCRIBE) to tell the bindings mirrorctl created from the target's own"
		if cfg.SyncTopicACLsPrune {
			alter += "; DeleteAcls of revoked bindings mirrorctl created (sync.topic.acls.prune)"
		}
		b.addAll(tgt, p, TypeCluster, clusterRes, OpAlter, alter)
		// replicate/acltrack.go: the bindings the sync created, recorded.
		ledger := []resource{literal(replicate.ACLLedgerTopic(cfg.Policy, src))}
		b.addAll(tgt, p, TypeTopic, ledger, OpCreate, "sync.topic.acls: CreateTopics of the ACL ledger")
		b.addAll(tgt, p, TypeTopic, ledger, OpWrite, "sync.topic.acls: Produce the bindings created (and tombstones of pruned ones)")
		b.addAll(tgt, p, TypeTopic, ledger, OpRead, "sync.topic.acls: ListOffsets and Fetch the bindings mirrorctl created, to report revoked ones")
		b.note(NoteWarning, cfg.Name(), "sync.topic.acls.enabled is on (MM2's default): %s gets CLUSTER ALTER on %s, "+
			"which lets it create any ACL there, itself included; set %s->%s.sync.topic.acls.enabled = false to plan without it",
			p, tgt, src, tgt)
	}

	if fp := b.in.FailoverPrincipal; fp != "" {
		b.failover(cfg, fp, topics, remotes, groups)
	}
	return nil
}

// failover adds the bindings of the failover principal for one enabled
// flow: what translate (every mode), failover --apply --verify and lag read
// and commit. The internal topics are read whether or not the mirror
// writes them (translate's exact mode reads the offset syncs, lag reads the
// progress, offset-syncs, heartbeats and checkpoints topics of every flow
// it reports), so their grants do not depend on the emit settings.
func (b *builder) failover(cfg replicate.FlowConfig, fp string, topics, remotes, groups []resource) {
	src, tgt := cfg.Source, cfg.Target
	syncAlias, syncTopic := cfg.OffsetSyncsTopic()
	ck := []resource{literal(cfg.Policy.CheckpointsTopic(src))}
	if cfg.EmitCheckpoints {
		b.addAll(tgt, fp, TypeTopic, ck, OpRead, "translate --mode checkpoint (auto when the source is down): ListOffsets and Fetch checkpoints")
	}
	b.addAll(tgt, fp, TypeTopic, ck, OpRead, "lag: ListOffsets and Fetch checkpoints (checkpoint age, re-reads)")
	syncs := []resource{literal(syncTopic)}
	b.addAll(syncAlias, fp, TypeTopic, syncs, OpRead, "translate, failover (exact and auto): ListOffsets and Fetch offset syncs")
	b.addAll(syncAlias, fp, TypeTopic, syncs, OpRead, "lag: ListOffsets and Fetch offset syncs")
	prog := []resource{literal(replicate.ProgressTopic(cfg.Policy, src))}
	b.addAll(tgt, fp, TypeTopic, prog, OpRead, "lag, failover --max-lag: ListOffsets and Fetch the mirror's progress (replicated offsets)")
	hb := []resource{literal(cfg.Policy.HeartbeatsTopic())}
	b.addAll(tgt, fp, TypeTopic, hb, OpRead, "lag: ListOffsets and Fetch heartbeats (heartbeat age)")
	if t := cfg.MM2.OffsetsTopic; t != "" {
		// lag/read.go: where MM2's Connect source offsets are ahead of the
		// progress, the position comes from them.
		b.addAll(tgt, fp, TypeTopic, []resource{literal(t)}, OpRead, "lag: ListOffsets and Fetch MM2's Connect source offsets (the flow's position where MM2 copies it)")
	}
	b.addAll(src, fp, TypeGroup, groups, OpDescribe, "translate, failover: FindCoordinator and OffsetFetch of the source group")
	b.addAll(src, fp, TypeGroup, groups, OpDescribe, "lag: OffsetFetch of the groups with checkpoints")
	b.addAll(src, fp, TypeGroup, groups, OpRead, "failover apply --type restore: OffsetCommit of the group on the source (DescribeGroups, OffsetFetch)")
	b.addAll(src, fp, TypeTopic, topics, OpRead, "translate (exact, auto), failover verify: ListOffsets and Fetch source records; "+
		"failover apply --type planned: ListOffsets until the end offsets stay still; --type restore: OffsetCommit needs topic READ")
	b.addAll(src, fp, TypeTopic, topics, OpRead, "lag: Metadata and ListOffsets of source topics, Fetch the oldest record not yet copied")
	b.addAll(tgt, fp, TypeGroup, groups, OpRead, "failover apply: OffsetCommit (DescribeGroups, OffsetFetch)")
	b.addAll(tgt, fp, TypeTopic, remotes, OpRead, "failover apply: OffsetCommit needs topic READ; failover verify, translate (exact, auto): Fetch target records; "+
		"failover --type unplanned: ListOffsets of the remote partitions (the error bound)")
	b.addAll(tgt, fp, TypeTopic, remotes, OpRead, "lag: Metadata and ListOffsets of remote topics")
	b.drill(cfg, fp, groups)
	if !b.in.NoFence {
		b.addAll(src, fp, TypeCluster, clusterRes, OpAlter, "fence add|remove|status, failover apply --type planned --fence-principal: CreateAcls, DeleteAcls, DescribeAcls of the DENY WRITE bindings")
		b.note(NoteWarning, cfg.Name(), "the write fence gives %s CLUSTER ALTER on %s, which lets it create any ACL there, itself included; "+
			"acl-plan --no-fence plans without it (a planned failover then states --producers-stopped)", fp, src)
	}
	if cfg.EmitCheckpoints && cfg.ReverseCheckpoints {
		_, rt := cfg.ReverseCheckpointsTopic()
		b.addAll(src, fp, TypeTopic, []resource{literal(rt)}, OpRead, "failover --type restore (checkpoint mode, the target down): ListOffsets and Fetch reverse checkpoints")
	}
}

// drill adds the failover principal's rights on the drill's shadow groups
// on the target (each group's name + failover.DefaultDrillSuffix): their
// commits and their deletion. A PREFIXED group resource covers its
// shadows, and its DELETE the real groups of the prefix too (a note says
// so).
func (b *builder) drill(cfg replicate.FlowConfig, fp string, groups []resource) {
	var shadows []resource
	for _, g := range groups {
		switch {
		case g.pattern == PatternLiteral && g.name != "*":
			shadows = append(shadows, literal(g.name+failover.DefaultDrillSuffix))
		default:
			shadows = append(shadows, g)
			b.note(NoteWarning, cfg.Name(), "failover drill deletes its shadow groups (<group>%s): DELETE on %s group %s on %s lets %s delete the real groups it covers too",
				failover.DefaultDrillSuffix, strings.ToLower(g.pattern), g.name, cfg.Target, fp)
		}
	}
	b.addAll(cfg.Target, fp, TypeGroup, shadows, OpRead, "failover drill: OffsetCommit of the shadow group (DescribeGroups, OffsetFetch)")
	b.addAll(cfg.Target, fp, TypeGroup, shadows, OpDelete, "failover drill: DeleteGroups of the shadow group")
}

var typeRank = map[string]int{TypeCluster: 0, TypeTopic: 1, TypeGroup: 2, TypeTransactionalID: 3}

var opRank = map[string]int{OpAll: 0, OpRead: 1, OpWrite: 2, OpCreate: 3, OpAlter: 4, OpDelete: 5,
	OpDescribe: 6, OpAlterConfigs: 7, OpDescribeConfigs: 8}

// Sort orders bindings by cluster, principal, resource type (CLUSTER,
// TOPIC, GROUP), resource name, pattern type and operation.
func Sort(bs []Binding) {
	sort.SliceStable(bs, func(i, j int) bool {
		a, b := bs[i], bs[j]
		switch {
		case a.Cluster != b.Cluster:
			return a.Cluster < b.Cluster
		case a.Principal != b.Principal:
			return a.Principal < b.Principal
		case a.ResourceType != b.ResourceType:
			return rank(typeRank, a.ResourceType) < rank(typeRank, b.ResourceType)
		case a.ResourceName != b.ResourceName:
			return a.ResourceName < b.ResourceName
		case a.PatternType != b.PatternType:
			return a.PatternType < b.PatternType
		case a.Operation != b.Operation:
			return rank(opRank, a.Operation) < rank(opRank, b.Operation)
		}
		return a.Permission < b.Permission
	})
}

func rank(m map[string]int, k string) int {
	if r, ok := m[k]; ok {
		return r
	}
	return len(m)
}

// prune drops every binding that another one covers, moving its reason to
// the covering binding ("also DESCRIBE: ..." when the operation differs).
// bs must be sorted and free of duplicates; the result stays sorted.
func prune(bs []Binding) []Binding {
	removed := make([]bool, len(bs))
	for changed := true; changed; {
		changed = false
		for i := range bs {
			if removed[i] {
				continue
			}
			for j := range bs {
				if i == j || removed[j] || !bs[j].Covers(bs[i]) {
					continue
				}
				what := bs[i].Reason
				if bs[i].Operation != bs[j].Operation {
					what = "implies " + bs[i].Operation + " (" + what + ")"
				}
				if bs[i].ResourceName != bs[j].ResourceName || bs[i].PatternType != bs[j].PatternType {
					what = "covers " + bs[i].PatternType + " " + bs[i].ResourceName + " (" + what + ")"
				}
				bs[j].Reason = joinReason(bs[j].Reason, what)
				removed[i] = true
				changed = true
				break
			}
		}
	}
	out := make([]Binding, 0, len(bs))
	for i, b := range bs {
		if !removed[i] {
			out = append(out, b)
		}
	}
	return out
}
