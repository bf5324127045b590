package replicate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/mirrorctl/mirrorctl/internal/cli"
	"github.com/mirrorctl/mirrorctl/internal/cli/clitest"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	replicatecmd "github.com/mirrorctl/mirrorctl/internal/cli/replicate"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

// TestMain lets a test re-execute this binary as mirrorctl itself (for the
// kill -9 test): with MIRRORCTL_TEST_MAIN=1 it runs cli.Main and exits.
func TestMain(m *testing.M) {
	if os.Getenv("MIRRORCTL_TEST_MAIN") == "1" {
		if n, err := strconv.ParseUint(os.Getenv("MIRRORCTL_TEST_NOFILE"), 10, 64); err == nil {
			// An open-file limit as low as a small machine's (TestExactlyOnceFileLimit).
			if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
				panic(err)
			}
		}
		os.Exit(cli.Main())
	}
	// replicate keeps its instance slot locks in the state directory:
	// the tests' own, never the user's.
	dir, err := os.MkdirTemp("", "mirrorctl-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestNewCmdReplicate(t *testing.T) {
	tests := []struct {
		args    string
		want    replicatecmd.ReplicateOptions
		wantErr string
	}{
		{args: ""},
		{args: "--dry-run", want: replicatecmd.ReplicateOptions{DryRun: true}},
		{args: "--once --flow us-east->eu-west --flow a->b", want: replicatecmd.ReplicateOptions{Once: true, Flows: []string{"us-east->eu-west", "a->b"}}},
		{args: "--dry-run --once", wantErr: "--dry-run and --once cannot be used together"},
		{args: "--once --timeout 0", want: replicatecmd.ReplicateOptions{Once: true}},
		{args: "--once --timeout 50ms", wantErr: "--timeout 50ms: want at least 100ms, or 0 for no limit"},
		{args: "--timeout 1m", wantErr: "--timeout needs --once (a continuous mirror runs until stopped)"},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			ios, _, _, _ := iostreams.Test()
			var got *replicatecmd.ReplicateOptions
			cmd := replicatecmd.NewCmdReplicate(&cmdutil.Factory{IO: ios}, func(o *replicatecmd.ReplicateOptions) error { got = o; return nil })
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
			if got.DryRun != tt.want.DryRun || got.Once != tt.want.Once || fmt.Sprint(got.Flows) != fmt.Sprint(tt.want.Flows) {
				t.Fatalf("options dry-run %v once %v flows %v, want %+v", got.DryRun, got.Once, got.Flows, tt.want)
			}
		})
	}
}

// env is the shared kfake pair (us-east, eu-west) and an mm2.properties
// (testkit's, plus the test's extra lines) that points at it.
type env struct {
	*testkit.Pair
	config string
	state  string // XDG_STATE_HOME of its processes (startProc), "" until the first
}

// newEnv starts the pair (eastOpts are extra kfake options for us-east)
// and writes the config with extra.
func newEnv(t *testing.T, extra string, eastOpts ...kfake.Opt) *env {
	t.Helper()
	p := testkit.NewPair(t, eastOpts...)
	return &env{Pair: p, config: p.WriteConfig(t, extra)}
}

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code = cli.Run(ctx, ios, args, nil)
	return code, out.String(), errOut.String()
}

func createTopics(t *testing.T, cl *kgo.Client, partitions int32, topics ...string) {
	t.Helper()
	if _, err := kadm.NewClient(cl).CreateTopics(context.Background(), partitions, 1, nil, topics...); err != nil {
		t.Fatal(err)
	}
}

// produceN writes perPartition records to each of topic's partitions on
// alias: key i%13, value "p<partition>-<i, 6 digits>".
func (e *env) produceN(t *testing.T, alias, topic string, partitions int32, perPartition int) {
	t.Helper()
	var recs []*kgo.Record
	for p := int32(0); p < partitions; p++ {
		for i := 0; i < perPartition; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: []byte(fmt.Sprint(i % 13)), Value: []byte(fmt.Sprintf("p%d-%06d", p, i))})
		}
	}
	e.Produce(t, alias, recs...)
}

// values returns the records' values as strings.
func values(recs []*kgo.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r.Value)
	}
	return out
}

func TestDryRunListsEveryTopicWithItsAction(t *testing.T) {
	e := newEnv(t, "us-east->eu-west.topics = orders, eu-west.orders, payments, app-internal\n")
	createTopics(t, e.Client(t, "us-east"), 2, "orders", "eu-west.orders", "app-internal", "unlisted")
	createTopics(t, e.Client(t, "us-east"), 4, "payments")
	createTopics(t, e.Client(t, "eu-west"), 2, "us-east.payments")
	code, out, stderr := run(t, "replicate", "--dry-run", "-c", e.config)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	clitest.Golden(t, "dry-run.txt", out)
	ids := []string{"us-east->eu-west", "app-internal", "eu-west.orders", "us-east.orders", "us-east.payments", "payments",
		"mirrorctl-progress.us-east.internal", "mm2-offset-syncs.eu-west.internal", "us-east.checkpoints.internal"}
	runAt := func(t *testing.T, tty bool, width int, args ...string) string {
		ios, _, out, errOut := iostreams.Test()
		ios.SetStdoutTTY(tty)
		ios.SetColorDisabled(true)
		ios.SetTerminalWidth(width)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if code := cli.Run(ctx, ios, append([]string{"replicate", "--dry-run", "-c", e.config}, args...), nil); code != 0 {
			t.Fatalf("exit %d, stderr %s", code, errOut)
		}
		return out.String()
	}
	clitest.GoldenWidths(t, "dry-run-tty", func(t *testing.T, width int) string { return runAt(t, true, width) }, ids...)
	for _, f := range []string{"tsv", "csv", "json"} {
		t.Run(f, func(t *testing.T) { clitest.Golden(t, "dry-run."+f, runAt(t, false, 80, "-o", f)) })
	}
	// Piped with --wide, the per-partition resume table follows, as on a
	// terminal; piped without, only the summary line on stderr.
	if wide := runAt(t, false, 80, "--wide"); !strings.Contains(wide, "RESUME AT") || !strings.Contains(wide, "COPIED AGAIN") {
		t.Fatalf("--wide piped has no resume table:\n%s", wide)
	}
	if plain := runAt(t, false, 80); strings.Contains(plain, "RESUME AT") {
		t.Fatalf("piped without --wide printed the resume table:\n%s", plain)
	}
	// Nothing was created.
	topics, err := kadm.NewClient(e.Client(t, "eu-west")).ListTopics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(topics.Names()) != "[us-east.payments]" {
		t.Fatalf("dry run changed the target: topics %v", topics.Names())
	}
}

func TestOnceJSON(t *testing.T) {
	e := newEnv(t, "")
	createTopics(t, e.Client(t, "us-east"), 3, "orders")
	e.produceN(t, "us-east", "orders", 3, 100)
	code, out, stderr := run(t, "replicate", "--once", "-o", "json", "-c", e.config)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	var res replicatecmd.RunResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if res.SchemaVersion != 1 || len(res.Topics) != 1 || res.Topics[0].Records != 300 || res.Topics[0].RemoteTopic != "us-east.orders" || res.Topics[0].Partitions != 3 {
		t.Fatalf("result %+v", res)
	}
	copied := e.ReadAll(t, "eu-west", "us-east.orders")
	for p := int32(0); p < 3; p++ {
		if got := len(copied[p]); got != 100 {
			t.Fatalf("us-east.orders[%d] has %d records, want 100", p, got)
		}
	}
	// A second run copies nothing new.
	code, out, _ = run(t, "replicate", "--once", "-o", "json", "-c", e.config)
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.Topics[0].Records != 0 {
		t.Fatalf("second run: exit %d, %+v, %v", code, res, err)
	}
}

func TestUnknownFlowIsAUsageError(t *testing.T) {
	e := newEnv(t, "")
	code, _, stderr := run(t, "replicate", "--once", "--flow", "eu-west->us-east", "-c", e.config)
	if code != 2 || !strings.Contains(stderr, "not enabled") {
		t.Fatalf("exit %d, stderr %q; want 2 and 'not enabled'", code, stderr)
	}
}

// SASL credentials reach the broker but never the output or the logs, even
// at debug level.
func TestSecretsNeverPrinted(t *testing.T) {
	const secret = "hunter2-s3cr3t-value"
	e := newEnv(t, `us-east.security.protocol = SASL_PLAINTEXT
us-east.sasl.mechanism = SCRAM-SHA-512
us-east.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required username="mm2" password="`+secret+`";
`, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "mm2", secret))
	admin := e.Client(t, "us-east", kgo.SASL(scram.Auth{User: "mm2", Pass: secret}.AsSha512Mechanism()))
	createTopics(t, admin, 1, "orders")
	for _, args := range [][]string{
		{"replicate", "--dry-run", "-vv", "-c", e.config},
		{"replicate", "--once", "-vv", "-o", "json", "-c", e.config},
		{"config", "show", "-c", e.config},
	} {
		code, out, stderr := run(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d, stderr %s", args, code, stderr)
		}
		if strings.Contains(out+stderr, secret) {
			t.Fatalf("%v printed the password", args)
		}
	}
	// And with a wrong password the error says so without echoing it. (kfake
	// drops the connection on a failed login, which kgo retries, where a
	// real broker's SASL_AUTHENTICATION_FAILED stops at once: bound it.)
	bad := strings.Replace(mustRead(t, e.config), secret, "wrong-"+secret, 1) +
		"us-east.admin.default.api.timeout.ms = 2000\n"
	if err := os.WriteFile(e.config, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := run(t, "replicate", "--dry-run", "-vv", "-c", e.config)
	if code == 0 || strings.Contains(out+stderr, secret) {
		t.Fatalf("wrong password: exit %d; printed secret: %v", code, strings.Contains(out+stderr, secret))
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// kill -9 mid-stream, then restart: every source record is on the target, in
// order; the only repeats are the records copied after the last progress
// write, re-copied once.
func TestKill9ThenResumeLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a subprocess")
	}
	e := newEnv(t, "")
	east := e.Client(t, "us-east")
	createTopics(t, east, 2, "orders")
	const first = 2000
	e.produceN(t, "us-east", "orders", 2, first)

	cmd := exec.Command(os.Args[0], "replicate", "-c", e.config)
	cmd.Env = append(os.Environ(), "MIRRORCTL_TEST_MAIN=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	// Keep producing while the mirror copies, so the kill lands mid-stream.
	prod := e.Client(t, "us-east", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	stopProducing := make(chan struct{})
	produced := make(chan int)
	go func() {
		i := first
		for {
			select {
			case <-stopProducing:
				produced <- i
				return
			default:
			}
			var recs []*kgo.Record
			for p := int32(0); p < 2; p++ {
				for j := i; j < i+200; j++ {
					recs = append(recs, &kgo.Record{Topic: "orders", Partition: p, Value: []byte(fmt.Sprintf("p%d-%06d", p, j))})
				}
			}
			if err := prod.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				t.Error(err)
			}
			i += 200
			time.Sleep(5 * time.Millisecond) // a steady stream, not a flood
		}
	}()
	west := kadm.NewClient(e.Client(t, "eu-west"))
	deadline := time.Now().Add(30 * time.Second)
	for {
		ends, err := west.ListEndOffsets(context.Background(), "mirrorctl-progress.us-east.internal")
		if err == nil {
			if o, ok := ends.Lookup("mirrorctl-progress.us-east.internal", 0); ok && o.Offset >= 4 {
				break // progress was written twice per partition: the copy is well under way
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no progress written within 30s; stderr: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // land between two progress writes
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	close(stopProducing)
	n := <-produced

	code, _, errOut := run(t, "replicate", "--once", "-c", e.config)
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, errOut)
	}
	copied := e.ReadAll(t, "eu-west", "us-east.orders")
	for p := int32(0); p < 2; p++ {
		got := values(copied[p])
		want := make([]string, n)
		for i := range want {
			want[i] = fmt.Sprintf("p%d-%06d", p, i)
		}
		// got must be want[:k] followed by want[j:] with j <= k.
		k := 0
		for k < len(got) && k < n && got[k] == want[k] {
			k++
		}
		j := n - (len(got) - k)
		if j < 0 || j > k {
			t.Fatalf("partition %d: %d records on the target, prefix %d: records were lost or invented", p, len(got), k)
		}
		for i := k; i < len(got); i++ {
			if got[i] != want[j+i-k] {
				t.Fatalf("partition %d: record %d is %s, want %s (lost or reordered)", p, i, got[i], want[j+i-k])
			}
		}
		t.Logf("partition %d: %d copied before the kill, %d re-copied after it", p, k, k-j)
	}
}

// TestOnceWideShowsGroups: --wide prints every table in full, also off a
// terminal, so replicate --once's groups table comes after the topics one
// (without --wide, piped, only the topics table is printed; scripts read
// -o json).
func TestOnceWideShowsGroups(t *testing.T) {
	e := newEnv(t, "")
	createTopics(t, e.Client(t, "us-east"), 1, "orders")
	e.produceN(t, "us-east", "orders", 1, 50)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 20, LeaderEpoch: -1})
	if _, err := kadm.NewClient(e.Client(t, "us-east")).CommitOffsets(context.Background(), "app", offs); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := run(t, "replicate", "--once", "--wide", "-c", e.config)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	topics, groups := strings.Index(out, "REMOTE TOPIC"), strings.Index(out, "CHECKPOINTS")
	if topics < 0 || groups < topics || !strings.Contains(out[groups:], "app") {
		t.Fatalf("want the topics table, then the groups table with group app:\n%s", out)
	}
	code, out, _ = run(t, "replicate", "--once", "-c", e.config)
	if code != 0 || strings.Contains(out, "CHECKPOINTS") {
		t.Fatalf("piped without --wide: exit %d, want the topics table only:\n%s", code, out)
	}
}
