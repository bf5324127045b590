package replicate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Member is one process in a flow's group, as the group coordinator
// describes it (DescribeGroups).
type Member struct {
	MemberID string `json:"member_id"`
	// InstanceID is the member's group.instance.id (static membership,
	// KIP-345); "" for a dynamic member.
	InstanceID string `json:"instance_id,omitempty"`
	ClientID   string `json:"client_id"`
	Host       string `json:"host"`
	// Partitions is how many source partitions (partition tasks) the
	// member is assigned; 0 for the leader group's view.
	Partitions int `json:"partitions"`
	// Assigned are those partitions, topic -> partitions in the order the
	// coordinator lists them; nil for the leader group's view.
	Assigned map[string][]int32 `json:"-"`
}

// String is "client-id@host", how lag and logs name a member.
func (m Member) String() string { return m.ClientID + "@" + m.Host }

// Ownership is who runs a flow, read from the flow's two groups: the members
// of the source group with their partitions, and the member of the leader
// group on the target that holds the lease, and every member of the leader
// group (each replicate process running the flow joins it, standbys too).
type Ownership struct {
	Group   string   `json:"group"`
	Members []Member `json:"members"` // sorted by member id
	// Owner names the member of each assigned source partition:
	// topic -> partition -> Member.String().
	Owner       map[string]map[int32]string `json:"-"`
	LeaderGroup string                      `json:"leader_group"`
	Leader      *Member                     `json:"leader"` // nil when no process leads
	// LeaderGroupMembers are the leader group's members, sorted by member
	// id (Partitions 0, Assigned nil).
	LeaderGroupMembers []Member `json:"-"`
}

// ReadOwnership describes fc's source group on src and its leader group on
// tgt. A group that does not exist reads as no members. An error (the
// principal may not DESCRIBE the group, a coordinator that does not answer)
// is returned naming the group and cluster.
func ReadOwnership(ctx context.Context, src, tgt *kadm.Client, fc FlowConfig) (Ownership, error) {
	o := Ownership{Group: fc.GroupID, LeaderGroup: fc.GroupID + "-leader", Members: []Member{}, Owner: map[string]map[int32]string{}}
	describe := func(adm *kadm.Client, alias, group string) (*kadm.DescribedGroup, error) {
		described, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return nil, fmt.Errorf("describe group %s on %s: %w", group, alias, err)
		}
		d, ok := described[group]
		if !ok || errors.Is(d.Err, kerr.GroupIDNotFound) {
			return nil, nil
		}
		if d.Err != nil {
			return nil, fmt.Errorf("describe group %s on %s: %w", group, alias, d.Err)
		}
		return &d, nil
	}
	d, err := describe(src, fc.Source, o.Group)
	if err != nil {
		return o, err
	}
	if d != nil {
		for _, m := range d.Members {
			mb := describedMember(m)
			if a, ok := m.Assigned.AsConsumer(); ok {
				for _, t := range a.Topics {
					if len(t.Partitions) > 0 {
						if mb.Assigned == nil {
							mb.Assigned = map[string][]int32{}
						}
						mb.Assigned[t.Topic] = append(mb.Assigned[t.Topic], t.Partitions...)
					}
					for _, p := range t.Partitions {
						if o.Owner[t.Topic] == nil {
							o.Owner[t.Topic] = map[int32]string{}
						}
						o.Owner[t.Topic][p] = mb.String()
						mb.Partitions++
					}
				}
			}
			o.Members = append(o.Members, mb)
		}
		sort.Slice(o.Members, func(i, j int) bool { return o.Members[i].MemberID < o.Members[j].MemberID })
	}
	ld, err := describe(tgt, fc.Target, o.LeaderGroup)
	if err != nil {
		return o, err
	}
	if ld != nil {
		for _, m := range ld.Members {
			mb := describedMember(m)
			o.LeaderGroupMembers = append(o.LeaderGroupMembers, mb)
			if a, ok := m.Assigned.AsConsumer(); ok && len(a.Topics) > 0 && len(a.Topics[0].Partitions) > 0 {
				o.Leader = &mb
			}
		}
		sort.Slice(o.LeaderGroupMembers, func(i, j int) bool { return o.LeaderGroupMembers[i].MemberID < o.LeaderGroupMembers[j].MemberID })
	}
	return o, nil
}

// describedMember is m as a Member, without its assignment.
func describedMember(m kadm.DescribedGroupMember) Member {
	mb := Member{MemberID: m.MemberID, ClientID: m.ClientID, Host: clientHost(m.ClientHost)}
	if m.InstanceID != nil {
		mb.InstanceID = *m.InstanceID
	}
	return mb
}

// clientHost is the coordinator's client host without the leading slash
// and the connection's port ("/10.1.2.3:51234" is "10.1.2.3"), so one
// process reads alike over its connections.
func clientHost(h string) string {
	h = strings.TrimPrefix(h, "/")
	if host, _, err := net.SplitHostPort(h); err == nil {
		return host
	}
	return h
}
