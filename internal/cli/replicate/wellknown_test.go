package replicate_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// TestDryRunNotesWellKnownTopics: with MM2's default topics (".*"), the
// source's _schemas and connect-offsets are replicated (MM2's
// isInternalTopic does not exclude them, nor does mirrorctl) and --dry-run
// says so in a note naming the topic and topics.exclude; the internal-topic
// rules of ReplicationPolicy.isInternalTopic skip ".internal", "-internal",
// "__" and "." names with their reason; a user topic gets no note.
func TestDryRunNotesWellKnownTopics(t *testing.T) {
	e := newEnv(t, "")
	u := testkit.Name("t")
	orders, connect := "orders-"+u, "connect-offsets-"+u
	for _, topic := range []string{orders, "_schemas", connect, u + ".internal", u + "-internal", "__" + u, "." + u, "x" + u + "_internal"} {
		e.CreateTopic(t, testkit.East, topic, 1, nil)
	}
	code, _, stderr := run(t, "replicate", "--dry-run", "-c", e.config)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"note: flow us-east->eu-west: _schemas looks like Schema Registry's schema store (kafkastore.topic), not user data",
		"note: flow us-east->eu-west: " + connect + " looks like a Kafka Connect internal topic",
		"add it to topics.exclude unless a copy is meant",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "note: flow us-east->eu-west: "+orders) {
		t.Errorf("a user topic got a note:\n%s", stderr)
	}

	code, stdout, stderr := run(t, "replicate", "--dry-run", "-c", e.config, "-o", "json")
	if code != 0 {
		t.Fatalf("json: exit %d: %s", code, stderr)
	}
	var res struct {
		Flows []replicate.Plan `json:"flows"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	got := map[string]replicate.TopicPlan{}
	for _, tp := range res.Flows[0].Topics {
		got[tp.Topic] = tp
	}
	for topic, wantReplicated := range map[string]bool{
		orders: true, "_schemas": true, connect: true, "x" + u + "_internal": true,
		u + ".internal": true, u + "-internal": true, "__" + u: false, "." + u: false,
	} {
		tp, ok := got[topic]
		if !ok {
			t.Errorf("%s not in the plan", topic)
			continue
		}
		if replicated := tp.Action != replicate.ActionSkip; replicated != wantReplicated {
			t.Errorf("%s: action %s (%s), want replicated=%v", topic, tp.Action, tp.Reason, wantReplicated)
		}
		if wantNote := topic == "_schemas" || topic == connect; (tp.Note != "") != wantNote {
			t.Errorf("%s: note %q, want a note: %v", topic, tp.Note, wantNote)
		}
		// ".internal" and "-internal" user topics are mirrored since
		// KAFKA-17200.
		if !wantReplicated && !strings.Contains(tp.Reason, "is internal") {
			t.Errorf("%s: reason %q does not say internal", topic, tp.Reason)
		}
	}
}

// TestDryRunWarnsOfStricterTargetLimits: the remote topic exists with a
// smaller max.message.bytes than its source topic and LogAppendTime
// timestamps; --dry-run warns of both, naming topic, key and values, and
// -o json lists them in limit_differences; a topic whose limits match gets
// no warning.
func TestDryRunWarnsOfStricterTargetLimits(t *testing.T) {
	e := newEnv(t, "")
	strict, same := testkit.Name("strict"), testkit.Name("same")
	big, small, lat := "4000000", "100000", "LogAppendTime"
	e.CreateTopic(t, testkit.East, strict, 1, map[string]*string{"max.message.bytes": &big})
	e.CreateTopic(t, testkit.West, "us-east."+strict, 1, map[string]*string{"max.message.bytes": &small, "message.timestamp.type": &lat})
	e.CreateTopic(t, testkit.East, same, 1, nil)
	e.CreateTopic(t, testkit.West, "us-east."+same, 1, nil)
	code, _, stderr := run(t, "replicate", "--dry-run", "-c", e.config)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"warning: " + strict + " -> us-east." + strict + ": max.message.bytes is 100000 on the target, 4000000 on the source: records the source accepts can be refused",
		"warning: " + strict + " -> us-east." + strict + ": message.timestamp.type is LogAppendTime on the target, CreateTime on the source",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, same+" ->") {
		t.Errorf("a topic with equal limits was warned of:\n%s", stderr)
	}
	_, stdout, _ := run(t, "replicate", "--dry-run", "-c", e.config, "-o", "json")
	var res struct {
		Limits []replicate.LimitDifference `json:"limit_differences"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Limits) != 2 || res.Limits[0].Topic != strict {
		t.Errorf("limit_differences %+v, want the two of %s", res.Limits, strict)
	}
}
