package replicate

// stats sums the run's tasks per partition: a partition assigned, released
// and assigned again counts once, with the records of every assignment, and
// the state and error of its newest task.
func (w *worker) stats(owner string) []PartitionStats {
	byKey := map[tp]*PartitionStats{}
	var order []tp
	for _, t := range w.tasks.every() { // released first, newest last
		s := byKey[t.src]
		if s == nil {
			s = &PartitionStats{Flow: w.cfg.Name(), Topic: t.src.topic, RemoteTopic: t.remote, Partition: t.src.partition, Start: -1}
			byKey[t.src] = s
			order = append(order, t.src)
		}
		taskStats(s, t)
	}
	// With once, every partition the run had to copy is reported, also
	// those that another member copied or that were copied already.
	for k, end := range w.tasks.ends() {
		if _, ok := byKey[k]; ok {
			continue
		}
		next, _ := w.progress.get(k)
		byKey[k] = &PartitionStats{Flow: w.cfg.Name(), Topic: k.topic, RemoteTopic: w.cfg.Policy.FormatRemoteTopic(w.cfg.Source, k.topic),
			Partition: k.partition, Position: next, Acked: next, State: TaskElsewhere, Start: end, End: end}
		order = append(order, k)
	}
	// The skipped total is the progress topic's where no task of this run
	// has taken it over yet (not started, or copied elsewhere).
	for k, s := range byKey {
		if v, ok := w.progress.value(k); ok && v.Skipped > s.Skipped {
			s.Skipped = v.Skipped
		}
	}
	out := make([]PartitionStats, 0, len(order))
	for _, k := range order {
		s := byKey[k]
		if t := w.tasks.get(k.topic, k.partition); t != nil {
			s.Owner = owner
		} else if s.State != TaskElsewhere {
			s.State = TaskReleased
		}
		out = append(out, *s)
	}
	return out
}

// taskStats adds t's figures to s: counts add up, the rest is t's.
func taskStats(s *PartitionStats, t *task) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s.Start < 0 && t.pos.resumedFrom != "" {
		s.Start = t.pos.firstStart
	}
	s.End = t.pos.end
	s.Position, s.Acked = t.position.Load(), t.pos.acked
	s.Records += t.pos.records
	s.Bytes += t.pos.bytes
	s.State, s.ResumedFrom = t.State(), t.pos.resumedFrom
	s.Error = ""
	switch {
	case t.fail.err != nil:
		s.Error = t.fail.err.Error()
	case t.loss.stop != nil:
		s.Error = t.loss.stop.Error()
	case t.fail.first != nil && (s.State == TaskStarting || s.State == TaskFenced):
		s.Error = t.fail.first.Error()
	}
	s.Skipped = t.loss.skipped
	s.Losses = append(s.Losses, t.loss.events...)
}
