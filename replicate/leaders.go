package replicate

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// leaderPoll is how often awaitLeaders asks again.
const leaderPoll = 10 * time.Millisecond

// awaitLeaders waits until the leader of every partition of topics serves it:
// a ListOffsets (latest) sent straight to that leader answers without error.
// A topic created or grown a moment ago is in the metadata before its leader
// has loaded the partition, and a produce in that window is refused with
// NOT_LEADER_OR_FOLLOWER and retried only after a backoff (100 ms or more);
// asking every 10 ms costs a few small requests instead. Requests go to one
// broker at a time and are not retried by kgo, so the poll interval is ours.
//
// It returns nil once every partition answers, or, after timeout (or when
// ctx ends), an error naming a partition still refused and why. Callers treat
// that as a warning: the producer's own retries still deliver.
func awaitLeaders(ctx context.Context, cl *kgo.Client, topics []string, timeout time.Duration) error {
	if len(topics) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	why := "no answer yet from " + strings.Join(topics, ", ")
	for {
		pending, err := unservedPartitions(ctx, cl, topics)
		switch {
		case err == nil && pending == "":
			return nil
		case err == nil:
			why = pending
		case ctx.Err() == nil:
			why = fmt.Sprintf("topics %s: %v", strings.Join(topics, ", "), err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("partitions not served after %s: %s", timeout, why)
		case <-time.After(leaderPoll):
		}
	}
}

// unservedPartitions returns "" when every partition of topics is served by
// its leader, else a description of the first one that is not.
func unservedPartitions(ctx context.Context, cl *kgo.Client, topics []string) (string, error) {
	mreq := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		mreq.Topics = append(mreq.Topics, rt)
	}
	meta, err := mreq.RequestWith(ctx, cl)
	if err != nil {
		return "", err
	}
	byLeader := map[int32]*kmsg.ListOffsetsRequest{}
	for _, t := range meta.Topics {
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return fmt.Sprintf("topic %s: %v", name, err), nil
		}
		if len(t.Partitions) == 0 {
			return fmt.Sprintf("topic %s: no partitions yet", name), nil
		}
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil || p.Leader < 0 {
				return fmt.Sprintf("%s[%d]: no leader (%v)", name, p.Partition, err), nil
			}
			req := byLeader[p.Leader]
			if req == nil {
				req = kmsg.NewPtrListOffsetsRequest()
				req.ReplicaID = -1
				byLeader[p.Leader] = req
			}
			if len(req.Topics) == 0 || req.Topics[len(req.Topics)-1].Topic != name {
				rt := kmsg.NewListOffsetsRequestTopic()
				rt.Topic = name
				req.Topics = append(req.Topics, rt)
			}
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition = p.Partition
			rp.CurrentLeaderEpoch = p.LeaderEpoch
			rp.Timestamp = -1 // latest
			last := &req.Topics[len(req.Topics)-1]
			last.Partitions = append(last.Partitions, rp)
		}
	}
	for leader, req := range byLeader {
		resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
		if err != nil {
			return "", err
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return fmt.Sprintf("%s[%d] on broker %d: %v", t.Topic, p.Partition, leader, err), nil
				}
			}
		}
	}
	return "", nil
}

// awaitRemotePartitions waits until each remote topic of need has at least
// the given number of partitions on the target (the flow leader creates and
// grows them), asking every 100 ms, until ctx ends.
func awaitRemotePartitions(ctx context.Context, cl *kgo.Client, need map[string]int32) error {
	if len(need) == 0 {
		return nil
	}
	for {
		req := kmsg.NewPtrMetadataRequest()
		for t := range need {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(t)
			req.Topics = append(req.Topics, rt)
		}
		missing := ""
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			have := map[string]int32{}
			for _, t := range resp.Topics {
				if t.Topic != nil && t.ErrorCode == 0 {
					have[*t.Topic] = int32(len(t.Partitions))
				}
			}
			for t, n := range need {
				if have[t] < n {
					missing = fmt.Sprintf("%s has %d of %d partitions", t, have[t], n)
					break
				}
			}
			if missing == "" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			if missing == "" && err != nil {
				missing = err.Error()
			}
			return fmt.Errorf("remote partitions not there: %s: %w", missing, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
