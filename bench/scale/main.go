// Command scale measures how mirrorctl's costs grow with the size of the
// work rather than with its history: `mirrorctl replicate --once` over 100 to
// 10,000 partitions (copying, then again with nothing to copy), exactly-once
// over the same sizes, a /metrics scrape of a running mirror, the checkpoint
// pass for 10 to 5,000 consumer groups with `lag` and `failover plan` over
// them, and a flow start with 10k to 1M records of offset-sync history on the
// source. Each size gets two embedded (kfake) clusters of its own in this
// process; mirrorctl runs as a child process, so its wall time, CPU and peak
// RSS (VmHWM) are its own (bench/internal/proc).
//
//	go run ./bench/scale -mirrorctl bin/mirrorctl
//
// `make bench-scale` runs it and writes bench/results/<date>-scale.md with
// the tables and bench/results/<date>-scale.svg, a plot of seconds and peak
// RSS per 1,000 partitions against the partition count. The clusters are
// embedded, not the real brokers: one real single-node KRaft broker on this
// machine's 2 CPUs cannot hold 10,000 partitions of two clusters beside the
// mirror, and what grows here is mirrorctl's own cost per partition, group
// or sync record, which the embedded clusters expose as well.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/bench/internal/proc"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// perTopic is how many partitions each generated topic has.
const perTopic = 10

func main() {
	bin := flag.String("mirrorctl", "bin/mirrorctl", "path of the mirrorctl binary to measure")
	parts := flag.String("partitions", "100,1000,3000,10000", "partition counts of the partition curve")
	eos := flag.String("eos-partitions", "100,1000,3000,10000", "partition counts of the exactly-once curve (a transactional producer per partition copying, at most mirrorctl.transaction.producers.max, default 1,000, open at once)")
	groups := flag.String("groups", "10,100,1000,5000", "group counts of the checkpoint curve")
	groupParts := flag.Int("group-partitions", 100, "partitions every group of the checkpoint curve has committed offsets on")
	history := flag.String("history", "10000,100000,1000000", "offset-sync records on the source before the flow starts")
	timeout := flag.Duration("timeout", 5*time.Minute, "the longest one mirrorctl run may take; a run past it is reported as such")
	out := flag.String("out", "", "results file (default bench/results/<date>-scale.md; the plot beside it as .svg)")
	flag.Parse()
	if *out == "" {
		*out = filepath.Join("bench", "results", time.Now().UTC().Format("2006-01-02")+"-scale.md")
	}
	b := &bench{bin: *bin, timeout: *timeout}
	var err error
	steps := []func() error{
		func() error { return b.partitionCurve(ints(*parts), false) },
		func() error { return b.partitionCurve(ints(*eos), true) },
		func() error { return b.groupCurve(ints(*groups), int32(*groupParts)) },
		func() error { return b.historyCurve(ints(*history)) },
	}
	for _, s := range steps {
		if err = s(); err != nil {
			break
		}
	}
	if werr := b.write(*out); werr != nil {
		err = errors.Join(err, werr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/scale:", err)
		os.Exit(1)
	}
}

// ints parses a comma-separated list of counts.
func ints(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "bench/scale: %q is not a positive count\n", f)
			os.Exit(2)
		}
		out = append(out, n)
	}
	return out
}

// bench holds the measurements as they are taken.
type bench struct {
	bin     string
	timeout time.Duration
	parts   []partRow
	eos     []partRow
	groups  []groupRow
	history []historyRow
}

// partRow is one size of the partition curve.
type partRow struct {
	partitions int
	copy, idle run
	scrape     time.Duration // slowest of three /metrics scrapes, 0 when not taken
	series     int           // mirrorctl_partition_up series in the scrape
}

// run is one mirrorctl invocation's outcome.
type run struct {
	usage proc.Usage
	exit  int
	note  string // why it is not a clean measurement, "" when it is
}

// groupRow is one size of the checkpoint curve.
type groupRow struct {
	groups, partitions int
	checkpoints        int64 // checkpoint records on the target after the pass
	replicate          run
	lag, plan          run
}

// historyRow is one size of the history curve.
type historyRow struct {
	syncs     int
	replicate run
}

// pair is two embedded clusters and a config for the flow us-east->eu-west.
type pair struct {
	src, dst *kfake.Cluster
	dir      string
}

func newPair() (*pair, error) {
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.ClusterID("scale-source"))
	if err != nil {
		return nil, err
	}
	dst, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.ClusterID("scale-target"))
	if err != nil {
		src.Close()
		return nil, err
	}
	dir, err := os.MkdirTemp("", "mirrorctl-scale-")
	if err != nil {
		src.Close()
		dst.Close()
		return nil, err
	}
	return &pair{src: src, dst: dst, dir: dir}, nil
}

func (p *pair) close() {
	p.src.Close()
	p.dst.Close()
	os.RemoveAll(p.dir)
}

// config writes the flow's mm2.properties with extra lines and returns its path.
func (p *pair) config(name, extra string) (string, error) {
	path := filepath.Join(p.dir, name+".properties")
	props := fmt.Sprintf(`clusters = us-east, eu-west
us-east.bootstrap.servers = %s
eu-west.bootstrap.servers = %s
us-east->eu-west.enabled = true
replication.factor = 1
offset-syncs.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
checkpoints.topic.replication.factor = 1
emit.heartbeats.enabled = false
%s`, strings.Join(p.src.ListenAddrs(), ","), strings.Join(p.dst.ListenAddrs(), ","), extra)
	return path, os.WriteFile(path, []byte(props), 0o600)
}

func (p *pair) client(c *kfake.Cluster, opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
}

// seedTopics creates n partitions as topics of perTopic partitions named
// prefix-00000… on the source, with perPart records of 100 B in each.
func (p *pair) seedTopics(ctx context.Context, prefix string, n, perPart int) error {
	cl, err := p.client(p.src)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var topics []string
	for i := 0; i < (n+perTopic-1)/perTopic; i++ {
		topics = append(topics, fmt.Sprintf("%s-%05d", prefix, i))
	}
	for len(topics) > 0 {
		chunk := topics[:min(len(topics), 500)]
		topics = topics[len(chunk):]
		res, err := adm.CreateTopics(ctx, perTopic, 1, nil, chunk...)
		if err != nil {
			return err
		}
		if err := res.Error(); err != nil {
			return err
		}
		val := make([]byte, 100)
		var perr error
		for _, t := range chunk {
			for q := int32(0); q < perTopic; q++ {
				for k := 0; k < perPart; k++ {
					cl.Produce(ctx, &kgo.Record{Topic: t, Partition: q, Value: val}, func(_ *kgo.Record, err error) {
						if err != nil && perr == nil {
							perr = err
						}
					})
				}
			}
		}
		if err := cl.Flush(ctx); err != nil {
			return err
		}
		if perr != nil {
			return perr
		}
	}
	return nil
}

// replicate runs mirrorctl with args, bounded by b.timeout.
func (b *bench) mirrorctl(args ...string) run {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.bin, args...)
	cmd.Stdout = io.Discard
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+os.TempDir()+"/mirrorctl-scale-state")
	u, err := proc.Run(cmd)
	r := run{usage: u}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			r.exit = ee.ExitCode()
		} else {
			r.exit = -1
		}
		r.note = firstLine(err.Error())
		if ctx.Err() != nil {
			r.note = fmt.Sprintf("stopped at the %v budget", b.timeout)
		}
	}
	return r
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// partitionCurve measures, per size, a --once that copies one record of
// every partition, a second --once with nothing left to copy and, for
// at-least-once, the /metrics scrape of a running mirror.
func (b *bench) partitionCurve(sizes []int, exactlyOnce bool) error {
	for _, n := range sizes {
		fmt.Fprintf(os.Stderr, "bench/scale: %d partitions (exactly-once %v)\n", n, exactlyOnce)
		p, err := newPair()
		if err != nil {
			return err
		}
		row, err := b.partitionRow(p, n, exactlyOnce)
		p.close()
		if err != nil {
			return fmt.Errorf("%d partitions: %w", n, err)
		}
		if exactlyOnce {
			b.eos = append(b.eos, row)
		} else {
			b.parts = append(b.parts, row)
		}
	}
	return nil
}

func (b *bench) partitionRow(p *pair, n int, exactlyOnce bool) (partRow, error) {
	ctx := context.Background()
	if err := p.seedTopics(ctx, "scale", n, 1); err != nil {
		return partRow{}, err
	}
	extra := "us-east->eu-west.topics = scale-.*\nemit.checkpoints.enabled = false\n"
	if exactlyOnce {
		extra += "exactly.once.source.support = enabled\n"
	}
	cfg, err := p.config("flow", extra)
	if err != nil {
		return partRow{}, err
	}
	row := partRow{partitions: n}
	row.copy = b.mirrorctl("replicate", "--once", "-c", cfg, "-o", "json")
	row.idle = b.mirrorctl("replicate", "--once", "-c", cfg, "-o", "json")
	if !exactlyOnce {
		row.scrape, row.series, err = b.scrape(cfg, n)
		if err != nil {
			row.copy.note = strings.TrimPrefix(row.copy.note+"; ", "; ") + "scrape: " + err.Error()
		}
	}
	return row, nil
}

// scrape starts a continuous mirror on cfg, waits until its /metrics has a
// mirrorctl_partition_up series for each of the n partitions, then times
// three scrapes and returns the slowest, and stops the mirror.
func (b *bench) scrape(cfg string, n int) (time.Duration, int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(b.bin, "replicate", "-c", cfg, "--metrics-addr", addr)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+os.TempDir()+"/mirrorctl-scale-state")
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}()
	deadline := time.Now().Add(b.timeout)
	series := 0
	for time.Now().Before(deadline) {
		series, _, err = scrapeOnce(addr)
		if err == nil && series >= n {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if series < n {
		return 0, series, fmt.Errorf("%d of %d partition_up series within %v (last error %v)", series, n, b.timeout, err)
	}
	var slowest time.Duration
	for i := 0; i < 3; i++ {
		_, d, err := scrapeOnce(addr)
		if err != nil {
			return 0, series, err
		}
		slowest = max(slowest, d)
	}
	return slowest, series, nil
}

// scrapeOnce reads /metrics once: the mirrorctl_partition_up series whose
// value is 1 (partitions this process copies) and how long the read took.
func scrapeOnce(addr string) (int, time.Duration, error) {
	start := time.Now()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	n := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "mirrorctl_partition_up{") && strings.HasSuffix(line, " 1") {
			n++
		}
	}
	return n, time.Since(start), sc.Err()
}

// groupCurve commits, per size, that many groups on a topic of parts
// partitions on the source, then times the --once checkpoint pass, `lag` and
// `failover plan` over all of them.
func (b *bench) groupCurve(sizes []int, parts int32) error {
	for _, g := range sizes {
		fmt.Fprintf(os.Stderr, "bench/scale: %d groups over %d partitions\n", g, parts)
		p, err := newPair()
		if err != nil {
			return err
		}
		row, err := b.groupRow(p, g, parts)
		p.close()
		if err != nil {
			return fmt.Errorf("%d groups: %w", g, err)
		}
		b.groups = append(b.groups, row)
	}
	return nil
}

func (b *bench) groupRow(p *pair, g int, parts int32) (groupRow, error) {
	ctx := context.Background()
	if err := p.seedTopics(ctx, "grp", int(parts), 10); err != nil {
		return groupRow{}, err
	}
	cl, err := p.client(p.src)
	if err != nil {
		return groupRow{}, err
	}
	adm := kadm.NewClient(cl)
	for i := 0; i < g; i++ {
		var offs kadm.Offsets
		for t := 0; t < (int(parts)+perTopic-1)/perTopic; t++ {
			for q := int32(0); q < perTopic; q++ {
				offs.AddOffset(fmt.Sprintf("grp-%05d", t), q, 5, -1)
			}
		}
		res, err := adm.CommitOffsets(ctx, fmt.Sprintf("g-%05d", i), offs)
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			cl.Close()
			return groupRow{}, fmt.Errorf("commit group %d: %w", i, err)
		}
	}
	cl.Close()
	cfg, err := p.config("flow", "us-east->eu-west.topics = grp-.*\nus-east->eu-west.groups = g-.*\n")
	if err != nil {
		return groupRow{}, err
	}
	row := groupRow{groups: g, partitions: int(parts)}
	row.replicate = b.mirrorctl("replicate", "--once", "-c", cfg, "-o", "json")
	row.checkpoints, err = endSum(ctx, p, p.dst, "us-east.checkpoints.internal")
	if err != nil {
		return row, err
	}
	row.lag = b.mirrorctl("lag", "-c", cfg, "-o", "json")
	row.plan = b.mirrorctl("failover", "plan", "--type", "unplanned", "--allow-source-up", "--groups", "g-.*", "-c", cfg, "-o", "json")
	return row, nil
}

// endSum is the sum of topic's end offsets on c.
func endSum(ctx context.Context, p *pair, c *kfake.Cluster, topic string) (int64, error) {
	cl, err := p.client(c)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	var sum int64
	ends.Each(func(o kadm.ListedOffset) { sum += o.Offset })
	return sum, nil
}

// historyCurve writes, per size, that many offset syncs to the source's
// offset-syncs topic (a flow's history: nine in ten of topics it no longer
// mirrors, one in ten of the mirrored topic's 10 partitions, their upstream
// offsets growing to 90), commits a group near the newest of them so the
// checkpoint pass has work, and times a --once that copies the topic's 100
// records per partition.
func (b *bench) historyCurve(sizes []int) error {
	for _, h := range sizes {
		fmt.Fprintf(os.Stderr, "bench/scale: %d offset syncs of history\n", h)
		p, err := newPair()
		if err != nil {
			return err
		}
		row, err := b.historyRow(p, h)
		p.close()
		if err != nil {
			return fmt.Errorf("%d syncs: %w", h, err)
		}
		b.history = append(b.history, row)
	}
	return nil
}

func (b *bench) historyRow(p *pair, h int) (historyRow, error) {
	ctx := context.Background()
	if err := p.seedTopics(ctx, "hist", perTopic, 100); err != nil {
		return historyRow{}, err
	}
	cl, err := p.client(p.src, kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		return historyRow{}, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	const topic = "mm2-offset-syncs.eu-west.internal"
	if res, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, topic); err != nil || res.Err != nil {
		return historyRow{}, errors.Join(err, res.Err)
	}
	var perr error
	for i := 0; i < h; i++ {
		s := mm2.OffsetSync{Topic: fmt.Sprintf("retired-%03d", i%100), Partition: int32(i % 7), UpstreamOffset: int64(i), DownstreamOffset: int64(i)}
		if i%10 == 0 {
			up := int64(90 * float64(i) / float64(h))
			s = mm2.OffsetSync{Topic: "hist-00000", Partition: int32(i / 10 % perTopic), UpstreamOffset: up, DownstreamOffset: up}
		}
		k, _ := s.MarshalKey()
		v, _ := s.MarshalValue()
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: k, Value: v}, func(_ *kgo.Record, err error) {
			if err != nil && perr == nil {
				perr = err
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return historyRow{}, err
	}
	if perr != nil {
		return historyRow{}, perr
	}
	var offs kadm.Offsets
	for q := int32(0); q < perTopic; q++ {
		offs.AddOffset("hist-00000", q, 95, -1)
	}
	if res, err := adm.CommitOffsets(ctx, "hist-group", offs); err != nil || res.Error() != nil {
		return historyRow{}, errors.Join(err, res.Error())
	}
	cfg, err := p.config("flow", "us-east->eu-west.topics = hist-.*\n")
	if err != nil {
		return historyRow{}, err
	}
	return historyRow{syncs: h, replicate: b.mirrorctl("replicate", "--once", "-c", cfg, "-o", "json")}, nil
}

// write renders the results file and the plot beside it.
func (b *bench) write(out string) error {
	var s strings.Builder
	fmt.Fprintf(&s, "# Scale: cost against the size of the work, %s\n\n", time.Now().UTC().Format("2006-01-02"))
	ver, _ := exec.Command(b.bin, "version").Output()
	fmt.Fprintf(&s, "`go run ./bench/scale -mirrorctl %s` (`make bench-scale`; the binary says `%s`): two embedded (kfake) clusters per size, in the bench's process; mirrorctl as a child process (wall, CPU user+sys, peak RSS from VmHWM). Topics of %d partitions, one record of 100 B per partition unless said. Machine: %d CPUs, %s, load average at the end %s. One run per cell: the curve's shape is the result, single cells are noise at the ±20%% level on a shared 2-CPU machine.\n\n",
		b.bin, strings.TrimSpace(firstLine(string(ver))), perTopic, runtime.NumCPU(), runtime.Version(), loadavg())
	fmt.Fprintf(&s, "Plot: [%s](%s), seconds and peak RSS per 1,000 partitions of the copying `--once` against the partition count.\n\n", svgName(out), svgName(out))
	partTable(&s, "## Partitions, at-least-once", b.parts, true)
	partTable(&s, "## Partitions, exactly-once (a transactional producer per partition copying, at most 1,000 open at once: mirrorctl.transaction.producers.max)", b.eos, false)
	s.WriteString("## Consumer groups: the `--once` checkpoint pass, `lag` and `failover plan --type unplanned --allow-source-up`\n\n")
	s.WriteString("Every group has offset 5 committed on every partition of the mirrored topics (10 records each).\n\n")
	s.WriteString("| groups | partitions | checkpoints written | replicate --once s | exit | lag s | exit | failover plan s | exit | note |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range b.groups {
		fmt.Fprintf(&s, "| %d | %d | %d | %.2f | %d | %.2f | %d | %.2f | %d | %s |\n", r.groups, r.partitions, r.checkpoints,
			r.replicate.usage.Wall.Seconds(), r.replicate.exit, r.lag.usage.Wall.Seconds(), r.lag.exit, r.plan.usage.Wall.Seconds(), r.plan.exit,
			notes(r.replicate, r.lag, r.plan))
	}
	s.WriteString("\n## Offset-sync history: a flow's start against the records on its offset-syncs topic\n\n")
	s.WriteString("Nine in ten syncs are of 100 retired topics the flow no longer mirrors, one in ten of the mirrored topic's 10 partitions (upstream offsets growing to 90 over the history); one group is committed at 95 on each partition, so the checkpoint pass runs. The `--once` copies 100 records of each of the 10 partitions.\n\n")
	s.WriteString("| sync records | replicate --once s | CPU s | peak RSS MiB | exit | note |\n|---|---|---|---|---|---|\n")
	for _, r := range b.history {
		u := r.replicate.usage
		fmt.Fprintf(&s, "| %d | %.2f | %.2f | %.0f | %d | %s |\n", r.syncs, u.Wall.Seconds(), u.CPU.Seconds(), float64(u.PeakRSSKiB)/1024, r.replicate.exit, r.replicate.note)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(out, []byte(s.String()), 0o644); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "bench/scale: wrote", out)
	return os.WriteFile(strings.TrimSuffix(out, ".md")+".svg", []byte(plot(b.parts, b.eos)), 0o644)
}

func svgName(out string) string { return filepath.Base(strings.TrimSuffix(out, ".md") + ".svg") }

func notes(rs ...run) string {
	var out []string
	for _, r := range rs {
		if r.note != "" {
			out = append(out, r.note)
		}
	}
	return strings.ReplaceAll(strings.Join(out, "; "), "|", "/")
}

func partTable(s *strings.Builder, title string, rows []partRow, scrape bool) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(s, "%s\n\n| partitions | copy s | copy ms per 1k partitions | CPU s | peak RSS MiB | RSS MiB per 1k partitions | idle --once s | exit | ", title)
	if scrape {
		s.WriteString("/metrics scrape s | partition_up series | ")
	}
	s.WriteString("note |\n|---|---|---|---|---|---|---|---|")
	if scrape {
		s.WriteString("---|---|")
	}
	s.WriteString("---|\n")
	for _, r := range rows {
		u := r.copy.usage
		k := float64(r.partitions) / 1000
		fmt.Fprintf(s, "| %d | %.2f | %.0f | %.2f | %.0f | %.1f | %.2f | %d/%d | ", r.partitions, u.Wall.Seconds(), float64(u.Wall.Milliseconds())/k,
			u.CPU.Seconds(), float64(u.PeakRSSKiB)/1024, float64(u.PeakRSSKiB)/1024/k, r.idle.usage.Wall.Seconds(), r.copy.exit, r.idle.exit)
		if scrape {
			fmt.Fprintf(s, "%.3f | %d | ", r.scrape.Seconds(), r.series)
		}
		fmt.Fprintf(s, "%s |\n", notes(r.copy, r.idle))
	}
	s.WriteString("\n")
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
