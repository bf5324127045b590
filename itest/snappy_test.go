//go:build kafka

package itest

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/kafka"
)

// TestSnappyFramingOnBroker produces compressible records through a client
// built from properties without compression.type (mirrorctl's producers:
// snappy in the Java producer's framing, internal/kafka/snappy.go) and reads
// them back. The broker validates every compressed batch by decompressing
// it, so an append that succeeds is the Java reader's verdict; the batches
// it stores keep the producer's codec (compression.type=producer), so the
// records read back must be snappy-compressed, and equal to those sent.
func TestSnappyFramingOnBroker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	west := mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST")
	topic := "snappy-framing-" + uniq(t)
	adm := kadm.NewClient(newClient(t, west))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	t.Cleanup(func() { _, _ = adm.DeleteTopics(context.Background(), topic) })

	opts, _, err := kafka.Options(euWest, map[string]string{"bootstrap.servers": west})
	if err != nil {
		t.Fatalf("options: %v", err)
	}
	cl, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic(topic))...)
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	defer cl.Close()
	// 4,000 values of about 300 B: batches of several 32 KiB blocks.
	var sent []*kgo.Record
	for i := range 4000 {
		v := bytes.Repeat(fmt.Appendf(nil, `{"order":%d,"status":"paid"},`, i), 10)
		sent = append(sent, &kgo.Record{Key: fmt.Appendf(nil, "k-%d", i%100), Value: v})
	}
	if err := cl.ProduceSync(ctx, sent...).FirstErr(); err != nil {
		t.Fatalf("the broker refused the framed batches: %v", err)
	}

	got, err := readAll(ctx, west, topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(sent) {
		t.Fatalf("read %d records back, sent %d", len(got), len(sent))
	}
	for i, r := range got {
		if !bytes.Equal(r.Value, sent[i].Value) || !bytes.Equal(r.Key, sent[i].Key) {
			t.Fatalf("record %d differs from the one sent", i)
		}
		if c := r.Attrs.CompressionType(); c != 2 {
			t.Fatalf("record %d is stored with codec %d, want 2 (snappy)", i, c)
		}
	}
}
