package lag_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	lagengine "github.com/mirrorctl/mirrorctl/lag"
	"github.com/mirrorctl/mirrorctl/replicate/connectoffsets"
)

// After the flow is handed back to MM2 (mm2 handoff) MM2 copies on and moves
// its Connect source offsets, while mirrorctl's progress stays where the
// hand-back left it. lag follows whoever copies now: 0 behind, from
// mm2-offsets, and no breach (it read the stale progress: 7 behind and a
// false page under --max-latency).
func TestLagFollowsMM2AfterHandBack(t *testing.T) {
	e := newEnv(t, "")
	topic := testkit.Name("handback")
	e.CreateTopic(t, "us-east", topic, 1, nil)
	var recs []*kgo.Record
	for i := 0; i < 10; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("v%d", i))})
	}
	e.Produce(t, "us-east", recs...)
	if code, _, stderr := run(t, "replicate", "-c", e.config, "--once"); code != 0 {
		t.Fatalf("replicate exit %d: %s", code, stderr)
	}
	// MM2 copies 7 more records and flushes its source offset (the last
	// copied upstream offset, 16) into its offsets topic on the target.
	recs = recs[:0]
	for i := 10; i < 17; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("v%d", i))})
	}
	e.Produce(t, "us-east", recs...)
	for _, r := range recs {
		r.Topic = "us-east." + topic
	}
	e.Produce(t, "eu-west", recs...)
	offsets := connectoffsets.DedicatedTopic("us-east")
	e.CreateTopic(t, "eu-west", offsets, 1, nil)
	e.Produce(t, "eu-west", &kgo.Record{Topic: offsets,
		Key:   connectoffsets.EncodeKey(connectoffsets.Key{Connector: connectoffsets.DefaultConnector, Cluster: "us-east", Topic: topic, Partition: 0}),
		Value: connectoffsets.EncodeValue(16)})

	code, stdout, stderr := run(t, "lag", "-c", e.config, "-o", "json", "--max-latency", "30s", "--max-records", "0")
	if code != 0 {
		t.Fatalf("lag exit %d (a breach on a flow MM2 keeps up): %s\n%s", code, stderr, stdout)
	}
	res := decode(t, stdout)
	if len(res.Flows) != 1 || len(res.Flows[0].Partitions) != 1 {
		t.Fatalf("result %s", stdout)
	}
	p := res.Flows[0].Partitions[0]
	if p.From != lagengine.FromMM2Offsets || p.ReplicatedOffset != 16 || p.RecordsBehind != 0 {
		t.Errorf("partition %+v; want from mm2-offsets, replicated 16, 0 behind", p)
	}
}
