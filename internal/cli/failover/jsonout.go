package failover

import (
	"io"

	"github.com/mirrorctl/mirrorctl/failover"
	"github.com/mirrorctl/mirrorctl/internal/output"
)

// The JSON documents of failover and its verbs are written row by row with
// output.JSONStream: a plan of 1,000 groups × 100 partitions is 69 MB of
// indented JSON, and output.WriteJSON held it twice in memory and spent
// most of the command's CPU indenting it. writeResult and writeVerbResult
// write byte for byte what output.WriteJSON writes for toResult and
// toVerbResult (TestStreamedJSONMatchesWriteJSON); a field added to Result,
// GroupRow, PartitionRow or VerbResult must be added here too, in the same
// place.

// writeResultJSON writes plan's Result document to w.
func writeResultJSON(w io.Writer, plan *failover.Plan) error {
	s := output.NewJSONStream(w)
	writeResult(s, plan)
	return s.Close()
}

// writeVerbResultJSON writes the VerbResult document of proc to w.
func writeVerbResultJSON(w io.Writer, proc *failover.Procedure, ev *failover.Evidence, paths []string) error {
	s := output.NewJSONStream(w)
	env := output.NewEnvelope()
	s.BeginObject()
	s.Field("schema_version")
	s.Int(int64(env.SchemaVersion))
	s.Field("type")
	s.String(string(proc.Type))
	s.Field("plans")
	s.BeginArray()
	for _, plan := range proc.Plans {
		writeResult(s, plan)
	}
	s.EndArray()
	s.Field("rpo")
	s.Value(proc.RPO)
	if len(proc.Bounds) > 0 {
		s.Field("bounds")
		s.BeginArray()
		for i := range proc.Bounds {
			writeBound(s, &proc.Bounds[i])
		}
		s.EndArray()
	}
	s.Field("duplicates")
	s.Int(proc.Duplicates)
	if ev != nil {
		s.Field("evidence")
		s.Value(ev)
	}
	if len(paths) > 0 {
		s.Field("evidence_files")
		s.Value(paths)
	}
	if proc.Quiescence != nil {
		s.Field("quiescence")
		s.Value(proc.Quiescence)
	}
	s.EndObject()
	return s.Close()
}

// writeResult writes plan as the Result object toResult builds.
func writeResult(s *output.JSONStream, plan *failover.Plan) {
	back := plan.Direction == failover.Failback
	env := output.NewEnvelope()
	s.BeginObject()
	s.Field("schema_version")
	s.Int(int64(env.SchemaVersion))
	s.Field("direction")
	s.String(string(plan.Direction))
	s.Field("applied")
	s.Bool(plan.Applied)
	s.Field("source")
	s.String(plan.Source)
	s.Field("target")
	s.String(plan.Target)
	s.Field("groups")
	s.BeginArray()
	for gi := range plan.Groups {
		writeGroup(s, &plan.Groups[gi], back)
	}
	s.EndArray()
	s.EndObject()
}

// writeGroup writes g as the GroupRow object toResult builds.
func writeGroup(s *output.JSONStream, g *failover.GroupPlan, back bool) {
	s.BeginObject()
	s.Field("group")
	s.String(g.Group)
	if g.State != "" {
		if back {
			s.Field("source_state")
		} else {
			s.Field("target_state")
		}
		s.String(g.State)
	}
	s.Field("members")
	s.Int(int64(g.Members))
	if len(g.Refused) > 0 {
		s.Field("refused")
		s.Value(g.Refused)
	}
	if g.Type != "" {
		s.Field("group_type")
		s.String(g.Type)
	}
	if len(g.Blocking) > 0 {
		s.Field("blocking_members")
		s.Value(g.Blocking)
	}
	s.Field("summary")
	s.String(g.Summary)
	s.Field("incomplete")
	s.BeginArray()
	for _, r := range g.Incomplete {
		s.String(r)
	}
	s.EndArray()
	s.Field("partitions")
	s.BeginArray()
	for i := range g.Partitions {
		writePartition(s, &g.Partitions[i], back)
	}
	s.EndArray()
	s.EndObject()
}

// writePartition writes p as the ForwardRow (or, back, BackRow) object
// toResult builds.
func writePartition(s *output.JSONStream, p *failover.PartitionPlan, back bool) {
	s.BeginObject()
	s.Field("source_topic")
	s.String(p.SourceTopic)
	s.Field("topic")
	s.String(p.Topic)
	s.Field("partition")
	s.Int(int64(p.Partition))
	s.Field("source_offset")
	s.OptInt(p.SourceOffset)
	s.Field("target_offset")
	s.OptInt(p.TargetOffset)
	s.Field("action")
	s.String(string(p.Action))
	s.Field("mode")
	s.String(string(p.Mode))
	s.Field("rereads")
	s.OptInt(p.Rereads)
	for _, f := range [...]struct{ name, v string }{{"reason", p.Reason}, {"outcome", p.Outcome}, {"error", p.Error}} {
		if f.v != "" {
			s.Field(f.name)
			s.String(f.v)
		}
	}
	s.Field("verified")
	if p.Verified == nil {
		s.Null()
	} else {
		s.Bool(*p.Verified)
	}
	if p.VerifyNote != "" {
		s.Field("verify_note")
		s.String(p.VerifyNote)
	}
	if p.Sync != nil {
		s.Field("sync")
		s.BeginObject()
		s.Field("upstream")
		s.Int(p.Sync.Upstream)
		s.Field("downstream")
		s.Int(p.Sync.Downstream)
		s.EndObject()
	}
	if back {
		s.Field("current_source_offset")
	} else {
		s.Field("current_target_offset")
	}
	s.OptInt(p.Current)
	s.EndObject()
}

// writeBound writes b as encoding/json writes a failover.Bound.
func writeBound(s *output.JSONStream, b *failover.Bound) {
	s.BeginObject()
	s.Field("group")
	s.String(b.Group)
	s.Field("source_topic")
	s.String(b.SourceTopic)
	s.Field("partition")
	s.Int(int64(b.Partition))
	for _, f := range [...]struct {
		name string
		v    int64
	}{{"checkpoint", b.Checkpoint}, {"committed", b.Committed}, {"target_end", b.TargetEnd}, {"copied", b.Copied}, {"source_end", b.SourceEnd}} {
		s.Field(f.name)
		s.Int(f.v)
	}
	s.Field("seen_at")
	s.Time(b.SeenAt)
	s.Field("reread_max")
	s.Int(b.RereadMax)
	s.Field("not_mirrored_min")
	s.Int(b.NotMirroredMin)
	s.EndObject()
}
