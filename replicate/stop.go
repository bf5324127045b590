package replicate

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultStopBudget is how long a flow takes at most to stop
// ([Options].StopBudget): below Kubernetes' default
// terminationGracePeriodSeconds (30 s) and systemd's default
// TimeoutStopSec (90 s), so neither kills a process that is still
// writing its final progress.
const DefaultStopBudget = 10 * time.Second

// stopBudget bounds the stop of one flow in this process. The stop begins
// when the flow's context ends (SIGINT, SIGTERM, another flow's failure) or
// its once-run is done; from then on every step (stop fetching, drain or
// abort what is in flight, write progress and offset syncs, leave the
// groups, close the clients) has to end by one deadline, budget after the
// begin. At the deadline the hard context is cancelled: every client of the
// flow was built with it (kgo.WithContext), so every request still waiting
// on a broker fails at once and every Close returns, whatever the brokers
// do. What a step could not do is noted (left) and logged, by name, when
// the flow has stopped.
//
// Waits before the stop began (a rebalance's release, a leader hand-over)
// are bounded by the budget too, each from its own start.
type stopBudget struct {
	budget time.Duration
	log    *slog.Logger
	hard   context.Context
	cancel context.CancelFunc
	mu     sync.Mutex // guards deadline and undone
	// deadline is when the stop must be over; zero until it began.
	deadline time.Time
	undone   []string
}

func newStopBudget(budget time.Duration, log *slog.Logger) *stopBudget {
	b := &stopBudget{budget: budget, log: log}
	b.hard, b.cancel = context.WithCancel(context.Background())
	return b
}

// begin starts the stop (once): its steps must end by budget from now.
func (b *stopBudget) begin() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.deadline.IsZero() {
		return
	}
	b.deadline = time.Now().Add(b.budget)
	time.AfterFunc(b.budget, b.cancel)
}

// ctx returns the context of one step: not cancelled with parent, done at
// the stop's deadline (before the stop began: budget from now) or when the
// budget ran out.
func (b *stopBudget) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	return b.share(parent, 1)
}

// drainShare is the part of the budget that waiting for in-flight copies
// and writing the final progress may take: the rest is the groups' leaves
// and the clients' close, which must not go undone because a target that
// does not answer held the copies.
const drainShare = 0.75

// drainCtx is ctx for the steps that wait on the target (in-flight copies,
// final progress, flushes): done at drainShare of the budget.
func (b *stopBudget) drainCtx(parent context.Context) (context.Context, context.CancelFunc) {
	return b.share(parent, drainShare)
}

func (b *stopBudget) share(parent context.Context, f float64) (context.Context, context.CancelFunc) {
	b.mu.Lock()
	d := b.deadline
	b.mu.Unlock()
	if d.IsZero() {
		d = time.Now().Add(b.budget)
	}
	d = d.Add(-time.Duration((1 - f) * float64(b.budget)))
	ctx, cancel := context.WithDeadline(context.WithoutCancel(parent), d)
	stop := context.AfterFunc(b.hard, cancel)
	return ctx, func() { stop(); cancel() }
}

// clientOpt makes a client's requests fail when the budget ran out.
func (b *stopBudget) clientOpt() kgo.Opt { return kgo.WithContext(b.hard) }

// stopClients hands out the flow's clients, each built with the budget's
// context first (a caller's own kgo.WithContext, given after, wins: a group
// member's, which is a child of it), so that no client of the flow (the
// progress view's, the heartbeat and checkpoint producers, the reads at
// start) outlives the budget.
type stopClients struct {
	Clients
	b *stopBudget
}

func (c stopClients) Client(alias string, role ClientRole, extra ...kgo.Opt) (*kgo.Client, error) {
	return c.Clients.Client(alias, role, append([]kgo.Opt{c.b.clientOpt()}, extra...)...)
}

// left notes what a step did not do in time: said in the stop's report
// once the stop began, at once (a warning) before.
func (b *stopBudget) left(what string) {
	b.mu.Lock()
	stopping := !b.deadline.IsZero()
	if stopping {
		b.undone = append(b.undone, what)
	}
	b.mu.Unlock()
	if !stopping {
		b.log.Warn("not done in time: " + what)
	}
}

// report logs, once the flow has stopped, what was left undone, and
// releases the budget's timer.
func (b *stopBudget) report() {
	b.mu.Lock()
	undone := append([]string(nil), b.undone...)
	b.undone = nil
	b.mu.Unlock()
	b.cancel()
	if len(undone) == 0 {
		return
	}
	sort.Strings(undone)
	b.log.Warn("stopped within the stop budget, leaving undone: "+strings.Join(undone, "; "), "stop_budget", b.budget)
}
