package replicate_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	replicatecmd "github.com/mirrorctl/mirrorctl/internal/cli/replicate"
	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate"
	"github.com/mirrorctl/mirrorctl/replicate/connectoffsets"
)

// After MirrorMaker 2 copied part of a topic (the remote partitions hold
// records, MM2's Connect source offsets say how far), `replicate --dry-run`
// shows per partition that it resumes from MM2's offsets, right after the
// last copied upstream offset, with nothing copied again or skipped; a
// partition MM2 never recorded but whose remote partition holds records is
// refused until a choice is made, and the plan says so.
func TestDryRunShowsResumeFromMM2Offsets(t *testing.T) {
	e := newEnv(t, "")
	topic := testkit.Name("takeover")
	remote := "us-east." + topic
	createTopics(t, e.Client(t, "us-east"), 3, topic)
	createTopics(t, e.Client(t, "eu-west"), 3, remote)
	e.produceN(t, "us-east", topic, 3, 40)
	// What MM2 copied: 25 records of partitions 0 and 1, and 10 of 2 of
	// which it never saved an offset.
	var copied []*kgo.Record
	for p, n := range map[int32]int{0: 25, 1: 25, 2: 10} {
		for i := 0; i < n; i++ {
			copied = append(copied, &kgo.Record{Topic: remote, Partition: p, Value: []byte("x")})
		}
	}
	e.Produce(t, "eu-west", copied...)
	offsets := connectoffsets.DedicatedTopic("us-east")
	createTopics(t, e.Client(t, "eu-west"), 5, offsets)
	key := func(p int32) []byte {
		return connectoffsets.EncodeKey(connectoffsets.Key{Connector: connectoffsets.DefaultConnector, Cluster: "us-east", Topic: topic, Partition: p})
	}
	e.Produce(t, "eu-west",
		&kgo.Record{Topic: offsets, Partition: 0, Key: key(0), Value: connectoffsets.EncodeValue(24)},
		&kgo.Record{Topic: offsets, Partition: 3, Key: key(1), Value: connectoffsets.EncodeValue(24)})
	e.config = e.WriteConfig(t, "us-east->eu-west.topics = "+topic+"\n")

	code, out, stderr := run(t, "replicate", "--dry-run", "-o", "json", "-c", e.config)
	if code != 0 {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, out, stderr)
	}
	var res replicatecmd.PlanResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if len(res.Resume) != 1 || len(res.Resume[0].Partitions) != 3 {
		t.Fatalf("resume %+v, want one flow with 3 partitions", res.Resume)
	}
	for _, rp := range res.Resume[0].Partitions {
		switch rp.Partition {
		case 0, 1:
			// Recopy is estimated from offset syncs only: none here, so unknown.
			if rp.From != replicate.ResumeMM2Offsets || rp.Offset != 25 || rp.MM2Offset != 24 || rp.Recopy > 0 || rp.Skip != 0 || rp.Error != "" || rp.RemoteEnd != 25 {
				t.Errorf("partition %d: %+v, want resume at 25 from MM2's offset 24, nothing skipped", rp.Partition, rp)
			}
		case 2:
			if rp.From != "" || rp.Error == "" || rp.RemoteEnd != 10 {
				t.Errorf("partition 2: %+v, want refused: no resume point known and 10 records on the remote partition", rp)
			}
		}
	}
	code, table, stderr := run(t, "replicate", "--dry-run", "-c", e.config)
	if code != 0 || !strings.Contains(stderr, "2 from mm2-offsets, 1 from refused") || !strings.Contains(stderr, "--resume-unknown") {
		t.Fatalf("dry run: exit %d, want the resume sources and the way out for partition 2:\n%s\n%s", code, table, stderr)
	}
}
