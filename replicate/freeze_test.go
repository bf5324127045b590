package replicate

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"
)

// A freeze seen once the group had already taken every partition (the
// lost callback ran first on waking, releasing the tasks) ends at the
// rejoin's release of no task: else the tasks of the next join would copy
// nothing, every fetch dropped as suspect.
func TestFreezeWithNoTaskLeftEndsAtRelease(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	w := &worker{flowEnv: flowEnv{log: log, stop: newStopBudget(time.Second, log)},
		tasks: newTaskSet(), gate: newFetchGate(nil), freeze: newFreezeGuard(time.Second)}
	w.freezeDetected(time.Now())
	if !w.freeze.suspect.Load() {
		t.Fatal("the freeze was not noted")
	}
	select {
	case <-w.freeze.rejoin:
	default:
		t.Fatal("the freeze did not ask the membership to join again")
	}
	w.releaseAll(context.Background(), false)
	if w.freeze.suspect.Load() {
		t.Fatal("the freeze still holds after the release of every task: the next join's tasks would copy nothing")
	}
}
