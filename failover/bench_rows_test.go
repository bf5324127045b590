package failover

import (
	"fmt"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/groupstate"
	"github.com/mirrorctl/mirrorctl/replicate"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
	"github.com/mirrorctl/mirrorctl/replicate/progress"
)

// kv is a checkpoint record's key and value.
type kv struct{ k, v []byte }

// noClients satisfies replicate.Clients for an Engine that must never ask
// a cluster: any call panics.
type noClients struct{ replicate.Clients }

// rowSizes are the sizes of the row benchmarks: groups × partitions each
// group has a checkpoint of. The largest is issue #31's 1,000 groups over
// 10,000 partitions (10 million rows); it needs some 10 GB of memory and
// runs once per invocation with -benchtime=1x.
var rowSizes = []struct{ groups, partitions int }{{1000, 100}, {1000, 1000}, {1000, 10000}}

// BenchmarkUnplannedPlanRows is `failover plan --type unplanned`'s work
// after the clusters were read, on synthetic in-memory inputs of groups ×
// partitions rows, so it measures the compute apart from Kafka: the
// checkpoint records decoded and indexed as they are read
// (checkpointIndex), each group's checkpoint rows (checkpointRows,
// sortRows), the plan decided per group (planGroup: the group absent on the
// target, no commits there, the mirror live) and a bound per row
// (addBounds). The records are built before the timer starts. rows/s is
// plan rows per second of the whole pass.
func BenchmarkUnplannedPlanRows(b *testing.B) {
	for _, size := range rowSizes {
		b.Run(fmt.Sprintf("groups=%d/partitions=%d", size.groups, size.partitions), func(b *testing.B) {
			benchUnplanned(b, size.groups, size.partitions)
		})
	}
}

func benchUnplanned(b *testing.B, groups, partitions int) {
	f := testFlow(b)
	e, err := New(Options{Flow: f, Clients: noClients{}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	e.now = func() time.Time { return now }
	recs := make([]kv, 0, groups*partitions) // a kgo.Record each would take 10 times the memory
	ends := map[tpKey]int64{}
	vals := map[tpKey]progress.Value{}
	for p := range partitions {
		topic, part := fmt.Sprintf("grp-%05d", p/10), int32(p%10)
		ends[tpKey{"us-east." + topic, part}] = 10
		vals[tpKey{topic, part}] = progress.Value{Next: 10, SourceEnd: 10, Time: now}
	}
	for g := range groups {
		for p := range partitions {
			ck := mm2.Checkpoint{Group: fmt.Sprintf("g-%05d", g), Topic: fmt.Sprintf("us-east.grp-%05d", p/10), Partition: int32(p % 10), UpstreamOffset: 5, DownstreamOffset: 5}
			k, _ := ck.MarshalKey()
			v, _ := ck.MarshalValue()
			recs = append(recs, kv{k, v})
		}
	}
	b.ResetTimer()
	rows := 0
	for b.Loop() {
		ix := newCheckpointIndex(nil, e.log, "us-east.checkpoints.internal")
		r := kgo.Record{Timestamp: now.Add(-time.Second)}
		for _, kv := range recs {
			r.Key, r.Value = kv.k, kv.v
			ix.add(&r)
		}
		cks := ix.byGroup()
		tr := &TranslateResult{Source: f.Source, Target: f.Target, MirrorLive: ix.newest}
		in := planInputs{tr: tr, states: map[string]groupstate.State{}, current: map[string]kadm.OffsetResponses{}, curErrs: map[string]error{}}
		names := map[string]string{}
		for g := range groups {
			name := fmt.Sprintf("g-%05d", g)
			gt := GroupTranslation{Group: name, Partitions: checkpointRows(e, cks[name], nil, names)}
			sortRows(gt.Partitions)
			tr.Groups = append(tr.Groups, gt)
			in.states[name] = groupstate.State{Group: name, State: groupstate.StateAbsent}
			in.current[name] = kadm.OffsetResponses{}
		}
		plan := &Plan{Direction: Failover, Source: f.Source, Target: f.Target, Mode: ModeCheckpoint}
		for i := range tr.Groups {
			plan.Groups = append(plan.Groups, e.planGroup(&tr.Groups[i], &in, PlanOptions{}, ModeCheckpoint, time.Hour))
		}
		proc := &Procedure{Type: TypeUnplanned}
		addBounds(proc, plan, ends, vals)
		rows = 0
		for _, g := range plan.Groups {
			rows += len(g.Partitions)
			if len(g.Refused) > 0 {
				b.Fatalf("group %s refused: %v", g.Group, g.Refused[0])
			}
		}
		if rows != groups*partitions || len(proc.Bounds) != rows {
			b.Fatalf("%d rows, %d bounds; want %d", rows, len(proc.Bounds), groups*partitions)
		}
		runtime.KeepAlive(proc)
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
