// Package clientrole names what a Kafka client is for: consumer, producer
// or admin. The role selects which of a cluster's overrides apply to the
// client, MM2's consumer.*, producer.* and admin.* keys (MirrorMakerConfig's
// client configs). It is a leaf so that the engine (replicate.Clients), the
// config (config.Cluster.ClientProps), the client factory (internal/kafka)
// and test doubles share one type without importing each other.
package clientrole

// Role is a client role.
type Role string

// The roles every replicate.Clients implementation accepts.
const (
	Consumer Role = "consumer"
	Producer Role = "producer"
	Admin    Role = "admin"
)
