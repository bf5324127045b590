package status_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/cli"
	"github.com/mirrorctl/mirrorctl/internal/cli/clitest"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/cli/status"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/kafka"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate"
	"github.com/mirrorctl/mirrorctl/replicate/progress"
)

// env is a kfake pair (us-east, eu-west), an mm2.properties pointing at
// it, and the flow us-east->eu-west's two groups.
type env struct {
	*testkit.Pair
	config              string
	group, leaderGroup  string
	progressTopic       string
	now                 time.Time
	sourceTopic, remote string
}

func newEnv(t *testing.T, extra string) *env {
	t.Helper()
	p := testkit.NewPair(t)
	e := &env{Pair: p, config: p.WriteConfig(t, extra), now: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC),
		group: replicate.DefaultGroupID(testkit.East, testkit.West), sourceTopic: "orders", remote: testkit.East + ".orders"}
	e.leaderGroup = e.group + "-leader"
	f := replicate.DefaultFlowConfig(testkit.East, testkit.West)
	e.progressTopic = replicate.ProgressTopic(f.Policy, testkit.East)
	return e
}

// seed writes 10 records to each of orders' 3 partitions and progress for
// them written 5 s before e.now: partitions 0 and 1 copied, 2 at 4.
func (e *env) seed(t *testing.T) {
	t.Helper()
	e.CreateTopic(t, testkit.East, e.sourceTopic, 3, nil)
	e.CreateTopic(t, testkit.West, e.remote, 3, nil)
	e.CreateTopic(t, testkit.West, e.progressTopic, 1, nil)
	var recs []*kgo.Record
	for p := int32(0); p < 3; p++ {
		for i := 0; i < 10; i++ {
			recs = append(recs, &kgo.Record{Topic: e.sourceTopic, Partition: p, Value: []byte("v"), Timestamp: e.now.Add(-time.Minute)})
		}
	}
	cl := e.Client(t, testkit.East, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for p, next := range []int64{10, 10, 4} {
		k, v := progress.Encode(progress.Key{Topic: e.sourceTopic, Partition: int32(p)}, next, e.now.Add(-5*time.Second))
		e.Produce(t, testkit.West, &kgo.Record{Topic: e.progressTopic, Key: k, Value: v, Timestamp: e.now.Add(-5 * time.Second)})
	}
}

// join adds a group member under clientID (and instanceID, when not "")
// to group on alias, subscribed to topics, until the test ends. It stands
// for a replicate process's group client.
func (e *env) join(t *testing.T, alias, group, clientID, instanceID string, topics ...string) {
	t.Helper()
	opts := []kgo.Opt{kgo.ConsumerGroup(group), kgo.ConsumeTopics(topics...), kgo.ClientID(clientID), kgo.DisableAutoCommit(),
		kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.SessionTimeout(6 * time.Second)}
	if instanceID != "" {
		opts = append(opts, kgo.InstanceID(instanceID))
	}
	cl := e.Client(t, alias, opts...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			cl.PollFetches(ctx)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// assigned returns how many partitions each member (by client id) of
// group on alias is assigned.
func (e *env) assigned(t *testing.T, alias, group string) map[string]int {
	t.Helper()
	described, err := kadm.NewClient(e.Client(t, alias)).DescribeGroups(context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, m := range described[group].Members {
		n := 0
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, tp := range a.Topics {
				n += len(tp.Partitions)
			}
		}
		out[m.ClientID] = n
	}
	return out
}

// twoProcesses: host-a (static, instance host-a-0) copies every partition
// and leads; host-b waits in the leader group only (a standby).
func (e *env) twoProcesses(t *testing.T) {
	t.Helper()
	const a, b = "mirrorctl[host-a:101]", "mirrorctl[host-b:202]"
	e.join(t, testkit.East, e.group, a, "host-a-0", e.sourceTopic)
	e.join(t, testkit.West, e.leaderGroup, a, "host-a-0", e.progressTopic)
	testkit.WaitFor(t, "host-a to copy the 3 partitions and lead", func() bool {
		return e.assigned(t, testkit.East, e.group)[a] == 3 && e.assigned(t, testkit.West, e.leaderGroup)[a] == 1
	})
	e.join(t, testkit.West, e.leaderGroup, b, "", e.progressTopic)
	testkit.WaitFor(t, "host-b to join the leader group", func() bool {
		got := e.assigned(t, testkit.West, e.leaderGroup)
		_, ok := got[b]
		return ok && got[a] == 1
	})
}

func (e *env) options(t *testing.T, ios *iostreams.IOStreams, format output.Format) *status.Options {
	t.Helper()
	cfg, err := config.Load(e.config)
	if err != nil {
		t.Fatal(err)
	}
	kf := kafka.NewFactory(func(alias string, _ replicate.ClientRole) (map[string]string, error) {
		return map[string]string{"bootstrap.servers": strings.Join(e.Addrs(alias), ",")}, nil
	}, nil)
	t.Cleanup(kf.Close)
	return &status.Options{IO: ios, Output: func() output.Format { return format },
		Config:  func() (*config.Config, error) { return cfg, nil },
		Clients: func() (replicate.Clients, error) { return kf, nil },
		Now:     func() time.Time { return e.now }, Timeout: 20 * time.Second}
}

// memberIDs are the coordinator's member ids, random per run.
var memberIDs = regexp.MustCompile(`-[0-9a-f]{32}`)

// Golden outputs of `mirrorctl status` for a flow run by two processes
// (one copying all three partitions and leading, one standby), at a
// pinned clock: the terminal tables at 80, 100 and 200 columns, piped,
// piped with --wide, TSV and JSON (member ids masked). Everything is
// owned and led: exit 0.
func TestStatusGolden(t *testing.T) {
	e := newEnv(t, "")
	e.seed(t)
	e.twoProcesses(t)
	runAt := func(t *testing.T, tty, wide bool, width int, format output.Format) string {
		ios, _, out, errOut := iostreams.Test()
		ios.SetStdoutTTY(tty)
		ios.SetColorDisabled(true)
		ios.SetTerminalWidth(width)
		ios.SetWideTables(wide)
		if err := status.Run(context.Background(), e.options(t, ios, format)); err != nil {
			t.Fatalf("status: %v; stderr %s", err, errOut)
		}
		return memberIDs.ReplaceAllString(out.String(), "-<member-id>")
	}
	clitest.GoldenWidths(t, "status-tty", func(t *testing.T, width int) string { return runAt(t, true, false, width, output.FormatTable) },
		"us-east->eu-west", e.remote, "mirrorctl[host-a:101]")
	for _, tt := range []struct {
		golden string
		wide   bool
		format output.Format
	}{
		{"status.txt", false, output.FormatTable},
		{"status-wide.txt", true, output.FormatTable},
		{"status.tsv", false, output.FormatTSV},
		{"status.json", false, output.FormatJSON},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			clitest.Golden(t, tt.golden, runAt(t, false, tt.wide, 80, tt.format))
		})
	}
	// The JSON says what the tables do.
	var res status.Result
	if err := json.Unmarshal([]byte(runAt(t, false, false, 80, output.FormatJSON)), &res); err != nil {
		t.Fatal(err)
	}
	if res.SchemaVersion != output.SchemaVersion || len(res.Flows) != 1 {
		t.Fatalf("result %+v", res)
	}
	f := res.Flows[0]
	if f.Leader != "mirrorctl[host-a:101]" || len(f.Processes) != 2 || len(f.Problems) != 0 || len(f.Partitions) != 3 {
		t.Fatalf("flow %+v", f)
	}
	if p := f.Processes[0]; p.InstanceID != "host-a-0" || p.Role != "copying" || !p.Leader || len(p.Partitions) != 3 || p.Host != "127.0.0.1" {
		t.Errorf("host-a: %+v", p)
	}
	if p := f.Processes[1]; p.Role != "standby" || p.Leader || len(p.Partitions) != 0 || p.MemberID != "" || p.LeaderMemberID == "" {
		t.Errorf("host-b: %+v", p)
	}
	for i, want := range []struct{ pos, behind int64 }{{10, 0}, {10, 0}, {4, 6}} {
		p := f.Partitions[i]
		if p.Owner != "mirrorctl[host-a:101]" || p.OwnerInstanceID != "host-a-0" || p.Position != want.pos || p.RecordsBehind != want.behind ||
			p.ProgressAgeMs == nil || *p.ProgressAgeMs != 5000 {
			t.Errorf("partition %d: %+v, want owned by host-a at %d, %d behind, progress 5 s old", i, p, want.pos, want.behind)
		}
	}
}

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := cli.Run(ctx, ios, args, nil)
	return code, out.String(), errOut.String()
}

// The exit codes: 3 naming the group without members, and naming the
// partitions without owner (a topic no member subscribed to) and the
// stopped partition with why (its progress's loss event); 2 for a
// disabled flow or a bad --timeout; 1 naming the source that does not
// answer.
func TestStatusExitCodes(t *testing.T) {
	e := newEnv(t, "eu-west->us-east.enabled = false\n")
	e.seed(t)
	code, _, stderr := run(t, "status", "-c", e.config)
	if code != cmdutil.ExitCheckFailed || !strings.Contains(stderr, "group "+e.group+" on us-east has no members") ||
		!strings.Contains(stderr, "no process leads the flow") {
		t.Errorf("no members: exit %d, stderr %s; want 3 naming the group", code, stderr)
	}

	e.CreateTopic(t, testkit.East, "audit", 2, nil)
	e.join(t, testkit.East, e.group, "mirrorctl[host-a:101]", "", e.sourceTopic)
	e.join(t, testkit.West, e.leaderGroup, "mirrorctl[host-a:101]", "", e.progressTopic)
	testkit.WaitFor(t, "host-a to copy orders and lead", func() bool {
		return e.assigned(t, testkit.East, e.group)["mirrorctl[host-a:101]"] == 3 && e.assigned(t, testkit.West, e.leaderGroup)["mirrorctl[host-a:101]"] == 1
	})
	// orders[2] stopped at a record the target refused (its progress says so).
	k, v := progress.EncodeValue(progress.Key{Topic: e.sourceTopic, Partition: 2}, progress.Value{Next: 4, Time: e.now,
		Loss: &progress.Loss{Kind: "refused", From: 4, To: 4, Stopped: true, Reason: "record too large"}})
	e.Produce(t, testkit.West, &kgo.Record{Topic: e.progressTopic, Key: k, Value: v})
	code, stdout, stderr := run(t, "status", "-c", e.config, "-o", "json")
	var res status.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if code != cmdutil.ExitCheckFailed || !strings.Contains(stderr, "2 of 5 partitions have no owner in group "+e.group+" on us-east: audit[0], audit[1]") ||
		!strings.Contains(stderr, "1 partition stopped, copying nothing until an operator acts: orders[2] (refused: record too large)") ||
		len(res.Flows) != 1 || len(res.Flows[0].Problems) != 2 {
		t.Errorf("unowned and stopped: exit %d, stderr %s, problems %v; want 3 naming audit[0], audit[1] and orders[2]", code, stderr, res.Flows)
	}

	for _, args := range [][]string{
		{"status", "-c", e.config, "--source", "eu-west", "--target", "us-east"},
		{"status", "-c", e.config, "--timeout", "0s"},
	} {
		if code, _, stderr := run(t, args...); code != cmdutil.ExitUsage {
			t.Errorf("%v: exit %d (%s), want 2", args[3:], code, stderr)
		}
	}

	props, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	down := strings.Replace(string(props), strings.Join(e.Addrs(testkit.East), ","), "127.0.0.1:1", 1)
	path := filepath.Join(t.TempDir(), "down.properties")
	if err := os.WriteFile(path, []byte(down), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = run(t, "status", "-c", path, "--timeout", "3s")
	if code != cmdutil.ExitError || !strings.Contains(stderr, "source us-east does not answer") {
		t.Errorf("source down: exit %d, stderr %s; want 1 naming us-east", code, stderr)
	}
}

// Flags only: --timeout parses into the options, and is checked.
func TestNewCmdStatusFlags(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	f := &cmdutil.Factory{IO: ios}
	var got *status.Options
	cmd := status.NewCmdStatus(f, func(o *status.Options) error { got = o; return nil })
	cmd.SetArgs([]string{"--source", "us-east", "--target", "eu-west", "--timeout", "7s"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Source != "us-east" || got.Target != "eu-west" || got.Timeout != 7*time.Second {
		t.Errorf("options %+v", got)
	}
	cmd = status.NewCmdStatus(f, func(*status.Options) error { return nil })
	cmd.SetArgs([]string{"--timeout", "-1s"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	var fe *cmdutil.FlagError
	if err := cmd.Execute(); !errors.As(err, &fe) {
		t.Errorf("--timeout -1s: %v, want a flag error", err)
	}
}
