package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// With a custom replication.policy.separator the internal topics' names
// depend on replication.policy.internal.topic.separator.enabled (KIP-949).
// translate, lag, checkpoints dump and replicate --dry-run say which names
// they read (stderr note, and internal_topic(s) in JSON), and warn when the
// other naming holds records that are not read (here: checkpoints written
// by an MM2 from before 3.1, into us-east.checkpoints.internal).
func TestInternalTopicNamesAreSaid(t *testing.T) {
	t.Setenv("MIRRORCTL_CONFIG", "")
	t.Setenv("MIRRORCTL_OUTPUT", "")
	p := testkit.NewPair(t)
	config := p.WriteConfig(t, "replication.policy.separator = __\n")
	p.CreateTopic(t, testkit.East, "orders", 1, nil)
	p.CreateTopic(t, testkit.West, "us-east.checkpoints.internal", 1, nil)
	ck := mm2.Checkpoint{Group: "billing", Topic: "us-east__orders", Partition: 0, UpstreamOffset: 1, DownstreamOffset: 1}
	k, _ := ck.MarshalKey()
	v, _ := ck.MarshalValue()
	p.Produce(t, testkit.West, &kgo.Record{Topic: "us-east.checkpoints.internal", Key: k, Value: v})
	ctx := context.Background()
	if code, _, stderr := run(t, ctx, "replicate", "--once", "-c", config); code != 0 {
		t.Fatalf("replicate --once: exit %d: %s", code, stderr)
	}
	note := `note: flow us-east->eu-west reads checkpoints us-east__checkpoints__internal on eu-west`
	warn := `warning: flow us-east->eu-west: checkpoints topic us-east.checkpoints.internal on eu-west holds 1 record but is not read (us-east__checkpoints__internal is): ` +
		`it was written with replication.policy.internal.topic.separator.enabled = false`
	for _, tt := range []struct {
		args     []string
		jsonWant string
	}{
		{[]string{"translate", "--group", "billing", "--allow-empty"}, `"topic": "us-east__checkpoints__internal",` + "\n      \"other_naming\": \"us-east.checkpoints.internal\",\n      \"other_naming_records\": 1"},
		{[]string{"checkpoints", "dump"}, `"internal_topic": {`},
		{[]string{"replicate", "--dry-run"}, `"topic": "mirrorctl-progress__us-east__internal"`},
	} {
		rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		code, out, stderr := run(t, rctx, append(tt.args, "-c", config, "-o", "json")...)
		cancel()
		if code != 0 || !strings.Contains(stderr, note) || !strings.Contains(stderr, warn) || !strings.Contains(out, tt.jsonWant) {
			t.Errorf("%s: exit %d\nstderr %s\nstdout %s\nwant the note %q, the warning and %q", strings.Join(tt.args, " "), code, stderr, out, note, tt.jsonWant)
		}
	}
	// lag reads the progress, offset-syncs and heartbeats topics: named,
	// no warning (the other names hold nothing).
	code, out, stderr := run(t, ctx, "lag", "-c", config, "-o", "json")
	if code != 0 || !strings.Contains(stderr, "note: flow us-east->eu-west reads offset-syncs mm2-offset-syncs__eu-west__internal on us-east, progress mirrorctl-progress__us-east__internal on eu-west") ||
		strings.Contains(stderr, "warning") || !strings.Contains(out, `"other_naming": "mirrorctl-progress.us-east.internal"`) {
		t.Errorf("lag: exit %d\nstderr %s\nstdout %s", code, stderr, out)
	}
}
