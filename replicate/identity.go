package replicate

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Who the clusters are, checked before any flow starts. An mm2.properties
// file names clusters by alias; nothing stops two aliases from naming one
// cluster, and then a flow between them mirrors the cluster into itself
// (each run adds a prefix: us-east.us-east.us-east.orders, heartbeats too).
// Kafka's cluster ID (Metadata v2+, the KRaft cluster.id) says which cluster
// a client reached, so the engine compares the IDs of the aliases its flows
// use. Remote-topic names are the other identity: two flows into one target
// that would write the same remote topic (IdentityReplicationPolicy keeps
// names, so two sources with an "orders" each) would interleave two
// partitions' records in one, which no offset sync can translate.

// identityTimeout bounds the cluster-ID look-up of one alias.
const identityTimeout = 15 * time.Second

// ClusterAliasError reports aliases that reach the same Kafka cluster
// (equal cluster IDs). Aliases are sorted.
type ClusterAliasError struct {
	ClusterID string
	Aliases   []string
}

func (e *ClusterAliasError) Error() string {
	return fmt.Sprintf("clusters %s are one cluster (cluster ID %s): a flow between them would mirror the cluster into itself, "+
		"and flows through both would copy its topics twice; give each Kafka cluster one alias",
		strings.Join(quoteAll(e.Aliases), " and "), e.ClusterID)
}

// RemoteTopicConflictError reports flows into one target cluster that would
// write the same remote topic (e.g. two IdentityReplicationPolicy sources
// that both have "orders"). Flows are "source->target", sorted, with the
// source topic each would copy in Topics (same order).
type RemoteTopicConflictError struct {
	Target      string
	RemoteTopic string
	Flows       []string
	Topics      []string
}

func (e *RemoteTopicConflictError) Error() string {
	parts := make([]string, len(e.Flows))
	for i := range e.Flows {
		parts[i] = fmt.Sprintf("%s (topic %s)", e.Flows[i], e.Topics[i])
	}
	return fmt.Sprintf("flows %s would all write %s on %s: their records would interleave in one topic and offsets could not be translated; "+
		"use DefaultReplicationPolicy (source-prefixed names) for these flows, or exclude the topic from all but one (topics.exclude)",
		strings.Join(parts, " and "), e.RemoteTopic, e.Target)
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// ClusterIDs returns the cluster ID each alias reaches (Metadata), asked
// concurrently and bounded by identityTimeout per alias. An alias that does
// not answer, or whose cluster reports no ID, is absent from ids and its
// error is in errs (by alias): callers that only compare identities go on
// without it.
func ClusterIDs(ctx context.Context, clients Clients, aliases []string) (ids map[string]string, errs map[string]error) {
	ids, errs = map[string]string{}, map[string]error{}
	type answer struct {
		alias, id string
		err       error
	}
	ch := make(chan answer, len(aliases))
	for _, a := range aliases {
		go func() {
			adm, err := clients.Admin(a)
			if err != nil {
				ch <- answer{alias: a, err: err}
				return
			}
			actx, cancel := context.WithTimeout(ctx, identityTimeout)
			defer cancel()
			m, err := adm.BrokerMetadata(actx)
			switch {
			case err != nil:
				ch <- answer{alias: a, err: err}
			case m.Cluster == "":
				ch <- answer{alias: a, err: errors.New("the cluster reports no cluster ID")}
			default:
				ch <- answer{alias: a, id: m.Cluster}
			}
		}()
	}
	for range aliases {
		an := <-ch
		if an.err != nil {
			errs[an.alias] = an.err
		} else {
			ids[an.alias] = an.id
		}
	}
	return ids, errs
}

// SameClusters returns a [ClusterAliasError] for each cluster ID that more
// than one alias of ids reaches, sorted by the first alias; nil when every
// alias is its own cluster.
func SameClusters(ids map[string]string) []*ClusterAliasError {
	byID := map[string][]string{}
	for alias, id := range ids {
		byID[id] = append(byID[id], alias)
	}
	var out []*ClusterAliasError
	for id, aliases := range byID {
		if len(aliases) > 1 {
			sort.Strings(aliases)
			out = append(out, &ClusterAliasError{ClusterID: id, Aliases: aliases})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Aliases[0] < out[j].Aliases[0] })
	return out
}

// CheckIdentities refuses flows that cannot run together (Run calls it
// before any flow starts; --dry-run and config validate too): aliases of one
// cluster among those the flows use ([ClusterAliasError]), and enabled
// flows into one target that would write the same remote topic
// ([RemoteTopicConflictError]). An alias that cannot be reached is left to
// the flow that uses it, which reports it.
func CheckIdentities(ctx context.Context, clients Clients, flows []FlowConfig) error {
	seen := map[string]bool{}
	var aliases []string
	for _, f := range flows {
		if !f.Enabled && !f.EmitHeartbeats {
			continue
		}
		for _, a := range []string{f.Source, f.Target} {
			if !seen[a] {
				seen[a] = true
				aliases = append(aliases, a)
			}
		}
	}
	if len(aliases) < 2 {
		return nil
	}
	ids, _ := ClusterIDs(ctx, clients, aliases)
	var errs []error
	for _, e := range SameClusters(ids) {
		errs = append(errs, e)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return remoteTopicConflicts(ctx, clients, flows)
}

// remoteTopicConflicts plans every enabled flow whose target another
// enabled flow shares and returns a [RemoteTopicConflictError] per remote
// topic that more than one of them would write.
func remoteTopicConflicts(ctx context.Context, clients Clients, flows []FlowConfig) error {
	byTarget := map[string][]FlowConfig{}
	for _, f := range flows {
		if f.Enabled {
			byTarget[f.Target] = append(byTarget[f.Target], f)
		}
	}
	targets := make([]string, 0, len(byTarget))
	for t, fs := range byTarget {
		if len(fs) > 1 {
			targets = append(targets, t)
		}
	}
	sort.Strings(targets)
	var errs []error
	for _, target := range targets {
		type writer struct{ flow, topic string }
		writers := map[string][]writer{}
		for _, f := range byTarget[target] {
			src, err := clients.Admin(f.Source)
			if err != nil {
				return err
			}
			tgt, err := clients.Admin(f.Target)
			if err != nil {
				return err
			}
			plan, err := PlanFlow(ctx, f, src, tgt)
			if err != nil {
				return err
			}
			for _, t := range plan.Replicated() {
				writers[t.RemoteTopic] = append(writers[t.RemoteTopic], writer{f.Name(), t.Topic})
			}
		}
		remotes := make([]string, 0, len(writers))
		for r, ws := range writers {
			if len(ws) > 1 {
				remotes = append(remotes, r)
			}
		}
		sort.Strings(remotes)
		for _, r := range remotes {
			ws := writers[r]
			sort.Slice(ws, func(i, j int) bool { return ws[i].flow < ws[j].flow })
			e := &RemoteTopicConflictError{Target: target, RemoteTopic: r}
			for _, w := range ws {
				e.Flows = append(e.Flows, w.flow)
				e.Topics = append(e.Topics, w.topic)
			}
			errs = append(errs, e)
		}
	}
	return errors.Join(errs...)
}
