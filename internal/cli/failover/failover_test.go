package failover_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/audit"
	"github.com/mirrorctl/mirrorctl/internal/cli"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	failovercmd "github.com/mirrorctl/mirrorctl/internal/cli/failover"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

func TestNewCmdFailover(t *testing.T) {
	tests := []struct {
		args    string
		back    bool
		check   func(*failovercmd.Options) bool
		wantErr string
	}{
		{args: "--group g", check: func(o *failovercmd.Options) bool { return o.Mode == "auto" && !o.Apply && o.Groups[0] == "g" }},
		{args: "--group a --group b --mode exact --apply --verify --allow-rewind --yes --max-lag 30s",
			check: func(o *failovercmd.Options) bool {
				return len(o.Groups) == 2 && o.Mode == "exact" && o.Apply && o.Verify && o.AllowRewind && o.Yes && o.MaxLag == 30*time.Second
			}},
		{args: "--groups 'x.*' --source us-east --target eu-west", check: func(o *failovercmd.Options) bool { return o.GroupsRE == "'x.*'" && o.Source == "us-east" }},
		{args: "--group g", back: true, check: func(o *failovercmd.Options) bool { return o.Back }},
		{args: "", wantErr: "name the groups with --group (repeatable) or --groups <regex>"},
		{args: "--group g --mode fast", wantErr: `invalid argument "fast" for "--mode" flag: valid values are {auto|checkpoint|exact}`},
		{args: "--group g --mode exact", back: true, check: func(o *failovercmd.Options) bool { return o.Back && o.Mode == "exact" }},
		{args: "--group g", back: true, check: func(o *failovercmd.Options) bool { return o.Mode == "auto" && o.MaxLag == 0 }},
		{args: "--group g --mode checkpoint --checkpoint-max-age 10m", back: true,
			check: func(o *failovercmd.Options) bool {
				return o.Back && o.Mode == "checkpoint" && o.CheckpointMaxAge == 10*time.Minute
			}},
		{args: "--group g --max-lag 30s", back: true,
			wantErr: "--max-lag does not apply to failback: the records the forward flow has not copied yet are on the source, where the group resumes, so replication lag cannot make it skip any"},
		{args: "--group g --max-lag 0s", back: true,
			wantErr: "--max-lag does not apply to failback: the records the forward flow has not copied yet are on the source, where the group resumes, so replication lag cannot make it skip any"},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			ios, _, _, _ := iostreams.Test()
			var got *failovercmd.Options
			f := &cmdutil.Factory{IO: ios}
			runF := func(o *failovercmd.Options) error { got = o; return nil }
			cmd := failovercmd.NewCmdFailover(f, runF)
			if tt.back {
				cmd = failovercmd.NewCmdFailback(f, runF)
			}
			cmd.SetArgs(strings.Fields(tt.args))
			cmd.SetOut(ios.ErrOut)
			cmd.SetErr(ios.ErrOut)
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.Execute()
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(got) {
				t.Fatalf("options %+v", got)
			}
		})
	}
}

// env is the shared kfake pair (us-east, eu-west), an mm2.properties that
// points at it (with a secret that must never be printed) and an audit log
// path.
type env struct {
	*testkit.Pair
	config string
	audit  string
}

const secret = "s3cr3t-Pa55"

func newEnv(t *testing.T) *env { t.Helper(); return newEnvWith(t, "") }

// newEnvWith is newEnv with extra mm2.properties lines.
func newEnvWith(t *testing.T, extra string) *env {
	t.Helper()
	p := testkit.NewPair(t)
	return &env{Pair: p, config: p.WriteConfig(t, "ssl.key.password = "+secret+"\n"+extra),
		audit: filepath.Join(t.TempDir(), "audit.jsonl")}
}

func (e *env) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := cli.Run(ctx, ios, append([]string{"-c", e.config, "--audit-log", e.audit}, args...), nil)
	return code, out.String(), errOut.String()
}

func TestFailoverCommand(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	east, west := e.Admin(t, "us-east"), e.Admin(t, "eu-west")
	if _, err := east.CreateTopic(ctx, 1, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	pcl, err := kgo.NewClient(kgo.SeedBrokers(e.East.ListenAddrs()...), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if err := pcl.ProduceSync(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i % 3)), Value: []byte(fmt.Sprint("v", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	pcl.Close()
	for g, at := range map[string]int64{"billing": 50, "audit": 100} {
		if _, err := east.CommitOffsets(ctx, g, kadm.OffsetsFromRecords(kgo.Record{Topic: "orders", Partition: 0, Offset: at - 1})); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, stderr := e.run(t, "replicate", "--once"); code != 0 {
		t.Fatalf("replicate --once: %d %s", code, stderr)
	}

	code, stdout, stderr := e.run(t, "translate", "--group", "billing", "-o", "json")
	if code != 0 {
		t.Fatalf("translate: %d %s", code, stderr)
	}
	var tr struct {
		SchemaVersion int `json:"schema_version"`
		Groups        []struct {
			Group      string
			Partitions []map[string]any
		}
	}
	if err := json.Unmarshal([]byte(stdout), &tr); err != nil {
		t.Fatal(err, stdout)
	}
	if tr.SchemaVersion != 1 || len(tr.Groups) != 1 || tr.Groups[0].Partitions[0]["target_offset"] != 50.0 || tr.Groups[0].Partitions[0]["mode"] != "exact" ||
		tr.Groups[0].Partitions[0]["topic"] != "us-east.orders" || tr.Groups[0].Partitions[0]["rereads"] != 0.0 {
		t.Fatalf("translate JSON %s", stdout)
	}

	// The plan changes nothing and exits 0.
	code, stdout, _ = e.run(t, "failover", "--group", "billing", "--group", "audit")
	want := "audit\tus-east.orders\t0\t100\t100\t-\tcommit\texact\t0\t\n" +
		"billing\tus-east.orders\t0\t50\t50\t-\tcommit\texact\t0\t\n"
	if code != 0 || stdout != want {
		t.Fatalf("plan: %d\n%q\nwant\n%q", code, stdout, want)
	}
	if _, err := os.Stat(e.audit); err == nil {
		t.Fatal("a plan wrote to the audit log")
	}

	// Apply and verify (stdin is not a terminal: no prompt).
	code, stdout, stderr = e.run(t, "failover", "--group", "billing", "--group", "audit", "--apply", "--verify", "-o", "json")
	if code != 0 {
		t.Fatalf("apply: %d %s %s", code, stdout, stderr)
	}
	var res struct {
		Applied bool
		Groups  []struct {
			Group       string
			TargetState string `json:"target_state"`
			Partitions  []map[string]any
		}
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	if !res.Applied || len(res.Groups) != 2 {
		t.Fatalf("apply JSON %s", stdout)
	}
	for _, g := range res.Groups {
		p := g.Partitions[0]
		if g.TargetState != "absent" || p["action"] != "commit" || p["outcome"] != "committed" || p["verified"] != true || p["current_target_offset"] != nil {
			t.Fatalf("group %s: %v", g.Group, p)
		}
	}
	offs, err := west.FetchOffsets(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup("us-east.orders", 0); o.At != 50 {
		t.Fatalf("committed %+v", o)
	}

	// A re-run is a no-op.
	code, stdout, _ = e.run(t, "failover", "--group", "billing", "--apply")
	if code != 0 || !strings.Contains(stdout, "\tunchanged\t") {
		t.Fatalf("re-run: %d %q", code, stdout)
	}

	// The audit log: begin and end for both applies, no secret.
	entries, err := audit.Read(e.audit)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 4 || entries[0].Kind != audit.KindBegin || entries[1].Kind != audit.KindEnd || entries[1].Status != audit.StatusOK {
		t.Fatalf("audit entries %+v", entries)
	}
	raw, _ := os.ReadFile(e.audit)
	if strings.Contains(string(raw), secret) || !strings.Contains(string(raw), "committed") {
		t.Fatalf("audit log: secret present or no outcome:\n%s", raw)
	}

	// An active group on the target is refused: exit 3, named.
	cons, err := kgo.NewClient(kgo.SeedBrokers(e.West.ListenAddrs()...), kgo.ConsumerGroup("live"), kgo.ConsumeTopics("us-east.orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	if _, err := east.CommitOffsets(ctx, "live", kadm.OffsetsFromRecords(kgo.Record{Topic: "orders", Partition: 0, Offset: 9})); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	go cons.PollFetches(wctx)
	if _, err := e.West.WaitGroupStable(wctx, "live", 1); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = e.run(t, "failover", "--group", "live", "--apply")
	if code != 3 || !strings.Contains(stdout, "skip-active") || !strings.Contains(stderr, "group live is Stable on eu-west (1 members); stop its consumers first") {
		t.Fatalf("active: %d %q %q", code, stdout, stderr)
	}

	// Failback after consumers progressed on the target.
	if _, err := west.CommitOffsets(ctx, "billing", kadm.OffsetsFromRecords(kgo.Record{Topic: "us-east.orders", Partition: 0, Offset: 69})); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = e.run(t, "failback", "--group", "billing", "--apply", "--verify")
	if code != 0 || stdout != "billing\torders\t0\t70\t70\t50\tcommit\texact\t0\tcommitted\tpass\t\n" {
		t.Fatalf("failback: %d %q %q", code, stdout, stderr)
	}
}
