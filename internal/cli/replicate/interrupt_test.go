package replicate_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/mirrorctl/mirrorctl/internal/cli"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

// TestInterruptedOnceHasNoSuccessMark interrupts `replicate --once` on a
// terminal while it is copying: it exits 130 and never prints the "✓
// copied" line, which would claim a finished copy.
func TestInterruptedOnceHasNoSuccessMark(t *testing.T) {
	e := newEnv(t, "")
	createTopics(t, e.Client(t, testkit.East), 4, "orders")
	const perPartition = 25000
	e.produceN(t, testkit.East, "orders", 4, perPartition)

	ios, _, _, errOut := iostreams.Test()
	ios.SetStderrTTY(true)
	ios.SetColorDisabled(true)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	runCtx, interrupt := context.WithCancel(ctx)
	// Interrupt at the first produce to the target: the copy has then
	// started, with (nearly) all of the records still to go.
	var once sync.Once
	e.West.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		e.West.KeepControl()
		if len(req.(*kmsg.ProduceRequest).Topics) > 0 { // v13 names topics by ID only
			once.Do(interrupt)
		}
		return nil, nil, false
	})
	done := make(chan int, 1)
	go func() { done <- cli.Run(runCtx, ios, []string{"replicate", "--once", "-c", e.config}, nil) }()
	code := <-done
	if code == 0 {
		t.Fatalf("the copy finished before the interrupt; stderr %q", errOut)
	}
	if code != 130 {
		t.Fatalf("exit %d, want 130; stderr %q", code, errOut)
	}
	if strings.Contains(errOut.String(), "✓") || strings.Contains(errOut.String(), "copied") && strings.Contains(errOut.String(), "records at") {
		t.Fatalf("interrupted run printed a success mark: %q", errOut)
	}
}
