package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirrorctl/mirrorctl/bench/internal/summary"
)

// sample is a summary with one row of each kind the table treats apart.
func sample() summary.Summary {
	return summary.Summary{
		SchemaVersion: summary.SchemaVersion, Date: "2026-12-06", Written: "2026-12-06T03:00:00Z", Kafka: "4.3.1",
		Partitions: 16, Runs: 2, Note: "Smoke run on a shared machine.",
		Throughput: []summary.ThroughputRow{
			{Contender: "MM2", Kind: "mm2", Data: "100 B", Records: 2_000_000, RecordsPerSec: 65_000, VsPipe: 0.043, PeakRSSMiB: 2400, Processes: 1},
			{Contender: "mirrorctl --once", Kind: "mirrorctl", Data: "100 B", Records: 2_000_000, RecordsPerSec: 446_000, VsPipe: 0.294,
				VsMM2: 6.86, Peer: "MM2", RSSVsMM2: 0.134, PeakRSSMiB: 321, Processes: 1, Grade: summary.NotMet},
			{Contender: "mirrorctl --once exactly-once", Kind: "mirrorctl", ExactlyOnce: true, Data: "100 B", RecordsPerSec: 1e6,
				VsPipe: 0.67, VsMM2: 20, Peer: "MM2 exactly-once", RSSVsMM2: 0.2, PeakRSSMiB: 539, Processes: 1, Grade: summary.Suspect},
			{Contender: "mirrorctl --once [baseline]", Kind: "mirrorctl", Baseline: true, Data: "100 B", Processes: 1},
			{Contender: "mirrorctl --once x2 processes, topic exists", Kind: "mirrorctl", Data: "100 B", Processes: 2},
			{Contender: "bare franz-go pipe", Kind: "pipe", Data: "100 B", RecordsPerSec: 1.5e6, PeakRSSMiB: 285, Processes: 1, TopicExists: true},
		},
		Latency: &summary.LatencyPhase{RateAsked: 80_000, RateFrom: "the latency goals' load", DurationSeconds: 20, Runs: 1,
			Rows: []summary.LatencyRow{{Contender: "mirrorctl (continuous)", RateOffered: 79_990, Sent: 1_599_800, Received: 1_599_800, P99Ms: 121.4}}},
		Grades: []summary.Grade{{Goal: "continuous p99", Contender: "mirrorctl (continuous)", Value: "p99 121 ms", Threshold: "≤ 300 ms", Grade: summary.Met}},
	}
}

// writeResults writes a results file with s's block (prose around it) to
// dir/name.
func writeResults(t *testing.T, dir, name string, s summary.Summary) string {
	t.Helper()
	block, err := summary.Block(s)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("# results\n\nprose\n\n"+block+"\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const readmeText = "# mirrorctl\n\n## Performance\n\nhand-written text stays.\n\n" + BeginMarker + "\nstale table\n| old | row |\n" +
	EndMarker + "\n\n## Development\n\ntrailing text stays, with a marker-like <!-- line --> too.\n"

func TestTableRows(t *testing.T) {
	got := Table("bench/results/2026-12-06.md", sample())
	for _, want := range []string{
		"From [2026-12-06.md](bench/results/2026-12-06.md), run 2026-12-06: Kafka 4.3.1, 16 partitions, 2 runs per contender (medians). Smoke run on a shared machine. ",
		"| MM2 | 100 B | 4% | - | 2400 MiB | - |\n",
		"| mirrorctl --once | 100 B | 29% | 6.9× MM2 | 321 MiB (0.13 of MM2's) | NOT met |\n",
		"| mirrorctl --once exactly-once | 100 B | 67% | 20.0× MM2 exactly-once | 539 MiB (0.20 of MM2 exactly-once's) | suspect |\n",
		"| bare franz-go pipe | 100 B | - | - | 285 MiB | - |\n",
		"mixed records at 80000 records/s asked (the latency goals' load) for 20 s, every copy of the load's records, 1 run(s):",
		"| mirrorctl (continuous) | 79990 | 1599800 / 1599800 | 121 ms | met |\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Failed") {
		t.Errorf("a failure line without failures:\n%s", got)
	}
	f := sample()
	f.Failed = []string{"MM2 exactly-once: 1 KB run 1: MM2 copied 0 of 500000 records in 10 minutes"}
	if got := Table("r.md", f); !strings.Contains(got, "**Failed in this run** (rows missing or incomplete): MM2 exactly-once: 1 KB run 1: MM2 copied 0 of 500000 records in 10 minutes.\n") {
		t.Errorf("the failure is not in the table:\n%s", got)
	}
	for _, absent := range []string{"[baseline]", "x2 processes"} {
		if strings.Contains(got, absent) {
			t.Errorf("table holds a %s row:\n%s", absent, got)
		}
	}
}

func TestReplaceKeepsEveryOtherByte(t *testing.T) {
	table := "\n| new | table |\n\n"
	out, err := Replace([]byte(readmeText), table)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(readmeText, BeginMarker) + len(BeginMarker) + 1
	j := strings.Index(readmeText, EndMarker)
	want := readmeText[:i] + table + readmeText[j:]
	if string(out) != want {
		t.Fatalf("got\n%q\nwant\n%q", out, want)
	}
	// Replacing again with the same table changes nothing; with another,
	// only the table.
	again, err := Replace(out, table)
	if err != nil || !bytes.Equal(again, out) {
		t.Fatalf("second replace: %v, changed: %v", err, !bytes.Equal(again, out))
	}
	other, err := Replace(out, "x\n")
	if err != nil || string(other) != readmeText[:i]+"x\n"+readmeText[j:] {
		t.Fatalf("replace with another table: %v\n%q", err, other)
	}
}

func TestReplaceRefusesBadMarkers(t *testing.T) {
	for name, text := range map[string]string{
		"no begin":  "a\n" + EndMarker + "\n",
		"no end":    BeginMarker + "\nx\n",
		"two begin": BeginMarker + "\n" + BeginMarker + "\n" + EndMarker + "\n",
		"reversed":  EndMarker + "\nx\n" + BeginMarker + "\n",
		"inline":    "text " + BeginMarker + "\n" + EndMarker + "\n",
	} {
		if _, err := Replace([]byte(text), "t\n"); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestRefusesNewestWithoutBlock: the newest results file has no summary
// block; the generator refuses it by name (exit 1) and does not fall back
// to the older file that has one; the README is left as it was.
func TestRefusesNewestWithoutBlock(t *testing.T) {
	dir := t.TempDir()
	writeResults(t, dir, "2026-12-02.md", sample())
	bare := filepath.Join(dir, "2026-12-05.md")
	if err := os.WriteFile(bare, []byte("# results\n\n```\nCONTENDER ...\n```\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(dir, "README.md")
	if err := os.WriteFile(readme, []byte(readmeText), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if code := run([]string{"-dir", dir, "-readme", readme}, io.Discard, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1; stderr %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), bare+" is refused") || !strings.Contains(stderr.String(), "no machine-readable summary block") {
		t.Errorf("stderr does not name the refused file and why: %s", stderr.String())
	}
	if b, _ := os.ReadFile(readme); string(b) != readmeText {
		t.Errorf("README changed:\n%s", b)
	}
}

func TestNewestSortsByName(t *testing.T) {
	dir := t.TempDir()
	// bench/scale's <date>-scale.md sorts last but is not bench/kafka's.
	for _, n := range []string{"2026-11-29.md", "2026-12-02.md", "2026-12-02-fixedcost.md", "2026-12-01-eos.md", "notes.md", "2026-12-02-scale.md", "2026-12-02-scale.svg"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Newest(dir)
	if err != nil || got != filepath.Join(dir, "2026-12-02-fixedcost.md") {
		t.Fatalf("Newest = %q, %v", got, err)
	}
	if _, err := Newest(t.TempDir()); err == nil {
		t.Error("an empty directory gave no error")
	}
}

// TestCheckDetectsStaleness: write, check ok (0); the results change, check
// finds the table stale (3) and writes nothing; write again, check ok.
func TestCheckDetectsStaleness(t *testing.T) {
	dir := t.TempDir()
	s := sample()
	writeResults(t, dir, "2026-12-06.md", s)
	readme := filepath.Join(dir, "README.md")
	if err := os.WriteFile(readme, []byte(readmeText), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"-dir", dir, "-readme", readme}
	var stderr bytes.Buffer
	if code := run(append(args, "-check"), io.Discard, &stderr); code != 3 {
		t.Fatalf("check before writing: exit %d, want 3 (%s)", code, stderr.String())
	}
	if code := run(args, io.Discard, &stderr); code != 0 {
		t.Fatalf("write: exit %d: %s", code, stderr.String())
	}
	written, _ := os.ReadFile(readme)
	if !strings.Contains(string(written), "| mirrorctl --once | 100 B | 29% |") || strings.Contains(string(written), "stale table") {
		t.Fatalf("README after writing:\n%s", written)
	}
	if code := run(append(args, "-check"), io.Discard, &stderr); code != 0 {
		t.Fatalf("check after writing: exit %d: %s", code, stderr.String())
	}
	s.Throughput[1].VsPipe = 0.81
	writeResults(t, dir, "2026-12-06.md", s)
	stderr.Reset()
	if code := run(append(args, "-check"), io.Discard, &stderr); code != 3 {
		t.Fatalf("check after the results changed: exit %d, want 3", code)
	}
	if !strings.Contains(stderr.String(), "stale") {
		t.Errorf("stderr: %s", stderr.String())
	}
	if b, _ := os.ReadFile(readme); !bytes.Equal(b, written) {
		t.Error("-check wrote the README")
	}
	if code := run(args, io.Discard, &stderr); code != 0 {
		t.Fatal("second write failed")
	}
	if b, _ := os.ReadFile(readme); !strings.Contains(string(b), "| mirrorctl --once | 100 B | 81% |") {
		t.Errorf("README after the second write:\n%s", b)
	}
}

func TestUsage(t *testing.T) {
	if code := run([]string{"extra"}, io.Discard, io.Discard); code != 2 {
		t.Errorf("an argument: exit %d, want 2", code)
	}
	if code := run([]string{"-bogus"}, io.Discard, io.Discard); code != 2 {
		t.Errorf("an unknown flag: exit %d, want 2", code)
	}
}
