package policy

import (
	"fmt"
	"strings"
)

// Property keys read by FromProps. They are the MM2 / MirrorClientConfig names.
const (
	// KeyClass selects the policy (replication.policy.class).
	KeyClass = "replication.policy.class"
	// KeySeparator is the remote-topic separator (replication.policy.separator), default ".".
	KeySeparator = "replication.policy.separator"
	// KeyInternalSeparatorEnabled is the KIP-949 flag
	// (replication.policy.internal.topic.separator.enabled), default true.
	KeyInternalSeparatorEnabled = "replication.policy.internal.topic.separator.enabled"
	// KeySourceAlias is the flow's source alias (source.cluster.alias); only
	// IdentityReplicationPolicy uses it.
	KeySourceAlias = "source.cluster.alias"
)

// Accepted values of replication.policy.class.
const (
	ClassDefault       = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
	ClassIdentity      = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
	shortClassDefault  = "DefaultReplicationPolicy"
	shortClassIdentity = "IdentityReplicationPolicy"
)

// DefaultSeparator is the default of replication.policy.separator.
const DefaultSeparator = "."

// HeartbeatsTopic is the name of MM2's heartbeats topic. It never changes with
// the separator.
const HeartbeatsTopic = "heartbeats"

const offsetSyncsPrefix = "mm2-offset-syncs"

// Policy is MM2's ReplicationPolicy (org.apache.kafka.connect.mirror.ReplicationPolicy):
// how remote topics are named and how a name is traced back to its source
// cluster. Results that Java returns as null are reported with ok=false.
// Implementations in this package are immutable and safe for concurrent use.
type Policy interface {
	// FormatRemoteTopic returns the name topic gets on a cluster that mirrors
	// it from sourceAlias (formatRemoteTopic).
	FormatRemoteTopic(sourceAlias, topic string) string
	// TopicSource returns the alias of the cluster topic was mirrored from
	// (topicSource). ok=false means Java null (not a remote topic); ("", true)
	// is Java's empty string, as for ".foo".
	TopicSource(topic string) (alias string, ok bool)
	// UpstreamTopic returns the name topic has one hop upstream (upstreamTopic);
	// ok=false means Java null.
	UpstreamTopic(topic string) (upstream string, ok bool)
	// OriginalTopic applies UpstreamTopic until it yields no name or the same
	// name (originalTopic).
	OriginalTopic(topic string) string
	// HeartbeatsTopic returns "heartbeats".
	HeartbeatsTopic() string
	// CheckpointsTopic returns the checkpoints topic for source clusterAlias,
	// e.g. "us-east.checkpoints.internal" (KIP-690/KIP-949 separator rules).
	CheckpointsTopic(clusterAlias string) string
	// OffsetSyncsTopic returns the offset-syncs topic named after clusterAlias
	// (the *other* cluster of the flow), e.g. "mm2-offset-syncs.us-west.internal".
	OffsetSyncsTopic(clusterAlias string) string
	// IsHeartbeatsTopic reports whether topic is a heartbeats topic, local or
	// remote (OriginalTopic(topic) == "heartbeats").
	IsHeartbeatsTopic(topic string) bool
	// IsCheckpointsTopic reports whether topic ends with the checkpoints suffix.
	IsCheckpointsTopic(topic string) bool
	// IsMM2InternalTopic reports whether topic is one of the mirror's own:
	// a name starting with "mm2" and ending with InternalSuffix() (offset
	// syncs; dedicated mode's Connect offsets, configs and status), a
	// checkpoints topic, or mirrorctl's progress topic
	// ("mirrorctl-..."+InternalSuffix()).
	IsMM2InternalTopic(topic string) bool
	// IsInternalTopic reports whether topic must never be mirrored: the
	// mirror's own (IsMM2InternalTopic) or Kafka's ("__" or "." prefix).
	// Since KAFKA-17200 (Kafka 4.0, the pinned 4.3.1's
	// ReplicationPolicy.isInternalTopic) user topics ending in ".internal"
	// or "-internal" are mirrored like any other.
	IsInternalTopic(topic string) bool
	// Separator returns the remote-topic separator.
	Separator() string
	// InternalSuffix returns what MM2 internal topic names end with:
	// ".internal", or e.g. "_internal" for separator "_" with the KIP-949 flag on.
	InternalSuffix() string
}

// Default is MM2's DefaultReplicationPolicy: remote topics are named
// "<source><sep><topic>".
type Default struct {
	sep  string // remote-topic separator, never empty
	isep string // separator of internal topic names
}

var _ Policy = (*Default)(nil)

// NewDefault returns a DefaultReplicationPolicy with the given separator ("" means
// "."). internalSeparator is the KIP-949 flag: when true (MM2 3.1+ default) the
// internal topic names use separator; when false they use "." as before 3.1.
func NewDefault(separator string, internalSeparator bool) *Default {
	if separator == "" {
		separator = DefaultSeparator
	}
	d := &Default{sep: separator, isep: DefaultSeparator}
	if internalSeparator {
		d.isep = separator
	}
	return d
}

// javaSplit splits s on the literal sep like Java's String.split(Pattern.quote(sep)):
// trailing empty pieces are dropped, a leading empty piece is kept.
func javaSplit(s, sep string) []string {
	parts := strings.Split(s, sep)
	n := len(parts)
	for n > 0 && parts[n-1] == "" {
		n--
	}
	return parts[:n]
}

// FormatRemoteTopic returns sourceAlias + separator + topic, unconditionally.
func (d *Default) FormatRemoteTopic(sourceAlias, topic string) string {
	return sourceAlias + d.sep + topic
}

// TopicSource returns the first separator-delimited piece of topic, or
// ok=false if topic splits into fewer than two pieces (Java split semantics).
func (d *Default) TopicSource(topic string) (string, bool) {
	parts := javaSplit(topic, d.sep)
	if len(parts) < 2 {
		return "", false
	}
	return parts[0], true
}

// UpstreamTopic strips "<source><sep>" from the front of topic, or returns
// ok=false when TopicSource does.
func (d *Default) UpstreamTopic(topic string) (string, bool) {
	src, ok := d.TopicSource(topic)
	if !ok {
		return "", false
	}
	return topic[len(src)+len(d.sep):], true
}

// OriginalTopic strips every source prefix: "us-west.us-east.orders" -> "orders".
func (d *Default) OriginalTopic(topic string) string {
	return originalTopic(d.UpstreamTopic, topic)
}

// originalTopic is the ReplicationPolicy.originalTopic default: follow upstream
// until it is null or unchanged. Both policies here strictly shorten or stop,
// but the loop is bounded anyway.
func originalTopic(upstream func(string) (string, bool), topic string) string {
	for i := 0; i <= len(topic); i++ {
		up, ok := upstream(topic)
		if !ok || up == topic {
			return topic
		}
		topic = up
	}
	return topic
}

// HeartbeatsTopic returns "heartbeats".
func (d *Default) HeartbeatsTopic() string { return HeartbeatsTopic }

// CheckpointsTopic returns "<alias><isep>checkpoints<isep>internal".
func (d *Default) CheckpointsTopic(clusterAlias string) string {
	return clusterAlias + d.checkpointsSuffix()
}

func (d *Default) checkpointsSuffix() string {
	return d.isep + "checkpoints" + d.InternalSuffix()
}

// OffsetSyncsTopic returns "mm2-offset-syncs<isep><alias><isep>internal".
func (d *Default) OffsetSyncsTopic(clusterAlias string) string {
	return offsetSyncsPrefix + d.isep + clusterAlias + d.InternalSuffix()
}

// IsHeartbeatsTopic reports whether OriginalTopic(topic) is "heartbeats".
func (d *Default) IsHeartbeatsTopic(topic string) bool {
	return d.OriginalTopic(topic) == HeartbeatsTopic
}

// IsCheckpointsTopic reports whether topic ends with "<isep>checkpoints<isep>internal".
func (d *Default) IsCheckpointsTopic(topic string) bool {
	return strings.HasSuffix(topic, d.checkpointsSuffix())
}

// IsMM2InternalTopic reports whether topic is one of the mirror's own (see
// [Policy]): MM2's ReplicationPolicy.isMM2InternalTopic of Kafka 4.x
// ("mm2" prefix and the internal suffix, or a checkpoints topic), plus
// mirrorctl's progress topics.
func (d *Default) IsMM2InternalTopic(topic string) bool {
	suffix := d.InternalSuffix()
	return (strings.HasPrefix(topic, "mm2") || strings.HasPrefix(topic, "mirrorctl-")) && strings.HasSuffix(topic, suffix) ||
		d.IsCheckpointsTopic(topic)
}

// IsInternalTopic reports whether topic is the mirror's own or Kafka's
// ("__" or "." prefix); see [Policy].
func (d *Default) IsInternalTopic(topic string) bool {
	return isInternal(d, topic)
}

func isInternal(p Policy, topic string) bool {
	return p.IsMM2InternalTopic(topic) || strings.HasPrefix(topic, "__") || strings.HasPrefix(topic, ".")
}

// Separator returns the remote-topic separator.
func (d *Default) Separator() string { return d.sep }

// InternalSuffix returns "<isep>internal".
func (d *Default) InternalSuffix() string { return d.isep + "internal" }

// Identity is MM2's IdentityReplicationPolicy (KAFKA-9726, Kafka 3.0.0): topics
// keep their names on the target. Topics ending in "heartbeats" (a plain suffix
// test, so "myheartbeats" too) are handled exactly like Default. Cycles cannot be
// detected under Identity; the topology must be acyclic.
type Identity struct {
	d           *Default
	sourceAlias string
}

var _ Policy = (*Identity)(nil)

// NewIdentity returns an IdentityReplicationPolicy. separator and
// internalSeparator are as for NewDefault (they name heartbeats and internal
// topics). sourceAlias is source.cluster.alias: inside MM2 connectors it is the
// flow's source; "" means unset (stand-alone MirrorClient), so TopicSource of a
// non-heartbeat topic reports ok=false.
func NewIdentity(separator string, internalSeparator bool, sourceAlias string) *Identity {
	return &Identity{d: NewDefault(separator, internalSeparator), sourceAlias: sourceAlias}
}

func looksLikeHeartbeat(topic string) bool { return strings.HasSuffix(topic, HeartbeatsTopic) }

// FormatRemoteTopic returns topic unchanged, except heartbeat-like topics,
// which get the Default prefix ("us-east.heartbeats").
func (p *Identity) FormatRemoteTopic(sourceAlias, topic string) string {
	if looksLikeHeartbeat(topic) {
		return p.d.FormatRemoteTopic(sourceAlias, topic)
	}
	return topic
}

// TopicSource returns the configured source alias (ok=false if unset), or the
// Default answer for heartbeat-like topics.
func (p *Identity) TopicSource(topic string) (string, bool) {
	if looksLikeHeartbeat(topic) {
		return p.d.TopicSource(topic)
	}
	return p.sourceAlias, p.sourceAlias != ""
}

// UpstreamTopic returns topic itself, or the Default answer for heartbeat-like topics.
func (p *Identity) UpstreamTopic(topic string) (string, bool) {
	if looksLikeHeartbeat(topic) {
		return p.d.UpstreamTopic(topic)
	}
	return topic, true
}

// OriginalTopic returns topic itself, or follows UpstreamTopic for
// heartbeat-like topics.
func (p *Identity) OriginalTopic(topic string) string {
	if looksLikeHeartbeat(topic) {
		return originalTopic(p.UpstreamTopic, topic)
	}
	return topic
}

// HeartbeatsTopic returns "heartbeats".
func (p *Identity) HeartbeatsTopic() string { return HeartbeatsTopic }

// CheckpointsTopic is as for Default.
func (p *Identity) CheckpointsTopic(clusterAlias string) string {
	return p.d.CheckpointsTopic(clusterAlias)
}

// OffsetSyncsTopic is as for Default.
func (p *Identity) OffsetSyncsTopic(clusterAlias string) string {
	return p.d.OffsetSyncsTopic(clusterAlias)
}

// IsHeartbeatsTopic reports whether OriginalTopic(topic) is "heartbeats".
func (p *Identity) IsHeartbeatsTopic(topic string) bool {
	return p.OriginalTopic(topic) == HeartbeatsTopic
}

// IsCheckpointsTopic is as for Default.
func (p *Identity) IsCheckpointsTopic(topic string) bool { return p.d.IsCheckpointsTopic(topic) }

// IsMM2InternalTopic is as for Default.
func (p *Identity) IsMM2InternalTopic(topic string) bool { return p.d.IsMM2InternalTopic(topic) }

// IsInternalTopic is as for Default.
func (p *Identity) IsInternalTopic(topic string) bool { return isInternal(p, topic) }

// Separator returns the separator used for heartbeat and internal names.
func (p *Identity) Separator() string { return p.d.Separator() }

// InternalSuffix is as for Default.
func (p *Identity) InternalSuffix() string { return p.d.InternalSuffix() }

// SourceAlias returns the configured source.cluster.alias ("" if unset).
func (p *Identity) SourceAlias() string { return p.sourceAlias }

// FromProps builds the policy MM2 would configure from props (MirrorClientConfig
// and ReplicationPolicy.configure):
//   - replication.policy.class: the FQCN or short name of DefaultReplicationPolicy
//     (the default when absent or blank) or IdentityReplicationPolicy;
//   - replication.policy.separator: default "."; an explicitly empty value is an
//     error (MM2 would accept it and produce unusable names);
//   - replication.policy.internal.topic.separator.enabled: "true"/"false"
//     (case-insensitive), default true, read only when the separator key is
//     present, as MM2 does (KIP-949);
//   - source.cluster.alias: Identity's source alias.
//
// Errors name the offending key and value.
func FromProps(props map[string]string) (Policy, error) {
	sep := DefaultSeparator
	internalSep := true
	if v, ok := props[KeySeparator]; ok {
		if v == "" {
			return nil, fmt.Errorf("%s: must not be empty", KeySeparator)
		}
		sep = v
		if f, ok := props[KeyInternalSeparatorEnabled]; ok {
			switch strings.ToLower(strings.TrimSpace(f)) {
			case "true":
				internalSep = true
			case "false":
				internalSep = false
			default:
				return nil, fmt.Errorf("%s: %q is not a boolean (want true or false)", KeyInternalSeparatorEnabled, f)
			}
		}
	}
	switch class := strings.TrimSpace(props[KeyClass]); class {
	case "", ClassDefault, shortClassDefault:
		return NewDefault(sep, internalSep), nil
	case ClassIdentity, shortClassIdentity:
		return NewIdentity(sep, internalSep, props[KeySourceAlias]), nil
	default:
		return nil, fmt.Errorf("%s: unsupported policy %q (want %s or %s)", KeyClass, class, ClassDefault, ClassIdentity)
	}
}

// maxCycleHops bounds IsCycle's walk.
const maxCycleHops = 1000

// IsCycle reports whether topic originated on targetAlias, i.e. whether
// mirroring it to targetAlias would close a loop (MirrorSourceConnector.isCycle):
// it walks TopicSource/UpstreamTopic hop by hop and is true as soon as a hop's
// source equals targetAlias. It stops when the source is unknown or the upstream
// name stops changing (so it is always false under Identity unless the
// configured alias is targetAlias), and after a bounded number of hops, so a
// misbehaving Policy cannot make it loop.
func IsCycle(p Policy, topic, targetAlias string) bool {
	seen := map[string]bool{}
	for hops := 0; hops < maxCycleHops && !seen[topic]; hops++ {
		seen[topic] = true
		src, ok := p.TopicSource(topic)
		if !ok {
			return false
		}
		if src == targetAlias {
			return true
		}
		up, ok := p.UpstreamTopic(topic)
		if !ok || up == topic {
			return false
		}
		topic = up
	}
	return false
}
