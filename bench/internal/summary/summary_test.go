package summary

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestBlockRoundTrip(t *testing.T) {
	s := Summary{SchemaVersion: SchemaVersion, Date: "2026-12-06", Kafka: "4.3.1", Partitions: 16, Runs: 2,
		Throughput: []ThroughputRow{{Contender: "mirrorctl --once", Data: "mix", Records: 500_000, RecordsPerSec: 104_611.5, VsPipe: 0.32, Grade: NotMet}},
		Latency:    &LatencyPhase{RateAsked: 80_000, DurationSeconds: 20, Rows: []LatencyRow{{Contender: "x", P99Ms: 121.5}}},
		Grades:     []Grade{{Goal: "g", Contender: "mirrorctl --once", Data: "mix", Grade: Suspect, Reason: "why"}}}
	block, err := Block(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse([]byte("# title\n\n```\nother block\n```\n\n" + block + "\ntext after\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, s)
	}
}

func TestParseRefuses(t *testing.T) {
	good, _ := Block(Summary{SchemaVersion: SchemaVersion, Date: "2026-12-06"})
	for name, tc := range map[string]struct {
		text string
		want string
	}{
		"none":          {"# results\n```\nx\n```\n", "no machine-readable summary block"},
		"two":           {good + good, "two summary blocks"},
		"not closed":    {"```" + BlockTag + "\n{}\n", "not closed"},
		"bad json":      {"```" + BlockTag + "\n{\"schema_version\": \n```\n", "the summary block"},
		"other version": {"```" + BlockTag + "\n{\"schema_version\": 2, \"date\": \"x\"}\n```\n", "schema_version 2"},
		"no date":       {"```" + BlockTag + "\n{\"schema_version\": 1}\n```\n", "no date"},
	} {
		_, err := Parse([]byte(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tc.want)
		}
		if name == "none" && !errors.Is(err, ErrNoBlock) {
			t.Errorf("none: %v is not ErrNoBlock", err)
		}
	}
}

func TestWorst(t *testing.T) {
	order := []string{"", Met, NotMeasured, NotMet, Suspect}
	for i, a := range order {
		for j, b := range order {
			want := order[max(i, j)]
			if got := Worst(a, b); got != want {
				t.Errorf("Worst(%q, %q) = %q, want %q", a, b, got, want)
			}
		}
	}
}
