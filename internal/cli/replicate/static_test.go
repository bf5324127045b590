package replicate_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate/progress"
)

// TestRestartAfterKill9ReclaimsPartitions: a replicate process killed with
// SIGKILL and started again (same host, so the same instance slot and
// group.instance.id) copies again without waiting out the session timeout
// (10 s here): the restart rejoins as the static member it was and takes
// its partitions back at once. The time from the restart to the first
// copy of a record produced after it is printed; the test fails only past
// 6 s, well below the session timeout a dynamic member waits (its dead
// self stays in the group until then).
func TestRestartAfterKill9ReclaimsPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	p := testkit.NewPairWith(t, kfake.GroupMinSessionTimeout(100*time.Millisecond))
	e := &env{Pair: p, config: p.WriteConfig(t, `us-east.consumer.session.timeout.ms = 10000
eu-west.consumer.session.timeout.ms = 10000
mirrorctl.progress.interval.ms = 200
`)}
	topic := testkit.Name("static")
	remote := testkit.East + "." + topic
	e.CreateTopic(t, testkit.East, topic, 4, nil)
	stop := streamUntil(t, e, topic, 4, 20*time.Millisecond)
	a := startProc(t, e, "first")
	waitFor(t, 30*time.Second, "the first process to copy every partition", func() bool {
		st, ok := a.status()
		return ok && st.Membership.Tasks == 4 && st.Membership.Leader
	})
	n := stop()
	awaitCopied(t, e, remote, 4, n)
	awaitProgress(t, e, topic, 4, int64(n))
	st, _ := a.status()
	id := st.Membership.InstanceID
	if id == "" {
		t.Fatal("the first process has no instance id")
	}
	a.kill(t)

	restart := time.Now()
	b := startProc(t, e, "restarted")
	waitFor(t, 30*time.Second, "the restarted process to start its flow", func() bool {
		return strings.Contains(b.stderr.String(), `msg="flow started"`)
	})
	prod := e.Client(t, testkit.East, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var marks []*kgo.Record
	for part := int32(0); part < 4; part++ {
		marks = append(marks, &kgo.Record{Topic: topic, Partition: part, Value: []byte(fmt.Sprintf("p%d-%06d", part, n))})
	}
	if err := prod.ProduceSync(context.Background(), marks...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the restarted process to copy a record of every partition", func() bool {
		got := e.ReadAll(t, testkit.West, remote)
		for part := int32(0); part < 4; part++ {
			want := fmt.Sprintf("p%d-%06d", part, n)
			found := false
			for i := len(got[part]) - 1; i >= 0 && !found; i-- {
				found = string(got[part][i].Value) == want
			}
			if !found {
				return false
			}
		}
		return true
	})
	took := time.Since(restart)
	st, _ = b.status()
	t.Logf("restarted as instance %s (was %s): copying again %s after the start (session timeout 10 s)", st.Membership.InstanceID, id, took.Round(time.Millisecond))
	if st.Membership.InstanceID != id {
		t.Errorf("restarted as instance %q, want %q (its slot)", st.Membership.InstanceID, id)
	}
	if took > 6*time.Second {
		t.Errorf("copying again %s after the restart: it waited for the session timeout", took)
	}
	checkAll(t, e, remote, 4, n+1)
}

// awaitProgress waits until the flow's progress topic holds a position of
// at least next for every partition of topic: a process killed now resumes
// from its progress.
func awaitProgress(t *testing.T, e *env, topic string, parts int32, next int64) {
	t.Helper()
	waitFor(t, 30*time.Second, fmt.Sprintf("progress of %s at %d", topic, next), func() bool {
		at := map[int32]int64{}
		for _, r := range e.ReadAll(t, testkit.West, "mirrorctl-progress.us-east.internal")[0] {
			if k, v, err := progress.DecodeValue(r.Key, r.Value); err == nil && k.Topic == topic {
				at[k.Partition] = v.Next
			}
		}
		for p := int32(0); p < parts; p++ {
			if at[p] < next {
				return false
			}
		}
		return true
	})
}

// TestDuplicateInstanceIDRefused: a second replicate process on the same
// host under the instance id of a running one is refused at start (exit
// 2), naming the id and the lock that holds it; the first goes on.
func TestDuplicateInstanceIDRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	e := newEnv(t, "")
	e.CreateTopic(t, testkit.East, testkit.Name("dup"), 1, nil)
	first := startProc(t, e, "first", "--instance-id", "mirror-a")
	waitFor(t, 30*time.Second, "the first process to start its flow", func() bool {
		return strings.Contains(first.stderr.String(), `msg="flow started"`)
	})
	second := startProc(t, e, "second", "--instance-id", "mirror-a")
	select {
	case <-second.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the second process under the same instance id still runs")
	}
	if second.code != 2 {
		t.Errorf("second process: exit %d, want 2", second.code)
	}
	if out := second.stderr.String(); !strings.Contains(out, `instance id "mirror-a" is taken by another replicate process on this host`) {
		t.Errorf("second process: %q does not say the id is taken", out)
	}
	select {
	case <-first.done:
		t.Fatalf("the first process stopped (exit %d)", first.code)
	default:
	}
}
