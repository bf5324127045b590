package failover

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/mirrorctl/mirrorctl/failover"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/output"
)

// renderSizes are the sizes of BenchmarkRenderUnplannedPlan: groups ×
// partitions rows. The largest is issue #31's 1,000 groups over 10,000
// partitions (10 million rows, some 7 GB of JSON); its synthetic procedure
// alone holds some 4 GB: run it with -benchtime=1x.
var renderSizes = []struct{ groups, partitions int }{{1000, 100}, {1000, 1000}, {1000, 10000}}

// BenchmarkRenderUnplannedPlan writes `failover plan --type unplanned`'s
// output for a synthetic procedure of groups × partitions rows (each row
// to commit, with its bound) to io.Discard, as -o json and as the table
// off a terminal (tab-separated): the output's cost apart from Kafka and
// from deciding the plan (failover's BenchmarkUnplannedPlanRows). The
// procedure is built before the timer starts. rows/s is plan rows per
// second.
func BenchmarkRenderUnplannedPlan(b *testing.B) {
	for _, size := range renderSizes {
		proc := (*failover.Procedure)(nil)
		for _, format := range []output.Format{output.FormatJSON, output.FormatTable} {
			b.Run(fmt.Sprintf("groups=%d/partitions=%d/o=%s", size.groups, size.partitions, format), func(b *testing.B) {
				if proc == nil {
					proc = syntheticProcedure(size.groups, size.partitions)
				}
				ios, _, _, _ := iostreams.Test()
				ios.Out = io.Discard
				v := &verb{Options: &Options{IO: ios, Output: func() output.Format { return format }}}
				b.ResetTimer()
				for b.Loop() {
					var err error
					if format == output.FormatJSON {
						err = writeVerbResultJSON(io.Discard, proc, nil, nil)
					} else {
						err = v.renderTables(proc)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(size.groups*size.partitions)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			})
		}
		proc = nil
	}
}

// syntheticProcedure is an unplanned failover's procedure as Prepare
// returns it for groups each with a checkpoint on every one of partitions
// partitions (topics of 10 partitions), every row to commit.
func syntheticProcedure(groups, partitions int) *failover.Procedure {
	seen := time.Date(2026, 12, 6, 4, 0, 0, 123456789, time.UTC)
	plan := &failover.Plan{Direction: failover.Failover, Source: "us-east", Target: "eu-west", Mode: failover.ModeCheckpoint}
	proc := &failover.Procedure{Type: failover.TypeUnplanned, Plans: []*failover.Plan{plan}, Bounds: make([]failover.Bound, 0, groups*partitions)}
	five := int64(5)
	for g := range groups {
		gp := failover.GroupPlan{Group: fmt.Sprintf("g-%05d", g), State: "absent", Summary: fmt.Sprintf("group g-%05d: would commit %d", g, partitions),
			Incomplete: []string{}, Partitions: make([]failover.PartitionPlan, partitions)}
		for p := range partitions {
			src := fmt.Sprintf("grp-%05d", p/10)
			gp.Partitions[p] = failover.PartitionPlan{Translation: failover.Translation{SourceTopic: src, Topic: "us-east." + src, Partition: int32(p % 10),
				SourceOffset: &five, TargetOffset: &five, Mode: failover.ModeCheckpoint}, Action: failover.ActionCommit}
			proc.Bounds = append(proc.Bounds, failover.Bound{Group: gp.Group, SourceTopic: src, Partition: int32(p % 10), Checkpoint: 5, Committed: 5,
				TargetEnd: 10, Copied: 10, SourceEnd: 10, SeenAt: seen, RereadMax: 5, NotMirroredMin: 0})
		}
		plan.Groups = append(plan.Groups, gp)
	}
	proc.RPO.How = "a bound"
	return proc
}
