package replicate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Ownership. Every process running a flow joins two Kafka consumer groups
// and never commits an offset in either:
//
//   - the flow's group on the source ([FlowConfig].GroupID, default
//     mirrorctl-<source>-<target>), subscribed to the flow's replicated
//     topics with the cooperative-sticky balancer: the partitions a member is
//     assigned are the partition tasks it runs (see starter.assign and
//     worker.release);
//   - the flow's leader group on the target (GroupID + "-leader"),
//     subscribed to one single-partition topic (the flow's progress topic,
//     or the heartbeats topic for a pair that only emits heartbeats): the
//     member assigned its partition 0 is the flow leader.
//
// Both clients keep every topic paused: they fetch nothing, they only hold
// membership. Kafka's group coordinator decides who owns what; a member that
// dies is removed after its session timeout (consumer session.timeout.ms)
// and its partitions, or the leadership, move to the others.
//
// With an instance id ([Options].InstanceID, group.instance.id, KIP-345)
// both memberships are static: a process restarted under the same id after
// kill -9 rejoins as the member it was and takes its partitions back at
// once, without a rebalance and without waiting out the session timeout. A
// stopping process still leaves (leaveStatic), so its partitions move at
// once as a dynamic member's do. Two live processes under one id would fence
// each other (FENCED_INSTANCE_ID): a joining process refuses to start while
// another host's member holds its id (claimInstance), and a member fenced
// that way stops its flow with an error naming the id.

// groupCallbacks are what a group member does when the coordinator changes
// its assignment. They run on kgo's group goroutine, one at a time.
type groupCallbacks struct {
	assigned func(map[string][]int32)
	revoked  func(context.Context, map[string][]int32)
	lost     func(context.Context, map[string][]int32)
}

// groupMember is one membership of this process in a group.
type groupMember struct {
	cl         *kgo.Client
	kill       context.CancelFunc // fails the client's requests (its kgo.WithContext)
	group      string
	alias      string
	instanceID string     // group.instance.id; "" for a dynamic member
	fatal      chan error // non-retriable group errors (authorization, ...)
	joined     chan struct{}
	once       sync.Once
	stop       chan struct{}
	done       chan struct{}
}

// member is how a flow joins one of its groups: where, as whom, and what it
// does on the group's callbacks.
type membershipSpec struct {
	alias, group string
	topics       []string
	cb           groupCallbacks
}

// joinGroup joins mb.group on mb.alias subscribed to mb.topics, with every
// topic paused, as this process's static member when it has an instance id
// (KIP-345). The client's requests end when the stop budget runs out.
func (fr *flowRunner) joinGroup(mb membershipSpec) (*groupMember, error) {
	m := &groupMember{group: mb.group, alias: mb.alias, instanceID: fr.instanceID, fatal: make(chan error, 1), joined: make(chan struct{}),
		stop: make(chan struct{}), done: make(chan struct{})}
	cb := mb.cb
	// The member's requests end when its leave gives up, or when the
	// flow's stop budget runs out (stop.go), whichever comes first.
	mctx, kill := context.WithCancel(fr.stop.hard)
	opts := append([]kgo.Opt{
		kgo.ConsumerGroup(mb.group),
		kgo.ConsumeTopics(mb.topics...),
		kgo.DisableAutoCommit(),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			if cb.assigned != nil && len(a) > 0 {
				cb.assigned(a)
			}
			m.once.Do(func() { close(m.joined) })
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, _ *kgo.Client, r map[string][]int32) {
			if cb.revoked != nil && len(r) > 0 {
				cb.revoked(ctx, r)
			}
		}),
		kgo.OnPartitionsLost(func(ctx context.Context, _ *kgo.Client, l map[string][]int32) {
			if cb.lost != nil && len(l) > 0 {
				cb.lost(ctx, l)
			}
		}),
	}, fr.groupOpts()...)
	cl, err := fr.clients.Client(mb.alias, RoleConsumer, append(opts, kgo.WithContext(mctx))...)
	if err != nil {
		kill()
		return nil, err
	}
	cl.PauseFetchTopics(mb.topics...)
	m.cl, m.kill = cl, kill
	// Polling a client whose topics are all paused returns only the errors
	// kgo injects for the group: those that will not heal are fatal.
	go func() {
		defer close(m.done)
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-m.stop; cancel() }()
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil || fs.IsClientClosed() {
				return
			}
			fs.EachError(func(_ string, _ int32, err error) {
				if isFatalGroupErr(err) {
					select {
					case m.fatal <- m.fatalErr(err):
					default:
					}
				}
			})
		}
	}()
	return m, nil
}

// fatalErr says what a fatal group error means for this process.
func (m *groupMember) fatalErr(err error) error {
	if errors.Is(err, kerr.FencedInstanceID) {
		return &SettingError{Cluster: m.alias, Key: KeyInstanceID,
			Msg: fmt.Sprintf("another process joined group %s on %s as instance %q, this process's group.instance.id: two processes must not share one (%v)", m.group, m.alias, m.instanceID, err)}
	}
	return fmt.Errorf("group %s on %s: %w", m.group, m.alias, err)
}

// isFatalGroupErr reports errors that end a membership: the principal may
// not use the group or its topics, or the group is of another kind.
func isFatalGroupErr(err error) bool {
	return errors.Is(err, kerr.GroupAuthorizationFailed) || errors.Is(err, kerr.TopicAuthorizationFailed) ||
		errors.Is(err, kerr.InconsistentGroupProtocol) || errors.Is(err, kerr.InvalidGroupID) ||
		errors.Is(err, kerr.GroupMaxSizeReached) || errors.Is(err, kerr.UnsupportedVersion) ||
		errors.Is(err, kerr.FencedInstanceID)
}

// subscribe adds topics to the subscription (kept paused).
func (m *groupMember) subscribe(topics ...string) {
	m.cl.AddConsumeTopics(topics...)
	m.cl.PauseFetchTopics(topics...)
}

// memberID returns the member id the coordinator gave this process, "" before
// the first join.
func (m *groupMember) memberID() string {
	id, _ := m.cl.GroupMetadata()
	return id
}

// leave leaves the group within the stop budget and closes the client. kgo's
// Close runs the revoke callback for what is still assigned and leaves a
// dynamic member's group itself; a static member (which kgo never lets go,
// so that a restart takes its partitions back) is removed afterwards with
// a LeaveGroup naming its instance id (KIP-345), so a stopped process's
// partitions move to the others at once, as a dynamic member's do. When the
// budget runs out first (a join the coordinator holds behind dead members,
// a coordinator that does not answer), the client's requests are failed so
// that Close returns, and the leave is noted as undone: the coordinator
// then expires the member after its session timeout.
func (m *groupMember) leave(ctx context.Context, b *stopBudget, session time.Duration, adm *kadm.Client) {
	close(m.stop)
	<-m.done
	lctx, cancel := b.ctx(ctx)
	defer cancel()
	closed := make(chan struct{})
	go func() {
		m.cl.Close()
		close(closed)
	}()
	var err error
	select {
	case <-closed:
	case <-lctx.Done():
		err = lctx.Err()
		m.kill() // the held join fails, and Close returns
		<-closed
	}
	m.kill()
	if err == nil && m.instanceID != "" && adm != nil {
		err = leaveStatic(lctx, adm, m.group, m.instanceID)
	}
	if err != nil {
		b.left(fmt.Sprintf("left group %s on %s unconfirmed (%v); the coordinator expires the member within %s (session.timeout.ms)", m.group, m.alias, err, session))
	}
}

// leaveStatic removes the static member instanceID from group (a
// LeaveGroup v3+ naming it, KIP-345). A member the coordinator no longer
// knows is left already.
func leaveStatic(ctx context.Context, adm *kadm.Client, group, instanceID string) error {
	resps, err := adm.LeaveGroup(ctx, kadm.LeaveGroup(group).InstanceIDs(instanceID).Reason("mirrorctl stopping"))
	if err != nil {
		return err
	}
	for _, r := range resps {
		if r.Err != nil && !errors.Is(r.Err, kerr.UnknownMemberID) {
			return r.Err
		}
	}
	return nil
}

// Identity names this process in logs, /status and lag: the client id and
// host the group coordinator reports for it.
type Identity struct {
	ClientID string `json:"client_id"`
	Host     string `json:"host"`
	Pid      int    `json:"pid"`
}

func (id Identity) String() string { return fmt.Sprintf("%s@%s[%d]", id.ClientID, id.Host, id.Pid) }

// MemberName is the client id of this process's group clients:
// "client-id[host:pid]".
func (id Identity) MemberName() string { return fmt.Sprintf("%s[%s:%d]", id.ClientID, id.Host, id.Pid) }

func selfIdentity(cl *kgo.Client) Identity {
	host, _ := os.Hostname()
	cid, _ := cl.OptValue(kgo.ClientID).(string)
	return Identity{ClientID: cid, Host: host, Pid: os.Getpid()}
}

// Membership states of a flow in this process ([FlowStatus].Membership).
const (
	MemberJoining = "joining"
	MemberActive  = "member"
	MemberStandby = "standby" // tasks.max members copy the flow already
)

// standbyPoll is how often a standby process looks whether the flow admits
// it, and how often a member checks the flow is not over tasks.max.
const standbyPoll = time.Second

// runMembership keeps this process in the flow's source group while ctx
// lasts, honouring tasks.max: a process that finds tasks.max members copying
// the flow already waits as a standby, and when processes joining at once
// push the group over tasks.max, the members ranked past it (by member id,
// which every member sorts alike) step back to standby. It returns when ctx
// ends (after the tasks were released and the group left) or on a fatal
// group error.
func (fr *flowRunner) runMembership(ctx context.Context, topics []string) error {
	w := fr.worker
	cb := groupCallbacks{
		assigned: func(a map[string][]int32) {
			fr.rebalances.Add(1)
			fr.obs.Rebalance(fr.cfg.Source, fr.cfg.Target, countParts(a), 0, 0)
			fr.log.Info("partitions assigned", "partitions", countParts(a), "member", fr.self)
			w.starter.assign(a)
		},
		revoked: func(ctx context.Context, r map[string][]int32) {
			fr.rebalances.Add(1)
			fr.obs.Rebalance(fr.cfg.Source, fr.cfg.Target, 0, countParts(r), 0)
			fr.log.Info("partitions revoked", "partitions", countParts(r), "member", fr.self)
			w.release(ctx, r, true)
		},
		lost: func(ctx context.Context, l map[string][]int32) {
			fr.rebalances.Add(1)
			fr.obs.Rebalance(fr.cfg.Source, fr.cfg.Target, 0, 0, countParts(l))
			fr.log.Warn("partitions lost: the group moved on without this member; nothing more is copied for them here", "partitions", countParts(l), "member", fr.self)
			w.release(ctx, l, false)
		},
	}
	spec := membershipSpec{alias: fr.cfg.Source, group: fr.cfg.GroupID, topics: topics, cb: cb}
	for {
		if err := fr.awaitSlot(ctx); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		if err := fr.claimInstance(ctx, fr.cfg.Source, fr.cfg.GroupID); err != nil {
			return err
		}
		fr.setMembership(MemberJoining)
		m, err := fr.joinGroup(spec)
		if err != nil {
			return err
		}
		fr.mu.Lock()
		fr.member = m
		fr.mu.Unlock()
		why, err := fr.holdMembership(ctx, m)
		// Release everything before leaving: the final progress is on the
		// target before the coordinator hands the partitions to others.
		// After a freeze the others may be ahead already: no progress.
		w.releaseAll(ctx, why != leaveFrozen)
		m.leave(ctx, fr.stop, fr.cfg.SessionTimeout, fr.worker.io.src)
		fr.mu.Lock()
		fr.member = nil
		fr.mu.Unlock()
		if err != nil || ctx.Err() != nil {
			return err
		}
		switch why {
		case leaveOverTasksMax:
			// Info: the standby wait that follows warns, once.
			fr.log.Info("stepping back to standby: the flow has more members than tasks.max", "tasks_max", fr.cfg.TasksMax, "member", fr.self)
		case leaveFrozen:
			fr.log.Info("joining the group again after the freeze", "member", fr.self)
		}
	}
}

// Why holdMembership returned.
const (
	leaveStopping     = iota // ctx ended, or a fatal group error
	leaveOverTasksMax        // the group is over tasks.max and this member is ranked past it
	leaveFrozen              // the process was frozen past its session timeout (freeze.go)
)

// holdMembership returns when ctx ends, on a fatal group error, when the
// group is over tasks.max and this member is ranked past it, or after a
// freeze; it says which.
func (fr *flowRunner) holdMembership(ctx context.Context, m *groupMember) (int, error) {
	t := time.NewTicker(standbyPoll)
	defer t.Stop()
	var refresh <-chan time.Time
	if fr.cfg.RefreshTopics && !fr.once {
		rt := time.NewTicker(fr.cfg.RefreshTopicsInterval)
		defer rt.Stop()
		refresh = rt.C
	}
	joined := m.joined
	for {
		select {
		case <-ctx.Done():
			return leaveStopping, nil
		case err := <-m.fatal:
			return leaveStopping, err
		case <-fr.worker.freeze.rejoin:
			return leaveFrozen, nil
		case <-joined:
			joined = nil
			fr.setMembership(MemberActive)
		case <-refresh:
			fr.refreshSubscription(ctx, m)
		case <-t.C:
			if fr.overTasksMax(ctx, m) {
				return leaveOverTasksMax, nil
			}
		}
	}
}

// refreshSubscription has the group learn of new partitions of subscribed
// topics from its metadata, refreshed now rather than after
// metadata.max.age.ms (growth.go), and subscribes to new source topics.
func (fr *flowRunner) refreshSubscription(ctx context.Context, m *groupMember) {
	m.cl.ForceMetadataRefresh()
	topics, err := fr.newTopics(ctx)
	if err != nil {
		if ctx.Err() == nil {
			fr.log.Warn("topic refresh failed", "err", err)
		}
		return
	}
	if len(topics) > 0 {
		fr.log.Info("subscribing to new source topics", "topics", topics)
		m.subscribe(topics...)
	}
}

// overTasksMax reports whether the group has more members than tasks.max
// and m is ranked past it (by member id, which every member sorts alike).
func (fr *flowRunner) overTasksMax(ctx context.Context, m *groupMember) bool {
	if fr.cfg.TasksMax <= 0 {
		return false
	}
	peers, err := fr.groupMembers(ctx)
	if err != nil || len(peers) <= fr.cfg.TasksMax {
		return false
	}
	ids := make([]string, 0, len(peers))
	for _, p := range peers {
		ids = append(ids, p.memberID)
	}
	me := m.memberID()
	sort.Strings(ids)
	for i, id := range ids {
		if id == me && i >= fr.cfg.TasksMax {
			return true
		}
	}
	return false
}

// awaitSlot waits until the flow's group has fewer than tasks.max members.
// A member with this process's instance id does not count: it is this
// process before a restart, whose partitions the join takes back. Not
// knowing (the group cannot be described) is not a slot: it keeps asking,
// and says why once.
func (fr *flowRunner) awaitSlot(ctx context.Context) error {
	if fr.cfg.TasksMax <= 0 {
		return nil
	}
	said := ""
	for {
		peers, err := fr.groupMembers(ctx)
		others := 0
		for _, p := range peers {
			if fr.instanceID == "" || p.instanceID != fr.instanceID {
				others++
			}
		}
		switch {
		case err == nil && others < fr.cfg.TasksMax:
			return nil
		case err != nil && isFatalGroupErr(err):
			return fmt.Errorf("flow %s: describe group %s on %s: %w", fr.cfg.Name(), fr.cfg.GroupID, fr.cfg.Source, err)
		case err != nil:
			if msg := err.Error(); msg != said {
				said = msg
				fr.log.Warn("cannot tell whether the flow admits another member; waiting", "group", fr.cfg.GroupID, "err", err)
			}
		default:
			if said != "standby" {
				said = "standby"
				fr.log.Warn("standby: the flow has tasks.max members copying it; this process copies nothing until a slot is free "+
					"(MM2's tasks.max counts Connect tasks, mirrorctl's the processes that copy: raise it to the number of processes)",
					"group", fr.cfg.GroupID, "members", others, "tasks_max", fr.cfg.TasksMax)
			}
		}
		fr.setMembership(MemberStandby)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(standbyPoll):
		}
	}
}

// groupPeer is one member of a group as the coordinator describes it.
type groupPeer struct {
	memberID, instanceID, clientID string
}

// groupMembers returns the members of the flow's source group.
func (fr *flowRunner) groupMembers(ctx context.Context) ([]groupPeer, error) {
	return describeMembers(ctx, fr.worker.io.src, fr.cfg.GroupID)
}

// describeMembers returns the members of group (none when it does not
// exist), asking for at most 10 s.
func describeMembers(ctx context.Context, adm *kadm.Client, group string) ([]groupPeer, error) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	described, err := adm.DescribeGroups(dctx, group)
	if err != nil {
		return nil, err
	}
	d, ok := described[group]
	if !ok {
		return nil, nil
	}
	if d.Err != nil {
		if errors.Is(d.Err, kerr.GroupIDNotFound) {
			return nil, nil
		}
		return nil, d.Err
	}
	out := make([]groupPeer, 0, len(d.Members))
	for _, m := range d.Members {
		p := groupPeer{memberID: m.MemberID, clientID: m.ClientID}
		if m.InstanceID != nil {
			p.instanceID = *m.InstanceID
		}
		out = append(out, p)
	}
	return out, nil
}

// groupOpts are the session settings of this process's group memberships:
// the session timeout and heartbeat of FlowConfig, the instance id, a
// rebalance timeout that covers a revocation's release (the stop budget)
// rather than kgo's 60 s (a join that waits for dead members waits up to the
// largest rebalance timeout among them).
// The group clients (membership only, no data) carry the process's name in
// their client id, so the coordinator's view (lag, kafka-consumer-groups)
// names the same process alike in both groups, and a restarted process
// knows its previous self (claimInstance).
func (fr *flowRunner) groupOpts() []kgo.Opt {
	fr.mu.Lock()
	self := fr.self
	fr.mu.Unlock()
	opts := []kgo.Opt{kgo.SessionTimeout(fr.cfg.SessionTimeout), kgo.HeartbeatInterval(fr.cfg.heartbeatInterval()),
		kgo.ClientID(self.MemberName()), kgo.RebalanceTimeout(fr.cfg.SessionTimeout + fr.stop.budget)}
	if fr.instanceID != "" {
		opts = append(opts, kgo.InstanceID(fr.instanceID))
	}
	return opts
}

// claimInstance makes sure no other live process is group's member under
// this process's instance id before it joins. The member with the id is
// this process before a restart when its client id names this host (the
// restart takes its partitions back at once); one on another host may be a
// process that died there, so it waits for the coordinator to expire it
// (the session timeout and a heartbeat), and refuses, naming it, if it is
// still there: two processes with one instance id fence each other in turn.
func (fr *flowRunner) claimInstance(ctx context.Context, alias, group string) error {
	if fr.instanceID == "" {
		return nil
	}
	adm, err := fr.clients.Admin(alias)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(fr.cfg.SessionTimeout + 2*fr.cfg.heartbeatInterval())
	host := fr.identity().Host
	said := false
	for {
		peers, err := describeMembers(ctx, adm, group)
		if err != nil {
			return nil // the join reports what is wrong with the group
		}
		other := ""
		for _, p := range peers {
			if p.instanceID == fr.instanceID && memberHost(p.clientID) != host {
				other = p.clientID
			}
		}
		switch {
		case other == "":
			return nil
		case time.Now().After(deadline):
			return &SettingError{Cluster: alias, Key: KeyInstanceID,
				Msg: fmt.Sprintf("group %s on %s has a live member with this process's instance id %q (client %s, on another host): give each process its own (%s, or --instance-id)",
					group, alias, fr.instanceID, other, KeyInstanceID)}
		case !said:
			said = true
			fr.log.Warn("another host's member holds this process's instance id; waiting for the coordinator to expire it", "group", group, "instance_id", fr.instanceID, "member", other, "wait", time.Until(deadline).Round(time.Second))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// memberHost is the host in a client id of the form Identity.MemberName
// writes, "client-id[host:pid]"; "" for another form.
func memberHost(clientID string) string {
	i := strings.LastIndex(clientID, "[")
	j := strings.LastIndex(clientID, ":")
	if i < 0 || j < i || !strings.HasSuffix(clientID, "]") {
		return ""
	}
	return clientID[i+1 : j]
}

func countParts(m map[string][]int32) int {
	n := 0
	for _, ps := range m {
		n += len(ps)
	}
	return n
}

// KeyInstanceID is the mm2.properties key of [Options].InstanceID (named
// here for messages; internal/config defines it).
const KeyInstanceID = "mirrorctl.instance.id"
