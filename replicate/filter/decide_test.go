package filter

import (
	"testing"

	"github.com/mirrorctl/mirrorctl/replicate/policy"
)

func TestDecideTopic(t *testing.T) {
	def := policy.NewDefault("", true)
	underscore := policy.NewDefault("_", true)
	defaults, err := NewTopicFilter(nil)
	if err != nil {
		t.Fatal(err)
	}
	only := func(inc, exc string) TopicFilter {
		return TopicFilter{Include: MustCompileList("topics", inc), Exclude: MustCompileList("topics.exclude", exc)}
	}
	tests := []struct {
		name   string
		p      policy.Policy
		f      TopicFilter
		topic  string
		target string
		hb     bool
		want   Decision
	}{
		{"plain", def, defaults, "orders", "us-west", true,
			Decision{true, "", `topic "orders" matched by topics item ".*"`}},
		{"remote from third cluster", def, defaults, "eu.orders", "us-west", true,
			Decision{true, "", `topic "eu.orders" matched by topics item ".*"`}},
		{"not included", def, only("payments", ""), "orders", "us-west", true,
			Decision{false, ReasonNotIncluded, `topic "orders" not matched by topics (payments)`}},
		{"blank include", def, only("", ""), "orders", "us-west", true,
			Decision{false, ReasonNotIncluded, `topic "orders" not matched by topics (blank: matches nothing)`}},
		{"excluded", def, defaults, "orders.replica", "us-west", true,
			Decision{false, ReasonExcluded, `topic "orders.replica" matched by topics.exclude item ".*\\.replica"`}},
		{"internal before filter", def, defaults, "__consumer_offsets", "us-west", true,
			Decision{false, ReasonInternal, `topic "__consumer_offsets" is internal: starts with "__" (Kafka internal); never replicated`}},
		{"internal even if included", def, only(".*", ""), ".hidden", "us-west", true,
			Decision{false, ReasonInternal, `topic ".hidden" is internal: starts with "." (Kafka internal); never replicated`}},
		{"mm2 internal", def, only(".*", ""), "mm2-offset-syncs.us-west.internal", "us-west", true,
			Decision{false, ReasonInternal, `topic "mm2-offset-syncs.us-west.internal" is internal: the mirror's own: starts with "mm2" or "mirrorctl-" and ends with ".internal"; never replicated`}},
		{"mirrorctl progress", def, only(".*", ""), "mirrorctl-progress.us-east.internal", "us-west", true,
			Decision{false, ReasonInternal, `topic "mirrorctl-progress.us-east.internal" is internal: the mirror's own: starts with "mm2" or "mirrorctl-" and ends with ".internal"; never replicated`}},
		// KAFKA-17200: a user topic ending in "-internal" or ".internal" is
		// mirrored like any other (the default topics.exclude names only
		// MM2's own, mm2.*\.internal).
		{"connect-style name included", def, only(".*", ""), "connect-status-internal", "us-west", true,
			Decision{true, "", `topic "connect-status-internal" matched by topics item ".*"`}},
		{"connect-style name by default", def, defaults, "connect-status-internal", "us-west", true,
			Decision{true, "", `topic "connect-status-internal" matched by topics item ".*"`}},
		{"dot internal under _", underscore, only(".*", ""), "a.internal", "us-west", true,
			Decision{true, "", `topic "a.internal" matched by topics item ".*"`}},
		{"_internal under _", underscore, only(".*", ""), "us-east_checkpoints_internal", "us-west", true,
			Decision{false, ReasonInternal, `topic "us-east_checkpoints_internal" is internal: a checkpoints topic (MM2 internal); never replicated`}},
		{"cycle", def, defaults, "us-west.orders", "us-west", true,
			Decision{false, ReasonCycle, `cycle: topic "us-west.orders" originated on us-west, the target of this flow`}},
		{"cycle before exclude", def, defaults, "us-west.orders.replica", "us-west", true,
			Decision{false, ReasonCycle, `cycle: topic "us-west.orders.replica" originated on us-west, the target of this flow`}},
		{"cycle two hops", def, defaults, "eu.us-west.orders", "us-west", true,
			Decision{false, ReasonCycle, `cycle: topic "eu.us-west.orders" originated on us-west, the target of this flow`}},
		{"heartbeats override", def, only("orders", ""), "heartbeats", "us-west", true,
			Decision{true, "", `topic "heartbeats" is a heartbeats topic (heartbeats.replication.enabled)`}},
		{"remote heartbeats override", def, only("orders", "us-east.heartbeats"), "us-east.heartbeats", "us-west", true,
			Decision{true, "", `topic "us-east.heartbeats" is a heartbeats topic (heartbeats.replication.enabled)`}},
		{"heartbeats replication off", def, only("orders", ""), "heartbeats", "us-west", false,
			Decision{false, ReasonNotIncluded, `topic "heartbeats" not matched by topics (orders)`}},
		{"heartbeats from target is a cycle", def, defaults, "us-west.heartbeats", "us-west", true,
			Decision{false, ReasonCycle, `cycle: topic "us-west.heartbeats" originated on us-west, the target of this flow`}},
		{"identity no cycle", policy.NewIdentity("", true, "us-east"), defaults, "us-west.orders", "us-west", true,
			Decision{true, "", `topic "us-west.orders" matched by topics item ".*"`}},
		{"zero filter keys default", def, TopicFilter{}, "orders", "us-west", true,
			Decision{false, ReasonNotIncluded, `topic "orders" not matched by topics (blank: matches nothing)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DecideTopic(tt.p, tt.f, tt.topic, tt.target, tt.hb)
			if got != tt.want {
				t.Errorf("DecideTopic(%q)\n got %#v\nwant %#v", tt.topic, got, tt.want)
			}
			if got.String() != tt.want.Detail {
				t.Errorf("String = %q", got.String())
			}
		})
	}
}
