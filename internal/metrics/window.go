package metrics

import (
	"math"
	"time"
)

// Kafka Metrics' default MetricConfig: 2 samples of 30 s each
// (metrics.num.samples, metrics.sample.window.ms). MM2's rate, min, max and
// avg attributes are measured over these, so ours are too.
const (
	defaultSamples = 2
	defaultWindow  = 30 * time.Second
)

// sample is one time slice of a windowed statistic.
type sample struct {
	start int64 // unix nanoseconds when the slice began
	count int64
	sum   float64
	min   float64
	max   float64
}

func (s *sample) reset(now int64) {
	*s = sample{start: now, min: math.Inf(1), max: math.Inf(-1)}
}

// window is a sampled statistic in the manner of Kafka Metrics' SampledStat:
// values go into the current sample until it is one window old, then into
// the next (reset) one, round robin; a measurement ignores samples older
// than samples × window. One window feeds min, max, avg and rate at once.
// It is not safe for concurrent use: the owner's mutex guards it. record
// never allocates.
type window struct {
	samples [defaultSamples]sample
	cur     int
	width   int64 // window width in nanoseconds
}

func newWindow() window {
	w := window{width: int64(defaultWindow)}
	for i := range w.samples {
		w.samples[i].reset(0)
	}
	return w
}

// record adds v at time now (unix nanoseconds).
func (w *window) record(v float64, now int64) {
	s := &w.samples[w.cur]
	if now-s.start >= w.width {
		w.cur = (w.cur + 1) % len(w.samples)
		s = &w.samples[w.cur]
		s.reset(now)
	}
	s.count++
	s.sum += v
	if v < s.min {
		s.min = v
	}
	if v > s.max {
		s.max = v
	}
}

// stats is a measurement of a window.
type stats struct {
	count         int64
	sum           float64
	min, max, avg float64 // NaN when count is 0, as Kafka's Min, Max and Avg report
	rate          float64 // sum per second over the window's span (Kafka Rate)
}

// measure returns the statistics at now (unix nanoseconds), dropping
// samples older than samples × window first.
func (w *window) measure(now int64) stats {
	span := w.width * int64(len(w.samples))
	st := stats{min: math.Inf(1), max: math.Inf(-1)}
	oldest := now
	for i := range w.samples {
		s := &w.samples[i]
		if now-s.start >= span {
			s.reset(now)
		}
		if s.start < oldest {
			oldest = s.start
		}
		st.count += s.count
		st.sum += s.sum
		st.min = math.Min(st.min, s.min)
		st.max = math.Max(st.max, s.max)
	}
	if st.count == 0 {
		st.min, st.max, st.avg = math.NaN(), math.NaN(), math.NaN()
	} else {
		st.avg = st.sum / float64(st.count)
	}
	// Kafka Rate: the elapsed time since the oldest sample began, but at
	// least samples-1 full windows, so a young window does not inflate it.
	elapsed := now - oldest
	if full := elapsed / w.width; full < int64(len(w.samples)-1) {
		elapsed += (int64(len(w.samples)-1) - full) * w.width
	}
	st.rate = st.sum / (float64(elapsed) / float64(time.Second))
	return st
}
