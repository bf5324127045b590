package replicate_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	replicatecmd "github.com/mirrorctl/mirrorctl/internal/cli/replicate"
	"github.com/mirrorctl/mirrorctl/internal/testkit"
	lagengine "github.com/mirrorctl/mirrorctl/lag"
)

type lagDoc struct {
	Flows []lagengine.FlowLag `json:"flows"`
}

// Records deleted on the source before they were copied: `replicate --once`
// exits 3 naming topic, partition and offsets, copies on from the log start,
// counts them in -o json, and `lag` shows the partition's state as gap; with
// us-east.consumer.auto.offset.reset = none the partition stops instead and
// lag says stopped.
func TestOnceGapExitsThree(t *testing.T) {
	for _, none := range []bool{false, true} {
		t.Run(fmt.Sprintf("none=%v", none), func(t *testing.T) {
			extra := ""
			if none {
				extra = "us-east.consumer.auto.offset.reset = none\n"
			}
			e := newEnv(t, extra)
			topic := testkit.Name("gapcli")
			createTopics(t, e.Client(t, "us-east"), 1, topic)
			e.produceN(t, "us-east", topic, 1, 100)
			if code, _, stderr := run(t, "replicate", "--once", "-c", e.config); code != 0 {
				t.Fatalf("first run: exit %d: %s", code, stderr)
			}
			e.produceN(t, "us-east", topic, 1, 200) // values 0..199 again: offsets 100..299
			if err := e.East.DeleteRecords(topic, 0, 250); err != nil {
				t.Fatal(err)
			}
			code, out, stderr := run(t, "replicate", "--once", "-o", "json", "-c", e.config)
			want := fmt.Sprintf("%s[0]: gap: source offsets 100 to 249 (150 records) not copied", topic)
			if code != 3 || !strings.Contains(stderr, want) {
				t.Fatalf("exit %d, stderr %s; want 3 naming %q", code, stderr, want)
			}
			var res replicatecmd.RunResult
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("%v in %s", err, out)
			}
			if len(res.Topics) != 1 || res.Topics[0].Skipped != 150 || len(res.Errors) != 1 || !strings.Contains(res.Errors[0], want) {
				t.Fatalf("result %+v", res)
			}
			copied := values(e.ReadAll(t, "eu-west", "us-east."+topic)[0])
			wantN := 100 + 50
			if none {
				wantN = 100
			}
			if len(copied) != wantN || copied[99] != "p0-000099" || (!none && (copied[100] != "p0-000150" || copied[149] != "p0-000199")) {
				t.Fatalf("target holds %d records (%v...), want %d", len(copied), copied[min(len(copied), 98):min(len(copied), 102)], wantN)
			}
			_, lagOut, _ := run(t, "lag", "-c", e.config, "-o", "json")
			var doc lagDoc
			if err := json.Unmarshal([]byte(lagOut), &doc); err != nil {
				t.Fatalf("%v in %s", err, lagOut)
			}
			var pl *lagengine.PartitionLag
			for i := range doc.Flows[0].Partitions {
				if doc.Flows[0].Partitions[i].SourceTopic == topic {
					pl = &doc.Flows[0].Partitions[i]
				}
			}
			wantState := lagengine.StateGap
			if none {
				wantState = lagengine.StateStopped
			}
			if pl == nil || pl.State != wantState || pl.Skipped != 150 || pl.Loss == nil || pl.Loss.From != 100 || pl.Loss.To != 250 {
				t.Fatalf("lag partition %+v, want state %s with the gap", pl, wantState)
			}
			_, table, _ := run(t, "lag", "-c", e.config)
			if !strings.Contains(table, wantState) {
				t.Fatalf("lag table has no %s state:\n%s", wantState, table)
			}
			// The next run copies nothing and loses nothing more: exit 0
			// (3 again where the partition stays stopped), and the TSV's
			// skipped column still counts the gap (a total).
			code, tsv, stderr := run(t, "replicate", "--once", "-o", "tsv", "-c", e.config)
			if wantCode := map[bool]int{false: 0, true: 3}[none]; code != wantCode {
				t.Fatalf("run after the gap: exit %d, want %d: %s", code, wantCode, stderr)
			}
			lines := strings.Split(strings.TrimSpace(tsv), "\n")
			header := strings.Split(lines[0], "\t")
			if header[len(header)-1] != "skipped" {
				t.Fatalf("TSV header %q, want skipped last", lines[0])
			}
			found := false
			for _, l := range lines[1:] {
				if f := strings.Split(l, "\t"); f[1] == topic {
					found = true
					if f[len(f)-1] != "150" {
						t.Fatalf("TSV row %q, want skipped 150", l)
					}
				}
			}
			if !found {
				t.Fatalf("no TSV row for %s:\n%s", topic, tsv)
			}
		})
	}
}
