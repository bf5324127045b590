package cmdutil

import (
	"context"
	"strings"

	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/replicate"
	"github.com/mirrorctl/mirrorctl/replicate/policy"
)

// InternalTopics returns the internal topics of f that kinds name
// (checkpoints, offset-syncs, heartbeats, progress; all when empty), with
// the other KIP-949 naming looked up on the clusters
// ([replicate.LookUpOtherNaming]), and reports them on io's stderr
// ([NoteInternalTopics]).
func InternalTopics(ctx context.Context, io *iostreams.IOStreams, clients replicate.Clients, f replicate.FlowConfig, kinds ...string) []replicate.InternalTopic {
	var ts []replicate.InternalTopic
	for _, t := range f.InternalTopics() {
		if len(kinds) == 0 || contains(kinds, t.Kind) {
			ts = append(ts, t)
		}
	}
	replicate.LookUpOtherNaming(ctx, clients, ts)
	NoteInternalTopics(io, f.Name(), f.Policy, ts)
	return ts
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// NoteInternalTopics says which internal topic names flow (named as
// "source->target", whose replication policy is p) reads when they
// depend on replication.policy.internal.topic.separator.enabled (a custom
// separator), as a note, and warns for each topic whose other naming holds
// records: those were written under the other setting (MM2 before 3.1, or
// the flag set differently there) and are not read. With the default
// separator both namings are one and nothing is printed.
func NoteInternalTopics(io *iostreams.IOStreams, flow string, p policy.Policy, ts []replicate.InternalTopic) {
	var parts []string
	for _, t := range ts {
		if t.Other != "" {
			parts = append(parts, t.Kind+" "+t.Topic+" on "+t.Cluster)
		}
	}
	if len(parts) == 0 {
		return
	}
	enabled := p.InternalSuffix() != policy.DefaultSeparator+"internal"
	Notef(io, "flow %s reads %s (replication.policy.separator %q, replication.policy.internal.topic.separator.enabled = %v)",
		flow, strings.Join(parts, ", "), p.Separator(), enabled)
	for _, t := range ts {
		if t.OtherRecords != nil {
			Warnf(io, "flow %s: %s topic %s on %s holds %s but is not read (%s is): it was written with replication.policy.internal.topic.separator.enabled = %v; "+
				"set that if its writer (MM2 before 3.1, or another config) is the one to follow",
				flow, t.Kind, t.Other, t.Cluster, Plural(int(*t.OtherRecords), "record", "records"), t.Topic, !enabled)
		}
	}
}
