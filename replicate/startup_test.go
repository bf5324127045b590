package replicate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate/filter"
)

func TestAwaitLeaders(t *testing.T) {
	p := testkit.NewPair(t)
	ctx := testkit.Context(t)
	cl := p.Client(t, testkit.West)
	a, b := testkit.Name("served-a"), testkit.Name("served-b")
	p.CreateTopic(t, testkit.West, a, 3, nil)
	p.CreateTopic(t, testkit.West, b, 2, nil)

	if err := awaitLeaders(ctx, cl, nil, time.Second); err != nil {
		t.Errorf("no topics: %v", err)
	}
	if err := awaitLeaders(ctx, cl, []string{a, b}, 5*time.Second); err != nil {
		t.Errorf("served topics: %v", err)
	}

	missing := testkit.Name("never-created")
	start := time.Now()
	err := awaitLeaders(ctx, cl, []string{a, missing}, 200*time.Millisecond)
	if err == nil {
		t.Fatal("a topic that does not exist was reported served")
	}
	if !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "not served after 200ms") {
		t.Errorf("error %q does not name %s and the wait", err, missing)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("bounded wait of 200ms took %s", took)
	}
}

func TestConcurrently(t *testing.T) {
	errA, errB := errors.New("a failed"), errors.New("b failed")
	cancelled := make(chan bool, 1)
	err := concurrently(context.Background(),
		func(context.Context) error { return errA },
		func(ctx context.Context) error {
			<-ctx.Done() // the first error cancels the others
			cancelled <- true
			return errB
		},
		func(context.Context) error { return nil },
	)
	if !errors.Is(err, errA) || !errors.Is(err, errB) {
		t.Errorf("err = %v, want both step errors joined", err)
	}
	if !<-cancelled {
		t.Error("the waiting step was not cancelled")
	}
	if err := concurrently(context.Background(), func(context.Context) error { return nil }); err != nil {
		t.Errorf("all steps succeeded, err = %v", err)
	}
}

func TestRunErrorsDropsEchoedCancellation(t *testing.T) {
	cause := errors.New("heartbeats us-east->eu-west: TOPIC_AUTHORIZATION_FAILED")
	echo := fmt.Errorf("flow us-east->eu-west: %w", context.Canceled)

	var e runErrors
	e.add(context.Background(), cause)
	e.add(context.Background(), echo)
	if len(e.errs) != 1 || e.errs[0] != cause {
		t.Errorf("errs = %v, want only the cause", e.errs)
	}

	// The caller's own interrupt is kept, even as the first error.
	parent, cancel := context.WithCancel(context.Background())
	cancel()
	var i runErrors
	i.add(parent, echo)
	i.add(parent, cause)
	if len(i.errs) != 2 || !errors.Is(errors.Join(i.errs...), context.Canceled) {
		t.Errorf("errs = %v, want the interrupt and the cause", i.errs)
	}
}

func TestWarnsOfNamedTopicsTheSourceDoesNotList(t *testing.T) {
	p := newClusterPair(t)
	orders, ghost := testkit.Name("orders"), testkit.Name("ghost")
	p.CreateTopic(t, "us-east", orders, 1, nil)
	p.Produce(t, "us-east", &kgo.Record{Topic: orders, Value: []byte("x")})
	f := testFlow("us-east", "eu-west")
	f.Topics.Include = filter.MustCompileList("topics", orders+", "+ghost+", audit-.*")
	var logs bytes.Buffer
	m, err := New(Options{Flows: []FlowConfig{f}, Clients: p.Clients, Once: true,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(testkit.Context(t)); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if !strings.Contains(out, "item="+ghost+" cluster=us-east") || !strings.Contains(out, "principal may not DESCRIBE") {
		t.Errorf("no warning naming %s:\n%s", ghost, out)
	}
	if strings.Contains(out, "item="+orders) || strings.Contains(out, "item=audit") {
		t.Errorf("warned of a listed topic or of a regex:\n%s", out)
	}
	if got := p.ReadAll(t, "eu-west", "us-east."+orders); len(got[0]) != 1 {
		t.Errorf("copied %d records of %s, want 1", len(got[0]), orders)
	}
}
