package main

import (
	"fmt"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mirrorctl/mirrorctl/bench/internal/summary"
)

// The contenders the grading table refers to by name.
const (
	nameMM2        = "MM2"
	nameMM2Tuned   = "MM2 tuned"
	nameMM2EOS     = "MM2 exactly-once"
	nameOnce       = "mirrorctl --once"
	nameOnceEOS    = "mirrorctl --once exactly-once"
	nameOnceTuned  = "mirrorctl --once tuned"
	nameExists     = "mirrorctl --once, topic exists"
	nameExistsEOS  = "mirrorctl --once exactly-once, topic exists"
	namePipe       = "bare franz-go pipe"
	goalLoad       = 80_000.0 // records/s: the load of the latency goals
	goalLoadMargin = 0.01     // the asked rate counts as the goal's within 1%
	offeredMargin  = 0.97     // the load producer must offer 97% of the asked rate
)

// latPhase is how the latency phase ran: the rate asked (records/s) and
// where it came from, the load's duration and the warm-up left out of the
// percentiles.
type latPhase struct {
	rate     float64
	from     string
	duration time.Duration
	warmup   time.Duration
}

// grader grades the goals of issue #31 that this bench measures on one
// invocation's results. Every check that compares a contender with a
// bound it cannot beat (the bare pipe for a copy of the same records, an
// at-least-once copy for the exactly-once copy of the same work) grades a
// figure beyond that bound by more than the runs' spread "suspect", with
// the reason, instead of "met": such a figure says the windows did not
// hold the same work, or the runs are too noisy to tell, not that the goal
// is met.
type grader struct {
	sets    []dataset
	results map[string]map[string][]result
	lat     map[string][]latResult
	lp      latPhase
	out     []summary.Grade
}

// grade returns the grades of every goal the results measure, in a fixed
// order: per data set the throughput goals, then the latency and
// scale-out goals. A goal whose contenders did not run is left out; one
// that ran but not as the goal asks (another load, a load the producer
// could not offer) is "not measured" with the reason.
func grade(sets []dataset, results map[string]map[string][]result, lat map[string][]latResult, lp latPhase) []summary.Grade {
	g := &grader{sets: sets, results: results, lat: lat, lp: lp}
	for _, ds := range sets {
		g.vsPipe(ds, nameOnce, 0.80, "--once including topic creation ≥ 80% of the pipe",
			"the pipe's remote topic exists before its window: it does less work")
		g.vsPipe(ds, nameExists, 0.95, "--once, topic existing ≥ 95% of the pipe", "the same work as the pipe's")
		for _, c := range []string{nameOnceEOS, nameExistsEOS, nameOnceTuned} {
			g.boundOnly(ds, c, namePipe, "not above the bare pipe (the ceiling)")
		}
		for _, p := range [][2]string{{nameOnce, nameMM2}, {nameOnceTuned, nameMM2Tuned}, {nameOnceEOS, nameMM2EOS}} {
			g.vsMM2(ds, p[0], p[1])
		}
		g.eosVsALO(ds, nameOnceEOS, nameOnce, "both including topic creation")
		g.eosVsALO(ds, nameExistsEOS, nameExists, "both with the topic existing")
		g.boundOnly(ds, nameMM2EOS, nameMM2, "MM2 exactly-once not above MM2 at-least-once (both including topic creation)")
	}
	g.p99(nameOnce, 300*time.Millisecond, "continuous p99 ≤ 300 ms at 80,000 records/s, at-least-once")
	g.p99(nameOnceEOS, 500*time.Millisecond, "continuous p99 ≤ 500 ms at 80,000 records/s, exactly-once")
	g.scaleCPU()
	return g.out
}

func (g *grader) add(goal, contender, data, value, threshold, grade, reason string) {
	g.out = append(g.out, summary.Grade{Goal: goal, Contender: contender, Data: data, Value: value,
		Threshold: threshold, Grade: grade, Reason: reason})
}

// runRates is a contender's records/s on a data set: the median run's
// and the slowest and fastest run's.
type runRates struct{ med, lo, hi float64 }

// rate returns contender's records/s on ds; ok is false where it did not
// run.
func (g *grader) rate(contender string, ds dataset) (r runRates, ok bool) {
	rs := g.results[contender][ds.name]
	if len(rs) == 0 {
		return runRates{}, false
	}
	r.med = float64(ds.records) / median(rs, func(r result) float64 { return r.seconds })
	r.lo, r.hi = spreadOf(rs, func(r result) float64 { return float64(ds.records) / r.seconds })
	return r, true
}

// spreadOf is spread for any runs.
func spreadOf[T any](rs []T, f func(T) float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, r := range rs {
		lo, hi = math.Min(lo, f(r)), math.Max(hi, f(r))
	}
	return lo, hi
}

// above compares a contender's records/s c with those of its bound b (a
// contender it cannot beat). It is above the bound beyond the runs' spread
// when even its slowest run beat the bound's fastest: then it returns true
// and the reason. Where only its median is above, within the spread, it
// returns false and a note saying so (the runs are too noisy to rank the
// two); else false and "".
func above(c, b runRates, contender, bound string) (bool, string) {
	switch {
	case c.lo > b.hi:
		return true, fmt.Sprintf("%s's slowest run (%.0f/s) beat the fastest of %s (%.0f/s), which bounds it: not the same work, or a fixed wait in the bound",
			contender, c.lo, bound, b.hi)
	case c.med > b.med:
		return false, fmt.Sprintf("above %s, which bounds it, only within the runs' spread (%.0f-%.0f/s against %.0f-%.0f/s): too noisy to rank them",
			bound, c.lo, c.hi, b.lo, b.hi)
	}
	return false, ""
}

// boundedRatio is contender c's median against bound b's: above b's median
// only within the runs' spread (note from above non-empty), it is taken
// against b's fastest run instead, which c cannot beat either, so a noisy
// bound never grades a figure above the bound as met; the value says so.
func boundedRatio(c, b runRates, note, of string) (float64, string) {
	r := c.med / b.med
	if note == "" {
		return r, fmt.Sprintf("%.0f%% of %s", 100*r, of)
	}
	rf := c.med / b.hi
	return rf, fmt.Sprintf("%.0f%% of %s's fastest run (%.0f%% of its median)", 100*rf, of, 100*r)
}

// withinSpread is above's note when it says the contender is above its
// bound only within the runs' spread (not suspect), else "".
func withinSpread(suspect bool, note string) string {
	if suspect {
		return ""
	}
	return note
}

// vsPipe grades contender's records/s on ds against the pipe's: at least
// min of it, and never above it by more than the runs' spread (bound says
// why the pipe bounds it).
func (g *grader) vsPipe(ds dataset, contender string, min float64, goal, bound string) {
	c, ok1 := g.rate(contender, ds)
	if !ok1 {
		return
	}
	th := fmt.Sprintf("≥ %.0f%%", 100*min)
	p, ok2 := g.rate(namePipe, ds)
	if !ok2 {
		g.add(goal, contender, ds.name, "-", th, summary.NotMeasured, "the bare pipe did not run")
		return
	}
	sus, why := above(c, p, contender, namePipe)
	r, v := boundedRatio(c, p, withinSpread(sus, why), "the pipe")
	if sus {
		g.add(goal, contender, ds.name, v, th, summary.Suspect, why+" ("+bound+")")
		return
	}
	g.add(goal, contender, ds.name, v, th, mark(r >= min), why)
}

// boundOnly adds a suspect grade where contender beats bound on ds by more
// than the runs' spread, and nothing otherwise.
func (g *grader) boundOnly(ds dataset, contender, bound, goal string) {
	c, ok1 := g.rate(contender, ds)
	b, ok2 := g.rate(bound, ds)
	if !ok1 || !ok2 {
		return
	}
	if sus, why := above(c, b, contender, bound); sus {
		g.add(goal, contender, ds.name, fmt.Sprintf("%.0f%% of %s", 100*c.med/b.med, bound), "not above beyond the runs' spread", summary.Suspect, why)
	}
}

// vsMM2 grades contender against the MM2 contender doing the same work
// (both create the remote topic in their window): ≥ 15× its records/s,
// peak RSS ≤ ¼ of its.
func (g *grader) vsMM2(ds dataset, contender, mm2 string) {
	c, ok1 := g.rate(contender, ds)
	m, ok2 := g.rate(mm2, ds)
	if !ok1 {
		return
	}
	if !ok2 {
		g.add("≥ 15× MM2 on every row", contender, ds.name, "-", "≥ 15× "+mm2, summary.NotMeasured, mm2+" did not run")
		return
	}
	x := c.med / m.med
	g.add("≥ 15× MM2 on every row", contender, ds.name, fmt.Sprintf("%.1f× %s", x, mm2), "≥ 15×", mark(x >= 15), "")
	rss := func(n string) float64 {
		return median(g.results[n][ds.name], func(r result) float64 { return r.rssMB })
	}
	rr := rss(contender) / rss(mm2)
	g.add("peak RSS ≤ ¼ of MM2's", contender, ds.name, fmt.Sprintf("%.2f of %s's (%.0f of %.0f MiB)", rr, mm2, rss(contender), rss(mm2)),
		"≤ 0.25", mark(rr <= 0.25), "")
}

// eosVsALO grades the exactly-once contender eos against the at-least-once
// one alo doing the same work: ≥ 70% of its records/s, and never above it
// by more than the runs' spread (a transaction per batch adds work). The
// reason notes MM2's own ratio where both MM2 contenders ran.
func (g *grader) eosVsALO(ds dataset, eos, alo, same string) {
	e, ok1 := g.rate(eos, ds)
	if !ok1 {
		return
	}
	goal := "exactly-once ≥ 70% of at-least-once, like for like (" + same + ")"
	a, ok2 := g.rate(alo, ds)
	if !ok2 {
		g.add(goal, eos, ds.name, "-", "≥ 70%", summary.NotMeasured, alo+" did not run")
		return
	}
	sus, note := above(e, a, eos, alo)
	r, v := boundedRatio(e, a, withinSpread(sus, note), alo)
	if sus {
		g.add(goal, eos, ds.name, v, "≥ 70%", summary.Suspect, note)
		return
	}
	if me, ok := g.rate(nameMM2EOS, ds); ok && strings.Contains(same, "creation") {
		if ma, ok := g.rate(nameMM2, ds); ok {
			note = strings.TrimPrefix(note+"; ", "; ") + fmt.Sprintf("MM2's exactly-once: %.0f%% of its at-least-once", 100*me.med/ma.med)
		}
	}
	g.add(goal, eos, ds.name, v, "≥ 70%", mark(r >= 0.70), note)
}

// p99 grades contender's median p99 in the latency phase: at most max, at
// the goal's load of 80,000 records/s, which the load producer offered.
// The exactly-once contender's p99 below the at-least-once one's by more
// than their runs' spread is suspect: it waits for a transaction's commit
// on top of the same copy.
func (g *grader) p99(contender string, max time.Duration, goal string) {
	l := g.lat[contender]
	if len(l) == 0 {
		return
	}
	name, th := latName(contender), fmt.Sprintf("≤ %d ms", max.Milliseconds())
	p := time.Duration(median(l, func(r latResult) float64 { return float64(r.p99) }))
	sent := median(l, func(r latResult) float64 { return float64(r.sent) })
	got := median(l, func(r latResult) float64 { return float64(r.got) })
	offered := sent / g.lp.duration.Seconds()
	v := fmt.Sprintf("p99 %d ms at %.0f records/s offered", p.Milliseconds(), offered)
	switch {
	case math.Abs(g.lp.rate-goalLoad) > goalLoadMargin*goalLoad:
		g.add(goal, name, "", v, th, summary.NotMeasured, fmt.Sprintf("the load asked was %.0f records/s (%s), not the goal's 80,000", g.lp.rate, g.lp.from))
	case offered < offeredMargin*g.lp.rate:
		g.add(goal, name, "", v, th, summary.NotMeasured, fmt.Sprintf("the load producer offered %.0f of the %.0f records/s asked: the machine could not carry the load", offered, g.lp.rate))
	case got < sent:
		g.add(goal, name, "", v, th, summary.NotMet, fmt.Sprintf("%.0f of %.0f copies arrived within %s of the load's end", got, sent, tailWait))
	default:
		if contender == nameOnceEOS {
			if sus, why := g.eosLatencySuspect(p); sus {
				g.add(goal, name, "", v, th, summary.Suspect, why)
				return
			}
		}
		g.add(goal, name, "", v, th, mark(p <= max), "")
	}
}

// eosLatencySuspect reports whether the exactly-once p99 lies below the
// at-least-once one beyond the runs' spread: its highest run's p99 below
// the lowest of at-least-once's.
func (g *grader) eosLatencySuspect(p time.Duration) (bool, string) {
	a := g.lat[nameOnce]
	if len(a) == 0 {
		return false, ""
	}
	f := func(r latResult) float64 { return float64(r.p99) }
	_, ehi := spreadOf(g.lat[nameOnceEOS], f)
	alo, _ := spreadOf(a, f)
	if ehi >= alo {
		return false, ""
	}
	return true, fmt.Sprintf("exactly-once p99 %d ms (highest run %d ms) below the lowest at-least-once run's %d ms: it waits for a commit on top of the same copy",
		p.Milliseconds(), time.Duration(ehi).Milliseconds(), time.Duration(alo).Milliseconds())
}

// scaleCPU grades the CPU per record of 2 and 3 processes against one's at
// the latency phase's fixed load, the group settled: at most 1.15×.
func (g *grader) scaleCPU() {
	base := cpuPerRecord(g.lat[nameExists])
	for _, n := range []int{2, 3} {
		name := fmt.Sprintf("mirrorctl --once x%d processes, topic exists", n)
		l, ok := g.lat[name]
		if !ok {
			continue
		}
		goal := "CPU per record with 2 and 3 processes ≤ 1.15× one's at a fixed load"
		c := cpuPerRecord(l)
		if math.IsNaN(base) || math.IsNaN(c) {
			g.add(goal, latName(name), "", "-", "≤ 1.15×", summary.NotMeasured, "the CPU of a run could not be read, or one process did not run")
			continue
		}
		g.add(goal, latName(name), "", fmt.Sprintf("%.2f× (%.2f µs against %.2f µs at %.0f records/s)", c/base, c, base, g.lp.rate),
			"≤ 1.15×", mark(c/base <= 1.15), "")
	}
}

func mark(ok bool) string {
	if ok {
		return summary.Met
	}
	return summary.NotMet
}

// gradeTable renders grades for the results file.
func gradeTable(grades []summary.Grade) string {
	var b strings.Builder
	b.WriteString("Grades: each goal of issue #31 this bench measures, with its threshold. Throughput ratios use the medians of the " +
		"whole windows (MM2 from its start command, mirrorctl and the pipe from process start, to the last record on the target). " +
		"\"suspect\": the figure beats a bound it cannot beat (the pipe copying the same records; at-least-once doing the same work as " +
		"exactly-once) beyond the runs' spread (the contender's slowest run beat the bound's fastest), so it is not graded; " +
		"\"not measured\": the run did not measure it as the goal asks:\n\n```\n")
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "GOAL\tCONTENDER\tDATA\tVALUE\tTHRESHOLD\tGRADE\tREASON")
	for _, g := range grades {
		data := g.Data
		if data == "" {
			data = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.Goal, g.Contender, data, g.Value, g.Threshold, g.Grade, g.Reason)
	}
	w.Flush()
	b.WriteString("```\n\n")
	return b.String()
}
