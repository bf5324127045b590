package lag_test

import (
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// TestFirstOnceCopiesReversePairHeartbeats: us-east->eu-west copies, and
// the reverse pair eu-west->us-east only emits heartbeats (into us-east's
// "heartbeats"). On fresh clusters the first `replicate --once` creates
// that topic and writes its heartbeat before us-east->eu-west plans, so the
// copy includes it: eu-west holds us-east.heartbeats with the reverse pair's
// heartbeat, and an immediate `lag --max-latency 30s --max-records 0` gate
// passes (before: the topic appeared after the plan, was not copied, and the
// gate breached on it). The creation of us-east's heartbeats topic takes
// 500 ms here, as a real broker's can take longer than a flow's start-up:
// what decides is the order, not who is faster.
func TestFirstOnceCopiesReversePairHeartbeats(t *testing.T) {
	e := newEnv(t, "us-east->eu-west.emit.heartbeats.enabled = true\neu-west->us-east.emit.heartbeats.enabled = true\n")
	var slow sync.Once
	e.East.ControlKey(int16(kmsg.CreateTopics), func(req kmsg.Request) (kmsg.Response, error, bool) {
		e.East.KeepControl()
		for _, tp := range req.(*kmsg.CreateTopicsRequest).Topics {
			if tp.Topic == "heartbeats" {
				slow.Do(func() { e.East.SleepControl(func() { time.Sleep(500 * time.Millisecond) }) })
			}
		}
		return nil, nil, false
	})
	orders := testkit.Name("orders")
	e.CreateTopic(t, testkit.East, orders, 1, nil)
	e.Produce(t, testkit.East, &kgo.Record{Topic: orders, Value: []byte("a1")})

	if code, _, stderr := run(t, "replicate", "-c", e.config, "--once"); code != 0 {
		t.Fatalf("replicate exit %d: %s", code, stderr)
	}
	hbs := e.ReadAll(t, testkit.West, "us-east.heartbeats")[0]
	if len(hbs) != 1 {
		t.Fatalf("us-east.heartbeats on eu-west holds %d records, want the reverse pair's one heartbeat", len(hbs))
	}
	hb, err := mm2.DecodeHeartbeat(hbs[0].Key, hbs[0].Value)
	if err != nil || hb.SourceAlias != testkit.West || hb.TargetAlias != testkit.East {
		t.Errorf("copied heartbeat %+v (%v), want eu-west->us-east's", hb, err)
	}
	if src := e.ReadAll(t, testkit.East, "heartbeats")[0]; len(src) != 1 {
		t.Errorf("us-east heartbeats holds %d records, want 1 (one --once writes one heartbeat per pair)", len(src))
	}

	code, stdout, stderr := run(t, "lag", "-c", e.config, "--source", testkit.East, "--target", testkit.West,
		"--max-latency", "30s", "--max-records", "0", "-o", "json")
	if code != 0 {
		t.Fatalf("lag exit %d, want 0: %s %s", code, stdout, stderr)
	}
	res := decode(t, stdout)
	found := false
	for _, p := range res.Flows[0].Partitions {
		if p.SourceTopic == "heartbeats" {
			found = true
			if p.RecordsBehind != 0 || p.ReplicatedOffset != 0 {
				t.Errorf("heartbeats partition %+v, want copied (replicated offset 0, nothing behind)", p)
			}
		}
	}
	if !found || len(res.Breaches) != 0 {
		t.Errorf("lag %s: want the heartbeats partition listed and no breach", stdout)
	}
}
