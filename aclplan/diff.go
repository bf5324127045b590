package aclplan

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Diff statuses.
const (
	// StatusMissing: a planned binding no existing ALLOW grants.
	StatusMissing = "missing"
	// StatusPresent: a planned binding an existing ALLOW grants (exactly,
	// or through a broader grant named in Via).
	StatusPresent = "present"
	// StatusBroader: an existing ALLOW of a planned principal that the plan
	// does not contain: it grants more than needed.
	StatusBroader = "broader"
	// StatusDeny: an existing DENY of a planned principal; a DENY wins over
	// any ALLOW and may block a planned operation.
	StatusDeny = "deny"
)

// DiffEntry is one row of a diff: a planned binding (missing or present)
// or an existing one (broader, deny).
type DiffEntry struct {
	Status  string  `json:"status"`
	Binding Binding `json:"binding"`
	// Via is the existing grant that covers a present binding when it is
	// not the same binding, in Binding.String form.
	Via string `json:"via,omitempty"`
}

// Diff compares planned bindings with the ACLs that exist (DescribeAcls
// results, already converted with [FromDescribed]) and returns the planned
// bindings in order (missing or present), then the existing bindings of
// the planned principals on the planned clusters that the plan does not
// contain (broader) or that deny (deny), sorted.
func Diff(planned, existing []Binding) []DiffEntry {
	principals := map[string]bool{}
	clusters := map[string]bool{}
	plannedKeys := map[Binding]bool{}
	for _, p := range planned {
		principals[p.Principal] = true
		clusters[p.Cluster] = true
		plannedKeys[p.key()] = true
	}
	out := make([]DiffEntry, 0, len(planned))
	for _, p := range planned {
		e := DiffEntry{Status: StatusMissing, Binding: p}
		for _, x := range existing {
			if x.key() == p.key() {
				e.Status, e.Via = StatusPresent, ""
				break
			}
			if x.Covers(p) && e.Status == StatusMissing {
				e.Status, e.Via = StatusPresent, x.String()
			}
		}
		out = append(out, e)
	}
	var extra []Binding
	for _, x := range existing {
		if !principals[x.Principal] || !clusters[x.Cluster] || plannedKeys[x.key()] {
			continue
		}
		extra = append(extra, x)
	}
	Sort(extra)
	for _, x := range extra {
		st := StatusBroader
		if x.Permission != Allow {
			st = StatusDeny
		}
		out = append(out, DiffEntry{Status: st, Binding: x})
	}
	return out
}

// FromDescribed converts DescribeAcls results of cluster alias into
// bindings (no reason). A result with an error is returned as that error,
// naming the cluster.
func FromDescribed(alias string, res kadm.DescribeACLsResults) ([]Binding, error) {
	var out []Binding
	var errs []error
	for _, r := range res {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("describe ACLs on %s: %w", alias, r.Err))
			continue
		}
		for _, d := range r.Described {
			out = append(out, Binding{Cluster: alias, Principal: d.Principal, Host: d.Host,
				ResourceType: d.Type.String(), PatternType: d.Pattern.String(), ResourceName: d.Name,
				Operation: d.Operation.String(), Permission: d.Permission.String()})
		}
	}
	return out, errors.Join(errs...)
}

// Describe returns the ACLs of principals on one cluster (DescribeAcls with
// any resource, pattern, host, operation and permission; needs DESCRIBE on
// CLUSTER), as bindings of cluster alias.
func Describe(ctx context.Context, adm *kadm.Client, alias string, principals ...string) ([]Binding, error) {
	b := kadm.NewACLs().AnyResource().Allow(principals...).AllowHosts().Deny(principals...).DenyHosts().
		Operations().ResourcePatternType(kadm.ACLPatternAny)
	res, err := adm.DescribeACLs(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("describe ACLs on %s: %w", alias, err)
	}
	return FromDescribed(alias, res)
}

// Builder returns the kadm ACL builder that creates (or deletes, or
// describes) exactly bd.
func Builder(bd Binding) (*kadm.ACLBuilder, error) {
	op, err := kmsg.ParseACLOperation(bd.Operation)
	if err != nil {
		return nil, fmt.Errorf("binding %s: %w", bd, err)
	}
	pat, err := kmsg.ParseACLResourcePatternType(bd.PatternType)
	if err != nil {
		return nil, fmt.Errorf("binding %s: %w", bd, err)
	}
	b := kadm.NewACLs().Operations(op).ResourcePatternType(pat)
	if bd.Permission == Allow {
		b = b.Allow(bd.Principal).AllowHosts(bd.Host).MaybeDeny().MaybeDenyHosts()
	} else {
		b = b.Deny(bd.Principal).DenyHosts(bd.Host).MaybeAllow().MaybeAllowHosts()
	}
	switch bd.ResourceType {
	case TypeTopic:
		b = b.Topics(bd.ResourceName)
	case TypeGroup:
		b = b.Groups(bd.ResourceName)
	case TypeCluster:
		b = b.Clusters()
	case TypeTransactionalID:
		b = b.TransactionalIDs(bd.ResourceName)
	default:
		return nil, fmt.Errorf("binding %s: resource type %s is not planned by mirrorctl", bd, bd.ResourceType)
	}
	return b, nil
}

// ApplyResult is the outcome of creating one binding.
type ApplyResult struct {
	Binding Binding `json:"binding"`
	Error   string  `json:"error,omitempty"`
}

// Create creates bindings on one cluster (CreateAcls; needs ALTER on
// CLUSTER), one request per binding so each outcome is exact. It returns
// one result per binding and the failures joined, each naming the binding.
func Create(ctx context.Context, adm *kadm.Client, bindings []Binding) ([]ApplyResult, error) {
	var errs []error
	out := make([]ApplyResult, 0, len(bindings))
	for _, bd := range bindings {
		b, err := Builder(bd)
		if err == nil {
			var res kadm.CreateACLsResults
			res, err = adm.CreateACLs(ctx, b)
			for _, r := range res {
				if r.Err != nil {
					err = errors.Join(err, r.Err)
				}
			}
		}
		r := ApplyResult{Binding: bd}
		if err != nil {
			err = fmt.Errorf("create %s: %w", bd, err)
			r.Error = err.Error()
			errs = append(errs, err)
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}
