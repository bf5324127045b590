package replicate

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// PositionObserver is implemented by a [PartitionObserver] that wants the
// partition's position outside the copy path: the next source offset to
// copy and the source high watermark, reported when the task starts and then
// every positionInterval. Without it a partition that copies nothing (idle,
// or stopped by a loss event) would report no records-behind figure, and an
// alert on it could not fire. internal/metrics implements it.
type PositionObserver interface {
	Position(next, highWatermark int64)
}

// positionInterval is how often the tasks' positions and their source end
// offsets are reported to a PositionObserver, and how often a flow probes
// its clusters' reachability.
const positionInterval = 5 * time.Second

// positionEvery, when set (tests), replaces positionInterval.
var positionEvery atomic.Int64

func positionTick() time.Duration {
	if d := time.Duration(positionEvery.Load()); d > 0 {
		return d
	}
	return positionInterval
}

// probeTimeout bounds one reachability probe of a cluster: a cluster that
// does not answer within it is unreachable (reach.go).
const probeTimeout = 5 * time.Second

// runPositions probes the flow's clusters at once and then every
// positionInterval until ctx ends (see [worker.probe]).
func (w *worker) runPositions(ctx context.Context) {
	w.probe(ctx)
	t := time.NewTicker(positionTick())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.probe(ctx)
		}
	}
}

// probe reports every task's position and source end offset to its
// PositionObserver and records whether the flow's source and target
// answered (reachability, reach.go). The source's probe is the end-offset
// listing of the tasks' topics (ListOffsets, through kadm's cached
// metadata), or ApiVersions to its brokers when no task here has a
// position; the target's is ApiVersions to its brokers. Each is bounded by
// probeTimeout and they run at once. A listing that fails reports no
// position (the figures stay as they were; the Observer knows the source is
// unreachable) and is tried again at the next tick. Probes cut short by
// ctx's end are not counted.
func (w *worker) probe(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		began := w.now()
		err := boundedProbe(ctx, func(pctx context.Context) error { return answers(pctx, w.io.tgt) })
		if ctx.Err() == nil {
			w.reach.probed(w.cfg.Target, began, w.now(), err)
		}
	}()
	began := w.now()
	err := boundedProbe(ctx, func(pctx context.Context) error {
		listed, err := w.reportPositions(pctx, w.tasks.all())
		if !listed && err == nil {
			err = answers(pctx, w.io.src)
		}
		return err
	})
	if ctx.Err() == nil {
		w.reach.probed(w.cfg.Source, began, w.now(), err)
	}
	wg.Wait()
}

// boundedProbe runs fn with a context ending after probeTimeout; a probe
// that ran out of it fails with errProbeTimeout (wrapping what fn said).
func boundedProbe(ctx context.Context, fn func(context.Context) error) error {
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	err := fn(pctx)
	if err != nil && pctx.Err() != nil && ctx.Err() == nil {
		return fmt.Errorf("%w: %w", errProbeTimeout, err)
	}
	return err
}

// answers asks every broker of adm's cluster for its API versions
// (kadm.Client.ApiVersions: a metadata request, then ApiVersions to each
// broker) and returns nil when at least one answered, else the error of the
// request or of the first broker.
func answers(ctx context.Context, adm *kadm.Client) error {
	if adm == nil {
		return errors.New("no admin client")
	}
	vs, err := adm.ApiVersions(ctx)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	var first error
	for _, v := range vs.Sorted() {
		if v.Err == nil {
			return nil
		}
		if first == nil {
			first = fmt.Errorf("api versions of broker %d: %w", v.NodeID, v.Err)
		}
	}
	if first == nil {
		first = errors.New("metadata names no broker")
	}
	return first
}

// reportPositions lists the source end offsets of tasks' topics and reports
// each task's acknowledged position with it (tasks still starting are left
// out: they have no position yet). listed is false when no task had a
// position to report (nothing was listed); err is the listing's failure:
// the request's, or a *kadm.ShardErrors whose every shard failed (a
// cluster answering in part is reachable).
func (w *worker) reportPositions(ctx context.Context, tasks []*task) (listed bool, err error) {
	var obs []*task
	topics := map[string]bool{}
	for _, t := range tasks {
		if _, ok := t.obs.(PositionObserver); !ok || t.State() == TaskStarting {
			continue
		}
		obs = append(obs, t)
		topics[t.src.topic] = true
	}
	if len(obs) == 0 {
		return false, nil
	}
	names := make([]string, 0, len(topics))
	for n := range topics {
		names = append(names, n)
	}
	sort.Strings(names)
	ends, err := w.io.src.ListEndOffsets(ctx, names...)
	if err != nil {
		var se *kadm.ShardErrors
		if !errors.As(err, &se) || se.AllFailed {
			return true, fmt.Errorf("list end offsets: %w", err)
		}
	}
	for _, t := range obs {
		hwm := int64(-1)
		if e, ok := ends.Lookup(t.src.topic, t.src.partition); ok && e.Err == nil {
			hwm = e.Offset
			t.mu.Lock()
			t.pos.sourceEnd = max(t.pos.sourceEnd, hwm)
			t.mu.Unlock()
		}
		t.obs.(PositionObserver).Position(t.ackedNow(), hwm)
	}
	return true, nil
}
