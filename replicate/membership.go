package replicate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Ownership. Every process running a flow joins two Kafka consumer groups
// and never commits an offset in either:
//
//   - the flow's group on the source ([FlowConfig].GroupID, default
//     mirrorctl-<source>-<target>), subscribed to the flow's replicated
//     topics with the cooperative-sticky balancer: the partitions a member is
//     assigned are the partition tasks it runs (see worker.assign and
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

// groupCallbacks are what a group member does when the coordinator changes
// its assignment. They run on kgo's group goroutine, one at a time.
type groupCallbacks struct {
	assigned func(map[string][]int32)
	revoked  func(context.Context, map[string][]int32)
	lost     func(context.Context, map[string][]int32)
}

// groupMember is one membership of this process in a group.
type groupMember struct {
	cl     *kgo.Client
	group  string
	alias  string
	fatal  chan error // non-retriable group errors (authorization, ...)
	joined chan struct{}
	once   sync.Once
	stop   chan struct{}
	done   chan struct{}
}

// joinGroup joins group on alias subscribed to topics, with every topic
// paused.
func joinGroup(clients Clients, alias, group string, topics []string, cb groupCallbacks, extra ...kgo.Opt) (*groupMember, error) {
	m := &groupMember{group: group, alias: alias, fatal: make(chan error, 1), joined: make(chan struct{}),
		stop: make(chan struct{}), done: make(chan struct{})}
	opts := append([]kgo.Opt{
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topics...),
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
	}, extra...)
	cl, err := clients.Client(alias, RoleConsumer, opts...)
	if err != nil {
		return nil, err
	}
	cl.PauseFetchTopics(topics...)
	m.cl = cl
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
					case m.fatal <- fmt.Errorf("group %s on %s: %w", group, alias, err):
					default:
					}
				}
			})
		}
	}()
	return m, nil
}

// isFatalGroupErr reports errors that end a membership: the principal may
// not use the group or its topics, or the group is of another kind.
func isFatalGroupErr(err error) bool {
	return errors.Is(err, kerr.GroupAuthorizationFailed) || errors.Is(err, kerr.TopicAuthorizationFailed) ||
		errors.Is(err, kerr.InconsistentGroupProtocol) || errors.Is(err, kerr.InvalidGroupID) ||
		errors.Is(err, kerr.GroupMaxSizeReached) || errors.Is(err, kerr.UnsupportedVersion)
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

// leave leaves the group (kgo runs the revoke callback for what is still
// assigned) and closes the client.
func (m *groupMember) leave() {
	close(m.stop)
	<-m.done
	m.cl.Close()
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
			w.assign(a)
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
	for {
		if err := fr.awaitSlot(ctx); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		fr.setMembership(MemberJoining)
		m, err := joinGroup(fr.clients, fr.cfg.Source, fr.cfg.GroupID, topics, cb, fr.groupOpts()...)
		if err != nil {
			return err
		}
		fr.mu.Lock()
		fr.member = m
		fr.mu.Unlock()
		over, err := fr.holdMembership(ctx, m)
		// Release everything before leaving: the final progress is on the
		// target before the coordinator hands the partitions to others.
		w.release(ctx, w.assignedParts(), true)
		m.leave()
		fr.mu.Lock()
		fr.member = nil
		fr.mu.Unlock()
		if err != nil || ctx.Err() != nil {
			return err
		}
		if over {
			fr.log.Info("stepping back to standby: the flow has more members than tasks.max", "tasks_max", fr.cfg.TasksMax, "member", fr.self)
		}
	}
}

// holdMembership returns when ctx ends (false), on a fatal group error, or
// when the group is over tasks.max and this member is ranked past it (true).
func (fr *flowRunner) holdMembership(ctx context.Context, m *groupMember) (bool, error) {
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
			return false, nil
		case err := <-m.fatal:
			return false, err
		case <-joined:
			joined = nil
			fr.setMembership(MemberActive)
		case <-refresh:
			// New partitions of subscribed topics: the group learns of them
			// from its metadata, refreshed now rather than after
			// metadata.max.age.ms (growth.go).
			m.cl.ForceMetadataRefresh()
			topics, err := fr.newTopics(ctx)
			if err != nil {
				if ctx.Err() == nil {
					fr.log.Warn("topic refresh failed", "err", err)
				}
				continue
			}
			if len(topics) > 0 {
				fr.log.Info("subscribing to new source topics", "topics", topics)
				m.subscribe(topics...)
			}
		case <-t.C:
			if fr.cfg.TasksMax <= 0 {
				continue
			}
			members, err := fr.groupMembers(ctx)
			if err != nil || len(members) <= fr.cfg.TasksMax {
				continue
			}
			me := m.memberID()
			sort.Strings(members)
			for i, id := range members {
				if id == me && i >= fr.cfg.TasksMax {
					return true, nil
				}
			}
		}
	}
}

// awaitSlot waits until the flow's group has fewer than tasks.max members.
// Not knowing (the group cannot be described) is not a slot: it keeps
// asking, and says why once.
func (fr *flowRunner) awaitSlot(ctx context.Context) error {
	if fr.cfg.TasksMax <= 0 {
		return nil
	}
	said := ""
	for {
		members, err := fr.groupMembers(ctx)
		switch {
		case err == nil && len(members) < fr.cfg.TasksMax:
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
				fr.log.Info("standby: the flow has tasks.max members copying it; waiting for a free slot",
					"group", fr.cfg.GroupID, "members", len(members), "tasks_max", fr.cfg.TasksMax)
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

// groupMembers returns the member ids of the flow's source group.
func (fr *flowRunner) groupMembers(ctx context.Context) ([]string, error) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	described, err := fr.worker.src.DescribeGroups(dctx, fr.cfg.GroupID)
	if err != nil {
		return nil, err
	}
	d, ok := described[fr.cfg.GroupID]
	if !ok {
		return nil, nil
	}
	if d.Err != nil {
		if errors.Is(d.Err, kerr.GroupIDNotFound) {
			return nil, nil
		}
		return nil, d.Err
	}
	ids := make([]string, 0, len(d.Members))
	for _, m := range d.Members {
		ids = append(ids, m.MemberID)
	}
	return ids, nil
}

// groupOpts are the session settings of this process's group memberships:
// the session timeout and heartbeat of FlowConfig.
// The group clients (membership only, no data) carry the process's name in
// their client id, so the coordinator's view (lag, kafka-consumer-groups)
// names the same process alike in both groups.
func (fr *flowRunner) groupOpts() []kgo.Opt {
	fr.mu.Lock()
	self := fr.self
	fr.mu.Unlock()
	return []kgo.Opt{kgo.SessionTimeout(fr.cfg.SessionTimeout), kgo.HeartbeatInterval(fr.cfg.heartbeatInterval()),
		kgo.ClientID(self.MemberName())}
}

// assignedParts returns the partitions of this process's tasks.
func (w *worker) assignedParts() map[string][]int32 {
	out := map[string][]int32{}
	for _, t := range w.allTasks() {
		out[t.src.topic] = append(out[t.src.topic], t.src.partition)
	}
	return out
}

func countParts(m map[string][]int32) int {
	n := 0
	for _, ps := range m {
		n += len(ps)
	}
	return n
}
