package failover

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

// A write fence denies the application principal WRITE on the source
// topics, waits until the end offsets stop moving, and loses nothing that
// was acknowledged before it; Unfence lets the producer write again.
func TestWriteFence(t *testing.T) {
	app := kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: "*", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationWrite, Allow: true}
	p := &pair{testkit.NewPair(t, kfake.EnableSASL(), kfake.EnableACLs(), kfake.Superuser("SCRAM-SHA-256", "root", "rootpw"),
		kfake.User("SCRAM-SHA-256", "app", "apppw", app))}
	root := kgo.SASL(scram.Auth{User: "root", Pass: "rootpw"}.AsSha256Mechanism())
	p.Clients.Opts = []kgo.Opt{kgo.RetryTimeout(3 * time.Second)}
	for _, role := range []string{"admin", "consumer", "producer", "test"} {
		p.Clients.Extra["us-east/"+role] = []kgo.Opt{root}
	}
	topic := testkit.Name("orders")
	p.CreateTopic(t, "us-east", topic, 2, nil)
	prod, err := kgo.NewClient(kgo.SeedBrokers(p.Addrs("us-east")...), kgo.SASL(scram.Auth{User: "app", Pass: "apppw"}.AsSha256Mechanism()),
		kgo.DefaultProduceTopic(topic), kgo.DisableIdempotentWrite(), kgo.RecordRetries(1))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx := testkit.Context(t)
	var acked atomic.Int64
	stopped := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		for i := 0; ; i++ {
			if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
				stopped <- err
				return
			}
			if acked.Add(1) == 20 {
				close(started)
			}
		}
	}()
	<-started
	e := p.engine(t, testFlow(t, topic))
	fence, err := e.Fence(ctx, []string{topic}, FenceOptions{Principals: []string{"User:app"}, Settle: 300 * time.Millisecond, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	perr := <-stopped
	if !errors.Is(perr, kerr.TopicAuthorizationFailed) {
		t.Fatalf("the fenced producer stopped with %v, want TOPIC_AUTHORIZATION_FAILED", perr)
	}
	var end int64
	for _, o := range fence.Ends[topic] {
		end += o
	}
	if end != acked.Load() || len(fence.Bindings) != 1 || fence.Bindings[0] != "User:app DENY WRITE on TOPIC:LITERAL:"+topic+" from host *" {
		t.Fatalf("fence %+v: end offsets sum %d, acknowledged %d", fence, end, acked.Load())
	}
	if err := e.Unfence(ctx, []string{topic}, []string{"User:app"}); err != nil {
		t.Fatal(err)
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("after unfence: %v", err)
	}
}
