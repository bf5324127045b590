package failover_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/mirrorctl/mirrorctl/audit"
	"github.com/mirrorctl/mirrorctl/internal/cli"
	"github.com/mirrorctl/mirrorctl/internal/cli/clitest"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
)

// seed creates "orders" on us-east with partitions partitions of n records
// each (explicit partitions, so offsets are fixed), commits each group at
// the given offset on every partition, and mirrors once.
func seed(t *testing.T, e *env, partitions int32, n int, groups map[string]int64) {
	t.Helper()
	ctx := context.Background()
	east := e.Admin(t, "us-east")
	if _, err := east.CreateTopic(ctx, partitions, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	pcl, err := kgo.NewClient(kgo.SeedBrokers(e.East.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	var recs []*kgo.Record
	for p := int32(0); p < partitions; p++ {
		for i := 0; i < n; i++ {
			recs = append(recs, &kgo.Record{Topic: "orders", Partition: p, Key: []byte(fmt.Sprint("k", i%3)),
				Value: []byte(fmt.Sprintf("v%d-%d", p, i)), Timestamp: base.Add(time.Duration(i) * time.Second)})
		}
	}
	if err := pcl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	pcl.Close()
	for g, at := range groups {
		offs := kadm.Offsets{}
		for p := int32(0); p < partitions; p++ {
			offs.Add(kadm.Offset{Topic: "orders", Partition: p, At: at, LeaderEpoch: -1})
		}
		if _, err := east.CommitOffsets(ctx, g, offs); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, stderr := e.run(t, "replicate", "--once"); code != 0 {
		t.Fatalf("replicate --once: %d %s", code, stderr)
	}
}

// runIO runs the CLI with ios (for TTY overrides and stdin).
func (e *env) runIO(t *testing.T, ios *iostreams.IOStreams, args ...string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return cli.Run(ctx, ios, append([]string{"-c", e.config, "--audit-log", e.audit}, args...), nil)
}

type jsonRow struct {
	Topic      string `json:"topic"`
	Partition  int32  `json:"partition"`
	Action     string `json:"action"`
	Outcome    string `json:"outcome"`
	Error      string `json:"error"`
	Verified   *bool  `json:"verified"`
	VerifyNote string `json:"verify_note"`
	Target     *int64 `json:"target_offset"`
	Current    *int64 `json:"current_target_offset"`
	Sync       *any   `json:"sync"`
	Rereads    *int64 `json:"rereads"`
	Mode       string `json:"mode"`
	Reason     string `json:"reason"`
	Source     *int64 `json:"source_offset"`
	SourceT    string `json:"source_topic"`
}

func parseRows(t *testing.T, stdout string) map[string][]jsonRow {
	t.Helper()
	var res struct {
		Groups []struct {
			Group      string    `json:"group"`
			Partitions []jsonRow `json:"partitions"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	out := map[string][]jsonRow{}
	for _, g := range res.Groups {
		out[g.Group] = g.Partitions
	}
	return out
}

// --verify with the source gone after the commit: every committed row says
// it could not be verified (verified null, "source unavailable: ..."), the
// outcomes still say committed, and the exit status is 3.
func TestVerifySourceUnavailable(t *testing.T) {
	// A short default.api.timeout.ms so requests to the closed source fail
	// in about a second.
	e := newEnvWith(t, "us-east.default.api.timeout.ms = 1000\nus-east.retry.backoff.max.ms = 100\n")
	seed(t, e, 2, 10, map[string]int64{"billing": 4})
	// Close the source as the commit reaches the target: the commit
	// proceeds, then verification finds the source gone. The control
	// function runs once.
	e.West.ControlKey(int16(kmsg.OffsetCommit), func(kmsg.Request) (kmsg.Response, error, bool) {
		e.East.Close()
		return nil, nil, false
	})
	start := time.Now()
	code, stdout, stderr := e.run(t, "failover", "--group", "billing", "--apply", "--verify", "-o", "json")
	if code != 3 {
		t.Fatalf("exit %d, want 3: %s %s", code, stdout, stderr)
	}
	t.Logf("took %s", time.Since(start))
	rows := parseRows(t, stdout)["billing"]
	if len(rows) != 2 {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows {
		if r.Outcome != "committed" || r.Verified != nil || !strings.HasPrefix(r.VerifyNote, "source unavailable: ") {
			t.Errorf("row %+v: want committed, verified null, a source unavailable note", r)
		}
	}
	if !strings.Contains(stderr, "2 partitions could not be verified") {
		t.Errorf("stderr %q", stderr)
	}
	offs, err := e.Admin(t, "eu-west").FetchOffsets(context.Background(), "billing")
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 2; p++ {
		if o, _ := offs.Lookup("us-east.orders", p); o.At != 4 {
			t.Errorf("partition %d committed at %d, want 4", p, o.At)
		}
	}
	// The commit stands: the audit says ok.
	entries, err := audit.Read(e.audit)
	if err != nil || len(entries) != 2 || entries[1].Status != audit.StatusOK {
		t.Fatalf("audit %+v %v", entries, err)
	}
}

// commitResponder answers the target's next OffsetCommit itself: every
// partition gets errFor(partition) (nil: success) and nothing is stored.
func commitResponder(errFor func(int32) error) func(kmsg.Request) (kmsg.Response, error, bool) {
	return func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req := kreq.(*kmsg.OffsetCommitRequest)
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		resp.SetVersion(req.GetVersion())
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID // v10+ names topics by ID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition = rp.Partition
				if err := errFor(rp.Partition); err != nil {
					sp.ErrorCode = err.(*kerr.Error).Code
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	}
}

// One partition's commit fails: every partition's outcome is reported, the
// error is on that partition only, exit 3. UNKNOWN_MEMBER_ID (the group
// gained members after the describe) is skip-active, "group active".
func TestPerPartitionCommitErrors(t *testing.T) {
	e := newEnv(t)
	seed(t, e, 3, 10, map[string]int64{"billing": 5, "ledger": 6})

	e.West.ControlKey(int16(kmsg.OffsetCommit), commitResponder(func(p int32) error {
		if p == 1 {
			return kerr.TopicAuthorizationFailed
		}
		return nil
	}))
	code, stdout, stderr := e.run(t, "failover", "--group", "billing", "--apply")
	if code != 3 {
		t.Fatalf("exit %d, want 3: %s %s", code, stdout, stderr)
	}
	want := "billing\tus-east.orders\t0\t5\t5\t-\tcommit\texact\t0\tcommitted\t\n" +
		"billing\tus-east.orders\t1\t5\t5\t-\tcommit\texact\t0\tfailed\tcommit us-east.orders[1] on eu-west: " + kerr.TopicAuthorizationFailed.Error() + "\n" +
		"billing\tus-east.orders\t2\t5\t5\t-\tcommit\texact\t0\tcommitted\t\n"
	if stdout != want {
		t.Fatalf("table\n%s\nwant\n%s", stdout, want)
	}
	entries, err := audit.Read(e.audit)
	if err != nil || len(entries) != 2 || entries[1].Status != audit.StatusPartial {
		t.Fatalf("audit %+v %v", entries, err)
	}

	// The same in JSON, with UNKNOWN_MEMBER_ID on every partition.
	e.West.ControlKey(int16(kmsg.OffsetCommit), commitResponder(func(int32) error { return kerr.UnknownMemberID }))
	code, stdout, stderr = e.run(t, "failover", "--group", "ledger", "--apply", "-o", "json")
	if code != 3 || !strings.Contains(stderr, "group active: ledger has members on eu-west; stop its consumers first") {
		t.Fatalf("exit %d, want 3: %s %s", code, stdout, stderr)
	}
	rows := parseRows(t, stdout)["ledger"]
	if len(rows) != 3 {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows {
		if r.Action != "skip-active" || r.Outcome != "refused" || !strings.HasPrefix(r.Error, "group active: ") || !strings.Contains(r.Error, "UNKNOWN_MEMBER_ID") {
			t.Errorf("row %+v: want skip-active, refused, group active", r)
		}
	}

	// And one failing partition in JSON: only that row carries an error.
	e.West.ControlKey(int16(kmsg.OffsetCommit), commitResponder(func(p int32) error {
		if p == 2 {
			return kerr.UnknownTopicOrPartition
		}
		return nil
	}))
	code, stdout, _ = e.run(t, "failover", "--group", "ledger", "--apply", "-o", "json")
	rows = parseRows(t, stdout)["ledger"]
	if code != 3 || len(rows) != 3 {
		t.Fatalf("exit %d: %s", code, stdout)
	}
	for _, r := range rows {
		wantOutcome, wantErr := "committed", ""
		if r.Partition == 2 {
			wantOutcome, wantErr = "failed", "commit us-east.orders[2] on eu-west: "+kerr.UnknownTopicOrPartition.Error()
		}
		if r.Outcome != wantOutcome || r.Error != wantErr {
			t.Errorf("partition %d: outcome %q error %q, want %q %q", r.Partition, r.Outcome, r.Error, wantOutcome, wantErr)
		}
	}
}

// On a terminal, --apply asks; "n" commits nothing and writes no audit
// entry (exit 0), "y" commits. Never a prompt when stdin or stdout is not a
// terminal, nor with --yes.
func TestConfirmation(t *testing.T) {
	e := newEnv(t)
	seed(t, e, 1, 10, map[string]int64{"billing": 3})
	west := e.Admin(t, "eu-west")
	const prompt = "Commit 1 partition of 1 group on eu-west? [y/N] "
	committed := func() int64 {
		offs, err := west.FetchOffsets(context.Background(), "billing")
		if err != nil {
			return -1
		}
		o, ok := offs.Lookup("us-east.orders", 0)
		if !ok {
			return -1
		}
		return o.At
	}

	tests := []struct {
		name                 string
		stdinTTY, stdoutTTY  bool
		in                   string
		args                 []string
		wantPrompt           bool
		wantCode             int
		wantCommit           int64
		wantAudit            int
		wantStdoutHasOutcome bool
	}{
		{name: "declined", stdinTTY: true, stdoutTTY: true, in: "n\n", wantPrompt: true, wantCode: 0, wantCommit: -1, wantAudit: 0},
		{name: "declined json", stdinTTY: true, stdoutTTY: true, in: "\n", args: []string{"-o", "json"}, wantPrompt: true, wantCode: 0, wantCommit: -1, wantAudit: 0},
		{name: "eof", stdinTTY: true, stdoutTTY: true, in: "", wantPrompt: true, wantCode: 0, wantCommit: -1, wantAudit: 0},
		{name: "stdin not a terminal", stdinTTY: false, stdoutTTY: true, in: "n\n", wantCode: 0, wantCommit: 3, wantAudit: 2, wantStdoutHasOutcome: true},
		{name: "yes flag", stdinTTY: true, stdoutTTY: true, in: "n\n", args: []string{"--yes", "--allow-rewind"}, wantCode: 0, wantCommit: 3, wantAudit: 2, wantStdoutHasOutcome: true},
		{name: "accepted", stdinTTY: true, stdoutTTY: true, in: "y\n", wantPrompt: true, wantCode: 0, wantCommit: 3, wantAudit: 2, wantStdoutHasOutcome: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Start each case with no commit on the target and no audit log.
			if committed() >= 0 {
				if _, err := west.DeleteGroup(context.Background(), "billing"); err != nil {
					t.Fatal(err)
				}
			}
			_ = os.Remove(e.audit)
			ios, in, out, errOut := iostreams.Test()
			ios.SetStdinTTY(tt.stdinTTY)
			ios.SetStdoutTTY(tt.stdoutTTY)
			ios.SetColorDisabled(true)
			ios.SetTerminalWidth(200)
			in.WriteString(tt.in)
			code := e.runIO(t, ios, append([]string{"failover", "--group", "billing", "--apply"}, tt.args...)...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d: %s %s", code, tt.wantCode, out, errOut)
			}
			if got := strings.Contains(errOut.String(), prompt); got != tt.wantPrompt {
				t.Fatalf("prompted %v, want %v: %q", got, tt.wantPrompt, errOut)
			}
			if c := committed(); c != tt.wantCommit {
				t.Fatalf("target commit %d, want %d", c, tt.wantCommit)
			}
			n := 0
			if _, err := os.Stat(e.audit); err == nil {
				entries, err := audit.Read(e.audit)
				if err != nil {
					t.Fatal(err)
				}
				n = len(entries)
			}
			if n != tt.wantAudit {
				t.Fatalf("%d audit entries, want %d", n, tt.wantAudit)
			}
			if got := strings.Contains(out.String(), "committed"); got != tt.wantStdoutHasOutcome {
				t.Fatalf("stdout has an outcome: %v, want %v:\n%s", got, tt.wantStdoutHasOutcome, out)
			}
			if tt.wantPrompt && !tt.wantStdoutHasOutcome && !strings.Contains(errOut.String(), "not confirmed; nothing was committed") {
				t.Fatalf("stderr %q", errOut)
			}
			if len(tt.args) > 0 && tt.args[0] == "-o" {
				// One JSON document, not applied.
				dec := json.NewDecoder(bytes.NewReader(out.Bytes()))
				var doc struct{ Applied bool }
				if err := dec.Decode(&doc); err != nil || doc.Applied || dec.More() {
					t.Fatalf("stdout is not one unapplied JSON document: %v\n%s", err, out)
				}
			}
		})
	}
}

// Golden outputs of the failover plan and an applied, verified failover:
// piped TSV, the aligned terminal table and JSON.
func TestGolden(t *testing.T) {
	e := newEnv(t)
	seed(t, e, 2, 10, map[string]int64{"billing": 4, "audit": 10})
	// "audit" already holds a commit on the target for partition 1.
	if _, err := e.Admin(t, "eu-west").CommitOffsets(context.Background(), "audit", kadm.OffsetsFromRecords(kgo.Record{Topic: "us-east.orders", Partition: 1, Offset: 8})); err != nil {
		t.Fatal(err)
	}
	type goldenCase struct {
		golden string
		tty    bool
		width  int // terminal columns; 0 is 160
		args   []string
		code   int
	}
	cases := []goldenCase{
		{golden: "plan.tsv"},
		{golden: "plan-tty.txt", tty: true},
		{golden: "plan.json", args: []string{"-o", "json"}},
		{golden: "plan.csv", args: []string{"-o", "csv"}},
		{golden: "plan-header.tsv", args: []string{"-o", "tsv"}},
	}
	for _, w := range clitest.TableWidths {
		cases = append(cases, goldenCase{golden: fmt.Sprintf("plan-tty-%d.txt", w), tty: true, width: w})
	}
	for _, tt := range append(cases, []goldenCase{
		// billing has no commit on the target and audit's commit on the
		// source is ahead (skip-rewind): the plan would not move them.
		{golden: "failback-plan.tsv", args: []string{"--back"}, code: 3},
		// Last: it changes the target.
		{golden: "apply-verify.tsv", args: []string{"--apply", "--verify"}},
	}...) {
		t.Run(tt.golden, func(t *testing.T) {
			ios, _, out, errOut := iostreams.Test()
			ios.SetStdoutTTY(tt.tty)
			ios.SetColorDisabled(true)
			ios.SetTerminalWidth(160)
			if tt.width > 0 {
				ios.SetTerminalWidth(tt.width)
			}
			cmd := "failover"
			args := tt.args
			if len(args) > 0 && args[0] == "--back" {
				cmd, args = "failback", args[1:]
			}
			if code := e.runIO(t, ios, append([]string{cmd, "--group", "billing", "--group", "audit"}, args...)...); code != tt.code {
				t.Fatalf("exit %d: %s %s", code, out, errOut)
			}
			clitest.Golden(t, tt.golden, out.String())
			if tt.tty {
				clitest.IdentitiesWhole(t, out.String(), "billing", "audit", "us-east.orders")
			}
		})
	}
}
