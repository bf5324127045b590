package replicate

import (
	"errors"
	"log/slog"
	"sync"
	"time"
)

// ReachabilityObserver is implemented by an [Observer] that wants to know
// whether this process reaches each cluster of its flows. Every enabled
// flow probes its source and its target every 5 s (health.go; at most
// probeTimeout each); the process keeps one state per cluster alias,
// whichever flows probe it. ClusterReachable is called when that state
// changes, and once at the first probe of each cluster:
//
//   - reachable false: a probe failed; since is when that first failed probe
//     began (the outage's start as far as this process can tell) and err
//     is the probe's error;
//   - reachable true: a probe succeeded (the first one, or the first after
//     an outage); since is when it ended, err is nil.
//
// internal/metrics implements it (mirrorctl_cluster_reachable, /readyz,
// /status).
type ReachabilityObserver interface {
	ClusterReachable(cluster string, reachable bool, since time.Time, err error)
}

// reachability is the process's view of which clusters it reaches, fed by
// every flow's probes (worker.probe) and shared by all of them (one per
// [Mirror]). It logs one warning when a cluster's outage starts (alias and
// error) and one when it ends (with the outage's length), and tells the
// Observer when it implements [ReachabilityObserver]. Safe for concurrent
// use.
type reachability struct {
	log *slog.Logger
	obs ReachabilityObserver // nil when the Observer does not implement it

	mu    sync.Mutex // guards state
	state map[string]*clusterReach
}

// clusterReach is one cluster's state: down since when, and why.
type clusterReach struct {
	down  bool
	since time.Time
	err   error
}

func newReachability(log *slog.Logger, obs Observer) *reachability {
	r := &reachability{log: log, state: map[string]*clusterReach{}}
	r.obs, _ = obs.(ReachabilityObserver)
	return r
}

// probed records the outcome of one probe of cluster that began at began
// and ended at ended: err nil is a success. A failure while the cluster is
// reachable (or not probed yet) starts an outage from began; a success
// while it is down ends it at ended.
func (r *reachability) probed(cluster string, began, ended time.Time, err error) {
	if r == nil {
		return
	}
	r.mu.Lock()
	s, known := r.state[cluster]
	if !known {
		s = &clusterReach{}
		r.state[cluster] = s
	}
	var (
		changed bool
		length  time.Duration
		wasDown = s.down
	)
	switch {
	case err != nil && (!s.down || !known):
		s.down, s.since, s.err, changed = true, began, err, true
	case err == nil && (s.down || !known):
		length = ended.Sub(s.since)
		s.down, s.since, s.err, changed = false, ended, nil, true
	}
	since := s.since
	r.mu.Unlock()
	if !changed {
		return
	}
	switch {
	case err != nil:
		r.log.Warn("cluster unreachable", "cluster", cluster, "since", since.UTC().Format(time.RFC3339Nano), "error", err)
	case wasDown:
		r.log.Warn("cluster reachable again", "cluster", cluster, "unreachable_for", length.Round(100*time.Millisecond).String())
	}
	if r.obs != nil {
		r.obs.ClusterReachable(cluster, err == nil, since, err)
	}
}

// errProbeTimeout is a probe that got no answer within probeTimeout.
var errProbeTimeout = errors.New("no answer within " + probeTimeout.String())
