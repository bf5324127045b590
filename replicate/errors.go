package replicate

import (
	"fmt"
	"time"
)

// RecordError reports a source record the target refused (too large,
// timestamp out of range, authorization, ...). The engine stops copying that
// partition (its progress stays before the record) and goes on with the
// others. Offset is the record's offset in the source partition, Size its
// key+value+header bytes.
type RecordError struct {
	Flow        string
	Topic       string // source topic
	RemoteTopic string
	Partition   int32
	Offset      int64
	Size        int       // bytes: key + value + header keys and values
	Timestamp   time.Time // the source record's timestamp
	Err         error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("flow %s: %s[%d] offset %d (%d bytes, timestamp %s): target refused the copy in %s: %v; partition stopped",
		e.Flow, e.Topic, e.Partition, e.Offset, e.Size, e.Timestamp.UTC().Format(time.RFC3339Nano), e.RemoteTopic, e.Err)
}

// Unwrap returns the producer's error (often a kerr.Error such as
// kerr.MessageTooLarge or kerr.InvalidTimestamp).
func (e *RecordError) Unwrap() error { return e.Err }

// SettingError is a setting the engine cannot honour, found when a flow
// starts (e.g. exactly-once on a target without transactions): the cluster
// and the key at fault. mirrorctl exits 2 on it, as on a config file error.
type SettingError struct {
	Cluster string // the cluster alias the setting is about; "" for the process's own
	Key     string // the key as written in mm2.properties, e.g. "eu-west.exactly.once.source.support"
	Msg     string // never a property value
}

func (e *SettingError) Error() string {
	if e.Cluster == "" {
		return e.Key + ": " + e.Msg
	}
	return "cluster " + e.Cluster + ": " + e.Key + ": " + e.Msg
}
