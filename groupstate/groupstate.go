// Package groupstate reads a consumer group's state on a cluster through the
// API each group protocol needs, and fails closed: a group whose state
// cannot be known is never reported as safe to commit to.
//
// The key types are [State] (one group's answer: its type, state, members,
// or the error that left it unknown) and [Member] (one member, for the
// message that says which consumers block a commit). [Describe] fills them:
//
//   - ListGroups (Kafka 3.8+ answers each group's type: classic, consumer,
//     share, streams) tells which protocol a group speaks; a group it does
//     not list is absent, once DescribeGroups agrees;
//   - classic groups are described with DescribeGroups;
//   - consumer groups (KIP-848, group.protocol=consumer) with
//     ConsumerGroupDescribe, since a Kafka 4 broker answers DescribeGroups
//     for them with GROUP_ID_NOT_FOUND ("is not a classic group"), which
//     reads as absent;
//   - share groups (KIP-932), streams groups (KIP-1071) and any other type
//     are refused by name: their offsets are not committed with OffsetCommit.
//
// Any error on the way (a failed request, an authorization error, a broker
// that lists a group its describe does not know) leaves the group's State
// with Err set, and [State.Idle] false.
package groupstate

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Group types as ListGroups (v5+, KIP-848) names them.
const (
	TypeClassic  = "classic"
	TypeConsumer = "consumer"
	TypeShare    = "share"
	TypeStreams  = "streams"
)

// StateAbsent is the State of a group the cluster does not know.
const StateAbsent = "absent"

// Member is one member of a group, as its describe API answers.
type Member struct {
	MemberID   string `json:"member_id"`
	InstanceID string `json:"instance_id,omitempty"` // group.instance.id (static membership), "" when none
	ClientID   string `json:"client_id"`
	ClientHost string `json:"client_host"` // as the broker saw it, e.g. "/10.0.0.7"
	// Protocol is the group protocol the member speaks: "classic" or
	// "consumer" (KIP-848); a consumer group can hold classic members
	// during an upgrade (ConsumerGroupDescribe v1 MemberType).
	Protocol string `json:"protocol"`
}

// String is "client-id@host (protocol)".
func (m Member) String() string {
	s := m.ClientID
	if s == "" {
		s = m.MemberID
	}
	return fmt.Sprintf("%s@%s (%s)", s, strings.TrimPrefix(m.ClientHost, "/"), m.Protocol)
}

// State is one group's state on one cluster.
type State struct {
	Group string `json:"group"`
	// Type is classic, consumer, share, streams (or what a newer broker
	// names), "" when the group is absent or Err is set.
	Type string `json:"type,omitempty"`
	// State is the broker's state name (Empty, Stable,
	// PreparingRebalance, Assigning, Reconciling, ...), [StateAbsent], or
	// "unknown" when Err is set.
	State string `json:"state"`
	// Assignor is the classic group's protocol (range, cooperative-sticky)
	// or the consumer group's server-side assignor (uniform, range).
	Assignor string   `json:"assignor,omitempty"`
	Members  []Member `json:"members,omitempty"`
	// Err is why the state is unknown; nil when it is known.
	Err error `json:"-"`
}

// Known reports whether the state was read without error.
func (s State) Known() bool { return s.Err == nil }

// Supported reports whether offsets of the group can be committed with
// OffsetCommit: absent, classic or consumer.
func (s State) Supported() bool {
	return s.Err == nil && (s.Type == "" || s.Type == TypeClassic || s.Type == TypeConsumer)
}

// Idle reports whether an admin commit is safe for the group: its state is
// known, it is absent, or a classic or consumer group that is Empty (Dead
// counts as absent) with no members.
func (s State) Idle() bool {
	if !s.Supported() || len(s.Members) > 0 {
		return false
	}
	switch strings.ToLower(s.State) {
	case StateAbsent, "empty", "dead":
		return true
	}
	return false
}

// Refusal says, for a group that is not [State.Idle], why nothing is
// committed to it on cluster alias, naming the blocking members; "" when it
// is idle.
func (s State) Refusal(alias string) string {
	switch {
	case s.Idle():
		return ""
	case s.Err != nil:
		return fmt.Sprintf("state of group %s on %s unknown: %v; nothing is committed to it", s.Group, alias, s.Err)
	case !s.Supported():
		return fmt.Sprintf("group %s is a %s group on %s; only classic and consumer groups can be moved (offsets of a %s group are not committed with OffsetCommit)", s.Group, s.Type, alias, s.Type)
	}
	msg := fmt.Sprintf("group %s is %s on %s (%d members); stop its consumers first", s.Group, s.State, alias, len(s.Members))
	if len(s.Members) > 0 {
		msg += ": " + s.MemberList()
	}
	return msg
}

// MemberList is the members as "client@host (protocol)", comma-separated,
// at most 10 then "and N more".
func (s State) MemberList() string {
	var parts []string
	for i, m := range s.Members {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("and %d more", len(s.Members)-10))
			break
		}
		parts = append(parts, m.String())
	}
	return strings.Join(parts, ", ")
}

// Fingerprint is a stable text of the state's type, state name and member
// ids, for telling whether a group changed between two reads.
func (s State) Fingerprint() string {
	if s.Err != nil {
		return "unknown"
	}
	ids := make([]string, 0, len(s.Members))
	for _, m := range s.Members {
		ids = append(ids, m.MemberID)
	}
	sort.Strings(ids)
	return s.Type + "/" + s.State + "/" + strings.Join(ids, ",")
}

// CoordinatorWait bounds the retries of [Describe] while a group
// coordinator is not ready (a fresh cluster creates __consumer_offsets on
// first use).
const CoordinatorWait = 30 * time.Second

// CoordinatorErr reports the errors a group coordinator answers while it is
// not ready: COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS,
// NOT_COORDINATOR.
func CoordinatorErr(err error) bool {
	return errors.Is(err, kerr.CoordinatorNotAvailable) || errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.NotCoordinator)
}

// RetryCoordinator calls fn until it returns nil or an error that is not a
// [CoordinatorErr], [CoordinatorWait] passes, or ctx ends; it returns fn's
// last error.
func RetryCoordinator(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(CoordinatorWait)
	for {
		err := fn()
		if err == nil || !CoordinatorErr(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Describe returns the state of every group on adm's cluster: one entry
// per group, none missing. It sends one ListGroups (to every broker), one
// DescribeGroups, and a ConsumerGroupDescribe when a group is of type
// consumer, retrying while a coordinator is not ready. It never returns a
// partial answer as known: a group whose reads failed has State "unknown"
// and Err naming the request and cause; see the package doc for the rules.
func Describe(ctx context.Context, adm *kadm.Client, groups []string) map[string]State {
	out := make(map[string]State, len(groups))
	if len(groups) == 0 {
		return out
	}
	unknown := func(g string, err error) { out[g] = State{Group: g, State: "unknown", Err: err} }

	var listed kadm.ListedGroups
	lerr := RetryCoordinator(ctx, func() error {
		var err error
		listed, err = adm.ListGroups(ctx)
		return err
	})
	var classic kadm.DescribedGroups
	cerr := RetryCoordinator(ctx, func() error {
		var err error
		classic, err = adm.DescribeGroups(ctx, groups...)
		if err != nil {
			return err
		}
		for _, d := range classic {
			if CoordinatorErr(d.Err) {
				return d.Err
			}
		}
		return nil
	})
	var consumerGroups []string
	for _, g := range groups {
		if lerr != nil {
			unknown(g, fmt.Errorf("list groups: %w", lerr))
			continue
		}
		d, dok := classic[g]
		if cerr != nil && !dok {
			unknown(g, fmt.Errorf("describe groups: %w", cerr))
			continue
		}
		classicFound := dok && d.Err == nil && d.State != "" && d.State != "Dead"
		if dok && d.Err != nil && !errors.Is(d.Err, kerr.GroupIDNotFound) {
			unknown(g, fmt.Errorf("describe group: %w", d.Err))
			continue
		}
		l, listedOK := listed[g]
		typ := l.GroupType
		if listedOK && typ == "" {
			typ = TypeClassic // ListGroups before v5 (Kafka < 3.8) lists classic groups only
		}
		switch {
		case !listedOK && !classicFound:
			out[g] = State{Group: g, State: StateAbsent}
		case !listedOK:
			// Described but not listed: it appeared between the two
			// requests. Its describe answer stands.
			out[g] = classicState(d)
		case typ == TypeClassic:
			if !classicFound {
				unknown(g, fmt.Errorf("listed as a classic group (%s) but DescribeGroups does not know it", l.State))
				continue
			}
			out[g] = classicState(d)
		case typ == TypeConsumer:
			consumerGroups = append(consumerGroups, g)
		default:
			out[g] = State{Group: g, Type: typ, State: l.State}
		}
	}
	if len(consumerGroups) == 0 {
		return out
	}
	var described kadm.DescribedConsumerGroups
	err := RetryCoordinator(ctx, func() error {
		var err error
		described, err = adm.DescribeConsumerGroups(ctx, consumerGroups...)
		if err != nil {
			return err
		}
		for _, d := range described {
			if CoordinatorErr(d.Err) {
				return d.Err
			}
		}
		return nil
	})
	for _, g := range consumerGroups {
		d, ok := described[g]
		switch {
		case !ok && err != nil:
			unknown(g, fmt.Errorf("describe consumer group (ConsumerGroupDescribe): %w", err))
		case !ok:
			unknown(g, errors.New("ConsumerGroupDescribe did not answer for the group"))
		case d.Err != nil:
			unknown(g, fmt.Errorf("describe consumer group (ConsumerGroupDescribe): %w", d.Err))
		default:
			s := State{Group: g, Type: TypeConsumer, State: d.State, Assignor: d.AssignorName}
			for _, m := range d.Members {
				proto := TypeConsumer
				if m.MemberType == 0 {
					proto = TypeClassic
				}
				s.Members = append(s.Members, Member{MemberID: m.MemberID, InstanceID: deref(m.InstanceID), ClientID: m.ClientID, ClientHost: m.ClientHost, Protocol: proto})
			}
			out[g] = s
		}
	}
	return out
}

func classicState(d kadm.DescribedGroup) State {
	s := State{Group: d.Group, Type: TypeClassic, State: d.State, Assignor: d.Protocol}
	for _, m := range d.Members {
		s.Members = append(s.Members, Member{MemberID: m.MemberID, InstanceID: deref(m.InstanceID), ClientID: m.ClientID, ClientHost: m.ClientHost, Protocol: TypeClassic})
	}
	return s
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
