package replicate

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Partition growth while a flow runs. The leader adds the remote partitions
// at its topic refresh; the members' group client learns of the source's new
// partitions at theirs (a forced metadata refresh, see holdMembership), so
// the group assigns them within one refresh.topics.interval.seconds. A task
// of a new partition then waits until the data producer's own metadata has
// the remote partition: with the manual partitioner a record for a partition
// the producer does not know yet fails at once ("invalid record partitioning
// choice"), which would stop the partition.

// awaitProducerPartitions waits until cl's cached metadata holds partition
// n-1 of each remote topic of need that cl already knows (a topic cl never
// produced to is loaded whole by its first produce), forcing a metadata
// refresh every 100 ms, until ctx ends.
func awaitProducerPartitions(ctx context.Context, cl *kgo.Client, need map[string]int32) error {
	for {
		missing := ""
		for topic, n := range need {
			if known, _, _ := cl.PartitionLeader(topic, 0); known < 0 {
				continue // not loaded by cl: its first produce loads it
			}
			if leader, _, _ := cl.PartitionLeader(topic, n-1); leader < 0 {
				missing = fmt.Sprintf("%s[%d]", topic, n-1)
				break
			}
		}
		if missing == "" {
			return nil
		}
		cl.ForceMetadataRefresh()
		select {
		case <-ctx.Done():
			return fmt.Errorf("data producer does not know remote partition %s yet: %w", missing, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
