package lag

import (
	"fmt"
	"io"
	"testing"

	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/output"
	lagengine "github.com/mirrorctl/mirrorctl/lag"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// renderSizes are the sizes of BenchmarkRenderLag: groups × partitions.
// The largest is issue #31's 1,000 groups over 10,000 partitions: 10
// million group partitions in the JSON document (the table has a row per
// partition and per group only); its synthetic result holds some 1 GB: run
// it with -benchtime=1x.
var renderSizes = []struct{ groups, partitions int }{{1000, 100}, {1000, 1000}, {1000, 10000}}

// BenchmarkRenderLag writes `lag`'s output for a synthetic result of one
// flow, partitions partitions and groups groups checkpointed on every one,
// to io.Discard, as -o json and as the tables off a terminal: the output's
// cost apart from Kafka and from the rows' compute (lag's
// BenchmarkGroupRows). rows/s is group partitions per second.
func BenchmarkRenderLag(b *testing.B) {
	for _, size := range renderSizes {
		var res *Result
		for _, format := range []output.Format{output.FormatJSON, output.FormatTable} {
			b.Run(fmt.Sprintf("groups=%d/partitions=%d/o=%s", size.groups, size.partitions, format), func(b *testing.B) {
				if res == nil {
					res = syntheticResult(size.groups, size.partitions)
				}
				ios, _, _, _ := iostreams.Test()
				ios.Out = io.Discard
				opts := &Options{IO: ios, Output: func() output.Format { return format }}
				b.ResetTimer()
				for b.Loop() {
					var err error
					if format == output.FormatJSON {
						err = writeResultJSON(io.Discard, *res)
					} else {
						err = renderTables(io.Discard, opts, *res)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(size.groups*size.partitions)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}

func syntheticResult(groups, partitions int) *Result {
	zero, age := int64(0), int64(1200)
	fl := lagengine.FlowLag{Source: "us-east", Target: "eu-west", HeartbeatAgeMs: &age, NewestCheckpointAgeMs: &age,
		Members: []replicate.Member{}, Partitions: make([]lagengine.PartitionLag, partitions), Groups: make([]lagengine.GroupLag, groups)}
	for p := range partitions {
		topic := fmt.Sprintf("grp-%05d", p/10)
		fl.Partitions[p] = lagengine.PartitionLag{SourceTopic: topic, Topic: "us-east." + topic, Partition: int32(p % 10), SourceEndOffset: 10,
			ReplicatedOffset: 9, TimeBehindMs: &zero, TargetEndOffset: 10, From: lagengine.FromProgress, State: lagengine.StateOK}
	}
	for g := range groups {
		gl := lagengine.GroupLag{Group: fmt.Sprintf("g-%05d", g), CheckpointAgeMs: &age, Partitions: make([]lagengine.GroupPartition, partitions)}
		for p := range partitions {
			gl.Partitions[p] = lagengine.GroupPartition{Topic: fl.Partitions[p].Topic, Partition: int32(p % 10), CommittedOffset: 5,
				UpstreamOffset: 5, DownstreamOffset: 5, CheckpointAgeMs: age}
		}
		fl.Groups[g] = gl
	}
	return &Result{Envelope: output.NewEnvelope(), InternalTopics: []replicate.InternalTopic{}, Flows: []lagengine.FlowLag{fl}, Breaches: []lagengine.Breach{}}
}
