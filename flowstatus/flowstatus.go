// Package flowstatus reads the whole of a flow from Kafka, across every
// replicate process that runs it, so nobody has to scrape each process's
// /status: who runs the flow, who copies which partition, how far each
// partition is, and what is wrong.
//
// [Read] reads one flow, read-only:
//
//   - the processes: the members of the flow's group on the source
//     (mirrorctl.group.id; each member's assignment is the partition tasks
//     it runs) and of its leader group on the target (<group>-leader, which
//     every process joins, standbys included; the member holding partition
//     0 of its topic leads the flow), from the group coordinator
//     (DescribeGroups, replicate.ReadOwnership);
//   - the partitions: every partition the flow replicates now
//     (replicate.PlanFlow), its owner, the position from mirrorctl's progress
//     topic on the target (or MM2's Connect offsets, or the offset syncs,
//     where those say more: package lag), the source end offset, records
//     behind, the time of the newest progress record, and the loss state the
//     progress records carry (a stopped partition, with why);
//   - the flow's newest heartbeat.
//
// [Flow.Problems] says what a healthy flow lacks: a partition no process
// owns, a group with no members, no process leading, a stopped partition.
// Rendering is the caller's job (internal/cli/status).
package flowstatus

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/mirrorctl/mirrorctl/lag"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// Process roles (Process.Role).
const (
	// RoleCopying: a member of the flow's source group; it runs a partition
	// task per partition it is assigned (possibly none for a moment).
	RoleCopying = "copying"
	// RoleStandby: in the leader group only; it waits because tasks.max
	// processes copy the flow already, or is still joining the source group.
	RoleStandby = "standby"
)

// Process is one replicate process running the flow, as the group
// coordinators describe it.
type Process struct {
	// ClientID is the process's group client id, "client-id[host:pid]"
	// (replicate.Identity.MemberName); Host the address the coordinator
	// sees it connect from.
	ClientID string `json:"client_id"`
	Host     string `json:"host"`
	// InstanceID is its group.instance.id (mirrorctl.instance.id, static
	// membership); "" for a dynamic member.
	InstanceID string `json:"instance_id,omitempty"`
	// MemberID is its member id in the source group ("" for a standby);
	// LeaderMemberID in the leader group ("" when it is not a member).
	MemberID       string `json:"member_id,omitempty"`
	LeaderMemberID string `json:"leader_member_id,omitempty"`
	Role           string `json:"role"`   // RoleCopying or RoleStandby
	Leader         bool   `json:"leader"` // it leads the flow
	// Partitions are the source partitions it is assigned,
	// "<source topic>[<partition>]", sorted by topic and partition.
	Partitions []string `json:"partitions"`
}

// Partition is one replicated source partition.
type Partition struct {
	SourceTopic string `json:"source_topic"`
	Topic       string `json:"topic"` // remote topic on the target
	Partition   int32  `json:"partition"`
	// Owner is the client id of the process whose task copies it, ""
	// when none does; OwnerInstanceID that process's instance id.
	Owner           string `json:"owner"`
	OwnerInstanceID string `json:"owner_instance_id,omitempty"`
	// Position is the next source offset to copy, from From; -1 when
	// nothing says the partition was ever copied.
	Position int64  `json:"position"`
	From     string `json:"from"` // lag.FromProgress, FromMM2Offsets, FromOffsetSyncs or FromNone
	// SourceEndOffset is the source high watermark; RecordsBehind the
	// source records not on the target (package lag's rule: markers are
	// not behind, a stopped or recreated partition counts what it lacks).
	SourceEndOffset int64 `json:"source_end_offset"`
	RecordsBehind   int64 `json:"records_behind"`
	// ProgressTime is when a process last wrote the partition's progress
	// (the progress record's timestamp); ProgressAgeMs is now minus it, in
	// ms. Both absent without progress.
	ProgressTime  *time.Time `json:"progress_time,omitempty"`
	ProgressAgeMs *int64     `json:"progress_age_ms,omitempty"`
	// State is the progress's loss state (lag.PartitionLag.State: "ok",
	// "stopped", "gap", ...); Stopped says the partition copies nothing
	// until an operator acts, StopReason why.
	State      string `json:"state"`
	Stopped    bool   `json:"stopped"`
	StopReason string `json:"stop_reason,omitempty"`
}

// Flow is one flow's status across its processes.
type Flow struct {
	Source      string `json:"source"`
	Target      string `json:"target"`
	Group       string `json:"group"`        // the flow's group on the source
	LeaderGroup string `json:"leader_group"` // its leader group on the target
	// Leader is the client id of the process that leads the flow, ""
	// when none does.
	Leader string `json:"leader"`
	// TasksMax is the most processes that copy at once (0: no limit).
	TasksMax   int         `json:"tasks_max"`
	Processes  []Process   `json:"processes"`  // sorted by client id, then instance id
	Partitions []Partition `json:"partitions"` // sorted by source topic and partition
	// HeartbeatAgeMs is now minus the newest heartbeat of the flow on the
	// target, in ms; null when there is none.
	HeartbeatAgeMs *int64 `json:"heartbeat_age_ms"`
	// Problems are what a healthy flow lacks, one sentence each (see
	// [Flow.problems]); empty when every partition has an owner, the
	// group has members, a process leads and no partition is stopped.
	Problems []string `json:"problems"`
}

// Options say when "now" is and how long reads may wait.
type Options struct {
	Now time.Time
	// FetchTimeout bounds each bounded read (the oldest uncopied records,
	// the heartbeats); zero means lag.DefaultFetchTimeout.
	FetchTimeout time.Duration
}

// Read reads fc's status from its clusters: the group coordinators
// (DescribeGroups of the flow's two groups), ListOffsets on both clusters,
// the progress, offset-syncs, heartbeats and MM2 offsets topics (lag.Read
// without groups). It writes nothing. It fails closed: a cluster that does
// not answer, or a group that cannot be described, is an error naming the
// flow, the cluster and what could not be read, never a flow without
// owners.
func Read(ctx context.Context, clients replicate.Clients, fc replicate.FlowConfig, opts Options) (Flow, error) {
	f := Flow{Source: fc.Source, Target: fc.Target, Group: fc.GroupID, LeaderGroup: fc.GroupID + "-leader", TasksMax: fc.TasksMax,
		Processes: []Process{}, Partitions: []Partition{}, Problems: []string{}}
	fl, err := lag.Read(ctx, clients, fc, lag.Options{Now: opts.Now, FetchTimeout: opts.FetchTimeout, NoGroups: true})
	if err != nil {
		return f, fmt.Errorf("flow %s: %w", fc.Name(), err)
	}
	if fl.SourceError != "" {
		return f, fmt.Errorf("flow %s: %s: the owners of its partitions are unknown", fc.Name(), fl.SourceError)
	}
	src, err := clients.Admin(fc.Source)
	if err != nil {
		return f, err
	}
	tgt, err := clients.Admin(fc.Target)
	if err != nil {
		return f, err
	}
	own, err := replicate.ReadOwnership(ctx, src, tgt, fc)
	if err != nil {
		return f, fmt.Errorf("flow %s: %w", fc.Name(), err)
	}
	f.HeartbeatAgeMs = fl.HeartbeatAgeMs
	f.Processes = processes(own)
	if own.Leader != nil {
		f.Leader = own.Leader.ClientID
	}
	owners := ownerMembers(own)
	for _, pl := range fl.Partitions {
		f.Partitions = append(f.Partitions, partition(pl, owners, opts.Now))
	}
	sort.Slice(f.Partitions, func(i, j int) bool {
		a, b := f.Partitions[i], f.Partitions[j]
		if a.SourceTopic != b.SourceTopic {
			return a.SourceTopic < b.SourceTopic
		}
		return a.Partition < b.Partition
	})
	f.Problems = f.problems()
	return f, nil
}

// ownerMembers maps each assigned source partition to its member.
func ownerMembers(own replicate.Ownership) map[string]map[int32]replicate.Member {
	out := map[string]map[int32]replicate.Member{}
	for _, m := range own.Members {
		for topic, ps := range m.Assigned {
			if out[topic] == nil {
				out[topic] = map[int32]replicate.Member{}
			}
			for _, p := range ps {
				out[topic][p] = m
			}
		}
	}
	return out
}

// partition is pl with its owner and progress age.
func partition(pl lag.PartitionLag, owners map[string]map[int32]replicate.Member, now time.Time) Partition {
	p := Partition{SourceTopic: pl.SourceTopic, Topic: pl.Topic, Partition: pl.Partition, Position: -1, From: pl.From,
		SourceEndOffset: pl.SourceEndOffset, RecordsBehind: pl.RecordsBehind, ProgressTime: pl.ProgressTime,
		State: pl.State, Stopped: pl.Stopped, StopReason: pl.StopReason}
	if pl.From != lag.FromNone && pl.ReplicatedOffset >= -1 {
		p.Position = pl.ReplicatedOffset + 1
	}
	if m, ok := owners[pl.SourceTopic][pl.Partition]; ok {
		p.Owner, p.OwnerInstanceID = m.ClientID, m.InstanceID
	}
	if pl.ProgressTime != nil {
		age := max(0, now.Sub(*pl.ProgressTime).Milliseconds())
		p.ProgressAgeMs = &age
	}
	return p
}

// processes joins the two groups' members into one list: by instance id
// where a member has one (a static process is one member under it in
// each group), else by client id (a process's group clients carry one
// client id, "client-id[host:pid]", in both groups).
func processes(own replicate.Ownership) []Process {
	byID := map[string]*Process{}
	get := func(m replicate.Member) *Process {
		key := "client " + m.ClientID
		if m.InstanceID != "" {
			key = "instance " + m.InstanceID
		}
		p := byID[key]
		if p == nil {
			p = &Process{ClientID: m.ClientID, Host: m.Host, InstanceID: m.InstanceID, Role: RoleStandby, Partitions: []string{}}
			byID[key] = p
		}
		return p
	}
	for _, m := range own.Members {
		p := get(m)
		p.MemberID, p.Role = m.MemberID, RoleCopying
		p.Partitions = append(p.Partitions, assigned(m.Assigned)...)
	}
	for _, m := range own.LeaderGroupMembers {
		p := get(m)
		p.LeaderMemberID = m.MemberID
		p.Leader = own.Leader != nil && own.Leader.MemberID == m.MemberID
	}
	out := make([]Process, 0, len(byID))
	for _, p := range byID {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ClientID != out[j].ClientID {
			return out[i].ClientID < out[j].ClientID
		}
		return out[i].InstanceID < out[j].InstanceID
	})
	return out
}

// assigned lists a member's partitions as "<topic>[<partition>]", sorted.
func assigned(a map[string][]int32) []string {
	topics := make([]string, 0, len(a))
	for t := range a {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	var out []string
	for _, t := range topics {
		ps := append([]int32(nil), a[t]...)
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		for _, p := range ps {
			out = append(out, t+"["+strconv.Itoa(int(p))+"]")
		}
	}
	return out
}

// problems lists what the flow lacks: its group has no members (nothing
// copies), partitions without an owner (named), no process leading
// (no topic sync, checkpoints or heartbeats), stopped partitions (named,
// with why).
func (f *Flow) problems() []string {
	out := []string{}
	copying := 0
	for _, p := range f.Processes {
		if p.Role == RoleCopying {
			copying++
		}
	}
	if copying == 0 {
		out = append(out, fmt.Sprintf("group %s on %s has no members: no process copies the flow", f.Group, f.Source))
	}
	var unowned, stopped []string
	for _, p := range f.Partitions {
		name := p.SourceTopic + "[" + strconv.Itoa(int(p.Partition)) + "]"
		if p.Owner == "" {
			unowned = append(unowned, name)
		}
		if p.Stopped {
			stopped = append(stopped, name+" ("+p.StopReason+")")
		}
	}
	if len(unowned) > 0 && copying > 0 {
		verb := "have"
		if len(unowned) == 1 {
			verb = "has"
		}
		out = append(out, fmt.Sprintf("%d of %d partitions %s no owner in group %s on %s: %s", len(unowned), len(f.Partitions), verb, f.Group, f.Source, joinCapped(unowned)))
	}
	if f.Leader == "" {
		out = append(out, fmt.Sprintf("no process leads the flow (leader group %s on %s): no topic sync, checkpoints or heartbeats", f.LeaderGroup, f.Target))
	}
	if len(stopped) > 0 {
		what := "partitions"
		if len(stopped) == 1 {
			what = "partition"
		}
		out = append(out, fmt.Sprintf("%d %s stopped, copying nothing until an operator acts: %s", len(stopped), what, joinCapped(stopped)))
	}
	return out
}

// joinCapped joins names with ", ", the first 20 of them, saying how many
// more there are.
func joinCapped(names []string) string {
	const most = 20
	s := ""
	for i, n := range names {
		if i == most {
			return s + fmt.Sprintf(" and %d more", len(names)-most)
		}
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}
