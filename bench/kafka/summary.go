package main

import (
	"math"
	"os"
	"time"

	"github.com/mirrorctl/mirrorctl/bench/internal/summary"
)

// mm2Peer names the MM2 contender a mirrorctl contender is compared with
// in the report's summary: exactly-once with MM2 exactly-once, tuned with
// MM2 tuned, any other with MM2. "" for MM2 and the pipe.
func mm2Peer(c contender) string {
	switch {
	case c.kind != "mirrorctl":
		return ""
	case c.eos:
		return nameMM2EOS
	case c.tuned:
		return nameMM2Tuned
	default:
		return nameMM2
	}
}

// summarize builds the results file's machine-readable block: the
// throughput rows (medians, as the report's first table), the latency
// phase with its load and window, and the grades, each row carrying the
// worst grade of the goals graded on it.
func summarize(e env, cs []contender, sets []dataset, runs int, results map[string]map[string][]result,
	lat map[string][]latResult, lp latPhase, grades []summary.Grade, now time.Time) summary.Summary {
	s := summary.Summary{
		SchemaVersion: summary.SchemaVersion, Date: now.Format("2006-01-02"), Written: now.Format(time.RFC3339),
		Kafka: e.version, Machine: machine(), Args: append([]string{}, os.Args[1:]...), Note: runNote,
		Partitions: int(e.partitions), Runs: runs, Failed: failedList(), Throughput: []summary.ThroughputRow{}, Grades: grades,
	}
	if s.Grades == nil {
		s.Grades = []summary.Grade{}
	}
	rate := func(name string, ds dataset) float64 {
		rs := results[name][ds.name]
		if len(rs) == 0 {
			return 0
		}
		return float64(ds.records) / median(rs, func(r result) float64 { return r.seconds })
	}
	rss := func(name string, ds dataset) float64 {
		return median(results[name][ds.name], func(r result) float64 { return r.rssMB })
	}
	for _, ds := range sets {
		for _, c := range cs {
			rs := results[c.name][ds.name]
			if len(rs) == 0 {
				continue
			}
			r := summary.ThroughputRow{
				Contender: c.name, Kind: c.kind, ExactlyOnce: c.eos, TopicExists: c.precreated || c.kind == "pipe",
				Processes: max(1, c.procs), Baseline: c.bin != "", Data: ds.name, Records: ds.records, Runs: len(rs),
				Seconds: median(rs, func(r result) float64 { return r.seconds }), RecordsPerSec: rate(c.name, ds),
				CPUSeconds: median(rs, func(r result) float64 { return r.cpu }), PeakRSSMiB: rss(c.name, ds),
			}
			r.RecordsPerSecMin, r.RecordsPerSecMax = spreadOf(rs, func(r result) float64 { return float64(ds.records) / r.seconds })
			if p := rate(namePipe, ds); p > 0 && c.kind != "pipe" {
				r.VsPipe = r.RecordsPerSec / p
			}
			if peer := mm2Peer(c); peer != "" {
				if m := rate(peer, ds); m > 0 {
					r.Peer, r.VsMM2, r.RSSVsMM2 = peer, r.RecordsPerSec/m, r.PeakRSSMiB/rss(peer, ds)
				}
			}
			r.Grade = rowGrade(r, grades)
			s.Throughput = append(s.Throughput, r)
		}
	}
	if len(lat) == 0 {
		return s
	}
	s.Latency = &summary.LatencyPhase{RateAsked: lp.rate, RateFrom: lp.from, DurationSeconds: lp.duration.Seconds(),
		WarmupSeconds: lp.warmup.Seconds(), Rows: []summary.LatencyRow{}}
	for _, c := range cs {
		l := lat[c.name]
		if len(l) == 0 {
			continue
		}
		s.Latency.Runs = max(s.Latency.Runs, len(l))
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		row := summary.LatencyRow{
			Contender: latName(c.name), Runs: len(l),
			Sent:     median(l, func(r latResult) float64 { return float64(r.sent) }),
			Received: median(l, func(r latResult) float64 { return float64(r.got) }),
			P50Ms:    median(l, func(r latResult) float64 { return ms(r.p50) }),
			P99Ms:    median(l, func(r latResult) float64 { return ms(r.p99) }),
			MaxMs:    median(l, func(r latResult) float64 { return ms(r.pmax) }),
		}
		row.P99MsMin, row.P99MsMax = spreadOf(l, func(r latResult) float64 { return ms(r.p99) })
		if lp.duration > 0 {
			row.RateOffered = row.Sent / lp.duration.Seconds()
		}
		if c := cpuPerRecord(l); !math.IsNaN(c) {
			row.CPUMicrosPerRecord = c
		}
		s.Latency.Rows = append(s.Latency.Rows, row)
	}
	return s
}

// rowGrade is the worst of the grades of r's contender on r's data set, ""
// where none is.
func rowGrade(r summary.ThroughputRow, grades []summary.Grade) string {
	g := ""
	for _, gr := range grades {
		if gr.Contender == r.Contender && gr.Data == r.Data {
			g = summary.Worst(g, gr.Grade)
		}
	}
	return g
}
