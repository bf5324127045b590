package cmdutil

import (
	"context"
	"errors"
	"time"

	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// OneClusterBudget bounds the cluster-ID look-up of [CheckOneCluster].
const OneClusterBudget = 5 * time.Second

// CheckOneCluster refuses, as replicate does, a command on flows whose
// aliases reach one Kafka cluster (equal cluster IDs from Metadata): lag,
// translate and failover would read and commit on the cluster they were
// asked to fail over from. It asks every alias concurrently, bounded by
// OneClusterBudget; an alias that does not answer is not compared (the
// command reports it itself). The error is a *config.Error at the
// `clusters` line (exit 2): the file, not the clusters, has to change.
func CheckOneCluster(ctx context.Context, cfg *config.Config, clients replicate.Clients, aliases ...string) error {
	seen := map[string]bool{}
	var uniq []string
	for _, a := range aliases {
		if a != "" && !seen[a] {
			seen[a] = true
			uniq = append(uniq, a)
		}
	}
	if len(uniq) < 2 {
		return nil
	}
	bctx, cancel := context.WithTimeout(ctx, OneClusterBudget)
	defer cancel()
	ids, _ := replicate.ClusterIDs(bctx, clients, uniq)
	var errs []error
	for _, ae := range replicate.SameClusters(ids) {
		line := 0
		if cl, ok := cfg.Cluster(ae.Aliases[0]); ok {
			line = cl.Line
		}
		errs = append(errs, &config.Error{File: cfg.File, Line: line, Key: "clusters", Msg: ae.Error(), Err: ae})
	}
	return errors.Join(errs...)
}
