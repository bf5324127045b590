package replicate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Starting partition tasks. The group member hands the starter the
// partitions the group assigned (assign); each batch starts in the
// background, since choosing a resume point needs the progress topic read to
// its end and the remote partition to exist, which must not hold up the
// group's rebalance. A batch start (startBatch):
//
//  1. attaches what the delivery mode needs (exactly-once: a transactional
//     producer per task, fencing the previous owner, before anything is
//     read);
//  2. reads, at once, the source topic IDs, the progress topic to its end,
//     the source log starts and ends, and waits for the remote partitions
//     (reading their limits afresh: an operator may have raised one since
//     the partition last ran here);
//  3. lists the remote partitions' ends and reads the offset syncs that
//     could still move a resume point (mm2resume.go);
//  4. decides each task's resume point (decide) and opens the running ones
//     on the fetch gate.
//
// A start that fails with an error that heals (offsets not listed yet for a
// partition just created, a broker moving) is tried again until it works,
// startGiveUp passes, or every task of the batch was released: a task never
// stays assigned and idle.

// startGiveUp bounds how long a partition task's start is retried.
const startGiveUp = 30 * time.Second

// starter starts the tasks the group assigns to this process.
type starter struct {
	w        *worker
	takeover *takeover      // what MM2 left, read at the flow's start (mm2resume.go)
	running  sync.WaitGroup // batch starts in progress
}

// assign creates a task for each newly assigned partition and starts them
// in the background.
func (s *starter) assign(parts map[string][]int32) {
	w := s.w
	batch := w.tasks.add(parts, func(topic string) string { return w.cfg.Policy.FormatRemoteTopic(w.cfg.Source, topic) })
	if len(batch) == 0 {
		return
	}
	for _, t := range batch {
		t.obs = w.obs.Partition(w.cfg.Source, w.cfg.Target, t.remote, t.src.partition)
	}
	w.counts.assigned.Add(int64(len(batch)))
	s.running.Add(1)
	go func() {
		defer s.running.Done()
		s.start(batch)
	}()
}

// start runs startBatch until it succeeds, fails for good, or every task of
// batch was released.
func (s *starter) start(batch []*task) {
	w := s.w
	ctx, cancel := context.WithCancel(w.run.ctx)
	defer cancel()
	go func() { // abort the whole batch when every task of it was released
		for _, t := range batch {
			select {
			case <-t.life.ctx.Done():
			case <-ctx.Done():
				return
			}
		}
		cancel()
	}()
	defer func() {
		for _, t := range batch {
			t.startDone()
		}
	}()
	said := ""
	first := time.Now()
	for {
		err := s.startBatch(ctx, batch)
		if err == nil {
			w.reportPositions(ctx, batch) // records behind from the start, also while idle (health.go)
			return
		}
		if ctx.Err() != nil {
			return
		}
		// What will not heal (no permission, the progress topic gone), or
		// has not healed for startGiveUp, stops the flow with its cause:
		// never a run that waits forever, or exits 0 having copied nothing.
		if permanent(err) || time.Since(first) > startGiveUp {
			w.fatal(fmt.Errorf("flow %s: partition tasks cannot start: %w", w.cfg.Name(), err))
			return
		}
		if msg := err.Error(); msg != said {
			said = msg
			w.log.Warn("partition tasks not started yet; retrying", "partitions", len(batch), "err", err)
		}
		for _, t := range batch {
			t.mu.Lock()
			t.fail.first = err
			t.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// permanent reports errors that retrying does not heal.
func permanent(err error) bool {
	return errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.GroupAuthorizationFailed) ||
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed) || errors.As(err, new(*SettingError)) ||
		errors.Is(err, kerr.ClusterAuthorizationFailed) || errors.Is(err, kerr.UnknownTopicOrPartition) && strings.Contains(err.Error(), "progress topic") ||
		errors.Is(err, ErrResumeUnknown)
}

// startFacts is what a batch start read about its partitions.
type startFacts struct {
	ids          map[string]string // source topic IDs
	starts, ends kadm.ListedOffsets
	rends        kadm.ListedOffsets // remote partitions' end offsets
	remotes      []string           // the batch's remote topics
}

func (s *starter) startBatch(ctx context.Context, batch []*task) error {
	w := s.w
	// Exactly-once: fence the previous owners first, so the progress read
	// next is final (eos.go).
	if err := w.mode.attach(ctx, batch); err != nil {
		return err
	}
	facts, err := s.gather(ctx, batch)
	if err != nil {
		return err
	}
	s.recap(ctx, facts.remotes)
	type decision struct {
		t   *task
		at  int64
		run bool
	}
	var (
		ds   []decision
		errs []error
	)
	for _, t := range batch {
		if t.State() != TaskStarting {
			continue // released meanwhile
		}
		at, run, err := s.decide(ctx, t, facts)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ds = append(ds, decision{t, at, run})
	}
	// A release takes the dispatch lock to move a task to draining: under
	// it, a task either runs and is open on the gate, or is left alone.
	open := map[*task]int64{}
	w.run.dmu.Lock()
	for _, d := range ds {
		if !d.run {
			w.mode.begin(d.t) // stopped at start (reported): exactly-once commits the stop
			continue
		}
		if d.t.to(TaskRunning, w.log) {
			open[d.t] = d.at
			w.mode.begin(d.t)
		}
	}
	w.gate.open(open)
	w.run.dmu.Unlock()
	for _, d := range ds {
		d.t.startDone()
		if _, ok := open[d.t]; ok {
			d.t.mu.Lock()
			from := d.t.pos.resumedFrom
			d.t.mu.Unlock()
			w.log.Info("partition task started", "topic", d.t.src.topic, "partition", d.t.src.partition, "resume", d.at, "from", from)
		}
	}
	return errors.Join(errs...)
}

// gather reads what the batch's resume points are chosen from (steps 2 and
// 3 of the comment at the top).
func (s *starter) gather(ctx context.Context, batch []*task) (*startFacts, error) {
	w := s.w
	topics := map[string]bool{}
	need := map[string]int32{}
	srcs := make([]tp, 0, len(batch))
	for _, t := range batch {
		srcs = append(srcs, t.src)
		topics[t.src.topic] = true
		need[t.remote] = max(need[t.remote], t.src.partition+1)
	}
	names := sortedKeys(topics)
	remotes := sortedKeys(need)
	f := &startFacts{remotes: remotes}
	steps := []func(context.Context) error{
		func(ctx context.Context) (err error) {
			f.ids, err = w.sourceTopicIDs(ctx, names) // topicid.go
			return err
		},
		func(ctx context.Context) error {
			if err := w.progress.catchUp(ctx, srcs...); err != nil {
				return fmt.Errorf("read progress: %w", err)
			}
			return nil
		},
		func(ctx context.Context) (err error) {
			if f.starts, err = w.io.src.ListStartOffsets(ctx, names...); err != nil {
				return fmt.Errorf("list start offsets on %s: %w", w.cfg.Source, err)
			}
			return nil
		},
		// A task without progress resumes where MM2 stopped, or by the
		// reset policy (mm2resume.go), which needs both ends.
		func(ctx context.Context) (err error) {
			if f.ends, err = listSourceEnds(ctx, w.cfg, w.io.src, names...); err != nil {
				return fmt.Errorf("list end offsets on %s: %w", w.cfg.Source, err)
			}
			return nil
		},
		func(ctx context.Context) error {
			if err := awaitRemotePartitions(ctx, w.io.data, need); err != nil {
				return err
			}
			// Before the data producer learns the partitions: it takes
			// their batch cap from the limits then (limits.go).
			w.io.limits.load(ctx, w, remotes)
			return awaitProducerPartitions(ctx, w.io.data, need) // growth.go
		},
	}
	if err := concurrently(ctx, steps...); err != nil {
		return nil, err
	}
	// The remote ends tell a remote topic that lost its copies (refill),
	// so they are listed for every batch, after the progress read: a copy
	// the progress covers is on the target by then. Where a remote
	// partition holds records, an offset sync may tell where its copy
	// stopped (syncMatters; readSyncs reads back from the end of the
	// offset-syncs topic only as far as these partitions need).
	var err error
	if f.rends, err = listRemoteEnds(ctx, w.io.tgt, need); err != nil {
		return nil, fmt.Errorf("list end offsets on %s: %w", w.cfg.Target, err)
	}
	var syncs []tp
	for _, t := range batch {
		_, hasProgress := w.progress.get(t.src)
		if e, ok := f.rends.Lookup(t.remote, t.src.partition); syncMatters(w.cfg, t.src.topic, hasProgress, e, ok) {
			syncs = append(syncs, t.src)
		}
	}
	if len(syncs) > 0 {
		if err := s.takeover.readSyncs(ctx, w.cfg, w.clients, syncs); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// recap has the at-least-once data producer take the batch cap of each
// remote topic whose max.message.bytes changed since it took it (an
// operator raised the limit that stopped a partition, which is now
// assigned again): under the dispatch lock, once the copies in flight to
// the topic were acknowledged (bounded by the stop budget), the topic is
// purged from the producer, which then reads the cap again. Exactly-once
// tasks build their producers at start and need none of it.
func (s *starter) recap(ctx context.Context, remotes []string) {
	w := s.w
	if w.mode.ownProgress() {
		return
	}
	stale := w.io.limits.stale(remotes)
	if len(stale) == 0 {
		return
	}
	w.run.dmu.Lock()
	defer w.run.dmu.Unlock()
	sctx, cancel := w.stop.ctx(ctx)
	defer cancel()
	for _, t := range w.tasks.all() {
		if slices.Contains(stale, t.remote) && !t.awaitIdle(sctx) {
			w.log.Warn("batch cap of the remote topic not renewed: copies still in flight", "remote", t.remote)
			return
		}
	}
	w.io.data.PurgeTopicsFromProducing(stale...)
	w.io.limits.forget(stale)
	w.log.Info("the remote topics' max.message.bytes changed: the data producer takes their new batch cap", "remotes", stale)
}

// decide chooses t's resume point from facts and sets it, reporting a loss
// event where the facts show one. It returns where the task starts
// fetching and whether it runs (false: it stopped at start, reported).
func (s *starter) decide(ctx context.Context, t *task, f *startFacts) (int64, bool, error) {
	w := s.w
	st, ok := f.starts.Lookup(t.src.topic, t.src.partition)
	if !ok || st.Err != nil {
		return 0, false, fmt.Errorf("start offset of %s[%d] on %s: %v", t.src.topic, t.src.partition, w.cfg.Source, st.Err)
	}
	written := int64(-1)
	val, hasProgress := w.progress.value(t.src)
	if hasProgress {
		written = val.Next
		t.inheritLoss(val)
	}
	t.limits = w.io.limits.of(t.remote)
	ev := w.checkTopicID(t, val, hasProgress, f.ids[t.src.topic])
	if remoteEnd, known := remoteEndOf(f.rends, t.remote, t.src.partition); ev == nil && hasProgress && known {
		// The remote partition ends below what progress says was
		// mirrored into it: the remote topic was deleted or recreated
		// (refilled from the source log start; what the source no
		// longer holds is lost), or lost its last records (loss.go).
		var refill bool
		if ev, refill = targetLoss(t.remote, t.src.partition, val.Downstream, remoteEnd, written, st.Offset); ev != nil {
			t.mu.Lock()
			t.pos.downstream = remoteEnd // what the remote partition holds now
			t.mu.Unlock()
			if !refill {
				// Only its last records are gone: reported, and the
				// partition resumes where its progress says.
				w.reportLoss(t, *ev)
				ev = nil
			}
		}
	}
	if ev != nil { // the source topic was recreated (topicid.go), or the remote one
		if ev.Stopped {
			t.resume(val.Next, written, ResumeProgress)
			w.reportLoss(t, *ev)
			return 0, false, nil
		}
		w.reportLoss(t, *ev)
		t.resume(st.Offset, -1, ResumeLogStart) // -1: every position from here on is written
		return st.Offset, true, nil
	}
	// The resume point: progress, else where MM2 stopped, else the reset
	// policy (mm2resume.go).
	rp, err := s.resumePoint(ctx, t, st.Offset, written, f)
	if err != nil {
		return 0, false, err
	}
	start := rp.Offset
	var gap *LossEvent
	if rp.Skip > 0 && rp.From != ResumeLogEnd {
		// Deleted on the source before they were copied (loss.go).
		next := rp.Offset - rp.Skip
		gap = &LossEvent{Kind: LossGap, From: next, To: rp.Offset, Stopped: w.cfg.StopOnGap, Reason: gapReason(w.cfg.StopOnGap, rp.Offset)}
		if gap.Stopped {
			start = next
		}
	}
	t.resume(start, written, rp.From)
	t.mu.Lock()
	t.fail.first = nil
	t.mu.Unlock()
	if gap != nil {
		w.reportLoss(t, *gap)
		if gap.Stopped {
			return 0, false, nil
		}
	}
	return start, true, nil
}

// remoteEndsBudget bounds how long listRemoteEnds waits for the admin
// client to see remote partitions the start saw exist.
const remoteEndsBudget = 15 * time.Second

// listRemoteEnds lists the end offsets of the remote partitions in need
// (topic: partition count), which the start saw exist (awaitRemotePartitions).
// The admin client maps topics to leaders from metadata it keeps for a
// while, so a remote topic it saw missing just before the flow leader
// created it again is listed as unknown until that expires: such a listing
// is tried again, every 250ms within remoteEndsBudget, since a remote
// partition that lost its records must be told from one not listed. What
// is still unknown then is returned as it is.
func listRemoteEnds(ctx context.Context, tgt *kadm.Client, need map[string]int32) (kadm.ListedOffsets, error) {
	remotes := sortedKeys(need)
	deadline := time.Now().Add(remoteEndsBudget)
	for {
		rends, err := tgt.ListEndOffsets(ctx, remotes...)
		if err != nil {
			return nil, err
		}
		complete := true
		for r, n := range need {
			for p := int32(0); p < n && complete; p++ {
				if o, ok := rends.Lookup(r, p); !ok || errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
					complete = false
				}
			}
		}
		if complete || time.Now().After(deadline) {
			return rends, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// remoteEndOf is the end offset of remote[partition] in rends; known is
// false when it was not listed. A remote topic the target does not know is
// not taken for an empty one: the client's metadata may be stale, and a
// wrong "lost" would refill the remote topic with duplicates. The start
// waited for the remote partitions to exist (gather).
func remoteEndOf(rends kadm.ListedOffsets, remote string, partition int32) (end int64, known bool) {
	if re, ok := rends.Lookup(remote, partition); ok && re.Err == nil {
		return re.Offset, true
	}
	return 0, false
}

// sortedKeys returns the keys of m, sorted.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
