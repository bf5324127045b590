// Command perfattr says whose code a process's CPU samples were spent in, so
// two profiles of the same load (one mirrorctl process against three, say)
// can be compared part by part: mirrorctl's own code, franz-go, compression,
// CRC, the Go runtime's garbage collector and scheduler, and the rest.
//
//	perf record -a -g -F 499 -o one.data -- go run ./bench/kafka ...
//	perf script -i one.data --comm mirrorctl -F comm,ip,sym > one.txt
//	go run ./bench/perfattr one.txt three.txt
//
// where the bench runs one contender at a fixed load, e.g. `-only mirrorctl
// -match '^mirrorctl --once, topic exists$' -runs 0 -warmup 0
// -scale-double=false -latency 20s -latency-runs 3 -latency-rate 60000`
// (and `-match 'x3 processes'` for three.data). The columns are named after
// the files; to sum several profiles, join their perf script outputs into
// one file.
//
// Input is `perf script -F comm,ip,sym` output: a line naming the command
// per sample, then one tab-indented "ip symbol" line per frame, leaf first.
// Each sample goes to the innermost frame that belongs to an application
// package (a Go runtime function called by mirrorctl, an allocation say, is
// mirrorctl's); a sample with no such frame goes to the runtime part its
// frames name (GC before scheduler), else to "other". Only samples whose
// command is -comm count; a file with none of them is an error (exit 1).
//
// The table has one column of sample counts per file, and for every file
// after the first its count over the first file's, per part, and that ratio
// over crc32's (see write). The ratios mean CPU per record only when every
// profile covered the same records (the bench with the same -latency-rate,
// -latency and -latency-runs).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
)

// parts are the categories in report order.
var parts = []string{"mirrorctl", "franz-go", "compression", "crc32", "runtime: GC", "runtime: scheduler", "network and syscalls", "other"}

// appPrefixes map a frame's symbol prefix to its application part; the
// first frame (from the leaf) with one of them owns the sample.
var appPrefixes = []struct{ prefix, part string }{
	{"github.com/mirrorctl/mirrorctl/", "mirrorctl"},
	{"github.com/twmb/franz-go/", "franz-go"},
	{"github.com/klauspost/", "compression"},
	{"github.com/pierrec/lz4", "compression"},
	{"compress/", "compression"},
	{"hash/crc32", "crc32"},
}

// runtimePrefixes name, for a sample without an application frame, the
// runtime part any of its frames belongs to; GC is checked first, since a
// GC worker runs on a scheduler stack.
var runtimePrefixes = []struct {
	part     string
	prefixes []string
}{
	{"runtime: GC", []string{"runtime.gcBgMarkWorker", "runtime.gcDrain", "runtime.bgsweep", "runtime.bgscavenge", "runtime.gcStart", "runtime.markroot", "runtime.gcMarkDone", "runtime.gcMarkTermination"}},
	{"runtime: scheduler", []string{"runtime.schedule", "runtime.findRunnable", "runtime.park_m", "runtime.goschedImpl", "runtime.sysmon", "runtime.stopm", "runtime.startm", "runtime.wakep", "runtime.mstart", "runtime.notesleep", "runtime.futex"}},
	{"network and syscalls", []string{"net.", "internal/poll.", "syscall.", "runtime.netpoll"}},
}

// classify returns the part a sample with these frames (leaf first) is
// counted in.
func classify(frames []string) string {
	for _, f := range frames {
		for _, a := range appPrefixes {
			if strings.HasPrefix(f, a.prefix) {
				return a.part
			}
		}
	}
	for _, r := range runtimePrefixes {
		for _, f := range frames {
			for _, p := range r.prefixes {
				if strings.HasPrefix(f, p) {
					return r.part
				}
			}
		}
	}
	return "other"
}

// count reads perf script output from r and returns the samples of command
// comm per part. It returns an error for a frame line before any sample
// line, for input with no sample of comm, or a read error.
func count(r io.Reader, comm string) (map[string]int, error) {
	out := map[string]int{}
	var (
		frames []string
		in     bool // the current sample is comm's
		seen   bool // a sample line was read
	)
	flush := func() {
		if in {
			out[classify(frames)]++
		}
		frames = frames[:0]
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		l := sc.Text()
		switch {
		case strings.TrimSpace(l) == "":
			continue
		case l[0] == '\t' || l[0] == ' ':
			if !seen {
				return nil, fmt.Errorf("line %d: a frame before any sample line (want `perf script -F comm,ip,sym` output)", line)
			}
			f := strings.Fields(l)
			if len(f) < 2 {
				continue // an address without a symbol
			}
			sym := strings.Join(f[1:], " ")
			if i := strings.LastIndex(sym, "+0x"); i > 0 {
				sym = sym[:i]
			}
			frames = append(frames, sym)
		default:
			flush()
			seen = true
			in = strings.TrimSpace(l) == comm
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		// A wrong -comm, or a sample line that is not the bare command
		// name (perf script run with other -F fields), would otherwise
		// print a table of zeros.
		return nil, fmt.Errorf("no samples of command %q (want `perf script -F comm,ip,sym` output; see -comm)", comm)
	}
	return out, nil
}

func main() {
	comm := flag.String("comm", "mirrorctl", "count only the samples of this command name")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: perfattr [-comm NAME] FILE... (perf script -F comm,ip,sym output; - is stdin)")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	var counts []map[string]int
	for _, name := range flag.Args() {
		var r io.Reader = os.Stdin
		if name != "-" {
			f, err := os.Open(name)
			if err != nil {
				fmt.Fprintln(os.Stderr, "perfattr:", err)
				os.Exit(1)
			}
			defer f.Close()
			r = f
		}
		c, err := count(r, *comm)
		if err != nil {
			fmt.Fprintf(os.Stderr, "perfattr: %s: %v\n", name, err)
			os.Exit(1)
		}
		counts = append(counts, c)
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	write(w, flag.Args(), counts)
	w.Flush()
}

// write prints the table: a row per part and a total, the samples per file,
// and for each later file its samples over the first's, and that ratio over
// crc32's ratio. CRC-32C is computed over the same bytes whatever the number
// of processes, so crc32's ratio is how much more CPU time the same work took
// in the later profile (other processes sharing the cores and caches); a
// part whose ratio over it is near 1 did no more work per record.
func write(w io.Writer, names []string, counts []map[string]int) {
	fmt.Fprint(w, "PART\t")
	for i, n := range names {
		fmt.Fprintf(w, "%s\t", n)
		if i > 0 {
			fmt.Fprintf(w, "VS %s\tOVER CRC32'S\t", names[0])
		}
	}
	fmt.Fprintln(w)
	ratio := func(a, b int) (float64, bool) { return float64(a) / float64(b), a > 0 && b > 0 }
	row := func(label string, get func(map[string]int) int) {
		fmt.Fprintf(w, "%s\t", label)
		for i, c := range counts {
			fmt.Fprintf(w, "%d\t", get(c))
			if i == 0 {
				continue
			}
			r, ok := ratio(get(c), get(counts[0]))
			if !ok {
				fmt.Fprint(w, "-\t-\t")
				continue
			}
			fmt.Fprintf(w, "%.2f\t", r)
			if crc, ok := ratio(c["crc32"], counts[0]["crc32"]); ok {
				fmt.Fprintf(w, "%.2f\t", r/crc)
			} else {
				fmt.Fprint(w, "-\t")
			}
		}
		fmt.Fprintln(w)
	}
	for _, p := range parts {
		row(p, func(c map[string]int) int { return c[p] })
	}
	row("all", func(c map[string]int) int {
		n := 0
		for _, v := range c {
			n += v
		}
		return n
	})
}
