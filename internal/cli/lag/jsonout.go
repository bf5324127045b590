package lag

import (
	"io"

	"github.com/mirrorctl/mirrorctl/internal/output"
	lagengine "github.com/mirrorctl/mirrorctl/lag"
)

// writeResultJSON writes res to w row by row (output.JSONStream), byte for
// byte what output.WriteJSON writes for it (TestStreamedJSONMatchesWriteJSON):
// with 1,000 groups checkpointed on 10,000 partitions the document has 10
// million group partitions. A field added to Result, lag.FlowLag,
// lag.PartitionLag, lag.GroupLag or lag.GroupPartition must be added here
// too, in the same place.
func writeResultJSON(w io.Writer, res Result) error {
	s := output.NewJSONStream(w)
	s.BeginObject()
	s.Field("schema_version")
	s.Int(int64(res.SchemaVersion))
	s.Field("internal_topics")
	s.Value(res.InternalTopics)
	s.Field("flows")
	if res.Flows == nil {
		s.Null()
	} else {
		s.BeginArray()
		for i := range res.Flows {
			writeFlow(s, &res.Flows[i])
		}
		s.EndArray()
	}
	s.Field("breaches")
	s.Value(res.Breaches)
	s.EndObject()
	return s.Close()
}

func writeFlow(s *output.JSONStream, f *lagengine.FlowLag) {
	s.BeginObject()
	s.Field("source")
	s.String(f.Source)
	s.Field("target")
	s.String(f.Target)
	s.Field("heartbeat_age_ms")
	s.OptInt(f.HeartbeatAgeMs)
	s.Field("newest_checkpoint_age_ms")
	s.OptInt(f.NewestCheckpointAgeMs)
	s.Field("partitions")
	if f.Partitions == nil {
		s.Null()
	} else {
		s.BeginArray()
		for i := range f.Partitions {
			writePartition(s, &f.Partitions[i])
		}
		s.EndArray()
	}
	s.Field("groups")
	if f.Groups == nil {
		s.Null()
	} else {
		s.BeginArray()
		for i := range f.Groups {
			writeGroup(s, &f.Groups[i])
		}
		s.EndArray()
	}
	s.Field("members")
	s.Value(f.Members)
	s.Field("leader")
	s.Value(f.Leader)
	if f.OwnershipError != "" {
		s.Field("ownership_error")
		s.String(f.OwnershipError)
	}
	if f.SourceError != "" {
		s.Field("source_error")
		s.String(f.SourceError)
	}
	s.EndObject()
}

func writePartition(s *output.JSONStream, p *lagengine.PartitionLag) {
	s.BeginObject()
	s.Field("source_topic")
	s.String(p.SourceTopic)
	s.Field("topic")
	s.String(p.Topic)
	s.Field("partition")
	s.Int(int64(p.Partition))
	s.Field("source_end_offset")
	s.Int(p.SourceEndOffset)
	s.Field("replicated_offset")
	s.Int(p.ReplicatedOffset)
	s.Field("records_behind")
	s.Int(p.RecordsBehind)
	s.Field("time_behind_ms")
	s.OptInt(p.TimeBehindMs)
	s.Field("target_end_offset")
	s.Int(p.TargetEndOffset)
	s.Field("from")
	s.String(p.From)
	if p.Breach {
		s.Field("breach")
		s.Bool(true)
	}
	if p.Owner != "" {
		s.Field("owner")
		s.String(p.Owner)
	}
	if p.SourceUnknown {
		s.Field("source_unknown")
		s.Bool(true)
	}
	s.Field("state")
	s.String(p.State)
	s.Field("stopped")
	s.Bool(p.Stopped)
	if p.StopReason != "" {
		s.Field("stop_reason")
		s.String(p.StopReason)
	}
	s.Field("skipped")
	s.Int(p.Skipped)
	if p.Loss != nil {
		s.Field("loss")
		s.Value(p.Loss)
	}
	if p.ProgressTime != nil {
		s.Field("progress_time")
		s.Time(*p.ProgressTime)
	}
	s.EndObject()
}

func writeGroup(s *output.JSONStream, g *lagengine.GroupLag) {
	s.BeginObject()
	s.Field("group")
	s.String(g.Group)
	s.Field("checkpoint_age_ms")
	s.OptInt(g.CheckpointAgeMs)
	s.Field("rereads_on_failover")
	s.Int(g.RereadsOnFailover)
	s.Field("partitions")
	if g.Partitions == nil {
		s.Null()
	} else {
		s.BeginArray()
		for i := range g.Partitions {
			p := &g.Partitions[i]
			s.BeginObject()
			s.Field("topic")
			s.String(p.Topic)
			s.Field("partition")
			s.Int(int64(p.Partition))
			s.Field("committed_offset")
			s.Int(p.CommittedOffset)
			s.Field("upstream_offset")
			s.Int(p.UpstreamOffset)
			s.Field("downstream_offset")
			s.Int(p.DownstreamOffset)
			s.Field("rereads")
			s.Int(p.Rereads)
			s.Field("checkpoint_age_ms")
			s.Int(p.CheckpointAgeMs)
			s.EndObject()
		}
		s.EndArray()
	}
	if g.Breach {
		s.Field("breach")
		s.Bool(true)
	}
	s.EndObject()
}
