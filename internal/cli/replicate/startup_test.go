package replicate_test

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

// TestStartupFailureExitsWithCause: the source holds
// mm2-offset-syncs_eu-west_internal (an earlier run with separator "_"), so
// creating mm2-offset-syncs.eu-west.internal, one of the concurrent start-up
// steps, is refused with INVALID_TOPIC_EXCEPTION (Kafka's '.'/'_'
// collision). `replicate --once` exits 1 naming the topic and the broker's
// error, not 130 "interrupted" (the cancellation it caused in the plan step),
// and copies nothing.
func TestStartupFailureExitsWithCause(t *testing.T) {
	e := newEnv(t, "")
	orders := testkit.Name("orders")
	e.CreateTopic(t, testkit.East, orders, 1, nil)
	e.CreateTopic(t, testkit.East, "mm2-offset-syncs_eu-west_internal", 1, nil)
	e.Produce(t, testkit.East, &kgo.Record{Topic: orders, Value: []byte("a1")})

	code, _, stderr := run(t, "replicate", "--once", "-c", e.config)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr %q", code, stderr)
	}
	for _, want := range []string{"create internal topic mm2-offset-syncs.eu-west.internal", "INVALID_TOPIC_EXCEPTION", "replication.policy.separator"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q: %q", want, stderr)
		}
	}
	if strings.Contains(stderr, "interrupted") || strings.Contains(stderr, "context canceled") {
		t.Errorf("stderr reports the cancellation instead of (or besides) the cause: %q", stderr)
	}
	topics, err := e.Admin(t, testkit.West).ListTopics(testkit.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	if topics.Has(testkit.East + "." + orders) {
		if got := e.ReadAll(t, testkit.West, testkit.East+"."+orders); len(got[0]) != 0 {
			t.Errorf("copied %d records although the flow could not start", len(got[0]))
		}
	}
}
