package replicate

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/mirrorctl/mirrorctl/replicate/policy"
)

// InternalTopic is one of a flow's internal topics, named as the flow's
// replication policy names it. With a custom replication.policy.separator
// the name depends on replication.policy.internal.topic.separator.enabled
// (KIP-949: "us-east_checkpoints_internal" when true, MM2's default since
// 3.1, "us-east.checkpoints.internal" when false, as before 3.1): Other is
// the name under the other setting, and OtherRecords how many records a
// topic of that name holds, so that a reader of one naming learns that the
// other one has data (MM2 from before 3.1, or a flag set differently).
type InternalTopic struct {
	// Flow is the flow ("source->target") the topic is of.
	Flow string `json:"flow,omitempty"`
	// Kind is checkpoints, offset-syncs, heartbeats, progress or acl-ledger
	// (with sync.topic.acls.enabled).
	Kind string `json:"kind"`
	// Cluster is the alias of the cluster holding the topic.
	Cluster string `json:"cluster"`
	// Topic is the name read and written.
	Topic string `json:"topic"`
	// Other is the name under the other setting of the KIP-949 flag; ""
	// when both settings give one name (separator ".", heartbeats).
	Other string `json:"other_naming,omitempty"`
	// OtherRecords is the records (end minus log start offsets, summed over
	// partitions) the topic named Other holds; nil when there is none, or
	// Other is "", or it was not looked up.
	OtherRecords *int64 `json:"other_naming_records,omitempty"`
}

// InternalTopics returns the flow's internal topics: its checkpoints and
// progress topics on the target, its offset-syncs topic where
// offset-syncs.topic.location puts it, the target's heartbeats topic, and
// with sync.topic.acls.enabled its ACL ledger topic on the target.
func (f FlowConfig) InternalTopics() []InternalTopic {
	other := otherNaming(f.Policy)
	syncAlias, syncTopic := f.offsetSyncsCluster()
	otherSync := other.OffsetSyncsTopic(f.Target)
	if f.OffsetSyncsTopicLocation == LocationTarget {
		otherSync = other.OffsetSyncsTopic(f.Source)
	}
	out := []InternalTopic{
		{Kind: "checkpoints", Cluster: f.Target, Topic: f.Policy.CheckpointsTopic(f.Source), Other: other.CheckpointsTopic(f.Source)},
		{Kind: "offset-syncs", Cluster: syncAlias, Topic: syncTopic, Other: otherSync},
		{Kind: "heartbeats", Cluster: f.Target, Topic: f.Policy.HeartbeatsTopic()},
		{Kind: "progress", Cluster: f.Target, Topic: ProgressTopic(f.Policy, f.Source), Other: ProgressTopic(other, f.Source)},
	}
	if f.SyncTopicACLs {
		out = append(out, InternalTopic{Kind: "acl-ledger", Cluster: f.Target, Topic: ACLLedgerTopic(f.Policy, f.Source), Other: ACLLedgerTopic(other, f.Source)})
	}
	for i := range out {
		out[i].Flow = f.Name()
		if out[i].Other == out[i].Topic {
			out[i].Other = ""
		}
	}
	return out
}

// otherNaming is p's internal-topic naming under the other setting of the
// KIP-949 flag.
func otherNaming(p policy.Policy) policy.Policy {
	dotted := p.InternalSuffix() == policy.DefaultSeparator+"internal"
	return policy.NewDefault(p.Separator(), dotted)
}

// otherNamingTimeout bounds LookUpOtherNaming.
const otherNamingTimeout = 5 * time.Second

// LookUpOtherNaming sets OtherRecords of every topic of ts whose other
// naming exists on its cluster and holds records (ListOffsets), bounded by
// otherNamingTimeout. A cluster that does not answer is left unlooked-at:
// the caller reads the topic in use and reports that cluster itself.
func LookUpOtherNaming(ctx context.Context, clients Clients, ts []InternalTopic) {
	ctx, cancel := context.WithTimeout(ctx, otherNamingTimeout)
	defer cancel()
	for i := range ts {
		if ts[i].Other == "" {
			continue
		}
		adm, err := clients.Admin(ts[i].Cluster)
		if err != nil {
			continue
		}
		starts, err := adm.ListStartOffsets(ctx, ts[i].Other)
		if err != nil {
			continue
		}
		ends, err := adm.ListEndOffsets(ctx, ts[i].Other)
		if err != nil {
			continue
		}
		var n int64
		found := false
		ends.Each(func(e kadm.ListedOffset) {
			if e.Err != nil {
				return
			}
			if s, ok := starts.Lookup(e.Topic, e.Partition); ok && s.Err == nil {
				found = true
				n += e.Offset - s.Offset
			}
		})
		if found && n > 0 {
			ts[i].OtherRecords = &n
		}
	}
}
