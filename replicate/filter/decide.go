package filter

import (
	"fmt"
	"strings"

	"github.com/mirrorctl/mirrorctl/replicate/policy"
)

// Reason says why a topic is not replicated; "" means it is.
type Reason string

// Reasons reported by DecideTopic, in the order they are checked.
const (
	ReasonInternal    Reason = "internal topic"
	ReasonCycle       Reason = "cycle: originated on target"
	ReasonNotIncluded Reason = "not matched by topics"
	ReasonExcluded    Reason = "matched by topics.exclude"
)

// Decision is whether one source topic is replicated on a flow, and why.
type Decision struct {
	Replicate bool
	Reason    Reason // "" when Replicate is true
	Detail    string // a human sentence naming the topic and the rule or list item
}

// String returns Detail.
func (d Decision) String() string { return d.Detail }

// DecideTopic decides whether source topic is replicated on the flow
// source->targetAlias, as MirrorSourceConnector.shouldReplicateTopic does: it is
// replicated when
//
//	(f.Accept(topic) || (heartbeatsReplication && p.IsHeartbeatsTopic(topic)))
//	&& !p.IsInternalTopic(topic) && !policy.IsCycle(p, topic, targetAlias)
//
// heartbeatsReplication is heartbeats.replication.enabled (KIP-1089, 4.0;
// before 4.0 MM2 behaves as if it were true). When several rules reject a topic
// the most telling is reported: internal, then cycle, then the filter lists.
func DecideTopic(p policy.Policy, f TopicFilter, topic, targetAlias string, heartbeatsReplication bool) Decision {
	if p.IsInternalTopic(topic) {
		return Decision{Reason: ReasonInternal,
			Detail: fmt.Sprintf("topic %q is internal: %s; never replicated", topic, internalWhy(p, topic))}
	}
	if policy.IsCycle(p, topic, targetAlias) {
		return Decision{Reason: ReasonCycle,
			Detail: fmt.Sprintf("cycle: topic %q originated on %s, the target of this flow", topic, targetAlias)}
	}
	if f.Accept(topic) {
		item, _ := f.Include.MatchingItem(topic)
		return Decision{Replicate: true,
			Detail: fmt.Sprintf("topic %q matched by %s item %q", topic, keyOr(f.Include, KeyTopics), item)}
	}
	if heartbeatsReplication && p.IsHeartbeatsTopic(topic) {
		return Decision{Replicate: true,
			Detail: fmt.Sprintf("topic %q is a heartbeats topic (heartbeats.replication.enabled)", topic)}
	}
	if !f.Include.Match(topic) {
		return Decision{Reason: ReasonNotIncluded,
			Detail: fmt.Sprintf("topic %q not matched by %s (%s)", topic, keyOr(f.Include, KeyTopics), listOrBlank(f.Include))}
	}
	item, _ := f.Exclude.MatchingItem(topic)
	return Decision{Reason: ReasonExcluded,
		Detail: fmt.Sprintf("topic %q matched by %s item %q", topic, keyOr(f.Exclude, KeyTopicsExclude), item)}
}

func keyOr(p *Pattern, def string) string {
	if k := p.Key(); k != "" {
		return k
	}
	return def
}

func listOrBlank(p *Pattern) string {
	if s := p.String(); s != "" {
		return s
	}
	return "blank: matches nothing"
}

// internalWhy names the isInternalTopic rule that applies.
func internalWhy(p policy.Policy, topic string) string {
	switch {
	case p.IsCheckpointsTopic(topic):
		return "a checkpoints topic (MM2 internal)"
	case p.IsMM2InternalTopic(topic):
		return fmt.Sprintf("the mirror's own: starts with \"mm2\" or \"mirrorctl-\" and ends with %q", p.InternalSuffix())
	case strings.HasPrefix(topic, "__"):
		return `starts with "__" (Kafka internal)`
	default:
		return `starts with "." (Kafka internal)`
	}
}
