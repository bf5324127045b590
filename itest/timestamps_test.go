//go:build kafka

package itest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// replicate --dry-run warns of source records the remote topic's timestamp
// bounds will refuse (a broker checks them against its clock at append,
// KIP-937), with the offsets: here five records two days old against a
// remote topic with message.timestamp.before.max.ms one day, and one record
// three hours ahead against the target's default after.max.ms (one hour in
// Kafka 4). Then replicate --once stops the partition at the first, as the
// dry run said.
func TestDryRunWarnsOfTimestampRefusals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	east, west := mustEnv(t, "MIRRORCTL_KAFKA_US_EAST"), mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST")
	topic := "stamps-" + uniq(t)
	remote := "us-east." + topic
	eastCl := newClient(t, east, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	// The source accepts any timestamp, so that it holds the old and the
	// future records.
	if _, err := kadm.NewClient(eastCl).CreateTopic(ctx, 1, 1, map[string]*string{
		"message.timestamp.after.max.ms": kadm.StringPtr("9223372036854775807"),
	}, topic); err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(newClient(t, west)).CreateTopic(ctx, 1, 1, map[string]*string{
		"message.timestamp.before.max.ms": kadm.StringPtr("86400000"),
	}, remote); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var recs []*kgo.Record
	for i := 0; i < 11; i++ {
		ts := now
		switch {
		case i < 5:
			ts = now.Add(-48 * time.Hour)
		case i == 10:
			ts = now.Add(3 * time.Hour)
		}
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(fmt.Sprint(i)), Timestamp: ts})
	}
	if err := eastCl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cfg := plainConfig(t, fmt.Sprintf("us-east->eu-west.topics = %s\n", topic))
	code, out, stderr := mirrorctl(t, "replicate", "--dry-run", "-c", cfg, "-o", "json")
	if code != 0 {
		t.Fatalf("dry run: exit %d: %s", code, stderr)
	}
	var res struct {
		Refusals []struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			Key       string `json:"key"`
			Limit     int64  `json:"limit_ms"`
			From      int64  `json:"from"`
			To        int64  `json:"to"`
			Count     int64  `json:"count"`
		} `json:"timestamp_refusals"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	got := fmt.Sprint(res.Refusals)
	want := fmt.Sprintf("[{%[1]s 0 message.timestamp.after.max.ms 3600000 10 11 1} {%[1]s 0 message.timestamp.before.max.ms 86400000 0 5 5}]", topic)
	if got != want {
		t.Fatalf("timestamp_refusals %s, want %s", got, want)
	}
	_, _, stderr = mirrorctl(t, "replicate", "--dry-run", "-c", cfg)
	line := fmt.Sprintf("%s[0] -> %s: source offsets 0 to 4 (5 records) have timestamps older than message.timestamp.before.max.ms = 86400000 ms of the remote topic", topic, remote)
	if !strings.Contains(stderr, line) {
		t.Errorf("dry run's stderr lacks %q:\n%s", line, stderr)
	}
	code, _, stderr = mirrorctl(t, "replicate", "--once", "-c", cfg)
	if code != 3 || !strings.Contains(stderr, "message.timestamp.before.max.ms") {
		t.Errorf("replicate --once: exit %d, want 3 refusing offset 0: %s", code, stderr)
	}
}
