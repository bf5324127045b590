package dump

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// The benchmark's embedded cluster runs in a child process (this test binary
// re-executed with benchServerEnv set), so the benchmark process's peak RSS
// measures the dump alone, not kfake's copy of the log or the producer.
const (
	benchServerEnv = "MIRRORCTL_DUMP_BENCH_SERVER"
	benchGroups    = 10_000
	benchParts     = 100
)

func TestMain(m *testing.M) {
	if os.Getenv(benchServerEnv) != "" {
		if err := benchServer(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "bench server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// benchServer starts a kfake cluster, writes benchGroups x benchParts
// checkpoints (group-00000..group-09999, us-east.orders partitions 0..99)
// to us-east.checkpoints.internal, prints "ready <addr>" and serves until in
// is closed.
func benchServer(in io.Reader, out io.Writer) error {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0))
	if err != nil {
		return err
	}
	defer c.Close()
	const topic = "us-east.checkpoints.internal"
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100_000), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx := context.Background()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		return err
	}
	var (
		wg      sync.WaitGroup
		failed  atomic.Value
		started = time.Now()
	)
	for g := range benchGroups {
		for p := range benchParts {
			c := mm2.Checkpoint{Group: fmt.Sprintf("group-%05d", g), Topic: "us-east.orders", Partition: int32(p),
				UpstreamOffset: int64(g*1000 + p), DownstreamOffset: int64(g*1000 + p - 7)}
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Key: must(c.MarshalKey()), Value: must(c.MarshalValue())}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.Store(err)
				}
				wg.Done()
			})
		}
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return err
	}
	fmt.Fprintf(out, "ready %s %d\n", c.ListenAddrs()[0], time.Since(started).Milliseconds())
	_, _ = io.Copy(io.Discard, in) // until the parent closes stdin
	return nil
}

// startBenchServer runs benchServer in a child process and returns its
// address.
func startBenchServer(b *testing.B) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), benchServerEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("bench server: %v", err)
	}
	var addr string
	var ms int64
	if _, err := fmt.Sscanf(line, "ready %s %d", &addr, &ms); err != nil {
		b.Fatalf("bench server said %q: %v", line, err)
	}
	b.Logf("bench server: %d checkpoints written in %d ms", benchGroups*benchParts, ms)
	return addr
}

// countingWriter counts bytes and lines written to it.
type countingWriter struct{ bytes, lines int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.bytes += int64(len(p))
	w.lines += int64(bytes.Count(p, []byte{'\n'}))
	return len(p), nil
}

// procStatus returns a field of /proc/self/status in MiB (Linux), or -1.
func procStatus(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				return -1
			}
			return kb / 1024
		}
	}
	return -1
}

// BenchmarkDumpLatest measures `checkpoints dump --latest` over 1M
// checkpoint records, 10k groups x 100 partitions (so --latest keeps all 1M
// rows), writing TSV (-o table off a TTY) or JSON to a discarding writer.
// It reports ms per dump, the process's peak RSS (VmHWM, reset before each
// sub-benchmark where the kernel allows; base-RSS-MiB is the RSS at that
// reset) and the peak Go heap in use (sampled every 10 ms).
//
//	go test ./internal/cli/dump -run '^$' -bench DumpLatest -benchtime 3x
func BenchmarkDumpLatest(b *testing.B) {
	addr := startBenchServer(b)
	p := &clusterPair{addrs: map[string]string{"us-east": addr, "us-west": addr}, dir: b.TempDir()}
	p.writeConfig(b, "us-east->us-west.enabled = true")
	for _, format := range []output.Format{output.FormatTable, output.FormatJSON} {
		b.Run(string(format), func(b *testing.B) { benchDump(b, p, format) })
	}
}

func benchDump(b *testing.B, p *clusterPair, format output.Format) {
	runtime.GC()
	// "5" resets VmHWM to the current RSS (Linux 4.0+); ignore failure.
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	baseRSS := procStatus("VmRSS")

	var peakHeap atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peakHeap.Load() {
					peakHeap.Store(ms.HeapInuse)
				}
			}
		}
	}()

	b.ReportAllocs()
	b.ResetTimer()
	var rows int64
	for b.Loop() {
		f, _, _ := p.factory(b, format, false)
		cw := &countingWriter{}
		f.IO.Out = cw
		if err := run(b, NewCmdCheckpointsDump(f, nil), "--latest"); err != nil {
			b.Fatal(err)
		}
		rows = cw.lines
	}
	b.StopTimer()
	close(stop)
	<-done
	want := int64(benchGroups * benchParts)
	if format == output.FormatJSON {
		want = want*10 + 6 // 10 lines per checkpoint, 6 for the envelope
	}
	if rows != want {
		b.Fatalf("dumped %d lines, want %d", rows, want)
	}
	b.ReportMetric(procStatus("VmHWM"), "peak-RSS-MiB")
	b.ReportMetric(baseRSS, "base-RSS-MiB")
	b.ReportMetric(float64(peakHeap.Load())/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/op")
}
