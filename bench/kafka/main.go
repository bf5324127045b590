// Command kafka benchmarks `mirrorctl replicate` against the real MirrorMaker 2
// and a bare franz-go consume->produce pipe, on the harness's two real Kafka
// brokers (scripts/kafka.sh) and the same data.
//
//	flock -o /tmp/mirrorctl-kafka.lock bash -c 'eval "$(scripts/kafka.sh up)" && go run ./bench/kafka; scripts/kafka.sh down'
//
// `make bench-kafka` runs exactly that. The brokers come from the env vars
// `scripts/kafka.sh up` prints (MIRRORCTL_KAFKA_US_EAST is the source,
// MIRRORCTL_KAFKA_EU_WEST the target, both PLAINTEXT).
//
// Throughput phase: for every data set and run, every contender in turn
// (A B C A B C ...) gets its own freshly produced source topic (the same
// records each time, from a fixed seed; producing is outside the measured
// window) and copies it to the target. Before the first measured run, every
// contender copies the first data set -warmup times, not measured: the
// first copy after the brokers start takes about twice as long as the next
// ones, and it would fall on whichever contender goes first.
//
//   - mirrorctl (and a tuned variant) and the bare pipe run as child
//     processes: wall time from start to exit, CPU is user+sys from wait4,
//     peak RSS is the child's VmHWM polled every 2ms (wait4's ru_maxrss is
//     carried over exec from this process, so it cannot be used);
//   - MirrorMaker 2 (dedicated mode, `scripts/kafka.sh mm2-start`, tasks.max =
//     partitions) runs until stopped: its window is from the start command to
//     the moment the target's end offsets sum to the record count (polled every
//     50ms; exactly-once, whose end offsets count transaction markers too,
//     until a read_committed count finds every record); the time from the
//     first copied record to the last is reported too. CPU (utime+stime from
//     /proc/<pid>/stat) and VmHWM are read before it is stopped.
//
// Every exactly-once contender has an at-least-once peer doing the same
// work: MM2 exactly-once (mm2EOSProps) beside MM2, mirrorctl's with the
// remote topic created in its window and with it existing beside the
// at-least-once ones. The grading table (grade) checks the goals of issue
// #31 with their thresholds and grades "suspect", not "met", a figure that
// beats a bound it cannot beat by more than the runs' spread.
//
// Scale-out rows (mirrorctl with 1, 2 and 3 processes, remote topic
// existing) then run again on twice each data set's records (-scale-double):
// the difference of the CPU at 2N and at N, over N, is the copy's own cost
// per record, without what each process pays once (start, group join, its
// buffers and heap growing to their working size; minor page faults, from
// wait4, are reported beside it). Every scale-out run is also measured in
// its steady window: the CPU of all its processes (/proc/<pid>/stat) while
// the target went from -steady-from to -steady-to of the records, over the
// records copied meanwhile (sampleWindow), split into user and system time.
//
// Latency phase: each contender runs continuously (mirrorctl without --once)
// while this program produces the mixed data set at a fixed rate
// (-latency-rate: by default 80,000 records/s, the load of the latency
// goals; 0 is half the bare pipe's median records/s on that data set) for
// -latency seconds, and consumes the copies on the target: latency = time
// the copy was read on the target minus the source record's timestamp (the
// copies keep the source CreateTime; one clock, this process). The report
// says for each contender the rate asked, the rate the load producer
// offered, and the window the percentiles were taken over (-latency-warmup
// leaves the load's first seconds out). The CPU of the contender's processes
// from the start of the load to the last copy, over the records sent, is its
// CPU per record at that load. The scale-out rows run here too, as 1, 2 and
// 3 continuous processes; the load starts once the flow's group has settled
// (groupSettled), so the figure holds no rebalance.
//
// Two builds side by side: -baseline names a second mirrorctl binary (built
// at an earlier commit, for example); every mirrorctl contender then also
// runs it, as "<name> [baseline]", in the same alternation, so a change of
// the engine is measured against the engine before it on the same brokers,
// data and load, in one invocation.
//
// The results file ends with a machine-readable summary block
// (bench/internal/summary) from which `go run ./bench/readme` writes
// README.md's performance table. `-regrade FILE` recomputes a results
// file's grades from that block with this build's grading, without
// brokers. A measured --once run that outlives -once-budget is stopped
// and its contender fails: the report lists it and the bench exits 1.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/bench/internal/pipe"
	"github.com/mirrorctl/mirrorctl/bench/internal/proc"
	"github.com/mirrorctl/mirrorctl/bench/internal/summary"
)

// dataset is one shape of records: fixed value size, or the realistic mix
// (size 0): keys, 3 headers, 10% tombstones, values 50 B-4 KB log-uniform.
type dataset struct {
	name    string
	records int
	size    int
	bytes   int64 // key+value+header bytes of all records, set by seed
}

func (d dataset) mix() bool { return d.size == 0 }

type contender struct {
	name  string
	kind  string // "mm2", "mirrorctl", "pipe"
	tuned bool
	// precreated: the target topic exists (and is served) before the
	// window starts, as the pipe's does, so the window holds the same work.
	precreated bool
	// procs is how many mirrorctl processes share the flow (tasks.max =
	// partitions admits them all); 0 is one.
	procs int
	// eos: eu-west.exactly.once.source.support = enabled (one transaction
	// per partition every mirrorctl.transaction.interval.ms); the target is
	// read read_committed.
	eos bool
	// bin is the mirrorctl binary of this contender; "" is -mirrorctl's.
	// -baseline adds a copy of every mirrorctl contender running that
	// binary, so two builds are measured side by side in one invocation.
	bin string
}

// binary is the mirrorctl binary c runs.
func (c contender) binary(e env) string {
	if c.bin != "" {
		return c.bin
	}
	return e.mirrorctl
}

type result struct {
	seconds  float64 // wall: process start (or MM2 start command) to last record on the target
	copySecs float64 // MM2 only: first record on the target to last
	cpu      float64 // user+sys seconds of the process
	rssMB    float64 // peak RSS (VmHWM), MiB; with several processes the largest
	faults   int64   // minor page faults, summed over the processes (0 for MM2)
	procs    int     // processes measured together; 0 is one
	// steadyCPU is the CPU seconds (all processes) spent while the target's
	// records went from -steady-from to -steady-to of the data set, and
	// steadyRecords what it gained meanwhile: scale-out rows only, 0 where
	// not measured (see sampleWindow).
	steadyCPU     float64
	steadyUser    float64 // of steadyCPU, in user mode
	steadyRecords int64
	settledAt     float64 // the fraction of the records on the target when the flow's group had settled (sampleWindow); -1 not by the window's end
}

// steadyNote is the run's steady window for its stderr line: empty where it
// was not measured.
func (r result) steadyNote() string {
	if r.steadyRecords <= 0 {
		return ""
	}
	settled := "not by the window's end"
	if r.settledAt >= 0 {
		settled = fmt.Sprintf("at %.0f%%", 100*r.settledAt)
	}
	return fmt.Sprintf(" steady %.2fs cpu (%.2fs user) over %d records (%.2f us/record), group settled %s", r.steadyCPU, r.steadyUser,
		r.steadyRecords, 1e6*r.steadyCPU/float64(r.steadyRecords), settled)
}

type env struct {
	src, dst   string // bootstrap addresses
	script     string // scripts/kafka.sh
	state      string // MIRRORCTL_KAFKA_STATE
	version    string
	mirrorctl  string
	self       string
	partitions int32
	dir        string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "pipe" {
		if err := pipeMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "pipe:", err)
			os.Exit(1)
		}
		return
	}
	mirrorctl := flag.String("mirrorctl", "bin/mirrorctl", "path of the mirrorctl binary to measure")
	flag.StringVar(&baseline, "baseline", "", "path of a second mirrorctl `binary` (e.g. built at an earlier commit): every mirrorctl contender also runs it, "+
		"as \"<name> [baseline]\", alternating with the first, so the report compares the two builds on the same brokers in one run")
	partitions := flag.Int("partitions", 16, "partitions per topic")
	small := flag.Int("small", 2_000_000, "records in the 100 B data set")
	large := flag.Int("large", 500_000, "records in the 1 KB data set")
	mixN := flag.Int("mix", 500_000, "records in the mixed data set")
	runs := flag.Int("runs", 3, "runs per contender and data set, alternating; the median is reported")
	flag.BoolVar(&scaleDouble, "scale-double", true, "also run the 1-3 process rows (remote topic existing) on twice each data set's records, "+
		"to report the copy's own CPU per record: (CPU at 2N - CPU at N) / N, in which what a process pays once cancels out (see scaleTable)")
	flag.Func("props", "a `key = value` line added to the mm2.properties of every mirrorctl contender (not MM2's, not the pipe's), "+
		"e.g. 'eu-west.producer.linger.ms = 50'; repeatable; the report lists the lines used", func(v string) error {
		if !strings.Contains(v, "=") {
			return fmt.Errorf("%q: want key = value", v)
		}
		extraProps = append(extraProps, v)
		return nil
	})
	flag.Float64Var(&steadyFrom, "steady-from", 0.25, "the scale-out rows' steady window, in which the CPU per record of all their processes is measured, "+
		"opens when the target holds this fraction of the records (0 <= from < to <= 1)")
	flag.Float64Var(&steadyTo, "steady-to", 0.85, "the scale-out rows' steady window closes when the target holds this fraction of the records (see -steady-from)")
	flag.IntVar(&warmups, "warmup", 1, "unmeasured runs per contender on the first data set before the measured ones (the brokers' first copy is slow)")
	latency := flag.Duration("latency", 60*time.Second, "how long to produce at the fixed rate in the latency phase (0 skips it)")
	latRuns := flag.Int("latency-runs", 3, "latency runs per contender, alternating; the median is reported")
	latRate := flag.Float64("latency-rate", goalLoad, "records/s offered in the latency phase (by default the load of the latency goals); "+
		"0 is half the bare pipe's median records/s on the mixed data set (-mix), which a run without the pipe (-only, -match) cannot use")
	flag.DurationVar(&latWarmup, "latency-warmup", 0, "leave the copies of the records sent in the load's first `duration` out of the latency percentiles "+
		"(the report says the window either way); 0 leaves none out")
	flag.StringVar(&runNote, "note", "", "a sentence the results file carries at its top and in its summary block, "+
		"e.g. that the run shared its CPUs with other work")
	out := flag.String("out", "", "also write the results as Markdown to this file (default bench/results/<date>.md)")
	only := flag.String("only", "", "comma-separated contender kinds to run (mm2,mirrorctl,pipe); default all")
	flag.StringVar(&match, "match", "", "regular expression: run only the contenders whose name matches it (after -only), "+
		"e.g. 'topic exists$|pipe' for the single-process target alone")
	flag.IntVar(&segmentBytes, "segment-bytes", 1<<30, "segment.bytes of every topic the bench creates (mirrorctl syncs it to the remote topics it creates, "+
		"as MM2 does); Kafka's default, not the harness brokers' 16 MiB: see segmentBytes")
	flag.DurationVar(&onceBudget, "once-budget", 3*time.Minute, "how long a measured --once run (or the pipe's) may take before its processes are stopped "+
		"and the run fails (its contender runs no more); 0 waits for ever")
	flag.BoolVar(&showTimeline, "latency-timeline", false, "print each latency run's p50 and p99 per second of load to stderr "+
		"(by the second the record was sent), to tell a periodic stall from a steady backlog")
	flag.StringVar(&wrap, "wrap", "", "prefix for the mirrorctl and pipe commands of the throughput phase, %s = a name for the run, "+
		"e.g. 'perf record -F 999 -g -o /tmp/perf-%s.data --' (profiling, not measuring)")
	regradeFile := flag.String("regrade", "", "recompute the grades of this results `file` from its summary block with this build's grading, "+
		"rewrite its grade table and summary block, and exit (no brokers needed)")
	flag.Parse()
	if *regradeFile != "" {
		if err := regrade(*regradeFile); err != nil {
			fmt.Fprintln(os.Stderr, "bench: -regrade:", err)
			os.Exit(1)
		}
		return
	}
	if *latency > 0 && latWarmup >= *latency {
		fmt.Fprintf(os.Stderr, "bench: -latency-warmup %s leaves nothing of -latency %s\n", latWarmup, *latency)
		os.Exit(2)
	}
	if !(steadyFrom >= 0 && steadyFrom < steadyTo && steadyTo <= 1) {
		fmt.Fprintf(os.Stderr, "bench: -steady-from %v and -steady-to %v: want 0 <= from < to <= 1\n", steadyFrom, steadyTo)
		os.Exit(2)
	}
	e := env{
		src: os.Getenv("MIRRORCTL_KAFKA_US_EAST"), dst: os.Getenv("MIRRORCTL_KAFKA_EU_WEST"),
		script: os.Getenv("MIRRORCTL_KAFKA_SCRIPT"), state: os.Getenv("MIRRORCTL_KAFKA_STATE"),
		version: os.Getenv("MIRRORCTL_KAFKA_VERSION"), mirrorctl: *mirrorctl, partitions: int32(*partitions),
	}
	if e.src == "" || e.dst == "" || e.script == "" || e.state == "" {
		fmt.Fprintln(os.Stderr, "bench: MIRRORCTL_KAFKA_* not set; run under `eval \"$(scripts/kafka.sh up)\"` (see `make bench-kafka`)")
		os.Exit(2)
	}
	if *out == "" {
		*out = filepath.Join("bench", "results", time.Now().UTC().Format("2006-01-02")+".md")
	}
	sets := []dataset{{name: "100 B", records: *small, size: 100}, {name: "1 KB", records: *large, size: 1024}, {name: "mix", records: *mixN}}
	if err := run(e, sets, *runs, *latency, *latRuns, *latRate, *out, *only); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// contenders are the rows of the report. Each exactly-once contender has
// an at-least-once peer of the same tool doing the same work (grade): MM2
// exactly-once beside MM2 (both create the remote topic in their window),
// mirrorctl's beside mirrorctl's with the topic created in the window and
// with it existing.
var contenders = []contender{
	{nameMM2, "mm2", false, false, 0, false, ""},
	{nameMM2Tuned, "mm2", true, false, 0, false, ""},
	{nameMM2EOS, "mm2", false, false, 0, true, ""},
	{nameOnce, "mirrorctl", false, false, 0, false, ""},
	{nameOnceEOS, "mirrorctl", false, false, 0, true, ""},
	{nameOnceTuned, "mirrorctl", true, false, 0, false, ""},
	{nameExists, "mirrorctl", false, true, 0, false, ""},
	{nameExistsEOS, "mirrorctl", false, true, 0, true, ""},
	{"mirrorctl --once x2 processes, topic exists", "mirrorctl", false, true, 2, false, ""},
	{"mirrorctl --once x3 processes, topic exists", "mirrorctl", false, true, 3, false, ""},
	{namePipe, "pipe", false, false, 0, false, ""},
}

// withBaseline returns cs with, after each mirrorctl contender, the same
// contender running the baseline binary, named "<name> [baseline]".
func withBaseline(cs []contender, baseline string) []contender {
	var out []contender
	for _, c := range cs {
		out = append(out, c)
		if c.kind == "mirrorctl" {
			b := c
			b.name, b.bin = c.name+" [baseline]", baseline
			out = append(out, b)
		}
	}
	return out
}

// latResult is one latency run of one contender.
type latResult struct {
	sent, got      int
	p50, p99, pmax time.Duration
	// cpu is the CPU seconds of the contender's processes from the start
	// of the load to the last copy read (or the tail's end); -1 where it
	// could not be read.
	cpu float64
}

// cpuPerRecord returns the median over l of the CPU per record sent, in
// microseconds, NaN where no run read its CPU.
func cpuPerRecord(l []latResult) float64 {
	var ok []latResult
	for _, r := range l {
		if r.cpu >= 0 && r.sent > 0 {
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		return math.NaN()
	}
	return median(ok, func(r latResult) float64 { return 1e6 * r.cpu / float64(r.sent) })
}

// inLatency reports whether c runs in the latency phase: every contender but
// mirrorctl's tuned variant, whose lz4 costs CPU this box does not have
// (see the throughput phase), and mirrorctl's exactly-once with the topic
// existing (in continuous mode the topic is created before the load starts
// either way: it would repeat the exactly-once row). The scale-out rows run
// in it too: there each of 1, 2 and 3 processes copies the same fixed load
// with the flow's group settled, which gives the CPU per record with that
// many members without the rebalances a --once run of a few seconds is
// mostly made of.
func inLatency(c contender) bool {
	return !(c.kind == "mirrorctl" && (c.tuned || (c.eos && c.precreated)))
}

// rateFrom says where the latency phase's rate came from, for the report.
var rateFrom = "-latency-rate"

func run(e env, sets []dataset, runs int, latency time.Duration, latRuns int, latRate float64, out, only string) error {
	if _, err := os.Stat(e.mirrorctl); err != nil {
		return fmt.Errorf("%w (run `make build` first)", err)
	}
	var err error
	if e.self, err = os.Executable(); err != nil {
		return err
	}
	if e.dir, err = os.MkdirTemp("", "mirrorctl-bench-kafka-"); err != nil {
		return err
	}
	defer os.RemoveAll(e.dir)
	cs := contenders
	if baseline != "" {
		if _, err := os.Stat(baseline); err != nil {
			return fmt.Errorf("-baseline: %w", err)
		}
		cs = withBaseline(cs, baseline)
	}
	if only != "" {
		var kept []contender
		for _, c := range cs {
			if strings.Contains(","+only+",", ","+c.kind+",") {
				kept = append(kept, c)
			}
		}
		cs = kept
	}
	if match != "" {
		re, err := regexp.Compile(match)
		if err != nil {
			return fmt.Errorf("-match: %w", err)
		}
		var kept []contender
		for _, c := range cs {
			if re.MatchString(c.name) {
				kept = append(kept, c)
			}
		}
		if len(kept) == 0 {
			return fmt.Errorf("-match %q: no contender matches", match)
		}
		cs = kept
	}
	ctx := context.Background()
	started := time.Now()
	results := map[string]map[string][]result{} // contender -> data set -> runs
	for r := 0; r < warmups && len(sets) > 0; r++ {
		for _, c := range cs {
			if failed[c.name] != "" {
				continue
			}
			res, err := throughput(ctx, e, c, &sets[0], -1-r)
			if err != nil {
				fail(c.name, fmt.Errorf("warm-up on %s: %w", sets[0].name, err))
				continue
			}
			fmt.Fprintf(os.Stderr, "[%4.0fs] %-24s %-6s warm-up %d (not measured): %.2fs cpu %.1fs\n",
				time.Since(started).Seconds(), c.name, sets[0].name, r+1, res.seconds, res.cpu)
		}
	}
	for i := range sets {
		for r := 0; r < runs; r++ {
			for _, c := range cs {
				if failed[c.name] != "" {
					continue
				}
				res, err := throughput(ctx, e, c, &sets[i], r)
				if err != nil {
					fail(c.name, fmt.Errorf("%s run %d: %w", sets[i].name, r+1, err))
					continue
				}
				if results[c.name] == nil {
					results[c.name] = map[string][]result{}
				}
				results[c.name][sets[i].name] = append(results[c.name][sets[i].name], res)
				extra := ""
				if c.kind == "mm2" {
					extra = fmt.Sprintf(" (first->last %.2fs)", res.copySecs)
				}
				fmt.Fprintf(os.Stderr, "[%4.0fs] %-24s %-6s run %d: %.2fs%s cpu %.2fs rss %.0f MiB faults %d%s\n",
					time.Since(started).Seconds(), c.name, sets[i].name, r+1, res.seconds, extra, res.cpu, res.rssMB, res.faults, res.steadyNote())
			}
		}
	}
	if scaleDouble && len(scaleRows(cs)) >= 2 {
		// The scale-out rows again on twice the records, in the same
		// alternation: what a process pays once (start, group join, its
		// buffers and heap growing to their working size) is in both runs
		// and cancels out of the difference.
		for i := range sets {
			for r := 0; r < runs; r++ {
				for _, c := range scaleRows(cs) {
					if failed[c.name] != "" {
						continue
					}
					d := sets[i]
					d.records *= 2
					res, err := throughput(ctx, e, c, &d, 100+r)
					if err != nil {
						fail(c.name, fmt.Errorf("%s x2 records run %d: %w", sets[i].name, r+1, err))
						continue
					}
					k := doubledKey(c.name)
					if results[k] == nil {
						results[k] = map[string][]result{}
					}
					results[k][sets[i].name] = append(results[k][sets[i].name], res)
					fmt.Fprintf(os.Stderr, "[%4.0fs] %-24s %-6s x2 records run %d: %.2fs cpu %.2fs rss %.0f MiB faults %d%s\n",
						time.Since(started).Seconds(), c.name, sets[i].name, r+1, res.seconds, res.cpu, res.rssMB, res.faults, res.steadyNote())
				}
			}
		}
	}
	lat := map[string][]latResult{}
	var rate float64
	mix := sets[len(sets)-1]
	// Write the throughput results now, so a failure later keeps them.
	if err := writeReport(out, report(e, cs, sets, runs, results, lat, latPhase{}, time.Since(started))); err != nil {
		return err
	}
	if latency > 0 {
		switch pipe := results[namePipe][mix.name]; {
		case latRate == goalLoad:
			rate = latRate
			rateFrom = "the latency goals' load, -latency-rate's default"
		case latRate > 0:
			rate = latRate
			rateFrom = "-latency-rate"
		case len(pipe) == 0:
			return fmt.Errorf("the latency phase needs the bare pipe's rate on %s (or -latency-rate)", mix.name)
		default:
			rate = float64(mix.records) / median(pipe, func(r result) float64 { return r.seconds }) / 2
			rateFrom = "half the bare pipe's median on the mix, -latency-rate 0"
		}
		for r := 0; r < latRuns; r++ {
			for _, c := range cs {
				if !inLatency(c) || failed[c.name] != "" {
					continue
				}
				l, got, sent, cpu, err := latencyRun(ctx, e, c, mix, rate, latency)
				if err != nil { // reported, not fatal: the other contenders still run
					fmt.Fprintf(os.Stderr, "latency of %s run %d: %v\n", c.name, r+1, err)
					if l == nil {
						continue
					}
				}
				lr := latResult{sent: sent, got: got, p50: pct(l, 50), p99: pct(l, 99), pmax: pct(l, 100), cpu: cpu}
				lat[c.name] = append(lat[c.name], lr)
				fmt.Fprintf(os.Stderr, "[%4.0fs] %-24s latency run %d: %d of %d records, p50 %s p99 %s, cpu %.2fs\n", time.Since(started).Seconds(),
					latName(c.name), r+1, lr.got, lr.sent, lr.p50, lr.p99, lr.cpu)
			}
		}
	}
	md := report(e, cs, sets, runs, results, lat, latPhase{rate: rate, from: rateFrom, duration: latency, warmup: latWarmup}, time.Since(started))
	fmt.Print(md)
	if err := writeReport(out, md); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d contender(s) failed (listed in %s): %s", len(failed), out, strings.Join(failedList(), "; "))
	}
	return nil
}

// failed maps a contender that failed a throughput run to the failure: it
// runs no more (its earlier runs stay in the report), the report lists it,
// and the bench exits 1 once the report is written.
var failed = map[string]string{}

func fail(contender string, err error) {
	failed[contender] = shortError(err)
	fmt.Fprintf(os.Stderr, "%s FAILED, runs no more: %v\n", contender, err)
}

// shortError is err on one line, at most about 400 characters (its start
// and its end, which usually name the failure): a failed process's error
// carries its whole stderr, which the bench's stderr keeps.
func shortError(err error) string {
	s := []rune(strings.Join(strings.Fields(err.Error()), " "))
	if len(s) <= 400 {
		return string(s)
	}
	return string(s[:200]) + " […] " + string(s[len(s)-200:])
}

// failedList is failed as sorted "contender: failure" lines.
func failedList() []string {
	var out []string
	for c, f := range failed {
		out = append(out, c+": "+f)
	}
	sort.Strings(out)
	return out
}

func writeReport(out, md string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(out, []byte(md), 0o644)
}

// latName is c's name in the latency phase, where mirrorctl runs without --once.
func latName(c string) string { return strings.Replace(c, " --once", " (continuous)", 1) }

// throughput seeds a fresh topic with ds and has c copy it; the topics are
// deleted afterwards so the brokers' disks do not fill up.
func throughput(ctx context.Context, e env, c contender, ds *dataset, run int) (result, error) {
	topic := fmt.Sprintf("bench-%s-%s-%d-%d", c.kind, strings.NewReplacer(" ", "", "-", "").Replace(ds.name), run, time.Now().UnixNano()%1e6)
	if c.tuned {
		topic = strings.Replace(topic, c.kind, c.kind+"t", 1)
	}
	if c.precreated {
		topic = strings.Replace(topic, c.kind, c.kind+"p", 1)
	}
	if c.procs > 1 {
		topic = strings.Replace(topic, c.kind, fmt.Sprintf("%s%d", c.kind, c.procs), 1)
	}
	if c.eos {
		topic = strings.Replace(topic, c.kind, c.kind+"eos", 1)
	}
	b, err := seed(ctx, e.src, topic, e.partitions, *ds)
	if err != nil {
		return result{}, fmt.Errorf("seed: %w", err)
	}
	ds.bytes = b
	dstTopic := "us-east." + topic
	var res result
	switch c.kind {
	case "mm2":
		res, err = runMM2(ctx, e, c, topic, dstTopic, int64(ds.records))
	case "mirrorctl":
		awaitMM2Quiet()
		cfg, err2 := writeProps(e, c, topic, e.dir)
		if err2 != nil {
			return result{}, err2
		}
		if c.precreated {
			if err := createTopic(ctx, e.dst, dstTopic, e.partitions); err != nil {
				return result{}, err
			}
		}
		switch {
		case c.precreated && !c.eos: // a scale-out row, also measured in its steady window (not through a -wrap, whose CPU it would read)
			var watch *steadyWatch
			if wrap == "" {
				watch = &steadyWatch{dst: e.dst, topic: dstTopic, want: int64(ds.records),
					src: e.src, srcTopic: topic, group: flowGroup, members: max(1, c.procs), partitions: int(e.partitions)}
			}
			res, err = measureMany(max(1, c.procs), func(i int) *exec.Cmd {
				name := topic
				if c.procs > 1 {
					name = fmt.Sprintf("%s-%d", topic, i)
				}
				return wrapped(exec.Command(c.binary(e), "replicate", "--once", "-c", cfg, "-o", "json"), name)
			}, watch)
		default:
			res, err = measure(wrapped(exec.Command(c.binary(e), "replicate", "--once", "-c", cfg, "-o", "json"), topic))
		}
	case "pipe":
		dstTopic = "pipe." + topic
		if err := createTopic(ctx, e.dst, dstTopic, e.partitions); err != nil {
			return result{}, err
		}
		res, err = measure(wrapped(exec.Command(e.self, "pipe", "-src", e.src, "-dst", e.dst, "-topic", topic, "-partitions", fmt.Sprint(e.partitions)), topic))
	}
	if errors.Is(err, errBudget) {
		if n, err2 := sumEnds(ctx, e.dst, dstTopic); err2 == nil {
			err = fmt.Errorf("%w; the target's end offsets then summed %d for %d records", err, n, ds.records)
		}
	}
	if err != nil {
		return result{}, err
	}
	count := sumEnds
	if c.eos {
		count = countCommitted // end offsets count the transaction markers too
	}
	n, err := count(ctx, e.dst, dstTopic)
	if err != nil {
		return result{}, err
	}
	if n != int64(ds.records) {
		return result{}, fmt.Errorf("%s holds %d records, want %d", dstTopic, n, ds.records)
	}
	if err := deleteTopics(ctx, e.src, topic); err != nil {
		return result{}, err
	}
	return res, deleteTopics(ctx, e.dst, dstTopic)
}

// writeProps writes the mm2.properties c runs on: every replication factor 1
// (single-broker clusters), tasks.max = partitions, only topic replicated.
func writeProps(e env, c contender, topic, dir string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "clusters = us-east, eu-west\nus-east.bootstrap.servers = %s\neu-west.bootstrap.servers = %s\n", e.src, e.dst)
	fmt.Fprintf(&b, "us-east->eu-west.enabled = true\nus-east->eu-west.topics = %s\neu-west->us-east.enabled = false\n", topic)
	fmt.Fprintf(&b, "tasks.max = %d\n", e.partitions)
	for _, k := range []string{"replication.factor", "checkpoints.topic.replication.factor", "heartbeats.topic.replication.factor",
		"offset-syncs.topic.replication.factor", "offset.storage.replication.factor", "config.storage.replication.factor",
		"status.storage.replication.factor"} {
		fmt.Fprintf(&b, "%s = 1\n", k)
	}
	if c.tuned {
		b.WriteString(tunedProps)
	}
	if c.kind == "mirrorctl" {
		for _, kv := range extraProps {
			fmt.Fprintln(&b, kv)
		}
	}
	if c.eos {
		b.WriteString("eu-west.exactly.once.source.support = enabled\n")
	}
	if c.eos && c.kind == "mm2" {
		b.WriteString(mm2EOSProps)
	}
	if c.kind == "mm2" {
		for _, l := range mm2State(topic) {
			b.WriteString(l + "\n")
		}
	}
	path := filepath.Join(dir, topic+".properties")
	return path, os.WriteFile(path, []byte(b.String()), 0o600)
}

// mm2State returns the lines that give MM2's run on topic a Connect state
// of its own, as a new deployment has: its own config, offsets and status
// topics and worker groups (MirrorMakerConfig's defaults, mm2-*.<source>.internal
// and <source>-mm2, are shared by every run). With a shared state, MM2
// starts the tasks of the previous run's task configs, then generates new
// ones for the new topic; exactly-once, the zombie fencing of the old
// generation then fails ("a new set of task configs was generated") and
// kills the tasks, which stay dead until restarted through the REST API.
// Every MM2 contender runs this way, so their windows hold the same work:
// the creation of the internal topics, no reconfiguration. mm2Topics names
// the topics, deleted after the run.
func mm2State(topic string) []string {
	t := mm2Topics(topic)
	return []string{"config.storage.topic = " + t[0], "offset.storage.topic = " + t[1], "status.storage.topic = " + t[2],
		"us-east.group.id = " + topic + "-us-east-mm2", "eu-west.group.id = " + topic + "-eu-west-mm2"}
}

// mm2Topics are the Connect internal topics of MM2's run on topic (on both
// clusters: each herder keeps them on its target).
func mm2Topics(topic string) [3]string {
	return [3]string{"mm2-configs." + topic + ".internal", "mm2-offsets." + topic + ".internal", "mm2-status." + topic + ".internal"}
}

// mm2EOSProps is what MirrorMaker 2 needs beside
// eu-west.exactly.once.source.support = enabled (KIP-618, in MM2's dedicated
// mode since Kafka 3.5, KAFKA-14021) to copy exactly once: the internal REST
// server of KIP-710 (dedicated.mode.enable.internal.rest and a listener; the
// leader's zombie fencing of source tasks goes through it; port 0 takes a
// free one), and a read_committed source consumer
// (MirrorSourceConnector.exactlyOnceSupport answers SUPPORTED only with it,
// and aborted source records are not copied). The brokers need nothing
// beyond transactions: the harness's transaction state log has replication
// factor and min ISR 1, fit for its single-node clusters.
const mm2EOSProps = `dedicated.mode.enable.internal.rest = true
listeners = http://127.0.0.1:0
us-east.consumer.isolation.level = read_committed
`

// tunedProps is the tuned variant for both MM2 and mirrorctl: larger producer
// batches, linger and lz4 compression on the target's producer (the knobs the
// MM2 docs point to), larger fetches on the source's consumer. mirrorctl
// ignores batch.size (kgo caps batches by max.request.size) and says so.
const tunedProps = `eu-west.producer.batch.size = 524288
eu-west.producer.linger.ms = 20
eu-west.producer.compression.type = lz4
us-east.consumer.max.poll.records = 2000
us-east.consumer.fetch.min.bytes = 65536
us-east.consumer.fetch.max.wait.ms = 100
`

// runMM2 starts MirrorMaker 2 on topic, waits until dstTopic holds want
// records, reads the JVM's CPU and VmHWM, then stops it.
func runMM2(ctx context.Context, e env, c contender, topic, dstTopic string, want int64) (result, error) {
	cfg, err := writeProps(e, c, topic, e.dir)
	if err != nil {
		return result{}, err
	}
	start := time.Now()
	pid, err := mm2Start(e, cfg)
	if err != nil {
		return result{}, err
	}
	defer dropMM2State(e, topic)
	defer mm2Stop(e)
	var first, end time.Time
	deadline := start.Add(10 * time.Minute)
	for {
		n, _ := sumEnds(ctx, e.dst, dstTopic)
		now := time.Now()
		if n > 0 && first.IsZero() {
			first = now
		}
		if n >= want && !c.eos {
			end = now
			break
		}
		// Exactly-once: the end offsets count the transaction markers
		// too, so they reach want before the last records; the window
		// closes at the poll from which a read_committed read counts them
		// all (it reads to the end offsets it lists when it starts, a
		// moment after the poll, and waits for an open transaction's
		// commit: the end may fall that moment early, never a count's
		// time late).
		if n >= want {
			if got, err := countCommitted(ctx, e.dst, dstTopic); err == nil && got >= want {
				end = now
				break
			}
		}
		if now.After(deadline) {
			return result{}, fmt.Errorf("MM2 copied %d of %d records in 10 minutes (log: scripts/kafka.sh logs mm2)", n, want)
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			return result{}, fmt.Errorf("MM2 (pid %d) exited after copying %d of %d records", pid, n, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cpu, err := procCPU(pid)
	if err != nil {
		return result{}, err
	}
	return result{
		seconds: end.Sub(start).Seconds(), copySecs: end.Sub(first).Seconds(),
		cpu: cpu, rssMB: float64(proc.PeakRSS(pid)) / 1024,
	}, nil
}

// dropMM2State deletes the Connect internal topics of MM2's run on topic
// (mm2State), once MM2 is stopped; a failure is reported, not fatal.
func dropMM2State(e env, topic string) {
	t := mm2Topics(topic)
	for _, addrs := range []string{e.src, e.dst} {
		if err := deleteTopics(context.Background(), addrs, t[:]...); err != nil {
			fmt.Fprintf(os.Stderr, "deleting MM2's internal topics of %s: %v\n", topic, err)
		}
	}
}

func mm2Start(e env, cfg string) (int, error) {
	cmd := exec.Command("bash", e.script, "mm2-start", cfg)
	// scripts/kafka.sh gives every JVM -Xmx512m; with 16 tasks (16 producers
	// of 32 MiB buffer.memory each) MM2 dies of OutOfMemoryError on that heap.
	// _JAVA_OPTIONS is read after the command line, so it wins: MM2 gets the
	// heap its own launcher (connect-mirror-maker.sh) gives it.
	cmd.Env = append(os.Environ(), "_JAVA_OPTIONS="+mm2Heap)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("mm2-start: %v: %s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(e.state, "run", "mm2.pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// mm2Heap is connect-mirror-maker.sh's KAFKA_HEAP_OPTS.
const mm2Heap = "-Xms256m -Xmx2g"

func mm2Stop(e env) {
	if out, err := exec.Command("bash", e.script, "mm2-stop").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "mm2-stop: %v: %s\n", err, out)
	}
	mm2StoppedAt = time.Now()
}

// mm2StoppedAt is when the last MM2 run stopped.
var mm2StoppedAt time.Time

// mm2Quiet is how long after an MM2 run mirrorctl's start no longer takes
// MM2's heartbeats for a live MM2: replicate refuses to run beside one, and
// heartbeats of the flow younger than 10 s (3 heartbeat intervals at least)
// make it watch 3 s for more (replicate.DetectMM2). The bench's MM2
// contender writes them for the same aliases seconds before the next
// contender starts, which a deployment whose MM2 was stopped before the
// switch does not see.
const mm2Quiet = 12 * time.Second

// awaitMM2Quiet waits, outside every measured window, until mm2Quiet has
// passed since the last MM2 run stopped, so a mirrorctl run measures its
// own start and not the check of an MM2 the bench itself just ran.
func awaitMM2Quiet() {
	if d := time.Until(mm2StoppedAt.Add(mm2Quiet)); !mm2StoppedAt.IsZero() && d > 0 {
		time.Sleep(d)
	}
}

// procCPU returns utime+stime of pid in seconds (procTimes).
func procCPU(pid int) (float64, error) {
	u, sys, err := procTimes(pid)
	return u + sys, err
}

// procTimes returns pid's utime and stime in seconds (/proc/<pid>/stat
// fields 14 and 15, in clock ticks of 1/100 s).
func procTimes(pid int) (user, sys float64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	s := string(b)
	// The command name (field 2) may hold spaces; fields after it start past ')'.
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	st, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("/proc/%d/stat: bad utime/stime", pid)
	}
	return float64(ut) / 100, float64(st) / 100, nil
}

// wrap, when set, prefixes the measured commands (see -wrap).
var wrap string

// scaleDouble is -scale-double.
var scaleDouble bool

// warmups is the number of unmeasured runs per contender before the
// measured ones (see -warmup).
var warmups int

// match, when set, selects contenders by name (see -match).
var match string

// baseline is -baseline: a second mirrorctl binary measured beside the first.
var baseline string

// wrapped returns cmd prefixed by wrap (its %s replaced by name).
func wrapped(cmd *exec.Cmd, name string) *exec.Cmd {
	if wrap == "" {
		return cmd
	}
	args := append(strings.Fields(strings.ReplaceAll(wrap, "%s", name)), cmd.Args...)
	return exec.Command(args[0], args[1:]...)
}

// measureMany starts n processes from mk at once and waits for all: wall is
// until the last exits, cpu the sum of theirs, rss the largest single peak
// (each process is its own deployment unit). mk gets the process's index.
// With watch, their steady window is sampled while they run (sampleWindow);
// a window that could not be closed leaves steadyRecords 0 and is reported
// on stderr, the run still counts.
func measureMany(n int, mk func(i int) *exec.Cmd, watch *steadyWatch) (result, error) {
	start := time.Now()
	waits := make([]func() (proc.Usage, error), 0, n)
	pids := make([]int, 0, n)
	var errs []error
	var started []*os.Process
	for i := range n {
		cmd := mk(i)
		wait, err := proc.Start(cmd)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		waits = append(waits, wait)
		pids = append(pids, cmd.Process.Pid)
		started = append(started, cmd.Process)
	}
	var overran atomic.Bool
	if onceBudget > 0 {
		t := time.AfterFunc(onceBudget, func() {
			overran.Store(true)
			for _, p := range started {
				_ = p.Signal(syscall.SIGTERM)
			}
			time.AfterFunc(10*time.Second, func() {
				for _, p := range started {
					_ = p.Kill()
				}
			})
		})
		defer t.Stop()
	}
	windowed := make(chan window, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if watch != nil && len(errs) == 0 {
		go func() { windowed <- sampleWindow(ctx, *watch, pids) }()
	} else {
		windowed <- window{err: errors.New("not sampled")}
	}
	usages := make([]proc.Usage, len(waits))
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, wait := range waits {
		wg.Go(func() {
			u, err := wait()
			mu.Lock()
			defer mu.Unlock()
			usages[i] = u
			errs = append(errs, err)
		})
	}
	wg.Wait()
	// The window closes at the first poll that sees steadyTo, which may come
	// after the last process exits; a poll takes milliseconds.
	time.AfterFunc(2*time.Second, cancel)
	var res result
	for _, u := range usages {
		res.cpu += u.CPU.Seconds()
		res.faults += u.MinorFaults
		res.rssMB = max(res.rssMB, float64(u.PeakRSSKiB)/1024)
	}
	res.seconds = time.Since(start).Seconds()
	res.procs = n
	if overran.Load() {
		return res, fmt.Errorf("%d process(es) %w after %s", n, errBudget, onceBudget)
	}
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	w := <-windowed
	switch {
	case w.err != nil && watch != nil:
		fmt.Fprintf(os.Stderr, "steady window of %s not measured: %v\n", watch.topic, w.err)
	case w.err == nil:
		for i := range pids {
			// A process gone before the window closed spent its last CPU
			// inside it (or before it, where it was gone at its start too).
			to := w.to[i]
			if to[0] < 0 {
				to = [2]float64{usages[i].User.Seconds(), (usages[i].CPU - usages[i].User).Seconds()}
			}
			if from := w.from[i]; from[0] >= 0 {
				res.steadyCPU += to[0] + to[1] - from[0] - from[1]
				res.steadyUser += to[0] - from[0]
			}
		}
		res.steadyRecords, res.settledAt = w.records, w.settled
	}
	return res, nil
}

// steadyWatch names what sampleWindow watches: the target topic of the run
// and the records it must end with; the flow's consumer group on the source
// (replicate.DefaultGroupID), how many members it will have and the
// partitions of the source topic they share (the group also holds the
// source's heartbeats topic, which the flow replicates too).
type steadyWatch struct {
	dst, topic           string
	want                 int64
	src, srcTopic, group string
	members              int
	partitions           int
}

// window is what sampleWindow saw: per process (in the order of its pids),
// its user and system CPU seconds at the window's start and end, -1 where
// the process was gone by then; and the records the target gained in
// between.
type window struct {
	from, to [][2]float64
	records  int64
	settled  float64 // the fraction of the records on the target when the group had settled; -1 not before the window closed
	err      error
}

// extraProps are -props: lines added to every mirrorctl contender's
// mm2.properties.
var extraProps []string

// groupSettled reports whether the flow's consumer group on the source
// (replicate.DefaultGroupID) is Stable with members members, each owning
// partitions of topic, and all partitions of it owned. The group also holds
// the source's heartbeats topic, which the flow replicates too, so only
// topic's partitions count. An error reads as not settled.
func groupSettled(ctx context.Context, adm *kadm.Client, group, topic string, members, partitions int) bool {
	gs, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return false
	}
	g, ok := gs[group]
	if !ok || g.Err != nil || g.State != "Stable" || len(g.Members) != members {
		return false
	}
	owned := 0
	for _, m := range g.Members {
		c, ok := m.Assigned.AsConsumer()
		if !ok {
			return false
		}
		n := 0
		for _, t := range c.Topics {
			if t.Topic == topic {
				n += len(t.Partitions)
			}
		}
		if n == 0 {
			return false
		}
		owned += n
	}
	return owned == partitions
}

// flowGroup is the consumer group of the bench's flow us-east->eu-west
// (replicate.DefaultGroupID).
const flowGroup = "mirrorctl-us-east-eu-west"

// steadyFrom and steadyTo bound the steady window, as fractions of the data
// set's records on the target (-steady-from, -steady-to).
var steadyFrom, steadyTo float64

// steadyPoll is how often sampleWindow reads the target's end offsets.
const steadyPoll = 20 * time.Millisecond

// sampleWindow measures a --once copy while it runs: every steadyPoll it
// sums the target topic's end offsets, and the first time they reach
// steadyFrom of w.want (then steadyTo) it reads every process's CPU (utime
// and stime, /proc/<pid>/stat, in ticks of 10 ms). What the processes pay
// before the window (start, group join, most of their buffers' and heap's
// growth) and after it (the --once end) is left out. Until the flow's group
// has settled (groupSettled) it also describes the group, and notes at what
// fraction of the records it did: before that, the later members were still
// joining and the first copied what they will own, so a window that opens
// before it holds the rebalances too (the fixed-rate phase, fixedRateRun,
// measures with the group settled). Errors end the window (window.err); it
// gives up after 10 minutes.
func sampleWindow(ctx context.Context, w steadyWatch, pids []int) window {
	adm, done, err := admin(w.dst)
	if err != nil {
		return window{err: err}
	}
	defer done()
	srcAdm, srcDone, err := admin(w.src)
	if err != nil {
		return window{err: err}
	}
	defer srcDone()
	settled := func() bool { return groupSettled(ctx, srcAdm, w.group, w.srcTopic, w.members, w.partitions) }
	cpus := func() [][2]float64 {
		out := make([][2]float64, len(pids))
		for i, pid := range pids {
			u, s, err := procTimes(pid)
			if err != nil {
				u, s = -1, -1
			}
			out[i] = [2]float64{u, s}
		}
		return out
	}
	lo, hi := int64(math.Ceil(steadyFrom*float64(w.want))), int64(steadyTo*float64(w.want))
	res := window{settled: -1}
	var n0 int64
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		stable := res.settled >= 0 || settled()
		n, err := endsOf(ctx, adm, w.topic)
		if err == nil && stable && res.settled < 0 {
			res.settled = float64(n) / float64(w.want)
		}
		switch {
		case err != nil: // the next poll may answer
		case res.from == nil && n >= lo:
			res.from, n0 = cpus(), n
		case res.from != nil && n >= hi:
			res.to, res.records = cpus(), n-n0
			if res.records <= 0 {
				res.err = fmt.Errorf("the window from %d records held none", n0)
			}
			return res
		}
		time.Sleep(steadyPoll)
	}
	res.err = fmt.Errorf("the target did not reach %d of %d records while the processes ran", hi, w.want)
	return res
}

// measure runs cmd and returns its wall time, CPU and peak RSS
// (bench/internal/proc explains why peak RSS is read from /proc).
func measure(cmd *exec.Cmd) (result, error) {
	res, err := measureMany(1, func(int) *exec.Cmd { return cmd }, nil)
	res.procs = 0
	return res, err
}

// onceBudget bounds how long a measured --once process (or the pipe) may
// run (-once-budget): past it, every process of the run is stopped
// (SIGTERM, SIGKILL 10 s later) and the run fails with errBudget.
var onceBudget time.Duration

// errBudget is the failure of a run whose processes did not exit within
// onceBudget.
var errBudget = errors.New("did not exit within -once-budget; stopped")

// ---------------------------------------------------------------- latency

// tailWait bounds the wait for the last copies after the load stops.
const tailWait = time.Minute

// latencyRun starts c continuously on a fresh topic, waits until a warm-up
// record has been copied, then produces mixed records at rate records/s for
// d and returns the latency of every copy of a record sent after the first
// latWarmup of the load (all of them when it is 0), the copies read in all
// and the records sent.
func latencyRun(ctx context.Context, e env, c contender, ds dataset, rate float64, d time.Duration) (lats []time.Duration, got, sent int, cpu float64, err error) {
	all, got, sent, cpu, err := latencyRunAll(ctx, e, c, ds, rate, d)
	if latWarmup <= 0 || len(all) == 0 {
		return durations(all), got, sent, cpu, err
	}
	first := all[0].sent
	for _, l := range all {
		if l.sent.Before(first) {
			first = l.sent
		}
	}
	kept := all[:0]
	for _, l := range all {
		if l.sent.Sub(first) >= latWarmup {
			kept = append(kept, l)
		}
	}
	return durations(kept), got, sent, cpu, err
}

// latWarmup is -latency-warmup.
var latWarmup time.Duration

// runNote is -note.
var runNote string

// sample is one copy read in the latency phase: when its source record
// was sent, and how long after that it was read on the target.
type sample struct {
	sent time.Time
	lat  time.Duration
}

func durations(ss []sample) []time.Duration {
	if ss == nil {
		return nil
	}
	out := make([]time.Duration, len(ss))
	for i, s := range ss {
		out[i] = s.lat
	}
	return out
}

// latencyRunAll is latencyRun without the warm-up cut: every copy's sample.
func latencyRunAll(ctx context.Context, e env, c contender, ds dataset, rate float64, d time.Duration) (lats []sample, got, sent int, cpu float64, err error) {
	cpu = -1
	// Letters and digits of the name only: a topic name allows no comma.
	topic := fmt.Sprintf("lat-%s-%d", regexp.MustCompile(`[^a-z0-9]`).ReplaceAllString(strings.ToLower(c.name), ""), time.Now().UnixNano()%1e6)
	if err := createTopic(ctx, e.src, topic, e.partitions); err != nil {
		return nil, 0, 0, -1, err
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(e.src), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return nil, 0, 0, -1, err
	}
	defer prod.Close()
	// Warm-up record in every partition, so every task has started.
	var warm []*kgo.Record
	for p := int32(0); p < e.partitions; p++ {
		warm = append(warm, &kgo.Record{Topic: topic, Partition: p, Value: []byte("warm-up")})
	}
	if err := prod.ProduceSync(ctx, warm...).FirstErr(); err != nil {
		return nil, 0, 0, -1, err
	}
	dstTopic := "us-east." + topic
	// Each run writes gigabytes: drop its topics once it is over (deferred
	// first, so this runs after the contender is stopped).
	defer func() {
		_ = deleteTopics(context.Background(), e.src, topic)
		_ = deleteTopics(context.Background(), e.dst, dstTopic)
	}()
	var pids []int // the contender's processes, whose CPU the run reads
	switch c.kind {
	case "mm2":
		cfg, err := writeProps(e, c, topic, e.dir)
		if err != nil {
			return nil, 0, 0, -1, err
		}
		pid, err := mm2Start(e, cfg)
		if err != nil {
			return nil, 0, 0, -1, err
		}
		defer dropMM2State(e, topic)
		defer mm2Stop(e)
		pids = []int{pid}
	case "mirrorctl", "pipe":
		var cmds []*exec.Cmd
		if c.kind == "pipe" {
			dstTopic = "pipe." + topic
			if err := createTopic(ctx, e.dst, dstTopic, e.partitions); err != nil {
				return nil, 0, 0, -1, err
			}
			cmds = append(cmds, exec.Command(e.self, "pipe", "-follow", "-src", e.src, "-dst", e.dst, "-topic", topic, "-partitions", fmt.Sprint(e.partitions)))
		} else {
			awaitMM2Quiet()
			cfg, err := writeProps(e, c, topic, e.dir)
			if err != nil {
				return nil, 0, 0, -1, err
			}
			if c.precreated {
				if err := createTopic(ctx, e.dst, dstTopic, e.partitions); err != nil {
					return nil, 0, 0, -1, err
				}
			}
			for range max(1, c.procs) {
				cmds = append(cmds, exec.Command(c.binary(e), "replicate", "-c", cfg))
			}
		}
		for i, cmd := range cmds {
			logf, err := os.Create(filepath.Join(e.dir, fmt.Sprintf("%s-%d.log", topic, i)))
			if err != nil {
				return nil, 0, 0, -1, err
			}
			defer logf.Close()
			cmd.Stdout, cmd.Stderr = logf, logf
			if err := cmd.Start(); err != nil {
				return nil, 0, 0, -1, err
			}
			pids = append(pids, cmd.Process.Pid)
			defer func() { // stopped in parallel would be faster; in turn is simpler and bounded
				_ = cmd.Process.Signal(os.Interrupt)
				t := time.AfterFunc(30*time.Second, func() { _ = cmd.Process.Kill() })
				_ = cmd.Wait()
				t.Stop()
			}()
		}
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		n, _ := sumEnds(ctx, e.dst, dstTopic)
		if n >= int64(e.partitions) {
			break
		}
		if time.Now().After(deadline) {
			return nil, 0, 0, -1, fmt.Errorf("the warm-up records did not reach %s in 3 minutes", dstTopic)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Several mirrorctl processes: the load starts once every one owns
	// partitions (the group's rebalances are over).
	if c.kind == "mirrorctl" && c.procs > 1 {
		adm, done, err := admin(e.src)
		if err != nil {
			return nil, 0, 0, -1, err
		}
		for !groupSettled(ctx, adm, flowGroup, topic, c.procs, int(e.partitions)) {
			if time.Now().After(deadline) {
				done()
				return nil, 0, 0, -1, fmt.Errorf("the group %s did not settle with %d members in 3 minutes", flowGroup, c.procs)
			}
			time.Sleep(100 * time.Millisecond)
		}
		done()
	}
	// read_committed: an exactly-once copy counts when its transaction
	// commits, as its consumers see it (the same for the others).
	cons, err := kgo.NewClient(kgo.SeedBrokers(e.dst), kgo.ConsumeTopics(dstTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return nil, 0, 0, -1, err
	}
	defer cons.Close()
	var (
		mu       sync.Mutex
		read     atomic.Int64
		timeline *secondsTimeline
	)
	if showTimeline {
		timeline = &secondsTimeline{}
		defer func() { // after the consumer stopped (or, on an error, once it holds no lock)
			mu.Lock()
			defer mu.Unlock()
			timeline.print(os.Stderr, latName(c.name))
		}()
	}
	cctx, cancel := context.WithCancel(ctx)
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for {
			fs := cons.PollFetches(cctx)
			if cctx.Err() != nil {
				return
			}
			now := time.Now()
			mu.Lock()
			fs.EachRecord(func(r *kgo.Record) {
				if len(r.Headers) > 0 { // not a warm-up record
					lats = append(lats, sample{r.Timestamp, now.Sub(r.Timestamp)})
					if timeline != nil {
						timeline.add(r.Timestamp, now.Sub(r.Timestamp))
					}
					read.Add(1)
				}
			})
			mu.Unlock()
		}
	}()
	cpuAt := func() float64 {
		var sum float64
		for _, pid := range pids {
			c, err := procCPU(pid)
			if err != nil {
				return math.NaN()
			}
			sum += c
		}
		return sum
	}
	cpu0 := cpuAt()
	// Produce at the fixed rate: every 10ms, the records due by then.
	rng := rand.New(rand.NewPCG(7, 7))
	payload := randomPayload(rng)
	begin := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	for now := range tick.C {
		el := now.Sub(begin)
		if el >= d {
			break
		}
		due := int(rate * el.Seconds())
		for ; sent < due; sent++ {
			r := mixRecord(rng, payload, topic, int32(sent)%e.partitions, sent)
			r.Timestamp = time.Now()
			prod.Produce(ctx, r, nil)
		}
	}
	tick.Stop()
	if err := prod.Flush(ctx); err != nil {
		cancel()
		return nil, 0, 0, -1, err
	}
	// Wait (bounded) for the tail to arrive. A contender that falls behind
	// at this load has its figures reported as lower bounds.
	tail := time.Now().Add(tailWait)
	for read.Load() < int64(sent) && time.Now().Before(tail) {
		time.Sleep(50 * time.Millisecond)
	}
	if c1 := cpuAt(); !math.IsNaN(c1 - cpu0) {
		cpu = c1 - cpu0
	}
	cancel()
	<-consumed
	mu.Lock()
	defer mu.Unlock()
	if len(lats) < sent {
		return lats, len(lats), sent, cpu, fmt.Errorf("only %d of %d records arrived on %s within %s of the end", len(lats), sent, dstTopic, tailWait)
	}
	return lats, len(lats), sent, cpu, nil
}

// showTimeline is -latency-timeline.
var showTimeline bool

// secondsTimeline buckets a latency run's copies by the whole second (from
// the first) in which their source record was sent.
type secondsTimeline struct {
	first   time.Time
	seconds map[int][]time.Duration
}

func (tl *secondsTimeline) add(sent time.Time, lat time.Duration) {
	if tl.seconds == nil {
		tl.first, tl.seconds = sent, map[int][]time.Duration{}
	}
	s := int(sent.Sub(tl.first) / time.Second) // records of a partition arrive in order, not across partitions: s may be -1
	tl.seconds[s] = append(tl.seconds[s], lat)
}

// print writes one line per second: second, records, p50 and p99 in ms.
func (tl *secondsTimeline) print(w io.Writer, name string) {
	keys := make([]int, 0, len(tl.seconds))
	for k := range tl.seconds {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	fmt.Fprintf(w, "latency timeline of %s (second of load: records, p50 ms, p99 ms)\n", name)
	for _, k := range keys {
		ls := tl.seconds[k]
		fmt.Fprintf(w, "  %3d: %6d %8.1f %8.1f\n", k, len(ls), pct(ls, 50).Seconds()*1000, pct(ls, 99).Seconds()*1000)
	}
}

func pct(ls []time.Duration, p float64) time.Duration {
	if len(ls) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ls...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	if i < 0 {
		i = 0
	}
	return s[i]
}

// ---------------------------------------------------------------- data

func randomPayload(rng *rand.Rand) []byte {
	payload := make([]byte, 1<<20)
	for i := range payload {
		payload[i] = byte('a' + rng.IntN(26))
	}
	return payload
}

// mixRecord is record i of the realistic mix: a key, 3 headers, a tombstone
// one time in ten, else a value of 50 B to 4 KB (log-uniform).
func mixRecord(rng *rand.Rand, payload []byte, topic string, p int32, i int) *kgo.Record {
	r := &kgo.Record{
		Topic: topic, Partition: p,
		Key: []byte(fmt.Sprintf("customer-%06d", rng.IntN(100_000))),
		Headers: []kgo.RecordHeader{
			{Key: "trace-id", Value: []byte(fmt.Sprintf("%016x", rng.Uint64()))},
			{Key: "content-type", Value: []byte("application/json")},
			{Key: "seq", Value: []byte(strconv.Itoa(i))},
		},
	}
	if rng.IntN(10) != 0 {
		n := int(math.Exp(math.Log(50) + rng.Float64()*(math.Log(4096)-math.Log(50))))
		off := rng.IntN(len(payload) - n)
		r.Value = payload[off : off+n]
	}
	return r
}

func recordBytes(r *kgo.Record) int64 {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return int64(n)
}

// seed writes ds to topic (created with partitions), spread evenly over its
// partitions, from a fixed seed so every contender gets the same records. It
// returns the key+value+header bytes written.
func seed(ctx context.Context, addrs, topic string, partitions int32, ds dataset) (int64, error) {
	if err := createTopic(ctx, addrs, topic, partitions); err != nil {
		return 0, err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(addrs, ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedRecords(100_000))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	rng := rand.New(rand.NewPCG(uint64(ds.records), uint64(ds.size)))
	payload := randomPayload(rng)
	var errMu sync.Mutex
	var firstErr error
	var total int64
	for i := 0; i < ds.records; i++ {
		var r *kgo.Record
		if ds.mix() {
			r = mixRecord(rng, payload, topic, int32(i)%partitions, i)
		} else {
			off := rng.IntN(len(payload) - ds.size)
			r = &kgo.Record{
				Topic: topic, Partition: int32(i) % partitions,
				Key:     []byte(fmt.Sprintf("key-%d", i%10_000)),
				Value:   payload[off : off+ds.size],
				Headers: []kgo.RecordHeader{{Key: "bench", Value: []byte("1")}},
			}
		}
		total += recordBytes(r)
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				errMu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				errMu.Unlock()
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	errMu.Lock()
	defer errMu.Unlock()
	return total, firstErr
}

// ---------------------------------------------------------------- admin

func admin(addrs string) (*kadm.Client, func(), error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(addrs, ",")...))
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl.Close, nil
}

func sumEnds(ctx context.Context, addrs, topic string) (int64, error) {
	adm, done, err := admin(addrs)
	if err != nil {
		return 0, err
	}
	defer done()
	return endsOf(ctx, adm, topic)
}

// endsOf sums topic's end offsets; a partition that answered with an error
// counts 0.
func endsOf(ctx context.Context, adm *kadm.Client, topic string) (int64, error) {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			n += o.Offset
		}
	})
	return n, nil
}

// countCommitted counts the records a read_committed consumer reads from
// topic up to its end offsets now (transaction markers and aborted records
// left out).
func countCommitted(ctx context.Context, addrs, topic string) (int64, error) {
	adm, done, err := admin(addrs)
	if err != nil {
		return 0, err
	}
	defer done()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	want := map[int32]int64{}
	assign := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil && o.Offset > 0 {
			want[o.Partition] = o.Offset
			assign[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	if len(want) == 0 {
		return 0, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}),
		kgo.KeepControlRecords(), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var n int64
	for len(want) > 0 {
		fs := cl.PollFetches(rctx)
		if err := rctx.Err(); err != nil {
			return n, fmt.Errorf("count %s: %w", topic, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return n, errs[0].Err
		}
		fs.EachRecord(func(r *kgo.Record) {
			end, ok := want[r.Partition]
			if !ok || r.Offset >= end {
				return
			}
			if !r.Attrs.IsControl() {
				n++
			}
			if r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
	}
	return n, nil
}

func deleteTopics(ctx context.Context, addrs string, topics ...string) error {
	adm, done, err := admin(addrs)
	if err != nil {
		return err
	}
	defer done()
	_, err = adm.DeleteTopics(ctx, topics...)
	return err
}

// segmentBytes is the segment.bytes of every topic the bench creates
// (-segment-bytes): by default Kafka's own, 1 GiB, not the harness brokers'
// 16 MiB (small for the tests' disk use). With 16 MiB a partition rolls a
// segment every few seconds at the bench's rates, all partitions at about
// the same moment (the load is spread evenly), and the flush of the rolled
// segments on this machine's one disk stalls both brokers, for up to a
// second: the disk's stall, not a contender's, in their latency tail and
// throughput spread. At 1 GiB no roll falls in a run.
var segmentBytes int

func createTopic(ctx context.Context, addrs, topic string, partitions int32) error {
	adm, done, err := admin(addrs)
	if err != nil {
		return err
	}
	defer done()
	resp, err := adm.CreateTopic(ctx, partitions, 1, map[string]*string{"segment.bytes": kadm.StringPtr(strconv.Itoa(segmentBytes))}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return err
	}
	// The broker answers CreateTopics before it serves the new partitions
	// (about 250 ms here); a produce in that window is refused and backed
	// off. The pipe is the ceiling, so its window starts once they serve.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ends, err := adm.ListEndOffsets(ctx, topic)
		served := 0
		if err == nil {
			ends.Each(func(o kadm.ListedOffset) {
				if o.Err == nil {
					served++
				}
			})
			if served == int(partitions) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %d of %d partitions served after 30s (%v)", topic, served, partitions, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ---------------------------------------------------------------- pipe

// pipeMain is the bare pipe (see package pipe), with -follow for the
// latency phase, stopped by SIGINT or SIGTERM.
func pipeMain(args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return pipe.Main(ctx, args, 16)
}

// ---------------------------------------------------------------- report

// median is the median of f over the runs rs (NaN without runs).
func median[T any](rs []T, f func(T) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	sort.Float64s(v)
	if len(v) == 0 {
		return math.NaN()
	}
	return v[len(v)/2]
}

func spread(rs []result, f func(result) float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, r := range rs {
		lo, hi = math.Min(lo, f(r)), math.Max(hi, f(r))
	}
	return
}

func machine() string {
	var model string
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), ":"))
				break
			}
		}
		f.Close()
	}
	var mem string
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if line, _, ok := strings.Cut(string(b), "\n"); ok {
			mem = strings.Join(strings.Fields(line)[1:], " ")
		}
	}
	kernel, _ := exec.Command("uname", "-sr").Output()
	java, _ := exec.Command("java", "-version").CombinedOutput()
	jline, _, _ := strings.Cut(string(java), "\n")
	return fmt.Sprintf("%d CPUs (%s), MemTotal %s, %s, %s, %s", runtime.NumCPU(), model, mem,
		strings.TrimSpace(string(kernel)), runtime.Version(), strings.TrimSpace(jline))
}

func report(e env, cs []contender, sets []dataset, runs int, results map[string]map[string][]result,
	lat map[string][]latResult, lp latPhase, took time.Duration) string {
	rate, latency := lp.rate, lp.duration
	now := time.Now().UTC()
	var b strings.Builder
	fmt.Fprintf(&b, "# mirrorctl vs MirrorMaker 2 on real Kafka, %s\n\n", now.Format("2006-01-02"))
	if runNote != "" {
		fmt.Fprintf(&b, "**%s**\n\n", runNote)
	}
	fmt.Fprintf(&b, "Invoked as `bench/kafka %s`.\n\n", strings.Join(os.Args[1:], " "))
	fmt.Fprintf(&b, "Kafka %s (two single-node KRaft clusters from scripts/kafka.sh, PLAINTEXT on loopback, "+
		"the same machine as every contender). Machine: %s. `make bench-kafka` (bench/kafka), %d partitions, "+
		"topics created with segment.bytes %d, %d runs per contender and data set in alternation (after %d unmeasured warm-up run(s) "+
		"per contender on the first data set), median with [min-max]; whole run %s. "+
		"MM2 runs with heap %s (its own launcher's; on the harness's -Xmx512m its 16 tasks die of OutOfMemoryError).\n\n",
		e.version, machine(), e.partitions, segmentBytes, runs, warmups, took.Round(time.Second), mm2Heap)
	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		// Other work on the machine slows every contender, not evenly: say how busy it was.
		fmt.Fprintf(&b, "Load average when this was written (1, 5, 15 min, runnable/total, last pid): %s.\n\n", strings.TrimSpace(string(la)))
	}
	if len(failed) > 0 {
		fmt.Fprintf(&b, "**Contenders that FAILED** (they ran no more after the failure; their rows hold only the runs before it, or none):\n\n")
		for _, f := range failedList() {
			fmt.Fprintf(&b, "- %s\n", f)
		}
		b.WriteString("\n")
	}
	if len(extraProps) > 0 {
		fmt.Fprintf(&b, "Every mirrorctl contender ran with these lines added to its mm2.properties (-props): `%s`.\n\n", strings.Join(extraProps, "`, `"))
	}
	b.WriteString("```\n")
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "CONTENDER\tDATA\tRECORDS\tSECONDS\tRECORDS/S [min-max]\tMB/S\tCPU S\tPEAK RSS MiB\tFIRST->LAST S\tVS PIPE")
	pipeRate := map[string]float64{}
	for _, ds := range sets {
		if rs := results["bare franz-go pipe"][ds.name]; len(rs) > 0 {
			pipeRate[ds.name] = float64(ds.records) / median(rs, func(r result) float64 { return r.seconds })
		}
	}
	for _, ds := range sets {
		for _, c := range cs {
			rs := results[c.name][ds.name]
			if len(rs) == 0 {
				continue
			}
			secs := median(rs, func(r result) float64 { return r.seconds })
			rate := float64(ds.records) / secs
			lo, hi := spread(rs, func(r result) float64 { return float64(ds.records) / r.seconds })
			fl := "-"
			if c.kind == "mm2" {
				fl = fmt.Sprintf("%.2f", median(rs, func(r result) float64 { return r.copySecs }))
			}
			vs := "-"
			if p := pipeRate[ds.name]; p > 0 && c.kind != "pipe" {
				vs = fmt.Sprintf("%.0f%%", 100*rate/p)
			}
			fmt.Fprintf(w, "%s\t%s\t%d\t%.2f\t%.0f [%.0f-%.0f]\t%.1f\t%.1f\t%.0f\t%s\t%s\n", c.name, ds.name, ds.records, secs,
				rate, lo, hi, rate*float64(ds.bytes)/float64(ds.records)/1e6,
				median(rs, func(r result) float64 { return r.cpu }), median(rs, func(r result) float64 { return r.rssMB }), fl, vs)
		}
	}
	w.Flush()
	b.WriteString("```\n\n")
	b.WriteString(scaleTable(cs, sets, results))
	if len(lat) > 0 {
		runs := 0
		for _, l := range lat {
			runs = max(runs, len(l))
		}
		fmt.Fprintf(&b, "End-to-end latency (copy read on the target minus the source record's timestamp), mixed records at "+
			"a fixed %.0f records/s asked (%s) for %s, %d runs per contender "+
			"in alternation, median with [min-max]; continuous mode (mirrorctl without --once). %s RECEIVED is the median of "+
			"copies read of those sent, within %s of the end of the load; OFFERED is what the load producer achieved "+
			"(records sent / %s), lower when the contender leaves it too little CPU; CPU US/RECORD is the CPU of the contender's "+
			"processes (/proc/<pid>/stat) from the start of the load to the last copy, over the records sent (median). With several "+
			"mirrorctl processes the load starts once the flow's group has settled (every process owns partitions):\n\n```\n",
			rate, lp.from, latency, runs, windowNote(lp), tailWait, latency)
		w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "CONTENDER\tASKED REC/S\tOFFERED REC/S\tWINDOW\tRECEIVED / SENT\tP50 MS [min-max]\tP99 MS [min-max]\tMAX MS\tCPU US/RECORD")
		for _, c := range cs {
			l := lat[c.name]
			if l == nil {
				continue
			}
			f := func(get func(latResult) time.Duration) string {
				v := make([]float64, len(l))
				for i, r := range l {
					v[i] = float64(get(r).Microseconds()) / 1000
				}
				sort.Float64s(v)
				return fmt.Sprintf("%.1f [%.1f-%.1f]", v[len(v)/2], v[0], v[len(v)-1])
			}
			got, sent := median(l, func(r latResult) float64 { return float64(r.got) }), median(l, func(r latResult) float64 { return float64(r.sent) })
			fmt.Fprintf(w, "%s\t%.0f\t%.0f\t%s\t%.0f / %.0f\t%s\t%s\t%.1f\t%.2f\n", latName(c.name), rate, sent/latency.Seconds(), windowShort(lp), got, sent,
				f(func(r latResult) time.Duration { return r.p50 }), f(func(r latResult) time.Duration { return r.p99 }),
				median(l, func(r latResult) float64 { return float64(r.pmax.Microseconds()) / 1000 }), cpuPerRecord(l))
		}
		w.Flush()
		b.WriteString("```\n\n")
	}
	grades := grade(sets, results, lat, lp)
	b.WriteString(gradeTable(grades))
	block, err := summary.Block(summarize(e, cs, sets, runs, results, lat, lp, grades, now))
	if err != nil { // a Summary of numbers and strings always encodes
		panic(err)
	}
	b.WriteString("The machine-readable summary of this file (`go run ./bench/readme` writes README.md's performance table from it):\n\n")
	b.WriteString(block)
	return b.String()
}

// windowNote says over which part of the load the percentiles were taken.
func windowNote(lp latPhase) string {
	if lp.warmup > 0 {
		return fmt.Sprintf("The percentiles leave out the copies of the records sent in the load's first %s (-latency-warmup): "+
			"the window is %s to %s of the load.", lp.warmup, lp.warmup, lp.duration)
	}
	return fmt.Sprintf("The percentiles take every copy of the load's records, from its first second to its last (%s; no warm-up "+
		"left out but the one record per partition copied before the load starts).", lp.duration)
}

// windowShort is windowNote for a table cell.
func windowShort(lp latPhase) string {
	return fmt.Sprintf("%s-%s", lp.warmup, lp.duration)
}

// scaleRows are the contenders of the scale-out table: mirrorctl at least
// once with 1, 2 and 3 processes, remote topic existing.
func scaleRows(cs []contender) []contender {
	var rows []contender
	for _, c := range cs {
		if c.kind == "mirrorctl" && c.precreated && !c.eos {
			rows = append(rows, c)
		}
	}
	return rows
}

// doubledKey is where results keeps contender's runs on twice the records.
func doubledKey(contender string) string { return contender + " (2x records)" }

// copyCost returns the CPU seconds per record of contender's copy on ds:
// (median CPU at 2N records - median CPU at N) / N, when the doubled runs
// exist (-scale-double), else NaN.
func copyCost(results map[string]map[string][]result, contender string, ds dataset) float64 {
	one, two := results[contender][ds.name], results[doubledKey(contender)][ds.name]
	if len(one) == 0 || len(two) == 0 {
		return math.NaN()
	}
	cpu := func(r result) float64 { return r.cpu }
	return (median(two, cpu) - median(one, cpu)) / float64(ds.records)
}

// minSteadyCPU is the least CPU, in seconds, a steady window must hold to
// count: /proc counts in ticks of 10 ms, and a window of a few thousand
// records holds a tick or none.
const minSteadyCPU = 0.2

// steadyCost returns the median over contender's runs on ds of the CPU
// seconds per record in the steady window (sampleWindow), or NaN where no run
// measured one (with at least minSteadyCPU); steadyUserCost the same of the
// CPU in user mode.
func steadyCost(results map[string]map[string][]result, contender string, ds dataset) float64 {
	return steadyMedian(results, contender, ds, func(r result) float64 { return r.steadyCPU })
}

func steadyUserCost(results map[string]map[string][]result, contender string, ds dataset) float64 {
	return steadyMedian(results, contender, ds, func(r result) float64 { return r.steadyUser })
}

func steadyMedian(results map[string]map[string][]result, contender string, ds dataset, cpu func(result) float64) float64 {
	var rs []result
	for _, r := range results[contender][ds.name] {
		if r.steadyRecords > 0 && r.steadyCPU >= minSteadyCPU {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return math.NaN()
	}
	return median(rs, func(r result) float64 { return cpu(r) / float64(r.steadyRecords) })
}

// scaleTable compares mirrorctl with 1, 2 and 3 processes sharing a flow
// (topic exists): the CPU cost per record, which must not grow with the
// members, and the largest process's peak RSS. On a 2-CPU machine the
// throughput cannot grow with processes; the cost per record is the figure.
//
// CPU US/RECORD divides all the CPU by the records, so it includes what each
// process pays once however much it copies: its start and group join, and
// faulting in the memory its buffers and heap grow to (PAGE FAULTS: every
// process grows to a working size set by its fetch and produce limits, not
// by its share of the records). STEADY US/RECORD is the CPU per record while
// the target went from -steady-from to -steady-to of the records, every
// process having started (sampleWindow). COPY US/RECORD is what one more
// record costs: the difference between runs on 2N and on N records, divided
// by N (two medians apart: the noisier of the two).
func scaleTable(cs []contender, sets []dataset, results map[string]map[string][]result) string {
	rows := scaleRows(cs)
	if len(rows) < 2 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Scale-out: processes sharing one flow through its consumer group (tasks.max admits them all), remote topic existing; " +
		"CPU and page faults are summed over the processes, PEAK RSS is the largest process's. CPU US/RECORD is all the CPU over the records; " +
		"COPY US/RECORD is (CPU at 2x records - CPU at 1x) / records, from runs on twice the records (-scale-double), so what a process " +
		"pays once (start, group join, growing its buffers and heap to their working size) is left out. " +
		fmt.Sprintf("STEADY US/RECORD is the CPU of all the processes over the records copied while the target went from %.0f%% to %.0f%% "+
			"of the records (CPU from /proc/<pid>/stat, end offsets polled every %s; median of the runs), and OF IT USER the part in user mode "+
			"(the rest is the kernel's: system calls, page faults, switching between processes):\n\n```\n",
			100*steadyFrom, 100*steadyTo, steadyPoll))
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "PROCESSES\tDATA\tSECONDS\tRECORDS/S\tCPU S (all)\tCPU US/RECORD\tSTEADY US/RECORD\tOF IT USER\tPAGE FAULTS (all)\tCPU S AT 2x\tCOPY US/RECORD\tPEAK RSS MiB (largest)")
	for _, ds := range sets {
		for _, c := range rows {
			rs := results[c.name][ds.name]
			if len(rs) == 0 {
				continue
			}
			secs := median(rs, func(r result) float64 { return r.seconds })
			cpu := median(rs, func(r result) float64 { return r.cpu })
			at2, cc := "-", "-"
			if two := results[doubledKey(c.name)][ds.name]; len(two) > 0 {
				at2 = fmt.Sprintf("%.2f", median(two, func(r result) float64 { return r.cpu }))
				cc = fmt.Sprintf("%.2f", 1e6*copyCost(results, c.name, ds))
			}
			steady, user := "-", "-"
			if sc := steadyCost(results, c.name, ds); !math.IsNaN(sc) {
				steady = fmt.Sprintf("%.2f", 1e6*sc)
				user = fmt.Sprintf("%.2f", 1e6*steadyUserCost(results, c.name, ds))
			}
			fmt.Fprintf(w, "%d\t%s\t%.2f\t%.0f\t%.2f\t%.2f\t%s\t%s\t%.0f\t%s\t%s\t%.0f\n", max(1, c.procs), ds.name, secs, float64(ds.records)/secs, cpu,
				1e6*cpu/float64(ds.records), steady, user, median(rs, func(r result) float64 { return float64(r.faults) }), at2, cc,
				median(rs, func(r result) float64 { return r.rssMB }))
		}
	}
	w.Flush()
	b.WriteString("```\n\n")
	return b.String()
}
