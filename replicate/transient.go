package replicate

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// transientWait bounds [retryTransient]: about what a single-broker restart
// or a leader election takes.
const transientWait = 30 * time.Second

// transient reports whether err carries a Kafka error the protocol marks
// retriable (LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER, the coordinator
// errors, REQUEST_TIMED_OUT, ...): a broker restarting or an election under
// way. UNKNOWN_TOPIC_OR_PARTITION and UNKNOWN_TOPIC_ID, retriable in the
// protocol, are not: callers read them as "the topic is missing". Nor is a
// cluster that cannot be reached at all (refused connections, a TLS or SASL
// mismatch): a start reports that at once.
func transient(err error) bool {
	if err == nil || errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID) {
		return false
	}
	var ke *kerr.Error
	return errors.As(err, &ke) && ke.Retriable
}

// retryTransient calls fn until it returns nil or an error that is not
// [transient], transientWait passes, or ctx ends; it returns fn's last error.
// It is for the reads a start makes (end offsets of the progress and
// internal topics), so that a process started while a broker restarts waits
// for it instead of exiting.
func retryTransient(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(transientWait)
	backoff := 100 * time.Millisecond
	for {
		err := fn()
		if !transient(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}
