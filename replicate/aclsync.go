package replicate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp/syntax"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/mirrorctl/mirrorctl/replicate/filter"
)

// ErrNoAuthorizer is returned by [SyncTopicACLs] when the source cluster
// has no authorizer (DescribeAcls answers SECURITY_DISABLED). MM2 skips the
// sync then and logs it once at info level (KAFKA-14781); callers should do
// the same rather than warn on every run.
var ErrNoAuthorizer = errors.New("source cluster has no authorizer (SECURITY_DISABLED): topic ACL sync skipped")

// ACLBinding is one ACL binding of any resource type, as DescribeAcls
// returns it and CreateAcls and DeleteAcls take it (Kafka's AclBinding: a
// resource pattern plus an access control entry).
// In JSON the enums are Kafka's names ("TOPIC", "PREFIXED", "READ",
// "ALLOW").
type ACLBinding struct {
	ResourceType kmsg.ACLResourceType        `json:"resource_type"` // e.g. kmsg.ACLResourceTypeTopic
	Pattern      kmsg.ACLResourcePatternType `json:"pattern_type"`  // LITERAL or PREFIXED
	Name         string                      `json:"name"`          // topic name, prefix, group, "kafka-cluster", ...
	Principal    string                      `json:"principal"`     // e.g. "User:alice"
	Host         string                      `json:"host"`          // e.g. "*"
	Operation    kmsg.ACLOperation           `json:"operation"`     // e.g. kmsg.ACLOperationRead
	Permission   kmsg.ACLPermissionType      `json:"permission"`    // ALLOW or DENY
}

// String returns the binding on one line in a fixed order, e.g.
// "ALLOW User:alice READ TOPIC PREFIXED us-east.orders host=*".
func (b ACLBinding) String() string {
	return fmt.Sprintf("%s %s %s %s %s %s host=%s", b.Permission, b.Principal, b.Operation, b.ResourceType, b.Pattern, b.Name, b.Host)
}

// LogValue makes a binding log as [ACLBinding.String].
func (b ACLBinding) LogValue() slog.Value { return slog.StringValue(b.String()) }

func (b ACLBinding) less(o ACLBinding) bool {
	switch {
	case b.ResourceType != o.ResourceType:
		return b.ResourceType < o.ResourceType
	case b.Name != o.Name:
		return b.Name < o.Name
	case b.Pattern != o.Pattern:
		return b.Pattern < o.Pattern
	case b.Principal != o.Principal:
		return b.Principal < o.Principal
	case b.Host != o.Host:
		return b.Host < o.Host
	case b.Operation != o.Operation:
		return b.Operation < o.Operation
	}
	return b.Permission < o.Permission
}

func sortBindings(bs []ACLBinding) {
	sort.Slice(bs, func(i, j int) bool { return bs[i].less(bs[j]) })
}

// Reasons a source ACL binding is not synced ([ACLSkip].Reason); stable
// strings, part of the JSON of --dry-run and /status.
const (
	// ACLSkipNotTopic: a GROUP, CLUSTER, TRANSACTIONAL_ID,
	// DELEGATION_TOKEN or USER binding. MM2 syncs topic ACLs only.
	ACLSkipNotTopic = "not-a-topic-acl"
	// ACLSkipAllowWrite: ALLOW WRITE (or ALLOW ALL's WRITE): only the
	// mirror writes remote topics (MirrorSourceConnector.shouldReplicateAcl).
	ACLSkipAllowWrite = "allow-write"
	// ACLSkipNotMirrored: a LITERAL binding on a topic the flow does not
	// mirror (topic filter, internal topic, cycle).
	ACLSkipNotMirrored = "topic-not-mirrored"
	// ACLSkipPrefixNotRenamed: a PREFIXED binding under a replication
	// policy that does not rename by prefixing (identity, or a custom
	// one): the same prefix on the target would grant on target topics
	// that are not copies.
	ACLSkipPrefixNotRenamed = "prefix-not-renamed"
	// ACLSkipPrefixFilter: a PREFIXED binding whose prefix covers names the
	// flow's topics list does not admit (the filter is narrower than the
	// prefix): a topic created under the prefix later would not be copied,
	// and the renamed prefix would grant on its name on the target.
	ACLSkipPrefixFilter = "prefix-wider-than-topic-filter"
	// ACLSkipPrefixUnmirrored: a PREFIXED binding whose prefix matches a
	// source topic the flow does not mirror: the renamed prefix would
	// grant on a target name no copy fills.
	ACLSkipPrefixUnmirrored = "prefix-covers-unmirrored-topic"
	// ACLSkipWildcard: the LITERAL "*" binding under a policy that keeps
	// the name "*": on the target it would grant on every topic.
	ACLSkipWildcard = "wildcard-not-renamed"
	// ACLSkipPattern: a pattern type other than LITERAL and PREFIXED.
	ACLSkipPattern = "pattern-type"
)

// ACLSkip is a source binding the sync leaves out, with why: Reason is one
// of the ACLSkip* constants, Detail a sentence for people.
type ACLSkip struct {
	Binding ACLBinding `json:"binding"`
	Reason  string     `json:"reason"`
	Detail  string     `json:"detail"`
}

// ACLPlan is what the source's ACLs give on the target ([PlanTopicACLs]):
// Bindings the target bindings, sorted and without duplicates; Skipped
// every source binding left out, sorted by binding.
type ACLPlan struct {
	Bindings []ACLBinding `json:"bindings"`
	Skipped  []ACLSkip    `json:"skipped"`
}

// PlanTopicACLs applies MM2's sync.topic.acls rules (MirrorSourceConnector
// syncTopicAcls, shouldReplicateAcl and targetAclBinding) to source, every
// ACL binding of cfg's source, and then mirrorctl's own for PREFIXED ones.
//
// As MM2: only TOPIC bindings; not ALLOW WRITE (only the mirror writes
// remote topics); the topic must pass the flow's topic decision (filter,
// internal, cycle); the name becomes the remote name and ALLOW ALL becomes
// ALLOW READ; principal, host, permission and other operations are kept, so
// DENY (DENY WRITE and DENY ALL too) is copied as it is. Like MM2, a LITERAL
// "*" binding passes the default filter and becomes the LITERAL topic
// "<source>.*", a name no topic can have.
//
// Beyond MM2 (docs/sync-fidelity.md): a PREFIXED binding is renamed (PREFIXED
// "orders" becomes PREFIXED "us-east.orders" under the default policy) when
// that is safe: the policy renames by prefixing, so every target name under
// the new prefix is one only a copy from this source carries, and no topic
// of sourceTopics (the source's topic names) under the prefix is left
// unmirrored. Otherwise it is left out, as is a LITERAL "*" that the policy
// keeps as "*" (identity), which on the target would grant on every topic.
// Every binding left out is in Skipped with its reason.
func PlanTopicACLs(cfg FlowConfig, source []ACLBinding, sourceTopics []string) ACLPlan {
	seen := map[ACLBinding]bool{}
	var plan ACLPlan
	topics := append([]string(nil), sourceTopics...)
	sort.Strings(topics)
	for _, a := range source {
		r, skip := targetBinding(cfg, a, topics)
		if skip != nil {
			plan.Skipped = append(plan.Skipped, *skip)
			continue
		}
		if !seen[r] {
			seen[r] = true
			plan.Bindings = append(plan.Bindings, r)
		}
	}
	sortBindings(plan.Bindings)
	sort.Slice(plan.Skipped, func(i, j int) bool { return plan.Skipped[i].Binding.less(plan.Skipped[j].Binding) })
	return plan
}

// targetBinding returns a's binding on the target, or why there is none.
func targetBinding(cfg FlowConfig, a ACLBinding, sourceTopics []string) (ACLBinding, *ACLSkip) {
	skip := func(reason, format string, args ...any) (ACLBinding, *ACLSkip) {
		return ACLBinding{}, &ACLSkip{Binding: a, Reason: reason, Detail: fmt.Sprintf(format, args...)}
	}
	if a.ResourceType != kmsg.ACLResourceTypeTopic {
		return skip(ACLSkipNotTopic, "%s binding: only topic ACLs are synced (as MM2)", a.ResourceType)
	}
	if a.Permission == kmsg.ACLPermissionTypeAllow && a.Operation == kmsg.ACLOperationWrite {
		return skip(ACLSkipAllowWrite, "ALLOW WRITE is never synced: only the mirror writes remote topics (as MM2)")
	}
	r := a
	r.Name = cfg.Policy.FormatRemoteTopic(cfg.Source, a.Name)
	if r.Permission == kmsg.ACLPermissionTypeAllow && r.Operation == kmsg.ACLOperationAll {
		r.Operation = kmsg.ACLOperationRead
	}
	switch a.Pattern {
	case kmsg.ACLResourcePatternTypeLiteral:
		if a.Name == "*" && r.Name == "*" {
			return skip(ACLSkipWildcard, "the policy keeps the name \"*\": on %s it would grant on every topic, copies or not (MM2 copies it)", cfg.Target)
		}
		if d := filter.DecideTopic(cfg.Policy, cfg.Topics, a.Name, cfg.Target, cfg.HeartbeatsReplication); !d.Replicate {
			return skip(ACLSkipNotMirrored, "%s", d.Detail)
		}
		return r, nil
	case kmsg.ACLResourcePatternTypePrefixed:
		if !prefixRenamed(cfg, a.Name) {
			return skip(ACLSkipPrefixNotRenamed, "the replication policy does not rename %q by prefixing it (remote name %q): "+
				"the prefix on %s would grant on topics that are not copies (MM2 never syncs prefixed ACLs)", a.Name, r.Name, cfg.Target)
		}
		if !filterAdmitsPrefix(cfg.Topics, a.Name) {
			return skip(ACLSkipPrefixFilter, "%s (%s) does not admit every topic name starting with %q: the renamed prefix %q would grant on "+
				"names on %s that no copy fills", keyOrTopics(cfg.Topics), cfg.Topics.Include, a.Name, r.Name, cfg.Target)
		}
		for _, t := range prefixed(sourceTopics, a.Name) {
			if d := filter.DecideTopic(cfg.Policy, cfg.Topics, t, cfg.Target, cfg.HeartbeatsReplication); !d.Replicate {
				return skip(ACLSkipPrefixUnmirrored, "the prefix covers source topic %q, which the flow does not mirror (%s): "+
					"the renamed prefix %q would grant on a name on %s that no copy fills", t, d.Detail, r.Name, cfg.Target)
			}
		}
		return r, nil
	}
	return skip(ACLSkipPattern, "pattern type %s is not synced", a.Pattern)
}

// prefixRenamed reports whether the flow's policy renames every name that
// starts with prefix by putting the same thing in front of it, and names
// such a remote topic as coming from the flow's source: then the renamed
// prefix matches exactly the remote names of the source names it matched.
// Checked on sample continuations of the prefix, so it holds for the
// default policy with any separator and fails for identity.
func prefixRenamed(cfg FlowConfig, prefix string) bool {
	p := cfg.Policy
	rp := p.FormatRemoteTopic(cfg.Source, prefix)
	if rp == prefix || !strings.HasSuffix(rp, prefix) {
		return false
	}
	for _, s := range []string{"", "x", ".y", "_z", "-1", ".a.b"} {
		rt := p.FormatRemoteTopic(cfg.Source, prefix+s)
		if rt != rp+s {
			return false
		}
		if src, ok := p.TopicSource(rt); !ok || src != cfg.Source {
			return false
		}
		if up, ok := p.UpstreamTopic(rt); !ok || up != prefix+s {
			return false
		}
	}
	return true
}

// filterAdmitsPrefix reports whether f's include list admits every topic
// name starting with prefix, as far as the list's items show it: an item
// that is a literal L followed by "at least n of any character" (".*",
// "L.*", "L.+", "L..*" — what "L\..*" becomes once a .properties file
// has eaten its backslash), with prefix starting with L and at least n
// characters longer. Any other item is not taken as proof, so the answer
// errs on the side of no. The exclude list is checked against the
// source's topics instead (targetBinding): its default items
// (".*[\-\.]internal", ...) would match names under any prefix.
func filterAdmitsPrefix(f filter.TopicFilter, prefix string) bool {
	for _, item := range f.Include.Items() {
		lit, min, ok := literalThenAny(item)
		if ok && strings.HasPrefix(prefix, lit) && len(prefix) >= len(lit)+min {
			return true
		}
	}
	return false
}

// literalThenAny parses item as a literal (possibly empty) followed by any
// run of at least min characters.
func literalThenAny(item string) (lit string, min int, ok bool) {
	re, err := syntax.Parse(item, syntax.Perl)
	if err != nil {
		return "", 0, false
	}
	re = re.Simplify()
	subs := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		subs = re.Sub
	}
	any := func(r *syntax.Regexp) bool { return r.Op == syntax.OpAnyCharNotNL || r.Op == syntax.OpAnyChar }
	i := 0
	if subs[0].Op == syntax.OpLiteral {
		if subs[0].Flags&syntax.FoldCase != 0 {
			return "", 0, false
		}
		lit, i = string(subs[0].Rune), 1
	}
	for ; i < len(subs); i++ {
		switch r := subs[i]; {
		case any(r):
			min++
		case (r.Op == syntax.OpStar || r.Op == syntax.OpPlus) && len(r.Sub) == 1 && any(r.Sub[0]) && i == len(subs)-1:
			if r.Op == syntax.OpPlus {
				min++
			}
			return lit, min, true
		default:
			return "", 0, false
		}
	}
	return "", 0, false
}

func keyOrTopics(f filter.TopicFilter) string {
	if k := f.Include.Key(); k != "" {
		return k
	}
	return filter.KeyTopics
}

// prefixed returns the names of sorted that start with prefix.
func prefixed(sorted []string, prefix string) []string {
	i := sort.SearchStrings(sorted, prefix)
	j := i
	for j < len(sorted) && strings.HasPrefix(sorted[j], prefix) {
		j++
	}
	return sorted[i:j]
}

// describeACLs returns every ACL binding of the cluster of the resource
// type (kmsg.ACLResourceTypeAny for all), LITERAL and PREFIXED
// (DescribeAcls; needs DESCRIBE on the CLUSTER).
func describeACLs(ctx context.Context, adm *kadm.Client, rt kmsg.ACLResourceType) ([]ACLBinding, error) {
	b := kadm.NewACLs().Allow().AllowHosts().Deny().DenyHosts().Operations().ResourcePatternType(kadm.ACLPatternAny)
	if rt == kmsg.ACLResourceTypeTopic {
		b = b.Topics()
	} else {
		b = b.AnyResource()
	}
	res, err := adm.DescribeACLs(ctx, b)
	if err != nil {
		return nil, err
	}
	var out []ACLBinding
	var errs []error
	for _, r := range res {
		if r.Err != nil {
			errs = append(errs, r.Err)
			continue
		}
		for _, d := range r.Described {
			out = append(out, ACLBinding{ResourceType: d.Type, Pattern: d.Pattern, Name: d.Name,
				Principal: d.Principal, Host: d.Host, Operation: d.Operation, Permission: d.Permission})
		}
	}
	sortBindings(out)
	return dedupe(out), errors.Join(errs...)
}

// dedupe drops repeats from sorted bindings (one DescribeAcls filter per
// permission may list a binding twice).
func dedupe(bs []ACLBinding) []ACLBinding {
	out := bs[:0]
	for i, b := range bs {
		if i == 0 || b != bs[i-1] {
			out = append(out, b)
		}
	}
	return out
}

// aclBuilder returns the kadm builder that names exactly b (CreateAcls,
// or a DeleteAcls filter that matches b alone).
func aclBuilder(b ACLBinding) *kadm.ACLBuilder {
	ab := kadm.NewACLs().Topics(b.Name).Operations(b.Operation).ResourcePatternType(b.Pattern)
	if b.Permission == kmsg.ACLPermissionTypeAllow {
		return ab.Allow(b.Principal).AllowHosts(b.Host)
	}
	return ab.Deny(b.Principal).DenyHosts(b.Host)
}

// createACLs creates bs on the target and returns those the target
// accepted, and the failures joined, each naming the binding.
func createACLs(ctx context.Context, cfg FlowConfig, tgt *kadm.Client, bs []ACLBinding) ([]ACLBinding, error) {
	var ok []ACLBinding
	var errs []error
	for _, b := range bs {
		res, err := tgt.CreateACLs(ctx, aclBuilder(b))
		for _, r := range res {
			err = errors.Join(err, r.Err)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("flow %s: create ACL on %s: %s: %w", cfg.Name(), cfg.Target, b, err))
			continue
		}
		ok = append(ok, b)
	}
	return ok, errors.Join(errs...)
}

// deleteACL deletes exactly b on the target.
func deleteACL(ctx context.Context, cfg FlowConfig, tgt *kadm.Client, b ACLBinding) error {
	res, err := tgt.DeleteACLs(ctx, aclBuilder(b))
	for _, r := range res {
		err = errors.Join(err, r.Err)
		for _, d := range r.Deleted {
			err = errors.Join(err, d.Err)
		}
	}
	if err != nil {
		return fmt.Errorf("flow %s: delete ACL on %s: %s: %w", cfg.Name(), cfg.Target, b, err)
	}
	return nil
}

// wrapDescribeSource turns a failed DescribeAcls on the source into
// [ErrNoAuthorizer] or an error naming the flow and cluster.
func wrapDescribeSource(cfg FlowConfig, err error) error {
	if errors.Is(err, kerr.SecurityDisabled) {
		return ErrNoAuthorizer
	}
	return fmt.Errorf("flow %s: describe ACLs on %s: %w", cfg.Name(), cfg.Source, err)
}
