// Package metrics exposes `mirrorctl replicate`'s measurements to Prometheus.
//
// [Observer] implements replicate.Observer and is also a
// prometheus.Collector. Its series carry the names a JMX exporter gives MM2's
// MBeans (docs/mm2-formats.md §11; kafka.connect.mirror domain, attribute
// dashes become underscores), so dashboards and alert rules written for MM2
// keep working:
//
//	kafka_connect_mirror_record_count               records acknowledged by the target (cumulative)
//	kafka_connect_mirror_record_rate                the same per second, windowed
//	kafka_connect_mirror_byte_count                 value bytes of polled records (cumulative)
//	kafka_connect_mirror_byte_rate                  the same per second, windowed
//	kafka_connect_mirror_record_age_ms[_min|_max|_avg]           at poll: now - source timestamp
//	kafka_connect_mirror_replication_latency_ms[_min|_max|_avg]  at acknowledgement: now - source timestamp
//	    labels source, target, topic (remote topic name), partition
//	kafka_connect_mirror_checkpoint_latency_ms[_min|_max|_avg]
//	    labels source, target, group, topic (target-side name), partition
//
// plus what MM2 lacks:
//
//	mirrorctl_records_behind          source high watermark - next offset acknowledged (records), per partition; absent while it is unknown (before the first listing, and while the source cluster is unreachable)
//	mirrorctl_cluster_reachable       1 while this process's probes of the cluster succeed, 0 from the first failed one until one succeeds again, per cluster alias
//	mirrorctl_checkpoint_age_seconds  now - the last source listing at which the group's checkpoint was written or found current (an idle group's repeats), per flow and group
//	mirrorctl_flow_up                 1 while the flow copies, 0 once it stopped, per flow
//	mirrorctl_flow_leader             1 while this process leads the flow, else 0, per flow
//	mirrorctl_rebalance_partitions_total  partitions assigned to, revoked from or lost by this process, per flow and change
//	mirrorctl_partition_up            1 while this process copies the partition, 0 once a loss event stopped it (refused record, gap with auto.offset.reset=none, ...), per partition
//	mirrorctl_records_skipped_total   source offsets that will not reach the target, per partition and reason (a replicate.LossKind: gap, recreated, target-recreated, refused); every partition starts at 0 for each reason
//	mirrorctl_loss_events_total       loss events (replicate.LossEvent), per partition and reason, from 0 likewise
//	mirrorctl_acl_revoked_bindings    target topic ACL bindings mirrorctl's ACL sync created whose source binding is gone and which are still on the target, per flow, as of the last sync; absent until a sync could tell (the target's ACLs and the ledger read), and in a process that does not lead the flow
//	mirrorctl_invalid_internal_records_total  checkpoints that could not be true (target offset outside the remote partition), never written or committed, per flow and kind (checkpoint, group-offset)
//
// Which process exports what, when several replicate processes share a
// flow: a partition's series (labels source, target, topic, partition:
// MM2's kafka_connect_mirror_* of the partition, records_behind,
// partition_up, records_skipped, loss_events) exist only in the process
// whose partition task copies it now; a revoked or lost partition's go with
// its task (replicate.PartitionCloser), as MM2 closes a task's metrics when
// Connect moves it. A sum over processes counts each partition once. The
// checkpoint series (checkpoint_latency_ms, checkpoint_age_seconds) exist
// only in the flow leader, and go when it stops leading. flow_up,
// flow_leader, rebalance_partitions_total, transactions_total,
// invalid_internal_records_total and cluster_reachable are per process: sum
// flow_leader over processes to see one leader. A pair that only emits
// heartbeats (<source>-><target>.enabled = false) has no flow series.
//
// Windowed values (rate, _min, _max, _avg) follow Kafka Metrics' defaults: 2
// samples of 30 s; _min, _max and _avg are NaN when the window saw nothing, as
// in Kafka. One deliberate difference: replication_latency_ms_max also counts
// the oldest record polled but not yet acknowledged, so a stalled target
// makes it grow instead of going NaN (MM2's only reports acknowledged
// records, so a stall silences latency alerts).
//
// The per-record calls (Polled, Acked) take one per-partition mutex and never
// allocate; labels are resolved once in Partition.
package metrics

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mirrorctl/mirrorctl/replicate"
)

var (
	partLabels = []string{"source", "target", "topic", "partition"}
	ckLabels   = []string{"source", "target", "group", "topic", "partition"}
	flowLabels = []string{"source", "target"}
	groupLabel = []string{"source", "target", "group"}
)

// desc makes a descriptor and records its name, help and labels for the
// text exposition (exposition.go), which prometheus.Desc does not expose.
func desc(name, help string, labels []string) *prometheus.Desc {
	d := prometheus.NewDesc(name, help, labels, nil)
	families[d] = newFamily(name, help, labels)
	return d
}

// Metric names, exported so tests and alert rules can refer to them.
const (
	RecordCount          = "kafka_connect_mirror_record_count"
	RecordRate           = "kafka_connect_mirror_record_rate"
	ByteCount            = "kafka_connect_mirror_byte_count"
	ByteRate             = "kafka_connect_mirror_byte_rate"
	RecordAge            = "kafka_connect_mirror_record_age_ms"
	ReplicationLatency   = "kafka_connect_mirror_replication_latency_ms"
	CheckpointLatency    = "kafka_connect_mirror_checkpoint_latency_ms"
	RecordsBehind        = "mirrorctl_records_behind"
	CheckpointAgeSeconds = "mirrorctl_checkpoint_age_seconds"
	FlowUp               = "mirrorctl_flow_up"
	FlowLeader           = "mirrorctl_flow_leader"
	RebalancePartitions  = "mirrorctl_rebalance_partitions_total"
	PartitionUp          = "mirrorctl_partition_up"
	RecordsSkipped       = "mirrorctl_records_skipped_total"
	LossEvents           = "mirrorctl_loss_events_total"
	InvalidInternal      = "mirrorctl_invalid_internal_records_total"
	Transactions         = "mirrorctl_transactions_total"
	ClusterReachable     = "mirrorctl_cluster_reachable"
	ACLRevokedBindings   = "mirrorctl_acl_revoked_bindings"
	suffixMin, suffixMax = "_min", "_max"
	suffixAvg            = "_avg"
	helpWindow           = " (Kafka Metrics window: 2 samples x 30 s)"
)

// statDescs are the four descriptors of a last/min/max/avg family.
type statDescs struct{ last, min, max, avg *prometheus.Desc }

func newStatDescs(name, help string, labels []string) statDescs {
	return statDescs{
		last: desc(name, help+", last value", labels),
		min:  desc(name+suffixMin, help+", minimum"+helpWindow, labels),
		max:  desc(name+suffixMax, help+", maximum"+helpWindow, labels),
		avg:  desc(name+suffixAvg, help+", average"+helpWindow, labels),
	}
}

var (
	dRecordCount = desc(RecordCount, "Records acknowledged by the target (MM2 record-count)", partLabels)
	dRecordRate  = desc(RecordRate, "Records acknowledged by the target per second (MM2 record-rate)"+helpWindow, partLabels)
	dByteCount   = desc(ByteCount, "Value bytes of polled source records (MM2 byte-count)", partLabels)
	dByteRate    = desc(ByteRate, "Value bytes of polled source records per second (MM2 byte-rate)"+helpWindow, partLabels)
	dRecordAge   = newStatDescs(RecordAge, "Milliseconds from the source record timestamp to its poll (MM2 record-age-ms)", partLabels)
	dLatency     = newStatDescs(ReplicationLatency, "Milliseconds from the source record timestamp to the target's acknowledgement (MM2 replication-latency-ms); _max includes records still unacknowledged", partLabels)
	dCkLatency   = newStatDescs(CheckpointLatency, "Milliseconds from listing the source group offsets to the checkpoint's acknowledgement (MM2 checkpoint-latency-ms)", ckLabels)
	dBehind      = desc(RecordsBehind, "Source high watermark minus the next source offset acknowledged by the target, in records", partLabels)
	dCkAge       = desc(CheckpointAgeSeconds, "Seconds since the last listing of the source group offsets at which the group's checkpoint was written or found current (idle groups stay fresh while the mirror runs)", groupLabel)
	dFlowUp      = desc(FlowUp, "1 while the flow copies records, 0 once it stopped", flowLabels)
	dLeader      = desc(FlowLeader, "1 while this process is the flow leader (topic sync, checkpoints, heartbeats), else 0", flowLabels)
	dRebalance   = desc(RebalancePartitions, "Partitions of the flow assigned to, revoked from (handed over) or lost by this process", []string{"source", "target", "change"})
	dPartUp      = desc(PartitionUp, "1 while this process copies the partition, 0 once a loss event stopped it (it copies nothing more until an operator acts)", partLabels)
	lossLabels   = append(append([]string(nil), partLabels...), "reason")
	dSkipped     = desc(RecordsSkipped, "Source offsets of the partition that will not reach the target (deleted before they were copied, topic recreated, ...), by reason", lossLabels)
	dInvalid     = desc(InvalidInternal, "Internal records (checkpoints, group offsets from them) whose target offset the remote partition cannot hold; counted, never acted on", []string{"source", "target", "kind"})
	dLossEvents  = desc(LossEvents, "Loss events of the partition (records that will not reach the target, or a stop), by reason", lossLabels)
	dReachable   = desc(ClusterReachable, "1 while this process's probes of the cluster (every 5 s, at most 5 s each) succeed, 0 from the first failed probe until one succeeds", []string{"cluster"})
	dACLRevoked  = desc(ACLRevokedBindings, "Target topic ACL bindings mirrorctl's ACL sync created whose source binding is gone, still on the target at the last sync (sync.topic.acls.prune = true removes them)", flowLabels)
	dTxn         = desc(Transactions, "Exactly-once target transactions this process's partition tasks ended, committed or aborted (fenced ones included)", []string{"source", "target", "result"})
)

// Observer collects replicate's measurements and serves them as Prometheus
// metrics. Create it with [New]; pass it as replicate.Options.Observer and
// register it with a prometheus.Registerer (or use [Observer.Handler]).
// Safe for concurrent use.
type Observer struct {
	now func() time.Time

	mu     sync.Mutex
	parts  map[[4]string]*Partition
	ckpts  map[[5]string]*ckSeries
	groups map[[3]string]time.Time // newest checkpoint's listing time
	flows  map[[2]string]bool
	leader map[[2]string]bool
	rebal  map[[3]string]int64
	inval  map[[3]string]int64
	txns   map[[3]string]int64
	member func() []replicate.FlowStatus
	acls   map[[2]string]replicate.ACLSyncReport // the last ACL sync's report, per flow
	reach  map[string]reachState                 // by cluster alias
	grace  time.Duration                         // how long a cluster may be unreachable before /readyz fails
}

// reachState is one cluster's reachability (replicate.ReachabilityObserver).
type reachState struct {
	reachable bool
	since     time.Time
	err       string
}

// DefaultUnreachableGrace is how long a cluster may be unreachable before
// the process is not ready ([Observer.SetUnreachableGrace]; mirrorctl's key
// mirrorctl.health.unreachable.grace.ms).
const DefaultUnreachableGrace = 15 * time.Second

var (
	_ replicate.Observer             = (*Observer)(nil)
	_ replicate.TransactionObserver  = (*Observer)(nil)
	_ replicate.ReachabilityObserver = (*Observer)(nil)
	_ replicate.ACLObserver          = (*Observer)(nil)
	_ replicate.PartitionCloser      = (*Partition)(nil)
)

// New returns an empty Observer. now is the clock (nil is time.Now); tests
// pin it to check windowed values.
func New(now func() time.Time) *Observer {
	if now == nil {
		now = time.Now
	}
	return &Observer{
		now:    now,
		parts:  make(map[[4]string]*Partition),
		ckpts:  make(map[[5]string]*ckSeries),
		groups: make(map[[3]string]time.Time),
		flows:  make(map[[2]string]bool),
		leader: make(map[[2]string]bool),
		rebal:  make(map[[3]string]int64),
		inval:  make(map[[3]string]int64),
		txns:   make(map[[3]string]int64),
		acls:   make(map[[2]string]replicate.ACLSyncReport),
		reach:  make(map[string]reachState),
		grace:  DefaultUnreachableGrace,
	}
}

// SetUnreachableGrace sets how long a cluster may stay unreachable before
// [Observer.Ready] is false (/readyz 503), overriding the default
// [DefaultUnreachableGrace]; 0 fails readiness at the first failed probe.
// The gauge mirrorctl_cluster_reachable and records_behind do not wait for
// it.
func (o *Observer) SetUnreachableGrace(d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.grace = max(0, d)
}

// ClusterReachable records whether this process reaches cluster: false from
// since (the start of the first failed probe) with the probe's error, true
// from since. While a cluster is unreachable, mirrorctl_cluster_reachable is
// 0, the partitions whose source it is have no mirrorctl_records_behind
// series (their source end offsets are unknown) and records_behind -1 in
// /status, and, once the outage is longer than the grace
// ([Observer.SetUnreachableGrace]), the process is not ready. It implements
// replicate.ReachabilityObserver.
func (o *Observer) ClusterReachable(cluster string, reachable bool, since time.Time, err error) {
	st := reachState{reachable: reachable, since: since}
	if err != nil {
		st.err = err.Error()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.reach[cluster] = st
}

// unreachable reports whether cluster is known to be unreachable; o.mu is
// held.
func (o *Observer) unreachable(cluster string) bool {
	st, ok := o.reach[cluster]
	return ok && !st.reachable
}

// Partition returns the series of one copied partition for one partition
// task: fresh ones each time (a partition assigned again starts clean,
// whatever stopped it before), which replace the previous task's. The
// engine closes them when the task ends here (Partition.Close): from then
// on the partition has no series in this process, so every process
// exports only the partitions it copies. It implements replicate.Observer.
func (o *Observer) Partition(source, target, remoteTopic string, partition int32) replicate.PartitionObserver {
	key := [4]string{source, target, remoteTopic, strconv.Itoa(int(partition))}
	p := &Partition{o: o, labels: key, now: o.now, recordRate: newWindow(), byteRate: newWindow(), age: newWindow(), latency: newWindow()}
	o.mu.Lock()
	o.parts[key] = p
	o.mu.Unlock()
	return p
}

// Close drops the partition's series, unless a newer task's replaced them.
// It implements replicate.PartitionCloser.
func (p *Partition) Close() {
	p.o.mu.Lock()
	if p.o.parts[p.labels] == p {
		delete(p.o.parts, p.labels)
	}
	p.o.mu.Unlock()
}

// CheckpointWritten records one acknowledged checkpoint's latency. It
// implements replicate.Observer.
func (o *Observer) CheckpointWritten(source, target, group, topic string, partition int32, latency time.Duration) {
	key := [5]string{source, target, group, topic, strconv.Itoa(int(partition))}
	now := o.now()
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.ckpts[key]
	if s == nil {
		s = &ckSeries{w: newWindow()}
		o.ckpts[key] = s
	}
	ms := float64(latency) / float64(time.Millisecond)
	s.last = ms
	s.w.record(ms, now.UnixNano())
	listed := now.Add(-latency)
	gk := [3]string{source, target, group}
	if listed.After(o.groups[gk]) {
		o.groups[gk] = listed
	}
}

// CheckpointConfirmed records that, at the mirror's listing of the source
// groups at listedAt, every checkpointed partition of group repeated its
// newest checkpoint exactly: the group is idle and its checkpoint current
// (package freshness), so mirrorctl_checkpoint_age_seconds restarts from
// listedAt although no checkpoint was written (MM2's checkpoint task, and
// mirrorctl's, writes none for a group that does not move). replicate's
// checkpointer calls it when the Observer has this method.
func (o *Observer) CheckpointConfirmed(source, target, group string, listedAt time.Time) {
	gk := [3]string{source, target, group}
	o.mu.Lock()
	defer o.mu.Unlock()
	if listedAt.After(o.groups[gk]) {
		o.groups[gk] = listedAt
	}
}

// FlowState records a flow starting or stopping. It implements
// replicate.Observer.
func (o *Observer) FlowState(source, target string, up bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.flows[[2]string{source, target}] = up
}

// Rebalance counts partitions assigned, revoked and lost. It implements
// replicate.Observer.
func (o *Observer) Rebalance(source, target string, assigned, revoked, lost int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for change, n := range map[string]int{"assigned": assigned, "revoked": revoked, "lost": lost} {
		o.rebal[[3]string{source, target, change}] += int64(n)
	}
}

// InvalidInternalRecord counts an internal record that cannot be true. It
// implements replicate.InvalidInternalObserver.
func (o *Observer) InvalidInternalRecord(source, target, kind string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.inval[[3]string{source, target, kind}]++
}

// TransactionEnded counts an exactly-once transaction committed or
// aborted. It implements replicate.TransactionObserver.
func (o *Observer) TransactionEnded(source, target string, committed bool) {
	result := "aborted"
	if committed {
		result = "committed"
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.txns[[3]string{source, target, result}]++
}

// Leader records whether this process leads the flow. It implements
// replicate.Observer. Ceasing to lead drops the flow's checkpoint series
// (kafka_connect_mirror_checkpoint_latency_ms*, mirrorctl_checkpoint_age_seconds):
// the new leader writes the checkpoints and exports them, so a sum over
// processes counts each group and partition once, and a former leader's
// checkpoint age does not grow into a false alert. MM2 likewise closes a
// checkpoint task's metrics when Connect moves the task
// (MirrorCheckpointTask.stop). It drops the flow's last ACL sync report
// too: the new leader's is the current one (mirrorctl_acl_revoked_bindings
// is then absent here, not stale).
func (o *Observer) Leader(source, target string, leading bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.leader[[2]string{source, target}] = leading
	if leading {
		return
	}
	delete(o.acls, [2]string{source, target})
	for k := range o.ckpts {
		if k[0] == source && k[1] == target {
			delete(o.ckpts, k)
		}
	}
	for k := range o.groups {
		if k[0] == source && k[1] == target {
			delete(o.groups, k)
		}
	}
}

// ACLSync records a flow's last topic ACL sync: mirrorctl_acl_revoked_bindings
// and the flow's acl_sync in /status. It implements replicate.ACLObserver.
func (o *Observer) ACLSync(source, target string, r replicate.ACLSyncReport) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.acls[[2]string{source, target}] = r
}

// SetMembership sets where /status reads each flow's membership (which
// process this is, its member id, whether it leads, its partition tasks):
// replicate.Mirror.Status.
func (o *Observer) SetMembership(fn func() []replicate.FlowStatus) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.member = fn
}

type ckSeries struct {
	last float64
	w    window
}

// Partition holds one copied partition's series. It implements
// replicate.PartitionObserver.
type Partition struct {
	o      *Observer
	labels [4]string
	now    func() time.Time

	mu           sync.Mutex
	records      int64 // acknowledged
	bytes        int64 // polled value bytes
	recordRate   window
	byteRate     window
	age          window
	lastAge      float64
	latency      window
	lastLatency  float64
	hwm, next    int64
	hasHWM       bool
	hasNext      bool
	pending      int64 // polled, not yet acknowledged
	pendingSince int64 // lower bound of the oldest pending record's timestamp, unix ns
	loss         lossSeries
}

// lossSeries is a partition's loss events (replicate.LossObserver).
type lossSeries struct {
	skipped map[replicate.LossKind]int64
	events  map[replicate.LossKind]int64
	stopped bool
	last    []replicate.LossEvent // newest last, at most maxStatusLosses
}

// maxStatusLosses is how many loss events /status shows per partition.
const maxStatusLosses = 8

// Loss counts a loss event of the partition. It implements
// replicate.LossObserver.
func (p *Partition) Loss(ev replicate.LossEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.loss.skipped == nil {
		p.loss.skipped, p.loss.events = map[replicate.LossKind]int64{}, map[replicate.LossKind]int64{}
	}
	p.loss.skipped[ev.Kind] += ev.Count
	p.loss.events[ev.Kind]++
	p.loss.stopped = p.loss.stopped || ev.Stopped
	if len(p.loss.last) == maxStatusLosses {
		p.loss.last = append(p.loss.last[:0], p.loss.last[1:]...)
	}
	p.loss.last = append(p.loss.last, ev)
}

// Position records the partition's next source offset to copy and the
// source high watermark, read outside the copy path (at the task's start and
// every few seconds), so an idle or stopped partition has a records_behind
// series too. It implements replicate.PositionObserver. A next below the
// newest acknowledged one is ignored.
func (p *Partition) Position(next, highWatermark int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.hasNext || next > p.next {
		p.next, p.hasNext = next, true
	}
	if highWatermark >= 0 && (!p.hasHWM || highWatermark > p.hwm) {
		p.hwm, p.hasHWM = highWatermark, true
	}
}

// Fetched records the source high watermark.
func (p *Partition) Fetched(hwm int64) {
	p.mu.Lock()
	p.hwm, p.hasHWM = hwm, true
	p.mu.Unlock()
}

// Polled records a record handed to the producer: value bytes and age.
func (p *Partition) Polled(valueBytes int, age time.Duration) {
	now := p.now().UnixNano()
	ms := float64(age) / float64(time.Millisecond)
	p.mu.Lock()
	p.bytes += int64(valueBytes)
	p.byteRate.record(float64(valueBytes), now)
	p.lastAge = ms
	p.age.record(ms, now)
	if p.pending == 0 {
		p.pendingSince = now - int64(age)
	}
	p.pending++
	p.mu.Unlock()
}

// Acked records the target acknowledging a copy: value bytes (counted at
// poll already), latency, and the next source offset now on the target.
func (p *Partition) Acked(_ int, latency time.Duration, next int64) {
	now := p.now().UnixNano()
	ms := float64(latency) / float64(time.Millisecond)
	p.mu.Lock()
	p.records++
	p.recordRate.record(1, now)
	p.lastLatency = ms
	p.latency.record(ms, now)
	p.next, p.hasNext = next, true
	if p.pending > 0 {
		p.pending--
	}
	if ts := now - int64(latency); ts > p.pendingSince {
		p.pendingSince = ts // the next pending record is no older than this one
	}
	p.mu.Unlock()
}

// PartitionStatus is one partition in [Status].
type PartitionStatus struct {
	Topic     string `json:"topic"` // remote topic
	Partition int32  `json:"partition"`
	// HighWatermark is the source end offset at the latest fetch; -1 before
	// the first fetch with records.
	HighWatermark int64 `json:"high_watermark"`
	// Next is the next source offset after the last acknowledged copy; -1
	// before the first acknowledgement.
	Next int64 `json:"next_offset"`
	// RecordsBehind is HighWatermark - Next, or -1 when either is unknown
	// or the source cluster is unreachable.
	RecordsBehind int64 `json:"records_behind"`
	Records       int64 `json:"records"` // acknowledged in this run
	Bytes         int64 `json:"bytes"`   // value bytes polled in this run
	// LatencyMaxMs is replication_latency_ms_max; null when the window is empty.
	LatencyMaxMs *float64 `json:"replication_latency_max_ms"`
	// State is "ok", "stopped" when a loss event stopped the partition,
	// else the kind of its newest loss event ("gap", "recreated", ...).
	State string `json:"state"`
	// Skipped is the source offsets this process found will not reach the
	// target, Losses its newest loss events (at most 8), oldest first.
	Skipped int64                 `json:"skipped"`
	Losses  []replicate.LossEvent `json:"losses,omitempty"`
}

// FlowStatus is one flow in [Status].
type FlowStatus struct {
	Source string `json:"source"`
	Target string `json:"target"`
	// Enabled is false for a pair that only emits heartbeats
	// (<source>-><target>.enabled = false): it copies nothing, so Up and
	// Leader are false and Partitions empty; Membership.Heartbeats says
	// whether this process emits its heartbeats.
	Enabled bool `json:"enabled"`
	// Up: the flow copies in this process. Leader: this process is the
	// flow leader (see replicate.FlowStatus.Leader).
	Up         bool              `json:"up"`
	Leader     bool              `json:"leader"`
	Partitions []PartitionStatus `json:"partitions"`
	// Membership says who this process is in the flow's groups; absent
	// when the engine does not report it.
	Membership *replicate.FlowStatus `json:"membership,omitempty"`
	// ACLSync is the last topic ACL sync this process ran for the flow (as
	// its leader): the bindings planned, created, skipped with their
	// reasons, revoked and pruned; absent before the first.
	ACLSync *replicate.ACLSyncReport `json:"acl_sync,omitempty"`
}

// Status is the /status document.
type Status struct {
	SchemaVersion int  `json:"schema_version"`
	Ready         bool `json:"ready"`
	// NotReady is why Ready is false ([Observer.NotReady]); absent when
	// ready.
	NotReady []string     `json:"not_ready,omitempty"`
	Flows    []FlowStatus `json:"flows"`
	// Clusters is every cluster this process probed, by alias.
	Clusters []ClusterStatus `json:"clusters"`
}

// ClusterStatus is one cluster's reachability in [Status].
type ClusterStatus struct {
	Cluster   string `json:"cluster"`
	Reachable bool   `json:"reachable"`
	// Since is when the cluster became unreachable (the start of the
	// first failed probe) or reachable (the end of the first successful
	// probe), RFC 3339.
	Since time.Time `json:"since"`
	// Error is the failed probe's error while unreachable.
	Error string `json:"error,omitempty"`
}

// partSnap is a consistent reading of a Partition.
type partSnap struct {
	records, bytes       int64
	recordRate, byteRate float64
	lastAge, lastLatency float64
	age, latency         stats
	behind               int64 // -1 unknown
	hwm, next            int64
	skipped, events      map[replicate.LossKind]int64
	stopped              bool
	state                string
	losses               []replicate.LossEvent
}

func (p *Partition) snapshot(now int64) partSnap {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := partSnap{records: p.records, bytes: p.bytes, lastAge: p.lastAge, lastLatency: p.lastLatency, behind: -1, hwm: -1, next: -1}
	s.recordRate = p.recordRate.measure(now).rate
	s.byteRate = p.byteRate.measure(now).rate
	s.age = p.age.measure(now)
	s.latency = p.latency.measure(now)
	if p.pending > 0 {
		stall := float64(now-p.pendingSince) / float64(time.Millisecond)
		if math.IsNaN(s.latency.max) || stall > s.latency.max {
			s.latency.max = stall
		}
	}
	if p.hasHWM {
		s.hwm = p.hwm
	}
	if p.hasNext {
		s.next = p.next
	}
	if p.hasHWM && p.hasNext {
		s.behind = max(0, p.hwm-p.next)
	}
	s.state = "ok"
	if n := len(p.loss.last); n > 0 {
		s.state = string(p.loss.last[n-1].Kind)
		s.losses = append([]replicate.LossEvent(nil), p.loss.last...)
	}
	if p.loss.stopped {
		s.state, s.stopped = "stopped", true
	}
	s.skipped, s.events = map[replicate.LossKind]int64{}, map[replicate.LossKind]int64{}
	for k, v := range p.loss.skipped {
		s.skipped[k] = v
	}
	for k, v := range p.loss.events {
		s.events[k] = v
	}
	return s
}

// Ready reports whether at least one flow started, every flow that started
// is still up (connected and copying), no cluster has been unreachable for
// longer than the grace ([Observer.SetUnreachableGrace]) and no partition of
// this process is stopped (see [Observer.Stopped]). [Observer.NotReady]
// says why not.
func (o *Observer) Ready() bool { return len(o.NotReady()) == 0 }

// NotReady returns why the process is not ready, one reason a string, or
// nil when it is: "no flow started", "flow <source>-><target> down",
// "cluster <alias> unreachable since <RFC 3339 time> (<length>, over the
// <grace> grace): <probe error>", "<n> partitions stopped: <topic>[<p>],
// ...". Reasons are sorted within each kind.
func (o *Observer) NotReady() []string {
	now := o.now()
	o.mu.Lock()
	var out []string
	if len(o.flows) == 0 {
		out = append(out, "no flow started")
	}
	var down []string
	for k, up := range o.flows {
		if !up {
			down = append(down, "flow "+k[0]+"->"+k[1]+" down")
		}
	}
	sort.Strings(down)
	out = append(out, down...)
	var clusters []string
	for c := range o.reach {
		clusters = append(clusters, c)
	}
	sort.Strings(clusters)
	for _, c := range clusters {
		st := o.reach[c]
		if d := now.Sub(st.since); !st.reachable && d > o.grace {
			out = append(out, fmt.Sprintf("cluster %s unreachable since %s (%s, over the %s grace): %s",
				c, st.since.UTC().Format(time.RFC3339), d.Round(time.Second), o.grace, st.err))
		}
	}
	o.mu.Unlock()
	if stopped := o.Stopped(); len(stopped) > 0 {
		out = append(out, fmt.Sprintf("%d partitions stopped: %s", len(stopped), strings.Join(stopped, ", ")))
	}
	return out
}

// Stopped returns the partitions a loss event stopped in this process, as
// "<remote topic>[<partition>]", sorted: while there is one, the process is
// not ready (/readyz 503), since part of what it should copy is not copied.
func (o *Observer) Stopped() []string {
	o.mu.Lock()
	parts := make([]*Partition, 0, len(o.parts))
	for _, p := range o.parts {
		parts = append(parts, p)
	}
	o.mu.Unlock()
	var out []string
	for _, p := range parts {
		p.mu.Lock()
		if p.loss.stopped {
			out = append(out, p.labels[2]+"["+p.labels[3]+"]")
		}
		p.mu.Unlock()
	}
	sort.Strings(out)
	return out
}

// Status returns every flow and its partitions, sorted by source, target,
// topic and partition.
func (o *Observer) Status() Status {
	now := o.now().UnixNano()
	st := Status{SchemaVersion: 1, NotReady: o.NotReady(), Flows: []FlowStatus{}, Clusters: []ClusterStatus{}}
	st.Ready = len(st.NotReady) == 0
	o.mu.Lock()
	for c, r := range o.reach {
		st.Clusters = append(st.Clusters, ClusterStatus{Cluster: c, Reachable: r.reachable, Since: r.since.UTC(), Error: r.err})
	}
	sort.Slice(st.Clusters, func(i, j int) bool { return st.Clusters[i].Cluster < st.Clusters[j].Cluster })
	srcDown := map[string]bool{}
	for c := range o.reach {
		srcDown[c] = o.unreachable(c)
	}
	byFlow := map[[2]string]*FlowStatus{}
	flow := func(k [2]string) *FlowStatus {
		f := byFlow[k]
		if f == nil {
			f = &FlowStatus{Source: k[0], Target: k[1], Enabled: true, Up: o.flows[k], Leader: o.leader[k], Partitions: []PartitionStatus{}}
			byFlow[k] = f
		}
		return f
	}
	for k := range o.flows {
		flow(k)
	}
	for k, r := range o.acls {
		r := r
		flow(k).ACLSync = &r
	}
	parts := make([]*Partition, 0, len(o.parts))
	for _, p := range o.parts {
		parts = append(parts, p)
	}
	for _, p := range parts {
		flow([2]string{p.labels[0], p.labels[1]})
	}
	member := o.member
	o.mu.Unlock()
	if member != nil {
		for _, ms := range member() {
			ms := ms
			src, tgt, _ := strings.Cut(ms.Flow, "->")
			o.mu.Lock()
			f := flow([2]string{src, tgt})
			o.mu.Unlock()
			f.Membership = &ms
			if !ms.Enabled {
				f.Enabled, f.Up, f.Leader = false, false, false
			}
		}
	}
	for _, p := range parts {
		s := p.snapshot(now)
		n, _ := strconv.Atoi(p.labels[3])
		if srcDown[p.labels[0]] {
			s.behind = -1 // the source's end offsets are unknown while it is unreachable
		}
		ps := PartitionStatus{Topic: p.labels[2], Partition: int32(n), HighWatermark: s.hwm, Next: s.next,
			RecordsBehind: s.behind, Records: s.records, Bytes: s.bytes, State: s.state, Losses: s.losses}
		for _, n := range s.skipped {
			ps.Skipped += n
		}
		if !math.IsNaN(s.latency.max) {
			v := s.latency.max
			ps.LatencyMaxMs = &v
		}
		f := byFlow[[2]string{p.labels[0], p.labels[1]}]
		f.Partitions = append(f.Partitions, ps)
	}
	for _, f := range byFlow {
		sort.Slice(f.Partitions, func(i, j int) bool {
			a, b := f.Partitions[i], f.Partitions[j]
			if a.Topic != b.Topic {
				return a.Topic < b.Topic
			}
			return a.Partition < b.Partition
		})
		st.Flows = append(st.Flows, *f)
	}
	sort.Slice(st.Flows, func(i, j int) bool {
		a, b := st.Flows[i], st.Flows[j]
		if a.Source != b.Source {
			return a.Source < b.Source
		}
		return a.Target < b.Target
	})
	return st
}

// Describe implements prometheus.Collector.
func (o *Observer) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dRecordCount, dRecordRate, dByteCount, dByteRate, dBehind, dCkAge, dFlowUp, dLeader, dRebalance, dPartUp, dSkipped, dLossEvents, dInvalid, dTxn, dReachable, dACLRevoked} {
		ch <- d
	}
	for _, s := range []statDescs{dRecordAge, dLatency, dCkLatency} {
		ch <- s.last
		ch <- s.min
		ch <- s.max
		ch <- s.avg
	}
}

// emitFunc receives one series: its descriptor, kind, value and label
// values in the descriptor's label order.
type emitFunc func(d *prometheus.Desc, vt prometheus.ValueType, v float64, labels []string)

func statSeries(emit emitFunc, d statDescs, last float64, st stats, labels []string) {
	emit(d.last, prometheus.GaugeValue, last, labels)
	emit(d.min, prometheus.GaugeValue, st.min, labels)
	emit(d.max, prometheus.GaugeValue, st.max, labels)
	emit(d.avg, prometheus.GaugeValue, st.avg, labels)
}

// Collect implements prometheus.Collector. Every value is a gauge, as a JMX
// exporter exposes MBean attributes, so the names carry no _total suffix.
// The /metrics endpoint writes the same series without the client library
// (exposition.go); Collect serves tests and embedders.
func (o *Observer) Collect(ch chan<- prometheus.Metric) {
	o.series(func(d *prometheus.Desc, vt prometheus.ValueType, v float64, labels []string) {
		ch <- prometheus.MustNewConstMetric(d, vt, v, labels...)
	}, false)
}

// series hands every series of o to emit. With sorted, the partitions' series
// come in the exposition's order: partitions ordered by the values of their
// labels sorted by name (partition, source, target, topic), the loss
// counters by partition, then reason, then the rest, so the text writer
// need not sort them.
func (o *Observer) series(emit emitFunc, sorted bool) {
	nowT := o.now()
	now := nowT.UnixNano()
	o.mu.Lock()
	parts := make([]*Partition, 0, len(o.parts))
	for _, p := range o.parts {
		parts = append(parts, p)
	}
	type ck struct {
		labels [5]string
		last   float64
		st     stats
	}
	cks := make([]ck, 0, len(o.ckpts))
	for k, s := range o.ckpts {
		cks = append(cks, ck{k, s.last, s.w.measure(now)})
	}
	type labelled struct {
		d      *prometheus.Desc
		v      float64
		labels []string
	}
	var other []labelled
	for k, listed := range o.groups {
		other = append(other, labelled{dCkAge, nowT.Sub(listed).Seconds(), []string{k[0], k[1], k[2]}})
	}
	for k, up := range o.flows {
		v := 0.0
		if up {
			v = 1
		}
		other = append(other, labelled{dFlowUp, v, []string{k[0], k[1]}})
	}
	for k, leading := range o.leader {
		v := 0.0
		if leading {
			v = 1
		}
		other = append(other, labelled{dLeader, v, []string{k[0], k[1]}})
	}
	var counters []labelled
	for k, n := range o.rebal {
		counters = append(counters, labelled{dRebalance, float64(n), []string{k[0], k[1], k[2]}})
	}
	for k := range o.flows {
		for _, kind := range []string{"checkpoint", "group-offset"} {
			counters = append(counters, labelled{dInvalid, float64(o.inval[[3]string{k[0], k[1], kind}]), []string{k[0], k[1], kind}})
		}
	}
	for k, r := range o.acls {
		if r.Tracked {
			other = append(other, labelled{dACLRevoked, float64(len(r.Revoked)), []string{k[0], k[1]}})
		}
	}
	for k, n := range o.txns {
		counters = append(counters, labelled{dTxn, float64(n), []string{k[0], k[1], k[2]}})
	}
	srcDown := map[string]bool{}
	for c, r := range o.reach {
		v := 0.0
		if r.reachable {
			v = 1
		}
		other = append(other, labelled{dReachable, v, []string{c}})
		srcDown[c] = !r.reachable
	}
	o.mu.Unlock()
	for _, m := range other {
		emit(m.d, prometheus.GaugeValue, m.v, m.labels)
	}
	for _, m := range counters {
		emit(m.d, prometheus.CounterValue, m.v, m.labels)
	}
	for _, c := range cks {
		statSeries(emit, dCkLatency, c.last, c.st, c.labels[:])
	}
	if sorted {
		sort.Slice(parts, func(i, j int) bool { return partBefore(parts[i].labels, parts[j].labels) })
	}
	snaps := make([]partSnap, len(parts))
	for i, p := range parts {
		s := p.snapshot(now)
		snaps[i] = s
		l := p.labels[:]
		emit(dRecordCount, prometheus.GaugeValue, float64(s.records), l)
		emit(dRecordRate, prometheus.GaugeValue, s.recordRate, l)
		emit(dByteCount, prometheus.GaugeValue, float64(s.bytes), l)
		emit(dByteRate, prometheus.GaugeValue, s.byteRate, l)
		statSeries(emit, dRecordAge, s.lastAge, s.age, l)
		statSeries(emit, dLatency, s.lastLatency, s.latency, l)
		if s.behind >= 0 && !srcDown[p.labels[0]] {
			// Absent while unknown: a stale figure from before the
			// source became unreachable would read as caught up.
			emit(dBehind, prometheus.GaugeValue, float64(s.behind), l)
		}
		up := 1.0
		if s.stopped {
			up = 0
		}
		emit(dPartUp, prometheus.GaugeValue, up, l)
	}
	// The loss counters: by partition, then reason (the label names' order).
	ll := make([]string, 5)
	for lo := 0; lo < len(parts); {
		hi := lo + 1
		for sorted && hi < len(parts) && parts[hi].labels[3] == parts[lo].labels[3] {
			hi++
		}
		for _, k := range replicate.LossKinds {
			for i := lo; i < hi; i++ {
				copy(ll, parts[i].labels[:])
				ll[4] = string(k)
				emit(dSkipped, prometheus.CounterValue, float64(snaps[i].skipped[k]), ll)
				emit(dLossEvents, prometheus.CounterValue, float64(snaps[i].events[k]), ll)
			}
		}
		lo = hi
	}
}

// partBefore orders partition labels (source, target, topic, partition) by
// partition, source, target, topic: the exposition's order, which compares
// label values in the order of the label names.
func partBefore(a, b [4]string) bool {
	for _, i := range [4]int{3, 0, 1, 2} {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}
