package filter

import "testing"

func TestWellKnownTopic(t *testing.T) {
	for topic, want := range map[string]bool{
		"_schemas": true, "connect-offsets": true, "connect-configs": true, "connect-status": true, "connect-cluster-a-offsets": true,
		"_confluent-command": true, "_confluent-ksql-default__command_topic": true,
		"orders": false, "_schemas2": false, "schemas": false, "myconnect-offsets": false, "connect": false,
	} {
		owner, ok := WellKnownTopic(topic)
		if ok != want || ok && owner == "" {
			t.Errorf("WellKnownTopic(%q) = %q, %v; want %v", topic, owner, ok, want)
		}
	}
}
