package mm2_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/cli"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate/connectoffsets"
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code = cli.Run(ctx, ios, args, nil)
	return code, out.String(), errOut.String()
}

// TestHandoffWritesMM2OffsetsFromProgress: after replicate, the plan lists
// each copied partition with MM2 offset next-1; --apply writes them with
// Connect's key bytes (audited), MM2's offset for a partition MM2 copied
// further is left alone; a second plan is in sync; and a replicate started
// afterwards resumes from the same place. Progress of a topic the flow no
// longer mirrors is left alone.
func TestHandoffWritesMM2OffsetsFromProgress(t *testing.T) {
	p := testkit.NewPair(t)
	topic, dropped := testkit.Name("handback"), testkit.Name("dropped")
	cfg := p.WriteConfig(t, "us-east->eu-west.topics = "+topic+"\n")
	before := p.WriteConfig(t, "us-east->eu-west.topics = "+topic+", "+dropped+"\n")
	auditLog := filepath.Join(t.TempDir(), "audit.log")
	p.CreateTopic(t, "us-east", topic, 3, nil)
	p.CreateTopic(t, "us-east", dropped, 2, nil)
	var recs []*kgo.Record
	for part := int32(0); part < 3; part++ {
		for i := 0; i < 10*int(part+1); i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: part, Value: []byte(fmt.Sprint(i))})
		}
	}
	recs = append(recs, &kgo.Record{Topic: dropped, Partition: 0, Value: []byte("x")}, &kgo.Record{Topic: dropped, Partition: 1, Value: []byte("y")})
	p.Produce(t, "us-east", recs...)
	if code, _, stderr := run(t, "replicate", "--once", "-c", before); code != 0 {
		t.Fatalf("replicate --once: exit %d: %s", code, stderr)
	}
	offsets := connectoffsets.DedicatedTopic("us-east")
	p.CreateTopic(t, "eu-west", offsets, 5, nil)
	key := func(part int32) []byte {
		return connectoffsets.EncodeKey(connectoffsets.Key{Connector: connectoffsets.DefaultConnector, Cluster: "us-east", Topic: topic, Partition: part})
	}
	// MM2 copied partition 2 further than mirrorctl knows (its 30 records
	// and then some): left alone.
	p.Produce(t, "eu-west", &kgo.Record{Topic: offsets, Partition: 1, Key: key(2), Value: connectoffsets.EncodeValue(40)},
		&kgo.Record{Topic: offsets, Partition: 0, Key: []byte("junk"), Value: []byte("junk")})

	code, out, stderr := run(t, "mm2", "handoff", "-c", cfg, "--audit-log", auditLog)
	if code != 0 || !strings.Contains(stderr, "plan only: 2 MM2 source offsets would be written") || !strings.Contains(stderr, "1 record of "+offsets+" are not Connect source offsets") ||
		!strings.Contains(stderr, "2 partitions of topics the flow does not mirror now") || strings.Contains(out, dropped) {
		t.Fatalf("plan: exit %d\n%s\n%s", code, out, stderr)
	}
	if _, err := os.Stat(auditLog); err == nil {
		if b, _ := os.ReadFile(auditLog); len(b) > 0 {
			t.Fatalf("a plan wrote to the audit log: %s", b)
		}
	}
	code, out, stderr = run(t, "mm2", "handoff", "-c", cfg, "--audit-log", auditLog, "--apply", "-o", "json")
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, stderr)
	}
	var doc struct {
		SchemaVersion int  `json:"schema_version"`
		Applied       bool `json:"applied"`
		Written       int  `json:"written"`
		Flows         []struct {
			Partitions []struct {
				Partition int32  `json:"partition"`
				Write     int64  `json:"write"`
				Action    string `json:"action"`
			} `json:"partitions"`
		} `json:"flows"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if doc.SchemaVersion != 1 || !doc.Applied || doc.Written != 2 || len(doc.Flows) != 1 || len(doc.Flows[0].Partitions) != 3 {
		t.Fatalf("apply document %+v", doc)
	}
	for _, r := range doc.Flows[0].Partitions {
		want := map[int32]string{0: "write", 1: "write", 2: "mm2-ahead"}[r.Partition]
		if r.Action != want || (want == "write" && r.Write != 10*int64(r.Partition+1)-1) {
			t.Errorf("partition %d: %+v, want %s", r.Partition, r, want)
		}
	}
	if b, err := os.ReadFile(auditLog); err != nil || !strings.Contains(string(b), "mm2 handoff") {
		t.Fatalf("audit log: %v %s", err, b)
	}
	st := connectoffsets.NewStore(connectoffsets.DefaultConnector, "us-east")
	for part, rs := range p.ReadAll(t, "eu-west", offsets) {
		for _, r := range rs {
			st.Add(part, r.Offset, r.Key, r.Value)
		}
	}
	for part, want := range map[int32]int64{0: 9, 1: 19, 2: 40} {
		pos, ok := st.Get(topic, part)
		if !ok || pos.Offset != want || string(pos.RawKey) != string(key(part)) {
			t.Errorf("MM2 offset of partition %d: %+v %v, want %d under Connect's key bytes", part, pos, ok, want)
		}
	}
	code, _, stderr = run(t, "mm2", "handoff", "-c", cfg, "--audit-log", auditLog)
	if code != 0 || !strings.Contains(stderr, "plan only: 0 MM2 source offsets") {
		t.Fatalf("second plan: exit %d: %s", code, stderr)
	}
}

// TestHandoffBlockedWhileReplicateRuns: a replicate process in the flow's
// group blocks the hand-back (exit 3, nothing written).
func TestHandoffBlockedWhileReplicateRuns(t *testing.T) {
	p := testkit.NewPair(t)
	topic := testkit.Name("busy")
	cfg := p.WriteConfig(t, "us-east->eu-west.topics = "+topic+"\n")
	p.CreateTopic(t, "us-east", topic, 1, nil)
	member := p.Client(t, "us-east", kgo.ConsumerGroup("mirrorctl-us-east-eu-west"), kgo.ConsumeTopics(topic))
	testkit.WaitFor(t, "the member joined", func() bool {
		d, err := p.Admin(t, "us-east").DescribeGroups(testkit.Context(t), "mirrorctl-us-east-eu-west")
		return err == nil && len(d["mirrorctl-us-east-eu-west"].Members) == 1
	})
	defer member.Close()
	code, _, stderr := run(t, "mm2", "handoff", "-c", cfg, "--apply", "--audit-log", filepath.Join(t.TempDir(), "a.log"))
	if code != 3 || !strings.Contains(stderr, "replicate processes still run the flow") {
		t.Fatalf("exit %d, stderr %s; want 3 naming the replicate processes", code, stderr)
	}
}
