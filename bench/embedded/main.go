// Command embedded benchmarks `mirrorctl replicate --once` against a bare
// franz-go consume->produce pipe, on the same two in-process (kfake) clusters
// and the same data, and prints records/s, MB/s, CPU seconds and peak RSS side
// by side. The clusters live in this process; each contender runs as a child
// process, so its CPU (from wait4) and peak RSS (its VmHWM) are its own.
//
//	go run ./bench/embedded -mirrorctl bin/mirrorctl
//
// `make bench` runs it with the data sets: 1M records of 100 B and
// 200k records of 1 KB, over 8 partitions.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/bench/internal/pipe"
	"github.com/mirrorctl/mirrorctl/bench/internal/proc"
)

type dataset struct {
	name    string
	records int
	size    int // value bytes
}

type result struct {
	contender string
	dataset   dataset
	seconds   float64
	cpu       float64 // user+sys seconds of the child
	rssMB     float64 // peak RSS of the child
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
	partitions := flag.Int("partitions", 8, "partitions per topic")
	small := flag.Int("small", 1_000_000, "records in the 100 B data set")
	large := flag.Int("large", 200_000, "records in the 1 KB data set")
	runs := flag.Int("runs", 3, "runs per contender and data set, alternating; the median is reported")
	flag.Parse()
	if err := run(*mirrorctl, int32(*partitions), []dataset{{"100 B", *small, 100}, {"1 KB", *large, 1024}}, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(mirrorctl string, partitions int32, sets []dataset, runs int) error {
	if _, err := os.Stat(mirrorctl); err != nil {
		return fmt.Errorf("%w (run `make build` first)", err)
	}
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.ClusterID("bench-source"))
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.ClusterID("bench-target"))
	if err != nil {
		return err
	}
	defer dst.Close()
	srcAddrs, dstAddrs := strings.Join(src.ListenAddrs(), ","), strings.Join(dst.ListenAddrs(), ",")
	dir, err := os.MkdirTemp("", "mirrorctl-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ctx := context.Background()
	var results []result
	n := 0
	for _, ds := range sets {
		for r := 0; r < runs; r++ {
			for _, contender := range []string{"bare franz-go pipe", "mirrorctl replicate --once"} {
				n++
				topic := fmt.Sprintf("bench-%d", n)
				if err := seed(ctx, srcAddrs, topic, partitions, ds); err != nil {
					return err
				}
				var cmd *exec.Cmd
				if strings.HasPrefix(contender, "bare") {
					if err := createTopic(ctx, dstAddrs, "pipe."+topic, partitions); err != nil {
						return err
					}
					cmd = exec.Command(self, "pipe", "-src", srcAddrs, "-dst", dstAddrs, "-topic", topic, "-partitions", fmt.Sprint(partitions))
				} else {
					cfg := filepath.Join(dir, topic+".properties")
					props := fmt.Sprintf("clusters = src, dst\nsrc.bootstrap.servers = %s\ndst.bootstrap.servers = %s\n"+
						"src->dst.enabled = true\nsrc->dst.topics = %s\nreplication.factor = 1\n"+
						"offset-syncs.topic.replication.factor = 1\nheartbeats.topic.replication.factor = 1\n"+
						"checkpoints.topic.replication.factor = 1\n", srcAddrs, dstAddrs, topic)
					if err := os.WriteFile(cfg, []byte(props), 0o600); err != nil {
						return err
					}
					cmd = exec.Command(mirrorctl, "replicate", "--once", "-c", cfg, "-o", "json")
				}
				runtime.GC() // the embedded clusters live here: no GC debt during the run
				res, err := measure(cmd)
				if err != nil {
					return fmt.Errorf("%s on %s: %w", contender, ds.name, err)
				}
				// Drop this run's data so the clusters (and this process's
				// heap) do not grow from run to run.
				if err := deleteTopics(ctx, srcAddrs, topic); err != nil {
					return err
				}
				if err := deleteTopics(ctx, dstAddrs, "pipe."+topic, "src."+topic); err != nil {
					return err
				}
				res.contender, res.dataset = contender, ds
				results = append(results, res)
				fmt.Fprintf(os.Stderr, "%-28s %-6s run %d: %.2fs\n", contender, ds.name, r+1, res.seconds)
			}
		}
	}
	report(results, partitions)
	return nil
}

// measure runs cmd and returns its wall time, CPU and peak RSS
// (bench/internal/proc explains why peak RSS is read from /proc).
func measure(cmd *exec.Cmd) (result, error) {
	u, err := proc.Run(cmd)
	if err != nil {
		return result{}, err
	}
	return result{seconds: u.Wall.Seconds(), cpu: u.CPU.Seconds(), rssMB: float64(u.PeakRSSKiB) / 1024}, nil
}

func report(results []result, partitions int32) {
	type key struct{ c, d string }
	groups := map[key][]result{}
	var order []key
	for _, r := range results {
		k := key{r.contender, r.dataset.name}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	median := func(rs []result, f func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	fmt.Printf("\nmirrorctl vs a bare franz-go pipe, embedded clusters, %d partitions, %s, %d CPUs, %s\n\n",
		partitions, runtime.Version(), runtime.NumCPU(), time.Now().Format("2006-01-02"))
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "CONTENDER\tDATA\tRECORDS\tSECONDS\tRECORDS/S\tMB/S\tCPU S\tPEAK RSS MB\tVS PIPE")
	pipeRate := map[string]float64{}
	for _, k := range order {
		rs := groups[k]
		ds := rs[0].dataset
		secs := median(rs, func(r result) float64 { return r.seconds })
		rate := float64(ds.records) / secs
		if strings.HasPrefix(k.c, "bare") {
			pipeRate[k.d] = rate
		}
		vs := "-"
		if p := pipeRate[k.d]; p > 0 && !strings.HasPrefix(k.c, "bare") {
			vs = fmt.Sprintf("%.0f%%", 100*rate/p)
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%.2f\t%.0f\t%.1f\t%.2f\t%.0f\t%s\n", k.c, k.d, ds.records, secs, rate,
			rate*float64(ds.size)/1e6, median(rs, func(r result) float64 { return r.cpu }),
			median(rs, func(r result) float64 { return r.rssMB }), vs)
	}
	w.Flush()
}

func deleteTopics(ctx context.Context, addrs string, topics ...string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(addrs, ",")...))
	if err != nil {
		return err
	}
	defer cl.Close()
	_, err = kadm.NewClient(cl).DeleteTopics(ctx, topics...)
	return err
}

func createTopic(ctx context.Context, addrs, topic string, partitions int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(addrs, ",")...))
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	return err
}

// seed writes ds to topic, spread evenly over its partitions, with keys and
// one header per record.
func seed(ctx context.Context, addrs, topic string, partitions int32, ds dataset) error {
	if err := createTopic(ctx, addrs, topic, partitions); err != nil {
		return err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(addrs, ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedRecords(100_000))
	if err != nil {
		return err
	}
	defer cl.Close()
	rng := rand.New(rand.NewPCG(uint64(ds.records), uint64(ds.size)))
	payload := make([]byte, 1<<20)
	for i := range payload {
		payload[i] = byte('a' + rng.IntN(26))
	}
	errc := make(chan error, 1)
	for i := 0; i < ds.records; i++ {
		off := rng.IntN(len(payload) - ds.size)
		r := &kgo.Record{
			Topic: topic, Partition: int32(i) % partitions,
			Key:     []byte(fmt.Sprintf("key-%d", i%10_000)),
			Value:   payload[off : off+ds.size],
			Headers: []kgo.RecordHeader{{Key: "bench", Value: []byte("1")}},
		}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

// pipeMain is the bare pipe (see package pipe).
func pipeMain(args []string) error { return pipe.Main(context.Background(), args, 8) }
