// Command readme writes README.md's performance table from the newest
// results file of `make bench-kafka`, so the README can only quote figures
// a results file holds.
//
//	go run ./bench/readme          # rewrite the table (make perf-table)
//	go run ./bench/readme -check   # exit 3 when README.md's table is stale (make perf-table-check)
//
// The results files are bench/results/<date>*.md; the newest is the one
// whose name, without ".md", sorts last (names start with the run's UTC
// date, YYYY-MM-DD). It must hold the machine-readable summary block that
// bench/kafka writes (package bench/internal/summary); <date>-scale.md
// files are bench/scale's (make bench-scale), whose figures the table does
// not quote, and are passed over. A newest file
// without one is refused with an error naming it, never passed over for
// an older one, because the table would then quote an older engine than
// the newest results. -results names another file.
//
// The table replaces every byte between README.md's lines BeginMarker and
// EndMarker; nothing else in the file changes. Exit codes: 0 written (or
// up to date), 1 an error (no results file, a file refused, markers
// missing), 2 a usage error, 3 -check found the table stale.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/mirrorctl/mirrorctl/bench/internal/summary"
)

// The marker lines around the generated table in README.md.
const (
	BeginMarker = "<!-- BEGIN GENERATED: performance table (go run ./bench/readme; do not edit) -->"
	EndMarker   = "<!-- END GENERATED: performance table -->"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is the command with its arguments and streams; it returns the exit
// code.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("readme", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", filepath.Join("bench", "results"), "the `directory` of the results files")
	results := fs.String("results", "", "the results `file` to read (default: the newest in -dir)")
	readme := fs.String("readme", "README.md", "the README `file` whose table is written")
	check := fs.Bool("check", false, "write nothing; exit 3 when the README's table differs from what would be written")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "readme: unexpected arguments %q\n", fs.Args())
		return 2
	}
	err := generate(*dir, *results, *readme, *check, stdout)
	var stale staleError
	switch {
	case errors.As(err, &stale):
		fmt.Fprintln(stderr, "readme:", err)
		return 3
	case err != nil:
		fmt.Fprintln(stderr, "readme:", err)
		return 1
	}
	return 0
}

// staleError is -check's finding: the README's table is not what the
// results file gives.
type staleError struct{ readme, results string }

func (e staleError) Error() string {
	return fmt.Sprintf("%s's performance table is stale (it is not what %s gives): run `make perf-table` and commit it", e.readme, e.results)
}

// generate writes (or with check, compares) readme's table from the
// results file (the newest in dir when results is "").
func generate(dir, results, readme string, check bool, stdout io.Writer) error {
	if results == "" {
		var err error
		if results, err = Newest(dir); err != nil {
			return err
		}
	}
	s, err := Load(results)
	if err != nil {
		return err
	}
	old, err := os.ReadFile(readme)
	if err != nil {
		return err
	}
	out, err := Replace(old, Table(filepath.ToSlash(results), s))
	if err != nil {
		return fmt.Errorf("%s: %w", readme, err)
	}
	if check {
		if !bytes.Equal(old, out) {
			return staleError{readme, results}
		}
		fmt.Fprintf(stdout, "%s's performance table is up to date with %s\n", readme, results)
		return nil
	}
	if bytes.Equal(old, out) {
		fmt.Fprintf(stdout, "%s's performance table already is %s's\n", readme, results)
		return nil
	}
	if err := os.WriteFile(readme, out, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s's performance table from %s\n", readme, results)
	return nil
}

// resultsName matches a results file's name: the run's date first.
var resultsName = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}.*\.md$`)

// scaleName matches bench/scale's results files, which are not bench/kafka's.
var scaleName = regexp.MustCompile(`-scale\.md$`)

// Newest returns the path of the results file in dir whose name, without
// ".md", sorts last; an error when dir holds none.
func Newest(dir string) (string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() && resultsName.MatchString(e.Name()) && !scaleName.MatchString(e.Name()) {
			names = append(names, strings.TrimSuffix(e.Name(), ".md"))
		}
	}
	if len(names) == 0 {
		return "", fmt.Errorf("%s holds no results file (<date>*.md)", dir)
	}
	sort.Strings(names)
	return filepath.Join(dir, names[len(names)-1]+".md"), nil
}

// Load reads a results file's summary block. A file without one is an
// error naming the file: the generator never guesses figures from the
// prose.
func Load(path string) (summary.Summary, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return summary.Summary{}, err
	}
	s, err := summary.Parse(b)
	if errors.Is(err, summary.ErrNoBlock) {
		return summary.Summary{}, fmt.Errorf("%s is refused: it has %w; run `make bench-kafka` (which writes one) or name another file with -results", path, err)
	}
	if err != nil {
		return summary.Summary{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Replace returns readme with the text between its BeginMarker and
// EndMarker lines replaced by table; every other byte is kept. Each marker
// must be a whole line of its own, once, the begin before the end.
func Replace(readme []byte, table string) ([]byte, error) {
	begin, err := markerLine(readme, BeginMarker)
	if err != nil {
		return nil, err
	}
	end, err := markerLine(readme, EndMarker)
	if err != nil {
		return nil, err
	}
	if end < begin {
		return nil, errors.New("the END marker comes before the BEGIN marker")
	}
	from := begin + len(BeginMarker) + 1 // past the begin line's newline
	var out bytes.Buffer
	out.Write(readme[:from])
	out.WriteString(table)
	out.Write(readme[end:])
	return out.Bytes(), nil
}

// markerLine returns the offset of the one line of readme that is marker.
func markerLine(readme []byte, marker string) (int, error) {
	at := -1
	for off := 0; off < len(readme); {
		line, _, _ := bytes.Cut(readme[off:], []byte("\n"))
		if string(line) == marker {
			if at >= 0 {
				return 0, fmt.Errorf("the line %q appears twice", marker)
			}
			at = off
		}
		off += len(line) + 1
	}
	if at < 0 {
		return 0, fmt.Errorf("no line %q", marker)
	}
	if at+len(marker) >= len(readme) {
		return 0, fmt.Errorf("the line %q ends the file without a newline", marker)
	}
	return at, nil
}

// Table renders s, read from the results file named name, as README.md's
// performance table: a line naming the file, its date and how it ran;
// one row per single-process contender and data set (baseline builds left
// out): records/s against the bare pipe and against MM2 doing the same
// work, peak RSS, and the worst grade of the goals graded on the row;
// then the continuous mode's p99 at the load it ran, when measured.
func Table(name string, s summary.Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nFrom [%s](%s), run %s: Kafka %s, %d partitions, %d runs per contender (medians)", filepath.Base(name), name, s.Date,
		s.Kafka, s.Partitions, s.Runs)
	if s.Note != "" {
		fmt.Fprintf(&b, ". %s", strings.TrimSuffix(strings.TrimSpace(s.Note), "."))
	}
	b.WriteString(". \"vs MM2\" compares with the MM2 contender doing the same work; grades, their thresholds and reasons are in the results file.\n\n")
	if len(s.Failed) > 0 {
		fmt.Fprintf(&b, "**Failed in this run** (rows missing or incomplete): %s.\n\n", strings.Join(s.Failed, "; "))
	}
	b.WriteString("| Contender | Data | vs pipe | vs MM2 | Peak RSS | Grade |\n|---|---|--:|--:|--:|---|\n")
	for _, r := range s.Throughput {
		if r.Baseline || r.Processes > 1 {
			continue
		}
		vsPipe, vsMM2, rss := "-", "-", fmt.Sprintf("%.0f MiB", r.PeakRSSMiB)
		if r.VsPipe > 0 {
			vsPipe = fmt.Sprintf("%.0f%%", 100*r.VsPipe)
		}
		if r.VsMM2 > 0 {
			vsMM2 = fmt.Sprintf("%.1f× %s", r.VsMM2, r.Peer)
			rss += fmt.Sprintf(" (%.2f of %s's)", r.RSSVsMM2, r.Peer)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", r.Contender, r.Data, vsPipe, vsMM2, rss, orDash(r.Grade))
	}
	if l := s.Latency; l != nil && len(l.Rows) > 0 {
		window := "every copy of the load's records"
		if l.WarmupSeconds > 0 {
			window = fmt.Sprintf("the first %.0f s left out", l.WarmupSeconds)
		}
		fmt.Fprintf(&b, "\nContinuous mode, mixed records at %.0f records/s asked (%s) for %.0f s, %s, %d run(s):\n\n",
			l.RateAsked, l.RateFrom, l.DurationSeconds, window, l.Runs)
		b.WriteString("| Contender | Offered rec/s | Received / sent | p99 | Grade |\n|---|--:|--:|--:|---|\n")
		for _, r := range l.Rows {
			g := ""
			for _, gr := range s.Grades {
				if gr.Contender == r.Contender && gr.Data == "" {
					g = summary.Worst(g, gr.Grade)
				}
			}
			fmt.Fprintf(&b, "| %s | %.0f | %.0f / %.0f | %.0f ms | %s |\n", r.Contender, r.RateOffered, r.Received, r.Sent, r.P99Ms, orDash(g))
		}
	}
	b.WriteString("\n")
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
