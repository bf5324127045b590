package replicate

import (
	"context"
	"errors"
	"fmt"
	"sort"

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

// TopicACL is one topic ACL binding as the ACL sync reads and writes it.
type TopicACL struct {
	Principal  string                 // e.g. "User:alice"
	Host       string                 // e.g. "*"
	Topic      string                 // LITERAL topic name
	Operation  kmsg.ACLOperation      // e.g. kmsg.ACLOperationRead
	Permission kmsg.ACLPermissionType // ALLOW or DENY
}

// RemoteTopicACLs applies MM2's sync.topic.acls rules (MirrorSourceConnector
// shouldReplicateAcl and targetAclBinding, docs/mm2-formats.md §9) to the LITERAL
// topic ACLs of cfg's source: an ACL is kept when it is not ALLOW WRITE
// (only the mirror writes remote topics) and its topic passes the flow's
// topic decision (filter, internal, cycle); its topic becomes the remote
// name and ALLOW ALL becomes ALLOW READ. Principal, host, permission and
// other operations are kept, so DENY entries (DENY WRITE too) are copied as
// they are. Like MM2, a LITERAL "*" ACL passes the default filter and is
// copied as the literal topic "<source>.*". The result is sorted and has no
// duplicates.
func RemoteTopicACLs(cfg FlowConfig, acls []TopicACL) []TopicACL {
	seen := map[TopicACL]bool{}
	var out []TopicACL
	for _, a := range acls {
		if a.Permission == kmsg.ACLPermissionTypeAllow && a.Operation == kmsg.ACLOperationWrite {
			continue
		}
		if !filter.DecideTopic(cfg.Policy, cfg.Topics, a.Topic, cfg.Target, cfg.HeartbeatsReplication).Replicate {
			continue
		}
		r := a
		r.Topic = cfg.Policy.FormatRemoteTopic(cfg.Source, a.Topic)
		if r.Permission == kmsg.ACLPermissionTypeAllow && r.Operation == kmsg.ACLOperationAll {
			r.Operation = kmsg.ACLOperationRead
		}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		if a.Principal != b.Principal {
			return a.Principal < b.Principal
		}
		if a.Host != b.Host {
			return a.Host < b.Host
		}
		if a.Operation != b.Operation {
			return a.Operation < b.Operation
		}
		return a.Permission < b.Permission
	})
	return out
}

// SyncTopicACLs copies the source's LITERAL topic ACLs to the target, per
// [RemoteTopicACLs], as MM2's periodic ACL sync does (sync.topic.acls.enabled,
// default true, every sync.topic.acls.interval.seconds, default 600 s). It
// reads with DescribeAcls on src (needs DESCRIBE on the source CLUSTER) and
// writes with CreateAcls on tgt (needs ALTER on the target CLUSTER). The
// sync is additive: it never deletes a target ACL. created counts the
// bindings the target accepted; Kafka accepts an ACL that already exists,
// so a re-run counts it again (checking first would need DESCRIBE on the
// target CLUSTER, a right the mirror does not otherwise need).
//
// Errors: [ErrNoAuthorizer] when the source has no authorizer; otherwise
// the DescribeAcls failure, or the CreateAcls failures joined, each naming
// the cluster and binding.
func SyncTopicACLs(ctx context.Context, cfg FlowConfig, src, tgt *kadm.Client) (created int, err error) {
	acls, err := describeTopicACLs(ctx, src)
	if err != nil {
		if errors.Is(err, kerr.SecurityDisabled) {
			return 0, ErrNoAuthorizer
		}
		return 0, fmt.Errorf("flow %s: describe topic ACLs on %s: %w", cfg.Name(), cfg.Source, err)
	}
	remote := RemoteTopicACLs(cfg, acls)
	// One request per principal, host, operation and permission, listing
	// its topics: kadm builds the cross product, which is then exact.
	type group struct {
		principal, host string
		op              kmsg.ACLOperation
		perm            kmsg.ACLPermissionType
	}
	var order []group
	topics := map[group][]string{}
	for _, a := range remote {
		g := group{a.Principal, a.Host, a.Operation, a.Permission}
		if _, ok := topics[g]; !ok {
			order = append(order, g)
		}
		topics[g] = append(topics[g], a.Topic)
	}
	var errs []error
	for _, g := range order {
		b := kadm.NewACLs().Topics(topics[g]...).Operations(g.op).ResourcePatternType(kadm.ACLPatternLiteral)
		if g.perm == kmsg.ACLPermissionTypeAllow {
			b = b.Allow(g.principal).AllowHosts(g.host)
		} else {
			b = b.Deny(g.principal).DenyHosts(g.host)
		}
		res, err := tgt.CreateACLs(ctx, b)
		if err != nil {
			errs = append(errs, fmt.Errorf("flow %s: create ACLs on %s for %s %s %s: %w", cfg.Name(), cfg.Target, g.perm, g.principal, g.op, err))
			continue
		}
		for _, r := range res {
			if r.Err != nil {
				errs = append(errs, fmt.Errorf("flow %s: create ACL on %s: %s %s %s on topic %s: %w", cfg.Name(), cfg.Target, r.Permission, r.Principal, r.Operation, r.Name, r.Err))
				continue
			}
			created++
		}
	}
	return created, errors.Join(errs...)
}

// describeTopicACLs returns every LITERAL topic ACL of the cluster.
func describeTopicACLs(ctx context.Context, adm *kadm.Client) ([]TopicACL, error) {
	b := kadm.NewACLs().Topics().Allow().AllowHosts().Deny().DenyHosts().Operations().
		ResourcePatternType(kadm.ACLPatternLiteral)
	res, err := adm.DescribeACLs(ctx, b)
	if err != nil {
		return nil, err
	}
	var out []TopicACL
	var errs []error
	for _, r := range res {
		if r.Err != nil {
			errs = append(errs, r.Err)
			continue
		}
		for _, d := range r.Described {
			if d.Type != kmsg.ACLResourceTypeTopic || d.Pattern != kadm.ACLPatternLiteral {
				continue // MM2 never copies PREFIXED topic ACLs
			}
			out = append(out, TopicACL{Principal: d.Principal, Host: d.Host, Topic: d.Name, Operation: d.Operation, Permission: d.Permission})
		}
	}
	return out, errors.Join(errs...)
}
