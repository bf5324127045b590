package replicate

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/mirrorctl/mirrorctl/internal/metrics"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// statusEvery is how often continuous replicate's status line is redrawn,
// rateWindow how far back its rate looks.
const (
	statusEvery = time.Second
	rateWindow  = 5 * time.Second
)

// hwmObserver is the engine's observer when continuous replicate draws its
// status line without --metrics-addr: it keeps each copied partition's
// source high watermark, as of its latest fetch
// (replicate.PartitionObserver.Fetched) and of the engine's periodic
// position report (replicate.PositionObserver, so idle partitions have one
// too), for the line's "behind". With --metrics-addr the metrics observer
// is used as is (wrapping it would hide the optional observer interfaces
// the engine looks for: loss, position, transactions) and its Status
// gives the high watermarks.
type hwmObserver struct {
	mu  sync.Mutex
	hwm map[partKey]*hwmPartition
}

// partKey names a copied partition the way PartitionStats does: flow
// ("source->target"), remote topic and partition.
type partKey struct {
	flow, remote string
	partition    int32
}

type hwmPartition struct {
	mu  sync.Mutex
	hwm int64 // -1 before the first report
}

func newHWMObserver() *hwmObserver {
	return &hwmObserver{hwm: map[partKey]*hwmPartition{}}
}

// highWatermark returns the partition's latest reported source high
// watermark, or -1 when none was.
func (o *hwmObserver) highWatermark(s replicate.PartitionStats) int64 {
	o.mu.Lock()
	p := o.hwm[partKey{s.Flow, s.RemoteTopic, s.Partition}]
	o.mu.Unlock()
	if p == nil {
		return -1
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hwm
}

func (o *hwmObserver) Partition(source, target, remoteTopic string, partition int32) replicate.PartitionObserver {
	k := partKey{source + "->" + target, remoteTopic, partition}
	o.mu.Lock()
	defer o.mu.Unlock()
	p := o.hwm[k]
	if p == nil {
		p = &hwmPartition{hwm: -1}
		o.hwm[k] = p
	}
	return p
}

func (o *hwmObserver) CheckpointWritten(string, string, string, string, int32, time.Duration) {}
func (o *hwmObserver) FlowState(string, string, bool)                                         {}
func (o *hwmObserver) Rebalance(string, string, int, int, int)                                {}
func (o *hwmObserver) Leader(string, string, bool)                                            {}

func (p *hwmPartition) set(hwm int64) {
	if hwm < 0 {
		return
	}
	p.mu.Lock()
	p.hwm = hwm
	p.mu.Unlock()
}

func (p *hwmPartition) Fetched(hwm int64)               { p.set(hwm) }
func (p *hwmPartition) Position(_, hwm int64)           { p.set(hwm) }
func (p *hwmPartition) Polled(int, time.Duration)       {}
func (p *hwmPartition) Acked(int, time.Duration, int64) {}

// metricsHighWatermarks returns the high watermarks the metrics observer
// holds now, looked up like hwmObserver.highWatermark.
func metricsHighWatermarks(mo *metrics.Observer) func(replicate.PartitionStats) int64 {
	m := map[partKey]int64{}
	for _, f := range mo.Status().Flows {
		for _, p := range f.Partitions {
			m[partKey{f.Source + "->" + f.Target, p.Topic, p.Partition}] = p.HighWatermark
		}
	}
	return func(s replicate.PartitionStats) int64 {
		if h, ok := m[partKey{s.Flow, s.RemoteTopic, s.Partition}]; ok {
			return h
		}
		return -1
	}
}

// sample is the records acknowledged at one instant, for the rate.
type sample struct {
	at      time.Time
	records int64
}

// rateMeter turns cumulative record counts into records per second over
// the last rateWindow.
type rateMeter struct{ samples []sample }

// add records the count at now and returns the rate over the window, or -1
// while less than a second has been seen.
func (r *rateMeter) add(now time.Time, records int64) float64 {
	r.samples = append(r.samples, sample{now, records})
	for len(r.samples) > 2 && now.Sub(r.samples[1].at) >= rateWindow {
		r.samples = r.samples[1:]
	}
	first := r.samples[0]
	d := now.Sub(first.at)
	if d < time.Second {
		return -1
	}
	return float64(records-first.records) / d.Seconds()
}

// replicateStatus sums the engine's view (Stats, Status) and the high
// watermarks into one status line: records and bytes acknowledged in this
// run, records behind the latest fetched high watermark over the
// partitions running here, partitions stopped by an error, and per flow
// this process's role and task count.
func replicateStatus(stats []replicate.PartitionStats, flows []replicate.FlowStatus, hwm func(replicate.PartitionStats) int64) output.ReplicateStatus {
	st := output.ReplicateStatus{Rate: -1, Behind: -1}
	for _, s := range stats {
		st.Records += s.Records
		st.Bytes += s.Bytes
		switch {
		case s.Error != "" || s.State == replicate.TaskStopped:
			st.Partitions++
			st.Stopped++
		case s.State == replicate.TaskRunning || s.State == replicate.TaskStarting:
			st.Partitions++
			next := s.Acked
			if next < 0 {
				next = s.Start
			}
			if h := hwm(s); h >= 0 && next >= 0 {
				if st.Behind < 0 {
					st.Behind = 0
				}
				if h > next {
					st.Behind += h - next
				}
			}
		}
	}
	for _, f := range flows {
		if f.Group == "" {
			continue // a pair that only emits heartbeats
		}
		role := f.Membership
		if f.Leader {
			role = "leader" // a member that leads the flow
		}
		st.Flows = append(st.Flows, fmt.Sprintf("%s: %s, %d tasks", f.Flow, role, f.Tasks))
	}
	return st
}

// liveStatus redraws line every statusEvery from m until the returned func
// is called, which erases it. hwms gives, at each redraw, the partitions'
// source high watermarks.
func liveStatus(ctx context.Context, line *output.StatusLine, m *replicate.Mirror, hwms func() func(replicate.PartitionStats) int64) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(statusEvery)
		defer t.Stop()
		var rate rateMeter
		for {
			st := replicateStatus(m.Stats(), m.Status(), hwms())
			st.Rate = rate.add(time.Now(), st.Records)
			line.Set(st.String())
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done; line.Stop() }
}
