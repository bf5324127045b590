package replicate

import (
	"fmt"
	"testing"
	"time"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

func eosFlow() FlowConfig {
	f := testFlow("us-east", "eu-west")
	f.ExactlyOnce = true
	f.TransactionInterval = 50 * time.Millisecond
	return f
}

// TestExactlyOnceCopiesCommittedOnce: in exactly-once mode a read_committed
// read of the target holds each committed source record once, in order,
// aborted ones never; progress is committed with them; offset syncs map
// copied records to their copies.
func TestExactlyOnceCopiesCommittedOnce(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("eos")
	p.CreateTopic(t, "us-east", topic, 1, nil)
	want := txnSteps(t, p, "us-east", topic, "c", "a", "p", "c", "a")
	produceSeq(t, p, topic, 1, 500)
	m := runOnce(t, p, eosFlow())
	remote := "us-east." + topic
	got := values(p.ReadAllCommitted(t, "eu-west", remote)[0])
	if len(got) != len(want)+500 || fmt.Sprint(got[:len(want)]) != fmt.Sprint(want) {
		t.Fatalf("target holds %d records starting %v, want %d starting %v", len(got), got[:min(len(got), len(want))], len(want)+500, want)
	}
	for _, r := range p.ReadAll(t, "eu-west", remote)[0] {
		if !r.Attrs.IsTransactional() {
			t.Fatalf("copy at %d was not written in a transaction", r.Offset)
		}
	}
	for _, r := range p.ReadAll(t, "eu-west", ProgressTopic(eosFlow().Policy, "us-east"))[0] {
		if !r.Attrs.IsTransactional() {
			t.Fatalf("progress at %d was not written in a transaction", r.Offset)
		}
	}
	for _, s := range m.Stats() {
		if s.Error != "" {
			t.Fatalf("partition %s[%d]: %s", s.Topic, s.Partition, s.Error)
		}
	}
	st := m.Status()
	if len(st) != 1 || st[0].TransactionsCommitted == 0 {
		t.Fatalf("status %+v: want committed transactions counted", st)
	}
}
