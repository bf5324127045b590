package lag_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/mirrorctl/mirrorctl/internal/cli/lag"
	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// TestGroupCommitsFetchedTogether: the source commits of every
// checkpointed group are fetched in one OffsetFetch (kadm
// FetchManyOffsets), not one request per group, and each group still gets
// its own commits; an authorization error on one group's partition still
// fails lag naming that group, as a request of its own did.
func TestGroupCommitsFetchedTogether(t *testing.T) {
	e := newEnv(t, "")
	topic := testkit.Name("orders")
	remote := "us-east." + topic
	now := time.Now().Truncate(time.Millisecond)
	e.CreateTopic(t, "us-east", topic, 2, nil)
	e.CreateTopic(t, "eu-west", remote, 2, nil)
	e.CreateTopic(t, "eu-west", "us-east.checkpoints.internal", 1, nil)
	var groups []string
	for i := range 5 {
		g := testkit.Name(fmt.Sprintf("many-%d", i))
		groups = append(groups, g)
		for p := int32(0); p < 2; p++ {
			ck := mm2.Checkpoint{Group: g, Topic: remote, Partition: p, UpstreamOffset: 3, DownstreamOffset: 3}
			k, _ := ck.MarshalKey()
			v, _ := ck.MarshalValue()
			e.Produce(t, "eu-west", &kgo.Record{Topic: "us-east.checkpoints.internal", Key: k, Value: v, Timestamp: now.Add(-time.Second)})
		}
		e.Commit(t, "us-east", g, map[string]map[int32]int64{topic: {0: int64(10 + i), 1: int64(20 + i)}})
	}
	var mu sync.Mutex
	var requests, denied int
	deny := ""
	e.East.ControlKey(int16(kmsg.OffsetFetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		e.East.KeepControl()
		r := req.(*kmsg.OffsetFetchRequest)
		mu.Lock()
		defer mu.Unlock()
		mine := false
		for _, g := range r.Groups {
			mine = mine || strings.Contains(g.Group, "many-")
		}
		if !mine {
			return nil, nil, false
		}
		requests++
		if deny == "" {
			return nil, nil, false
		}
		// Answer as the broker would with no DESCRIBE on the topic for
		// one group: its partitions carry TOPIC_AUTHORIZATION_FAILED.
		resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
		resp.SetVersion(r.GetVersion())
		for _, g := range r.Groups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group = g.Group
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic = topic
			for p := int32(0); p < 2; p++ {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition, rp.Offset = p, 7
				if g.Group == deny {
					rp.Offset, rp.ErrorCode = -1, kerr.TopicAuthorizationFailed.Code
					denied++
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil, true
	})

	opts, _ := e.options(t, now)
	opts.Groups = groups
	clients, _ := opts.Clients()
	cfg, _ := opts.Config()
	res, err := lag.Collect(context.Background(), opts, clients, flowsOf(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if requests != 1 {
		t.Errorf("%d OffsetFetch requests for %d groups, want 1", requests, len(groups))
	}
	fl := res.Flows[0]
	if len(fl.Groups) != len(groups) {
		t.Fatalf("groups %+v", fl.Groups)
	}
	for i, g := range fl.Groups {
		if g.Group != groups[i] || len(g.Partitions) != 2 || g.Partitions[0].CommittedOffset != int64(10+i) || g.Partitions[1].CommittedOffset != int64(20+i) ||
			g.RereadsOnFailover != int64(10+i-3+20+i-3) {
			t.Errorf("group %d: %+v, partitions %+v; want commits %d and %d", i, g, g.Partitions, 10+i, 20+i)
		}
	}

	mu.Lock()
	deny = groups[2]
	mu.Unlock()
	_, err = lag.Collect(context.Background(), opts, clients, flowsOf(cfg))
	if !errors.Is(err, kerr.TopicAuthorizationFailed) || !strings.Contains(err.Error(), "fetch offsets of group "+groups[2]) || denied == 0 {
		t.Fatalf("lag with one group's topic denied: %v; want TOPIC_AUTHORIZATION_FAILED naming %s", err, groups[2])
	}
}
