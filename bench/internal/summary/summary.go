// Package summary is the machine-readable block that `make bench-kafka`
// (bench/kafka) writes into each results file, bench/results/<date>*.md,
// and that `go run ./bench/readme` reads to write README.md's performance
// table. The block is one fenced code block whose info string is
// BlockTag, holding a Summary as indented JSON:
//
//	```json mirrorctl-bench-summary
//	{"schema_version": 1, ...}
//	```
//
// A results file holds at most one. Fields are only added, never renamed
// or removed; SchemaVersion changes when a reader must tell two shapes
// apart.
package summary

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// SchemaVersion is the version of the Summary shape this package writes.
const SchemaVersion = 1

// BlockTag is the info string of the fenced code block that holds the
// summary in a results file.
const BlockTag = "json mirrorctl-bench-summary"

// Summary is one bench-kafka invocation: what ran, on what, and its
// figures and grades.
type Summary struct {
	SchemaVersion int `json:"schema_version"`
	// Date is the UTC day the run ended, YYYY-MM-DD.
	Date string `json:"date"`
	// Written is when the results were written, RFC 3339, UTC.
	Written string `json:"written"`
	// Kafka is the brokers' and MM2's Kafka version.
	Kafka string `json:"kafka"`
	// Machine describes the host: CPUs, memory, kernel, Go and Java.
	Machine string `json:"machine"`
	// Args are the bench's command-line arguments.
	Args []string `json:"args"`
	// Note is what the operator said about the run (-note), e.g. that it
	// shared its CPUs with other work; empty when nothing was said.
	Note       string `json:"note,omitempty"`
	Partitions int    `json:"partitions"`
	// Runs is the measured throughput runs per contender and data set.
	Runs int `json:"runs"`
	// Failed lists the contenders that failed a run, "contender:
	// failure"; they ran no more, so their rows hold only the runs before
	// it, or none.
	Failed     []string        `json:"failed,omitempty"`
	Throughput []ThroughputRow `json:"throughput"`
	Latency    *LatencyPhase   `json:"latency,omitempty"`
	Grades     []Grade         `json:"grades"`
}

// ThroughputRow is one contender on one data set in the throughput phase:
// medians of its runs, with the spread of its records/s.
type ThroughputRow struct {
	Contender string `json:"contender"`
	// Kind is "mm2", "mirrorctl" or "pipe".
	Kind string `json:"kind"`
	// ExactlyOnce: exactly.once.source.support = enabled.
	ExactlyOnce bool `json:"exactly_once"`
	// TopicExists: the remote topic was created before the window opened;
	// false means the contender created it inside its window.
	TopicExists bool `json:"topic_exists"`
	// Processes sharing the flow (1 for a single process and for MM2).
	Processes int `json:"processes"`
	// Baseline: the -baseline build of a mirrorctl contender.
	Baseline bool   `json:"baseline,omitempty"`
	Data     string `json:"data"`
	Records  int    `json:"records"`
	Runs     int    `json:"runs"`
	// Seconds is the median wall time of the window.
	Seconds float64 `json:"seconds"`
	// RecordsPerSec is records over the median seconds; Min and Max the
	// slowest and fastest run's.
	RecordsPerSec    float64 `json:"records_per_sec"`
	RecordsPerSecMin float64 `json:"records_per_sec_min"`
	RecordsPerSecMax float64 `json:"records_per_sec_max"`
	CPUSeconds       float64 `json:"cpu_seconds"`
	PeakRSSMiB       float64 `json:"peak_rss_mib"`
	// VsPipe is RecordsPerSec over the bare pipe's on the same data; 0
	// where the pipe did not run (and for the pipe itself).
	VsPipe float64 `json:"vs_pipe"`
	// VsMM2 is RecordsPerSec over that of the MM2 contender doing the same
	// work (see Peer); 0 where there is none.
	VsMM2 float64 `json:"vs_mm2"`
	// Peer names the MM2 contender VsMM2 and RSSVsMM2 compare with.
	Peer string `json:"mm2_peer,omitempty"`
	// RSSVsMM2 is PeakRSSMiB over the peer's; 0 where there is none.
	RSSVsMM2 float64 `json:"rss_vs_mm2"`
	// Grade is the worst grade of the goals graded on this row ("" when
	// none is): see Grade.Grade.
	Grade string `json:"grade,omitempty"`
}

// LatencyPhase is the continuous-mode phase: the load it ran at and over
// which window, and each contender's figures.
type LatencyPhase struct {
	// RateAsked is the records/s the load producer was asked for;
	// RateFrom says where that figure came from.
	RateAsked float64 `json:"rate_asked"`
	RateFrom  string  `json:"rate_from"`
	// DurationSeconds is how long the load ran.
	DurationSeconds float64 `json:"duration_seconds"`
	// WarmupSeconds: copies of records sent in the load's first
	// WarmupSeconds are left out of the percentiles (0: none left out).
	// The per-partition warm-up records sent before the load are never in
	// them.
	WarmupSeconds float64 `json:"warmup_seconds"`
	// Runs per contender.
	Runs int          `json:"runs"`
	Rows []LatencyRow `json:"rows"`
}

// LatencyRow is one contender's latency: medians over its runs.
type LatencyRow struct {
	Contender string `json:"contender"`
	Runs      int    `json:"runs"`
	// RateOffered is the records/s the load producer achieved (records
	// sent over the load's duration).
	RateOffered float64 `json:"rate_offered"`
	Sent        float64 `json:"sent"`
	Received    float64 `json:"received"`
	P50Ms       float64 `json:"p50_ms"`
	P99Ms       float64 `json:"p99_ms"`
	P99MsMin    float64 `json:"p99_ms_min"`
	P99MsMax    float64 `json:"p99_ms_max"`
	MaxMs       float64 `json:"max_ms"`
	// CPUMicrosPerRecord is the CPU of the contender's processes over the
	// records sent, µs; 0 where it could not be read.
	CPUMicrosPerRecord float64 `json:"cpu_us_per_record"`
}

// Grade is one goal checked on one contender (and data set).
type Grade struct {
	Goal      string `json:"goal"`
	Contender string `json:"contender"`
	Data      string `json:"data,omitempty"`
	// Value is the measured figure, as the report prints it.
	Value     string `json:"value"`
	Threshold string `json:"threshold"`
	// Grade is "met", "NOT met", "suspect" (the figure beats a bound it
	// cannot beat by more than the runs' spread: not graded) or "not
	// measured" (the run did not measure it as the goal asks).
	Grade  string `json:"grade"`
	Reason string `json:"reason,omitempty"`
}

// Grades, from best to worst as Worst orders them.
const (
	Met         = "met"
	NotMet      = "NOT met"
	Suspect     = "suspect"
	NotMeasured = "not measured"
)

// Worst returns the worse of two grades: suspect over NOT met over not
// measured over met; "" (no grade) loses to any.
func Worst(a, b string) string {
	rank := map[string]int{"": 0, Met: 1, NotMeasured: 2, NotMet: 3, Suspect: 4}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// Block renders s as the fenced block a results file carries.
func Block(s Summary) (string, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return "", err
	}
	return "```" + BlockTag + "\n" + string(b) + "\n```\n", nil
}

// ErrNoBlock is returned by Parse for a results file without a summary
// block.
var ErrNoBlock = errors.New("no machine-readable summary block (a fenced block tagged `" + BlockTag + "`)")

// Parse finds the summary block in a results file's text and decodes it.
// It returns ErrNoBlock when there is none, and an error when there are
// two, when the block is not closed, when its JSON does not decode
// (fields it does not know are ignored: they are only ever added), or when its schema_version is not one this
// package reads.
func Parse(text []byte) (Summary, error) {
	open := []byte("```" + BlockTag + "\n")
	i := bytes.Index(text, open)
	if i < 0 {
		return Summary{}, ErrNoBlock
	}
	if bytes.Contains(text[i+len(open):], open) {
		return Summary{}, errors.New("two summary blocks")
	}
	body := text[i+len(open):]
	end := bytes.Index(body, []byte("\n```"))
	if end < 0 {
		return Summary{}, errors.New("the summary block is not closed")
	}
	var s Summary
	if err := json.Unmarshal(body[:end], &s); err != nil {
		return Summary{}, fmt.Errorf("the summary block: %w", err)
	}
	if s.SchemaVersion != SchemaVersion {
		return Summary{}, fmt.Errorf("the summary block has schema_version %d; this reader knows %d", s.SchemaVersion, SchemaVersion)
	}
	if strings.TrimSpace(s.Date) == "" {
		return Summary{}, errors.New("the summary block has no date")
	}
	return s, nil
}
