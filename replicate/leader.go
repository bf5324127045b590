package replicate

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// The flow leader. Flow-level work runs in exactly one process per flow at a
// time: topic creation and partition growth, topic config and ACL sync,
// checkpoints and group offset sync, and heartbeats. The leader is the member
// of the flow's leader group (GroupID + "-leader", on the target) that holds
// partition 0 of its one topic; when it dies, the coordinator gives the
// partition to another member after the session timeout, and that member
// starts leading. A leader that loses the partition stops its work before
// the revocation completes.

// leaseTopic returns the single-partition topic the flow's leader group
// subscribes to: the progress topic of an enabled flow, else the heartbeats
// topic (a pair that only emits heartbeats).
func (fr *flowRunner) leaseTopic() string {
	if fr.cfg.Enabled {
		return ProgressTopic(fr.cfg.Policy, fr.cfg.Source)
	}
	return fr.cfg.Policy.HeartbeatsTopic()
}

// leadership is this process's turn as the flow leader: the work started
// when the lease (partition 0 of the leader group's topic) is assigned and
// stopped when it is revoked or lost.
type leadership struct {
	fr     *flowRunner
	mu     sync.Mutex // guards cancel and done
	cancel context.CancelFunc
	done   chan struct{}
	errs   chan error // the leader's work failed
}

// start begins leading (once per lease), the work bounded by ctx.
func (l *leadership) start(ctx context.Context) {
	fr := l.fr
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil {
		return
	}
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	l.cancel, l.done = cancel, done
	fr.leading.Store(true)
	fr.leaderChanges.Add(1)
	if fr.cfg.Enabled {
		// A pair that only emits heartbeats is no flow to lead: no
		// mirrorctl_flow_leader series, and /status shows it disabled.
		fr.obs.Leader(fr.cfg.Source, fr.cfg.Target, true)
	}
	fr.log.Info("leading the flow", "member", fr.identity())
	go func() {
		defer close(done)
		if err := fr.lead(lctx); err != nil && lctx.Err() == nil {
			select {
			case l.errs <- err:
			default:
			}
		}
	}()
}

// stop ends the leader's work, waiting for it within the stop budget.
func (l *leadership) stop(ctx context.Context) {
	fr := l.fr
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.cancel = nil
	l.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	sctx, scancel := fr.stop.ctx(ctx)
	defer scancel()
	select {
	case <-done:
	case <-sctx.Done():
		fr.stop.left("the flow leader's work (topic sync, checkpoints, heartbeats) had not stopped")
	}
	fr.leading.Store(false)
	if fr.cfg.Enabled {
		fr.obs.Leader(fr.cfg.Source, fr.cfg.Target, false)
	}
	fr.log.Info("no longer leading the flow", "member", fr.identity())
}

// working returns the leader's work's done channel, nil when not leading.
func (l *leadership) working() chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done
}

// runLease keeps this process in the flow's leader group until ctx ends and
// leads the flow while it holds the lease. With once it returns as soon as
// the first assignment told whether this process leads and, if it does, the
// leader's once-work is done. Errors of the leader's work, and fatal group
// errors, are returned. It leaves the group within the stop budget.
func (fr *flowRunner) runLease(ctx context.Context) error {
	topic := fr.leaseTopic()
	l := &leadership{fr: fr, errs: make(chan error, 1)}
	onLease := func(parts map[string][]int32) bool {
		for _, p := range parts[topic] {
			if p == 0 {
				return true
			}
		}
		return false
	}
	cb := groupCallbacks{
		assigned: func(a map[string][]int32) {
			if onLease(a) {
				l.start(ctx)
			}
		},
		revoked: func(_ context.Context, r map[string][]int32) {
			if onLease(r) {
				l.stop(ctx)
			}
		},
		lost: func(_ context.Context, lost map[string][]int32) {
			if onLease(lost) {
				l.stop(ctx)
			}
		},
	}
	group := fr.cfg.GroupID + "-leader"
	if err := fr.claimInstance(ctx, fr.cfg.Target, group); err != nil {
		return err
	}
	m, err := fr.joinGroup(membershipSpec{alias: fr.cfg.Target, group: group, topics: []string{topic}, cb: cb})
	if err != nil {
		return err
	}
	fr.mu.Lock()
	fr.lease = m
	fr.mu.Unlock()
	defer func() {
		l.stop(ctx)
		adm, _ := fr.clients.Admin(fr.cfg.Target)
		m.leave(ctx, fr.stop, fr.cfg.SessionTimeout, adm)
		fr.mu.Lock()
		fr.lease = nil
		fr.mu.Unlock()
	}()
	return fr.holdLease(ctx, m, l)
}

// holdLease waits, as the leader group's member m, for the end: ctx, a
// fatal group error, the leader's work failing, or, with once, the first
// assignment and the data side done (and, when this process leads, its
// once-work).
func (fr *flowRunner) holdLease(ctx context.Context, m *groupMember, l *leadership) error {
	joined := m.joined
	var dataDone <-chan struct{}
	joinedSeen, dataSeen := false, !fr.cfg.Enabled
	if fr.once && fr.cfg.Enabled {
		dataDone = fr.dataDone
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-m.fatal:
			return err
		case err := <-l.errs:
			return err
		case <-joined:
			joined, joinedSeen = nil, true
		case <-dataDone:
			dataDone, dataSeen = nil, true
		}
		if !fr.once || !joinedSeen || !dataSeen {
			continue
		}
		done := l.working()
		if !fr.leading.Load() || done == nil {
			return nil // another process leads this flow
		}
		select {
		case <-done:
			select {
			case err := <-l.errs:
				return err
			default:
				return nil
			}
		case err := <-m.fatal:
			return err
		case <-ctx.Done():
			return nil
		}
	}
}

// lead does the flow leader's work until ctx ends (or, with once, until the
// once-work is done): it applies the topic plan (creating and growing remote
// topics, syncing configs and ACLs), then emits heartbeats and checkpoints
// and syncs group offsets on their intervals, and re-plans every
// refresh.topics.interval.seconds.
func (fr *flowRunner) lead(ctx context.Context) error {
	cfg := fr.cfg
	steps := fr.leaderSetUp()
	var ckpt *checkpointer
	if cfg.Enabled && cfg.EmitCheckpoints {
		ckpt = newCheckpointer(cfg, fr.clients, fr.log, fr.now, fr.worker.io.src, fr.worker.io.tgt, fr.worker.io.control)
		ckpt.obs = fr.obs
		ckpt.read.fullHistory = cfg.ReverseCheckpoints
		if fr.once && ckpt.hasWork(ctx) {
			// Read the syncs while the data is copied, not after it, from
			// where the groups need them (syncsFrom): not when no group has
			// an offset to checkpoint (checkpointOnce looks again at the end).
			ckpt.followOnce(ctx)
		}
		steps = append(steps, ckpt.start)
	}
	var rev *reverseCheckpointer // reverse.go
	if ckpt != nil && cfg.ReverseCheckpoints {
		rev = newReverseCheckpointer(ckpt)
		defer rev.close()
		steps = append(steps, rev.start)
	}
	if err := concurrently(ctx, steps...); err != nil {
		return err
	}
	if ckpt != nil {
		fr.mu.Lock()
		fr.ckpt = ckpt
		fr.mu.Unlock()
	}
	if fr.once {
		if ckpt == nil {
			return nil
		}
		// The checkpoint pass reads the offset syncs of the whole copy:
		// wait until this process's data side is done and flushed.
		select {
		case <-ctx.Done():
			return nil
		case <-fr.dataDone:
		}
		return fr.checkpointOnce(ctx, ckpt, rev)
	}
	var loops []func(context.Context) error
	if cfg.EmitHeartbeats {
		loops = append(loops, func(ctx context.Context) error { return runHeartbeats(ctx, cfg, fr.clients, fr.log, fr.now, false) })
	}
	if ckpt != nil {
		loops = append(loops, func(ctx context.Context) error { ckpt.run(ctx); return nil })
	}
	if rev != nil {
		loops = append(loops, func(ctx context.Context) error { rev.run(ctx); return nil })
	}
	if cfg.Enabled && (cfg.RefreshTopics || cfg.SyncTopicConfigs || cfg.SyncTopicACLs) {
		loops = append(loops, func(ctx context.Context) error { fr.runRefresher(ctx); return nil })
	}
	err := concurrently(ctx, loops...)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// leaderSetUp is the leader's first work: the topic plan applied (remote
// topics created and grown, configs synced), ACLs synced, and with once the
// run's heartbeat.
func (fr *flowRunner) leaderSetUp() []func(context.Context) error {
	cfg := fr.cfg
	var steps []func(context.Context) error
	if cfg.Enabled {
		steps = append(steps, func(ctx context.Context) error {
			src, tgt := fr.worker.io.src, fr.worker.io.tgt
			plan, err := PlanFlow(ctx, cfg, src, tgt)
			if err != nil {
				return err
			}
			if err := applyPlan(ctx, cfg, plan, src, tgt); err != nil {
				return err
			}
			fr.awaitServed(ctx, plan)
			if cfg.SyncTopicConfigs {
				if err := syncConfigs(ctx, cfg, plan, src, tgt); err != nil {
					fr.log.Warn("topic config sync failed", "err", err)
				}
			}
			return nil
		})
		if cfg.SyncTopicACLs {
			steps = append(steps, func(ctx context.Context) error { fr.syncACLs(ctx); return nil })
		}
	}
	if cfg.EmitHeartbeats && fr.once {
		steps = append(steps, func(ctx context.Context) error {
			if wrote, err := fr.beats.wrote(ctx, cfg.Name()); wrote || err != nil {
				return err
			}
			return runHeartbeats(ctx, cfg, fr.clients, fr.log, fr.now, true)
		})
	}
	return steps
}

// checkpointOnce is --once's checkpoint pass: with the offset syncs of this
// run written, wait until the syncs follower has read them all, emit
// checkpoints, and sync group offsets;
// then, with rev, emit the reverse checkpoints.
func (fr *flowRunner) checkpointOnce(ctx context.Context, ckpt *checkpointer, rev *reverseCheckpointer) error {
	if !ckpt.following() {
		// No group had an offset to checkpoint when the flow was led.
		if rev == nil && !ckpt.hasWork(ctx) {
			return nil
		}
		ckpt.followOnce(ctx)
	}
	if err := ckpt.awaitSyncs(ctx); err != nil {
		return err
	}
	if _, err := ckpt.emit(ctx); err != nil {
		return err
	}
	if fr.cfg.SyncGroupOffsets {
		ckpt.syncGroupOffsets(ctx)
	}
	if rev != nil {
		if _, err := rev.emit(ctx); err != nil {
			return err
		}
	}
	return nil
}

// awaitServed waits, at most 10 s, until the target serves every partition
// the plan created or added, so the first copies are not refused and backed
// off (see awaitLeaders). Not being served in time is only logged.
func (fr *flowRunner) awaitServed(ctx context.Context, plan *Plan) {
	var topics []string
	for _, t := range plan.Topics {
		if t.Action == ActionCreate || t.Action == ActionGrow {
			topics = append(topics, t.RemoteTopic)
		}
	}
	start := time.Now()
	if err := awaitLeaders(ctx, fr.worker.io.control, topics, 10*time.Second); err != nil {
		if ctx.Err() == nil {
			fr.log.Warn("new remote partitions not served yet; copies will be retried", "err", err)
		}
		return
	}
	if len(topics) > 0 {
		fr.log.Debug("new remote partitions served", "topics", len(topics), "waited", time.Since(start))
	}
}

// runRefresher re-plans topics every refresh.topics.interval.seconds
// (creating and growing remote topics; the members subscribe to new topics
// on their own refresh) and syncs topic configs every
// sync.topic.configs.interval.seconds and ACLs every
// sync.topic.acls.interval.seconds.
func (fr *flowRunner) runRefresher(ctx context.Context) {
	never := make(<-chan time.Time)
	refresh, configs, acls := never, never, never
	if fr.cfg.RefreshTopics {
		t := time.NewTicker(fr.cfg.RefreshTopicsInterval)
		defer t.Stop()
		refresh = t.C
	}
	if fr.cfg.SyncTopicConfigs {
		t := time.NewTicker(fr.cfg.SyncTopicConfigsInterval)
		defer t.Stop()
		configs = t.C
	}
	if fr.cfg.SyncTopicACLs {
		t := time.NewTicker(fr.cfg.SyncTopicACLsInterval)
		defer t.Stop()
		acls = t.C
	}
	src, tgt := fr.worker.io.src, fr.worker.io.tgt
	for {
		select {
		case <-ctx.Done():
			return
		case <-refresh:
			plan, err := PlanFlow(ctx, fr.cfg, src, tgt)
			if err == nil {
				err = applyPlan(ctx, fr.cfg, plan, src, tgt)
			}
			if err != nil {
				if ctx.Err() == nil {
					fr.log.Warn("topic refresh failed", "err", err)
				}
				continue // no plan to wait for (PlanFlow's plan is nil on error)
			}
			fr.awaitServed(ctx, plan)
		case <-acls:
			fr.syncACLs(ctx)
		case <-configs:
			plan, err := PlanFlow(ctx, fr.cfg, src, tgt)
			if err == nil {
				err = syncConfigs(ctx, fr.cfg, plan, src, tgt)
			}
			if err != nil && ctx.Err() == nil {
				fr.log.Warn("topic config sync failed", "err", err)
			}
		}
	}
}

// syncACLs runs one ACL sync; failures are logged, never fatal (MM2 logs
// them too): the data path does not depend on it. A source without an
// authorizer is said once, at info level, as MM2 does (KAFKA-14781). The
// source bindings left out are logged, each with its reason, at the first
// sync and whenever they change; every revoked binding still on the target
// is logged at every sync, as are pruned ones; the observer (an
// [ACLObserver]) gets the report.
func (fr *flowRunner) syncACLs(ctx context.Context) {
	r, err := SyncTopicACLs(ctx, fr.cfg, fr.worker.io.src, fr.worker.io.tgt, NewACLLedger(fr.cfg, fr.clients, false))
	if ctx.Err() == nil {
		out := NewFlowACLSync(fr.cfg.Name(), r, err)
		fr.aclSaid.last.Store(&out)
	}
	if errors.Is(err, ErrNoAuthorizer) {
		if !fr.aclSaid.noAuthorizer.Swap(true) {
			fr.log.Info("topic ACL sync skipped: the source has no authorizer")
		}
		return
	}
	if err != nil && ctx.Err() == nil {
		fr.log.Warn("topic ACL sync failed", "err", err)
	}
	if len(r.Planned) == 0 && len(r.Skipped) == 0 && err != nil {
		return // the source was not read: nothing to report
	}
	fr.logACLReport(r)
	if o, ok := fr.obs.(ACLObserver); ok {
		o.ACLSync(fr.cfg.Source, fr.cfg.Target, r)
	}
}

// logACLReport logs one ACL sync's report (see syncACLs).
func (fr *flowRunner) logACLReport(r ACLSyncReport) {
	said := fmt.Sprint(r.Skipped)
	if prev := fr.aclSaid.skips.Swap(&said); (prev == nil || *prev != said) && len(r.Skipped) > 0 {
		byReason := map[string]int{}
		for _, s := range r.Skipped {
			byReason[s.Reason]++
			fr.log.Info("topic ACL binding not synced", "binding", s.Binding, "reason", s.Reason, "detail", s.Detail)
		}
		reasons := make([]string, 0, len(byReason))
		for k, n := range byReason {
			reasons = append(reasons, fmt.Sprintf("%s %d", k, n))
		}
		sort.Strings(reasons)
		fr.log.Warn("source ACL bindings not synced to the target (each with its reason at -v, in /status and replicate --dry-run)",
			"count", len(r.Skipped), "by_reason", strings.Join(reasons, ", "))
	}
	if r.TrackingError != "" {
		fr.log.Warn("revoked topic ACLs cannot be tracked or pruned; bindings created as MM2 does", "err", r.TrackingError)
	}
	for _, b := range r.Revoked {
		fr.log.Warn("topic ACL binding revoked on the source is still on the target (sync.topic.acls.prune = true removes it)",
			"binding", b, "cluster", fr.cfg.Target)
	}
	for _, b := range r.Pruned {
		fr.log.Warn("topic ACL binding pruned from the target: its source binding is gone", "binding", b, "cluster", fr.cfg.Target)
	}
	if len(r.Created) > 0 {
		fr.log.Info("topic ACLs created on the target", "count", len(r.Created))
	}
}

// newTopics re-plans the flow (read-only) and returns the replicated source
// topics this process does not subscribe to yet, marking them subscribed.
func (fr *flowRunner) newTopics(ctx context.Context) ([]string, error) {
	plan, err := PlanFlow(ctx, fr.cfg, fr.worker.io.src, fr.worker.io.tgt)
	if err != nil {
		return nil, fmt.Errorf("flow %s: %w", fr.cfg.Name(), err)
	}
	fr.mu.Lock()
	defer fr.mu.Unlock()
	var out []string
	for _, t := range plan.Replicated() {
		if !fr.subscribed[t.Topic] {
			fr.subscribed[t.Topic] = true
			out = append(out, t.Topic)
		}
	}
	return out, nil
}
