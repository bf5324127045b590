package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/mirrorctl/mirrorctl/bench/internal/summary"
)

// regradeNote heads the grade table of a results file regraded by -regrade.
const regradeNote = "These grades were recomputed after the run by `bench/kafka -regrade` from this file's summary block (each row's median, " +
	"slowest and fastest run are all the grading reads), because the grading rule changed after the run.\n\n"

// regrade recomputes the grades of the results file at path from its
// summary block with this build's grade, and rewrites its grade table and
// summary block (rows' grades included); every figure stays as the run
// wrote it. The runs are rebuilt from each row's median, slowest and
// fastest run (with the median repeated for the runs between), which
// gives grade the same medians and extremes as the run had.
func regrade(path string) error {
	text, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s, err := summary.Parse(text)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	sets, results := rebuildRuns(s)
	lat, lp := rebuildLatency(s)
	s.Grades = grade(sets, results, lat, lp)
	for i := range s.Throughput {
		s.Throughput[i].Grade = rowGrade(s.Throughput[i], s.Grades)
	}
	block, err := summary.Block(s)
	if err != nil {
		return err
	}
	out, err := replaceBetween(text, []byte("Grades: "), []byte("\n```\n\n"), []byte(regradeNote+gradeTable(s.Grades)))
	if err != nil {
		return fmt.Errorf("%s: the grade table: %w", path, err)
	}
	out, err = replaceBetween(out, []byte("```"+summary.BlockTag+"\n"), []byte("\n```\n"), []byte(block))
	if err != nil {
		return fmt.Errorf("%s: the summary block: %w", path, err)
	}
	return os.WriteFile(path, out, 0o644)
}

// replaceBetween replaces, in text, the first span that starts with start
// and ends with the first end after it (both included) by with.
func replaceBetween(text, start, end, with []byte) ([]byte, error) {
	i := bytes.Index(text, start)
	if i < 0 {
		return nil, errors.New("not found")
	}
	j := bytes.Index(text[i+len(start):], end)
	if j < 0 {
		return nil, errors.New("not closed")
	}
	j += i + len(start) + len(end)
	return append(append(append([]byte{}, text[:i]...), with...), text[j:]...), nil
}

// spreadRuns returns n values whose median (as median takes it) is med and
// whose extremes are lo and hi.
func spreadRuns(n int, lo, med, hi float64) []float64 {
	switch {
	case n <= 1:
		return []float64{med}
	case n == 2: // median takes the upper of two
		return []float64{lo, hi}
	}
	v := []float64{lo, hi}
	for range n - 2 {
		v = append(v, med)
	}
	return v
}

// rebuildRuns turns a summary's throughput rows back into runs.
func rebuildRuns(s summary.Summary) ([]dataset, map[string]map[string][]result) {
	var sets []dataset
	seen := map[string]bool{}
	results := map[string]map[string][]result{}
	for _, r := range s.Throughput {
		if !seen[r.Data] {
			seen[r.Data] = true
			sets = append(sets, dataset{name: r.Data, records: r.Records})
		}
		if results[r.Contender] == nil {
			results[r.Contender] = map[string][]result{}
		}
		// Seconds, of which median takes the upper: the slowest rate first.
		secs := spreadRuns(r.Runs, float64(r.Records)/r.RecordsPerSecMax, r.Seconds, float64(r.Records)/r.RecordsPerSecMin)
		for _, sec := range secs {
			results[r.Contender][r.Data] = append(results[r.Contender][r.Data], result{seconds: sec, rssMB: r.PeakRSSMiB, cpu: r.CPUSeconds})
		}
	}
	return sets, results
}

// rebuildLatency turns a summary's latency phase back into runs, keyed by
// the contenders' names (the rows carry latName's).
func rebuildLatency(s summary.Summary) (map[string][]latResult, latPhase) {
	lat := map[string][]latResult{}
	l := s.Latency
	if l == nil {
		return lat, latPhase{}
	}
	lp := latPhase{rate: l.RateAsked, from: l.RateFrom, duration: time.Duration(l.DurationSeconds * float64(time.Second)),
		warmup: time.Duration(l.WarmupSeconds * float64(time.Second))}
	for _, r := range l.Rows {
		name := r.Contender
		for _, c := range contenders {
			if latName(c.name) == r.Contender {
				name = c.name
			}
		}
		ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
		cpu := -1.0
		if r.CPUMicrosPerRecord > 0 {
			cpu = r.CPUMicrosPerRecord * r.Sent / 1e6
		}
		for _, p := range spreadRuns(r.Runs, r.P99MsMin, r.P99Ms, r.P99MsMax) {
			lat[name] = append(lat[name], latResult{sent: int(r.Sent), got: int(r.Received), p50: ms(r.P50Ms), p99: ms(p), pmax: ms(r.MaxMs), cpu: cpu})
		}
	}
	return lat, lp
}
