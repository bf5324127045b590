package replicate

import (
	"context"
	"sort"
	"time"
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
// offsets are reported to a PositionObserver.
const positionInterval = 5 * time.Second

// runPositions reports every task's position and source end offset to its
// PositionObserver every positionInterval until ctx ends. A listing that
// fails is tried again at the next tick (the figures stay as they were).
func (w *worker) runPositions(ctx context.Context) {
	t := time.NewTicker(positionInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.reportPositions(ctx, w.tasks.all())
		}
	}
}

// reportPositions lists the source end offsets of tasks' topics and reports
// each task's acknowledged position with it (tasks still starting are left
// out: they have no position yet).
func (w *worker) reportPositions(ctx context.Context, tasks []*task) {
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
		return
	}
	names := make([]string, 0, len(topics))
	for n := range topics {
		names = append(names, n)
	}
	sort.Strings(names)
	ends, err := w.io.src.ListEndOffsets(ctx, names...)
	if err != nil {
		return
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
}
