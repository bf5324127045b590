package lag_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	lagengine "github.com/mirrorctl/mirrorctl/lag"
)

// produceN produces n records to partition 0 of topic on us-east.
func produceN(t *testing.T, e *env, topic string, n int) {
	t.Helper()
	recs := make([]*kgo.Record, 0, n)
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(fmt.Sprintf("v%d", i))})
	}
	e.Produce(t, "us-east", recs...)
}

// recreateSource deletes topic on us-east and creates it again with n new
// records.
func recreateSource(t *testing.T, e *env, topic string, n int) {
	t.Helper()
	res, err := e.Admin(t, "us-east").DeleteTopics(testkit.Context(t), topic)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	e.CreateTopic(t, "us-east", topic, 1, nil)
	produceN(t, e, topic, n)
}

// onlyPartition returns the single partition of a lag result.
func onlyPartition(t *testing.T, stdout string) (lagengine.PartitionLag, []lagengine.Breach) {
	t.Helper()
	res := decode(t, stdout)
	if len(res.Flows) != 1 || len(res.Flows[0].Partitions) != 1 {
		t.Fatalf("result %s", stdout)
	}
	return res.Flows[0].Partitions[0], res.Breaches
}

// A source topic deleted and created again with 300 records after 100 were
// mirrored: replicate stops the partition (exit 3), and lag says so: all
// 300 records of the new topic behind (not 300-100), nothing of it
// replicated, state stopped, and exit 3 with no threshold and with one the
// partition would otherwise pass (it used to exit 0, 200 behind).
func TestLagStoppedPartitionExits3(t *testing.T) {
	e := newEnv(t, "")
	topic := testkit.Name("stopped")
	e.CreateTopic(t, "us-east", topic, 1, nil)
	produceN(t, e, topic, 100)
	if code, _, stderr := run(t, "replicate", "-c", e.config, "--once"); code != 0 {
		t.Fatalf("replicate exit %d: %s", code, stderr)
	}
	recreateSource(t, e, topic, 300)
	if code, _, stderr := run(t, "replicate", "-c", e.config, "--once"); code != 3 {
		t.Fatalf("replicate after the recreation: exit %d, want 3: %s", code, stderr)
	}
	for _, flags := range [][]string{nil, {"--max-latency", "30s"}, {"--max-records", "1000"}} {
		t.Run(fmt.Sprint(flags), func(t *testing.T) {
			code, stdout, stderr := run(t, append([]string{"lag", "-c", e.config, "-o", "json"}, flags...)...)
			if code != 3 {
				t.Fatalf("lag exit %d, want 3: %s\n%s", code, stdout, stderr)
			}
			p, breaches := onlyPartition(t, stdout)
			if p.State != lagengine.StateStopped || !p.Stopped || p.RecordsBehind != 300 || p.ReplicatedOffset != -1 || !p.Breach ||
				!strings.Contains(p.StopReason, "recreated") {
				t.Fatalf("partition %+v: want stopped, 300 behind, nothing replicated", p)
			}
			var stopped int
			for _, b := range breaches {
				if b.Check == lagengine.CheckStopped {
					stopped++
					if b.Value != 300 || b.Subject != "us-east."+topic+"[0]" || b.Reason == "" {
						t.Fatalf("breach %+v", b)
					}
				}
			}
			if stopped != 1 {
				t.Fatalf("breaches %+v: want one %q", breaches, lagengine.CheckStopped)
			}
			if want := "us-east." + topic + "[0] is stopped, 300 records behind"; !strings.Contains(stderr, want) {
				t.Fatalf("stderr %q does not say %q", stderr, want)
			}
		})
	}
	code, stdout, _ := run(t, "lag", "-c", e.config)
	if code != 3 || !strings.Contains(stdout, "stopped, BREACH") {
		t.Fatalf("table: exit %d, want 3 with the partition stopped, BREACH:\n%s", code, stdout)
	}
}

// The source topic recreated (500 records mirrored, 300 in the new topic)
// while no replicate has looked at it yet, as when it is recreated while
// replicate runs: the progress still holds the old position, past the new
// topic's end. lag compares topic IDs: the new topic's 300 records are all
// behind (it used to show 0), and since the flow does not copy recreated
// topics the mirror stops it: exit 3. With copy-from-start the partition is
// behind, not stopped.
func TestLagSourceRecreatedUnderProgress(t *testing.T) {
	for _, copyFromStart := range []bool{false, true} {
		t.Run(fmt.Sprintf("copy-from-start=%v", copyFromStart), func(t *testing.T) {
			extra := ""
			if copyFromStart {
				extra = "us-east->eu-west.mirrorctl.source.recreated = copy-from-start\n"
			}
			e := newEnv(t, extra)
			topic := testkit.Name("recreated")
			e.CreateTopic(t, "us-east", topic, 1, nil)
			produceN(t, e, topic, 500)
			if code, _, stderr := run(t, "replicate", "-c", e.config, "--once"); code != 0 {
				t.Fatalf("replicate exit %d: %s", code, stderr)
			}
			recreateSource(t, e, topic, 300)
			code, stdout, stderr := run(t, "lag", "-c", e.config, "-o", "json")
			p, breaches := onlyPartition(t, stdout)
			if p.State != lagengine.StateRecreated || p.RecordsBehind != 300 || p.ReplicatedOffset != -1 || p.SourceEndOffset != 300 {
				t.Fatalf("partition %+v: want recreated, 300 behind, nothing replicated", p)
			}
			if copyFromStart {
				if code != 0 || p.Stopped || len(breaches) != 0 {
					t.Fatalf("copy-from-start: exit %d, partition %+v, breaches %+v; want 0, copying", code, p, breaches)
				}
				if code, _, _ := run(t, "lag", "-c", e.config, "-o", "json", "--max-records", "299"); code != 3 {
					t.Fatalf("--max-records 299: exit %d, want 3", code)
				}
				return
			}
			if code != 3 || !p.Stopped || len(breaches) != 1 || breaches[0].Check != lagengine.CheckStopped || !strings.Contains(stderr, "is stopped, 300 records behind") {
				t.Fatalf("exit %d, partition %+v, breaches %+v, stderr %q; want 3, stopped", code, p, breaches, stderr)
			}
		})
	}
}

// The remote topic deleted after 100 records were mirrored, before any
// replicate looked at it: the remote partition ends below the downstream
// position the progress recorded, so lag says target-recreated and counts
// the 100 records as behind (the mirror copies them again), where it used
// to say ok, 0 behind.
func TestLagRemoteTopicDeleted(t *testing.T) {
	e := newEnv(t, "")
	topic := testkit.Name("tgtgone")
	e.CreateTopic(t, "us-east", topic, 1, nil)
	produceN(t, e, topic, 100)
	if code, _, stderr := run(t, "replicate", "-c", e.config, "--once"); code != 0 {
		t.Fatalf("replicate exit %d: %s", code, stderr)
	}
	res, err := e.Admin(t, "eu-west").DeleteTopics(testkit.Context(t), "us-east."+topic)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(t, "lag", "-c", e.config, "-o", "json")
	p, _ := onlyPartition(t, stdout)
	if code != 0 || p.State != "target-recreated" || p.RecordsBehind != 100 || p.TargetEndOffset != 0 || p.Stopped {
		t.Fatalf("exit %d, partition %+v: want 0, target-recreated, 100 behind: %s", code, p, stderr)
	}
	if code, _, _ := run(t, "lag", "-c", e.config, "-o", "json", "--max-records", "0"); code != 3 {
		t.Fatalf("--max-records 0: exit %d, want 3", code)
	}
}
