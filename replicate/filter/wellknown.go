package filter

import "strings"

// WellKnownTopic says whether topic is, by its name, a well-known topic of a
// platform component rather than user data, and whose: MM2's
// isInternalTopic does not exclude these (it only knows "__" and "."
// prefixes and ".internal"/"-internal" suffixes), so a flow with MM2's
// default topics (".*") copies them. A copy is rarely wanted: a second Schema
// Registry or Connect cluster reading it on the target would act on the
// source's state. ok=false for any other name.
//
//   - "_schemas": Schema Registry's default kafkastore.topic;
//   - "connect-configs", "connect-offsets", "connect-status" and any other
//     "connect-" name: the defaults of Kafka Connect's config.storage.topic,
//     offset.storage.topic and status.storage.topic and the names
//     deployments derive from them;
//   - "_confluent-" names: Confluent Platform's command, license, metrics
//     and ksqlDB topics.
func WellKnownTopic(topic string) (owner string, ok bool) {
	switch {
	case topic == "_schemas":
		return "Schema Registry's schema store (kafkastore.topic)", true
	case strings.HasPrefix(topic, "connect-"):
		return "a Kafka Connect internal topic by its name (config, offset or status storage)", true
	case strings.HasPrefix(topic, "_confluent-"):
		return "a Confluent Platform internal topic", true
	}
	return "", false
}
