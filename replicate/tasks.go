package replicate

import (
	"sort"
	"sync"
)

// taskSet is the registry of one flow's partition tasks in this process:
// the live ones by partition, and those released during the run (their
// figures count in the run's totals). The starter adds, the release
// removes; everything else only looks.
type taskSet struct {
	mu       sync.RWMutex // guards live, releasing, released, remotes, onceEnds and short
	live     map[tp]*task
	released []*task
	// releasing counts the tasks taken from live and not yet retired:
	// a release is still draining them.
	releasing int
	// remotes holds one remote topic name per source topic, shared by
	// its tasks: the producer looks a record's topic up on every
	// produce, and one string compares by pointer.
	remotes map[string]string
	// onceEnds (once): the flow's partitions and their end offsets when
	// the run started; the run is done when each reached its end.
	onceEnds map[tp]int64
	// short (once): the source partitions whose remote partition, when the
	// run started, ended below the downstream position their progress had
	// recorded before it: it lost mirrored records (deleted or recreated),
	// which the partition's task reports (start.go), so its progress alone
	// does not make it copied.
	short map[tp]bool
}

func newTaskSet() *taskSet {
	return &taskSet{live: map[tp]*task{}, remotes: map[string]string{}}
}

// get returns the live task of topic[partition], nil if none.
func (s *taskSet) get(topic string, partition int32) *task {
	s.mu.RLock()
	t := s.live[tp{topic, partition}]
	s.mu.RUnlock()
	return t
}

// all returns the live tasks.
func (s *taskSet) all() []*task {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*task, 0, len(s.live))
	for _, t := range s.live {
		out = append(out, t)
	}
	return out
}

// every returns the live tasks and those released during the run.
func (s *taskSet) every() []*task {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := append([]*task(nil), s.released...)
	for _, t := range s.live {
		out = append(out, t)
	}
	return out
}

// parts returns the partitions of the live tasks.
func (s *taskSet) parts() map[string][]int32 {
	out := map[string][]int32{}
	for _, t := range s.all() {
		out[t.src.topic] = append(out[t.src.topic], t.src.partition)
	}
	return out
}

func (s *taskSet) count() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.live)
}

// settled reports whether no task is live and none is being released: a
// release that takes no task while another still drains its own must not
// act as if the flow had none (freezeCleared).
func (s *taskSet) settled() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.live) == 0 && s.releasing == 0
}

// add creates a task for each partition of parts that has none, with
// remote naming its remote topic, and returns the new ones.
func (s *taskSet) add(parts map[string][]int32, remote func(string) string) []*task {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*task
	for topic, ps := range parts {
		for _, p := range ps {
			key := tp{topic, p}
			if _, ok := s.live[key]; ok {
				continue
			}
			end := int64(-1)
			if e, ok := s.onceEnds[key]; ok {
				end = e
			}
			r, ok := s.remotes[topic]
			if !ok {
				r = remote(topic)
				s.remotes[topic] = r
			}
			t := newTask(key, r, end)
			s.live[key] = t
			out = append(out, t)
		}
	}
	return out
}

// take removes the live tasks of parts and returns them.
func (s *taskSet) take(parts map[string][]int32) []*task {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*task
	for topic, ps := range parts {
		for _, p := range ps {
			key := tp{topic, p}
			if t, ok := s.live[key]; ok {
				delete(s.live, key)
				out = append(out, t)
			}
		}
	}
	s.releasing += len(out)
	return out
}

// retire keeps ts, released, for the run's totals.
func (s *taskSet) retire(ts []*task) {
	s.mu.Lock()
	s.released = append(s.released, ts...)
	s.releasing -= len(ts)
	s.mu.Unlock()
}

// setOnceEnds sets what a once run copies up to (ends) and, from the
// remote partitions' end offsets listed at its start (remoteEnds) and the
// downstream positions the progress topic held before that listing
// (downAtStart), which remote partitions had lost mirrored records then.
// The downstream positions must be the earlier: progress is written after
// its copies are acknowledged, so a remote end listed later is at least
// the downstream position unless records were lost. Comparing with a
// position recorded later would take another member's copying during this
// run for a loss, and this member would wait for ever for a partition it
// does not own.
func (s *taskSet) setOnceEnds(ends, remoteEnds, downAtStart map[tp]int64) {
	short := map[tp]bool{}
	for k, e := range remoteEnds {
		if d := downAtStart[k]; d > 0 && e < d {
			short[k] = true
		}
	}
	s.mu.Lock()
	s.onceEnds, s.short = ends, short
	s.mu.Unlock()
}

// remoteShort reports whether the remote partition of key had lost mirrored
// records when the once run started (setOnceEnds).
func (s *taskSet) remoteShort(key tp) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.short[key]
}

func (s *taskSet) ends() map[tp]int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.onceEnds
}

// isLive reports whether t is the live task of its partition.
func (s *taskSet) isLive(t *task) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.live[t.src] == t
}

// recordErrors returns the [RecordError]s of every task of the run, sorted
// by topic and partition.
func (s *taskSet) recordErrors() []error {
	var errs []*RecordError
	for _, t := range s.every() {
		t.mu.Lock()
		if t.fail.err != nil {
			errs = append(errs, t.fail.err)
		}
		t.mu.Unlock()
	}
	sort.SliceStable(errs, func(i, j int) bool {
		return partitionLess(errs[i].Topic, errs[i].Partition, errs[j].Topic, errs[j].Partition)
	})
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return out
}

// lossErrors returns the loss events of every task of the run, but those of
// refused records (recordErrors reports them), sorted by topic and
// partition, oldest first.
func (s *taskSet) lossErrors() []error {
	var evs []LossEvent
	for _, t := range s.every() {
		t.mu.Lock()
		for _, ev := range t.loss.events {
			// Refused records are recordErrors'; an event that lost
			// nothing and stopped nothing (a recreated topic copied
			// from its start by choice) is reported, not an error. A
			// remote partition that lost mirrored records always is,
			// even when the source still had them all to copy again.
			if ev.Kind != LossRefused && (ev.Count > 0 || ev.Stopped || ev.Kind == LossTargetRecreated) {
				evs = append(evs, ev)
			}
		}
		t.mu.Unlock()
	}
	sort.SliceStable(evs, func(i, j int) bool {
		return partitionLess(evs[i].Topic, evs[i].Partition, evs[j].Topic, evs[j].Partition)
	})
	out := make([]error, len(evs))
	for i := range evs {
		out[i] = &evs[i]
	}
	return out
}

// partitionLess orders partitions by topic, then partition number.
func partitionLess(ta string, pa int32, tb string, pb int32) bool {
	if ta != tb {
		return ta < tb
	}
	return pa < pb
}
