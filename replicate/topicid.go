package replicate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/mirrorctl/mirrorctl/replicate/progress"
)

// Source topic identity. Progress records carry the source topic's ID
// (Kafka's topic ID, KIP-516) the offsets belong to. A task whose progress
// names another ID than the topic has now (the topic was deleted and created
// again) does not resume at the old offset, which would silently skip the
// new topic's first records:
//
//   - by default the partition stops with a "recreated" loss event naming
//     the old and new IDs (and its progress keeps the old ID, so every
//     start stops again until an operator decides);
//   - with mirrorctl.source.recreated = copy-from-start
//     ([FlowConfig].CopyRecreatedSource) the new topic is copied from its
//     log start, appended after what the remote topic holds; the task's
//     first copy writes a fresh offset sync (a new task's sync state always
//     emits one), so translation maps the new topic's offsets to the
//     appended copies.
//
// While copying, a fetch answered UNKNOWN_TOPIC_ID (the topic was deleted,
// or recreated) stops the partition with a "recreated" loss event at once,
// so the error is reported once, not on every poll; the next start decides
// as above. Progress written before topic IDs were kept carries none and is
// trusted as before.

// sourceTopicIDs returns the source's topic ID (base64, as kadm prints it)
// of each of names it knows.
func (w *worker) sourceTopicIDs(ctx context.Context, names []string) (map[string]string, error) {
	md, err := w.io.src.Metadata(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("metadata of %d topics on %s: %w", len(names), w.cfg.Source, err)
	}
	out := map[string]string{}
	for name, td := range md.Topics {
		if td.Err == nil && td.ID != [16]byte{} {
			out[name] = td.ID.String()
		}
	}
	return out, nil
}

// checkTopicID compares the topic ID in t's progress with the source's
// current one, sets the ID t's progress writes carry, and returns the loss
// event of a recreated topic (nil when the IDs agree or one is unknown).
// With the event Stopped the task must not start; otherwise it starts from
// the log start.
func (w *worker) checkTopicID(t *task, val progress.Value, hasProgress bool, current string) *LossEvent {
	old := ""
	if hasProgress {
		old = val.TopicID
	}
	if old == "" || current == "" || old == current {
		t.mu.Lock()
		t.loss.topicID = current
		t.mu.Unlock()
		return nil
	}
	if !w.cfg.CopyRecreatedSource {
		t.mu.Lock()
		t.loss.topicID = old // every start stops again until an operator decides
		t.mu.Unlock()
		return &LossEvent{Kind: LossSourceRecreated, From: val.Next, To: val.Next, Stopped: true,
			Reason: fmt.Sprintf("the source topic was deleted and created again (topic ID %s, progress written for %s): the saved position belongs to the old topic. "+
				"To copy the new topic from its start, appended to the remote topic, set mirrorctl.source.recreated = copy-from-start and restart", current, old)}
	}
	t.mu.Lock()
	t.loss.topicID = current
	t.mu.Unlock()
	return &LossEvent{Kind: LossSourceRecreated, From: -1, To: -1,
		Reason: fmt.Sprintf("the source topic was deleted and created again (topic ID %s, progress written for %s): mirrorctl.source.recreated = copy-from-start, so the new topic is copied from its log start, appended to the remote topic", current, old)}
}

// fetchErrors reports a poll's fetch errors: UNKNOWN_TOPIC_ID stops the
// running task of its partition (see the top of this file); other errors
// are warned about at most once a minute per partition and error.
func (w *worker) fetchError(topic string, partition int32, err error) {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return
	}
	if errors.Is(err, kerr.UnknownTopicID) {
		if t := w.tasks.get(topic, partition); t != nil && t.State() == TaskRunning {
			pos := t.position.Load()
			w.reportLoss(t, LossEvent{Kind: LossSourceRecreated, From: pos, To: pos, Stopped: true,
				Reason: "the source topic was deleted (or deleted and created again) while it was copied (UNKNOWN_TOPIC_ID); restart replicate: " +
					"a recreated topic stops again naming its new ID, or is copied from its start with mirrorctl.source.recreated = copy-from-start"})
			return
		}
	}
	if w.run.fetchWarned.allow(topic, partition, err.Error(), w.now()) {
		w.log.Warn("fetch error", "topic", topic, "partition", partition, "err", err)
	}
}

// onceAMinute lets a message through once a minute per partition and text.
type onceAMinute struct {
	mu   sync.Mutex // guards last
	last map[string]time.Time
}

func (o *onceAMinute) allow(topic string, partition int32, text string, now time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.last == nil {
		o.last = map[string]time.Time{}
	}
	k := fmt.Sprintf("%s\x00%d\x00%s", topic, partition, text)
	if at, ok := o.last[k]; ok && now.Sub(at) < time.Minute {
		return false
	}
	o.last[k] = now
	return true
}
