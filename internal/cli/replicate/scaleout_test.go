package replicate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/metrics"
	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// The tests of this file run `mirrorctl replicate` as separate processes (this
// test binary re-executed, see TestMain) against two embedded clusters, so a
// member can be killed with SIGKILL: no final progress, no leave request; the
// group notices only after the session timeout.

// scaleEnv is a cluster pair whose group coordinators accept short session
// timeouts, and an mm2.properties for it.
func scaleEnv(t *testing.T, extra string) *env {
	t.Helper()
	p := testkit.NewPairWith(t, kfake.GroupMinSessionTimeout(100*time.Millisecond))
	return &env{Pair: p, config: p.WriteConfig(t, `us-east.consumer.session.timeout.ms = 1500
eu-west.consumer.session.timeout.ms = 1500
mirrorctl.progress.interval.ms = 200
`+extra)}
}

// proc is one `mirrorctl replicate` process.
type proc struct {
	name    string
	cmd     *exec.Cmd
	stderr  *lockedBuffer
	metrics string // host:port of /status
	done    chan struct{}
	code    int
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func startProc(t *testing.T, e *env, name string, args ...string) *proc {
	t.Helper()
	// Port 0: the process logs the address it got (a port chosen here
	// could be taken by another test's process before it binds).
	all := append([]string{"replicate", "-v", "-c", e.config, "--metrics-addr", "127.0.0.1:0"}, args...)
	p := &proc{name: name, cmd: exec.Command(os.Args[0], all...), stderr: &lockedBuffer{}, done: make(chan struct{})}
	if e.state == "" {
		e.state = t.TempDir() // the processes of one env share their instance slots
	}
	p.cmd.Env = append(os.Environ(), "MIRRORCTL_TEST_MAIN=1", "XDG_STATE_HOME="+e.state)
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("%s stderr:\n%s", p.name, p.stderr.String())
		}
	})
	return p
}

func (p *proc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
}

// term stops p as systemd or Kubernetes would, and returns its exit code.
func (p *proc) term(t *testing.T) int {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not stop within 30s of SIGTERM", p.name)
	}
	return p.code
}

// metricsAddr returns the address p serves /status on, "" before it logged
// it.
func (p *proc) metricsAddr() string {
	if p.metrics == "" {
		out := p.stderr.String()
		if i := strings.Index(out, `msg="serving metrics" addr=`); i >= 0 {
			rest := out[i+len(`msg="serving metrics" addr=`):]
			if j := strings.IndexAny(rest, " \n"); j >= 0 {
				p.metrics = rest[:j]
			}
		}
	}
	return p.metrics
}

// status reads p's /status; ok is false while it does not answer.
func (p *proc) status() (metrics.FlowStatus, bool) {
	if p.metricsAddr() == "" {
		return metrics.FlowStatus{}, false
	}
	cl := http.Client{Timeout: time.Second}
	resp, err := cl.Get("http://" + p.metrics + "/status")
	if err != nil {
		return metrics.FlowStatus{}, false
	}
	defer resp.Body.Close()
	var st metrics.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return metrics.FlowStatus{}, false
	}
	for _, f := range st.Flows {
		if f.Source == "us-east" && f.Target == "eu-west" && f.Membership != nil {
			return f, true
		}
	}
	return metrics.FlowStatus{}, false
}

func tasksOf(procs ...*proc) (tasks []int, leaders int) {
	for _, p := range procs {
		st, ok := p.status()
		if !ok {
			tasks = append(tasks, -1)
			continue
		}
		tasks = append(tasks, st.Membership.Tasks)
		if st.Membership.Leader {
			leaders++
		}
	}
	return tasks, leaders
}

func spread(procs []*proc, parts int) func() bool {
	return func() bool {
		ts, leaders := tasksOf(procs...)
		n := 0
		for _, x := range ts {
			if x <= 0 {
				return false
			}
			n += x
		}
		return n == parts && leaders == 1
	}
}

// waitFor polls cond every 50 ms, failing t after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stream produces n records "p<partition>-<index>" to each partition of
// topic in batches of 50, pausing between batches, and closes done.
func stream(t *testing.T, e *env, topic string, parts int32, n int, pause time.Duration) (done chan struct{}) {
	done = make(chan struct{})
	cl := e.Client(t, "us-east", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	go func() {
		defer close(done)
		for i := 0; i < n; i += 50 {
			var recs []*kgo.Record
			for p := int32(0); p < parts; p++ {
				for j := i; j < min(i+50, n); j++ {
					recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("p%d-%06d", p, j))})
				}
			}
			if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(pause)
		}
	}()
	return done
}

// streamUntil produces to every partition of topic, 50 records per
// partition per batch with pause between batches, until the returned stop
// is called; stop waits for the last batch and returns how many records
// each partition got. Kill tests use it so that every kill lands mid-stream
// however slow the machine is.
func streamUntil(t *testing.T, e *env, topic string, parts int32, pause time.Duration) (stop func() int) {
	cl := e.Client(t, "us-east", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	quit, done := make(chan struct{}), make(chan struct{})
	n := 0
	var once sync.Once
	stop = func() int {
		once.Do(func() { close(quit) })
		<-done
		return n
	}
	// A test that fails before it calls stop must not leave the stream
	// running past its end (its client closed, its t gone): cleanups run
	// last in first, so this one runs before the client's Close.
	t.Cleanup(func() { stop() })
	go func() {
		defer close(done)
		for {
			var recs []*kgo.Record
			for p := int32(0); p < parts; p++ {
				for j := n; j < n+50; j++ {
					recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("p%d-%06d", p, j))})
				}
			}
			if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				t.Error(err)
				return
			}
			n += 50
			select {
			case <-quit:
				return
			case <-time.After(pause):
			}
		}
	}()
	return stop
}

// awaitCopied waits until every partition of the remote topic holds the
// copy of the partition's last source record, n-1. End offsets cannot tell:
// they count repeats too, so they reach n before the last records arrive.
func awaitCopied(t *testing.T, e *env, remote string, parts int32, n int) {
	t.Helper()
	awaitEnd(t, e, remote, parts, n)
	waitFor(t, 60*time.Second, fmt.Sprintf("%s to hold each partition's record %d", remote, n-1), func() bool {
		got := e.ReadAll(t, "eu-west", remote)
		for p := int32(0); p < parts; p++ {
			last := fmt.Sprintf("p%d-%06d", p, n-1)
			found := false
			for i := len(got[p]) - 1; i >= 0 && !found; i-- {
				found = string(got[p][i].Value) == last
			}
			if !found {
				return false
			}
		}
		return true
	})
}

// awaitEnd waits until every partition of the remote topic holds at least n
// records.
func awaitEnd(t *testing.T, e *env, remote string, parts int32, n int) {
	t.Helper()
	adm := kadm.NewClient(e.Client(t, "eu-west"))
	waitFor(t, 60*time.Second, fmt.Sprintf("%s to hold %d records per partition", remote, n), func() bool {
		ends, err := adm.ListEndOffsets(context.Background(), remote)
		if err != nil {
			return false
		}
		for p := int32(0); p < parts; p++ {
			if o, ok := ends.Lookup(remote, p); !ok || o.Err != nil || o.Offset < int64(n) {
				return false
			}
		}
		return true
	})
}

// checkAll asserts that no source record is missing from the remote topic
// and each run of copies is in order, and returns the repeats per partition.
func checkAll(t *testing.T, e *env, remote string, parts int32, n int) []int {
	t.Helper()
	got := e.ReadAll(t, "eu-west", remote)
	dups := make([]int, parts)
	for p := int32(0); p < parts; p++ {
		idx := make([]int, 0, len(got[p]))
		for _, r := range got[p] {
			_, num, _ := strings.Cut(string(r.Value), "-")
			i, err := strconv.Atoi(num)
			if err != nil || !strings.HasPrefix(string(r.Value), fmt.Sprintf("p%d-", p)) {
				t.Fatalf("%s[%d] holds %q", remote, p, r.Value)
			}
			idx = append(idx, i)
		}
		d, err := testkit.CheckCopy(idx, n)
		if err != nil {
			t.Fatalf("%s[%d]: %v", remote, p, err)
		}
		dups[p] = d
	}
	return dups
}

func total(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// Three processes share twelve partitions while records keep arriving; the
// leader is killed with SIGKILL mid-stream, the others take over its
// partitions and the leadership; a fourth joins. Every record ends up on
// the target in order; the repeats are bounded by what the killed process
// had copied since its last progress write. Exactly one process emits
// heartbeats at any time.
func TestProcessesShareAndSurviveSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts subprocesses")
	}
	e := scaleEnv(t, "tasks.max = 4\nus-east->eu-west.emit.heartbeats.enabled = true\nemit.checkpoints.interval.seconds = 1\n")
	const parts, n = 12, 4000
	createTopics(t, e.Client(t, "us-east"), parts, "orders")
	// A consumer group on the source that keeps moving, for checkpoints.
	stopCommits := make(chan struct{})
	commitsDone := make(chan struct{})
	go func() {
		defer close(commitsDone)
		adm := kadm.NewClient(e.Client(t, "us-east"))
		for at := int64(1); ; at += 50 {
			select {
			case <-stopCommits:
				return
			case <-time.After(300 * time.Millisecond):
			}
			offs := kadm.Offsets{}
			for p := int32(0); p < parts; p++ {
				offs.Add(kadm.Offset{Topic: "orders", Partition: p, At: at, LeaderEpoch: -1})
			}
			_, _ = adm.CommitOffsets(context.Background(), "app", offs)
		}
	}()
	procs := []*proc{startProc(t, e, "a"), startProc(t, e, "b"), startProc(t, e, "c")}
	waitFor(t, 30*time.Second, "12 partitions spread over 3 processes, one leader", spread(procs, parts))
	// The groups may still settle (a member joined a moment ago): ask
	// again until lag sees them stable.
	var why string
	waitFor(t, 20*time.Second, "lag to name 3 members, a leader and every owner", func() bool {
		if w := lagOwners(t, e, 3, parts); w != why {
			why = w
			t.Log(w) // shown when the wait times out
		}
		return why == ""
	})
	if code, _, stderr := run(t, "replicate", "--dry-run", "-c", e.config); code != 0 || !strings.Contains(stderr, "has 3 processes running it (tasks.max 4), leader ") {
		t.Fatalf("replicate --dry-run: exit %d, stderr %q; want the 3 members and the leader named", code, stderr)
	}

	done := stream(t, e, "orders", parts, n, 40*time.Millisecond)
	awaitEnd(t, e, "us-east.orders", parts, n/4)
	leader := -1
	for i, p := range procs {
		if st, ok := p.status(); ok && st.Membership.Leader {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatal("no process leads the flow")
	}
	killed := procs[leader]
	killedAt := time.Now()
	killed.kill(t)
	rest := append(append([]*proc(nil), procs[:leader]...), procs[leader+1:]...)
	waitFor(t, 30*time.Second, "the killed leader's partitions and leadership taken over", spread(rest, parts))
	takeoverAt := time.Now()
	t.Logf("takeover after SIGKILL of the leader took %s (session timeout 1.5s)", takeoverAt.Sub(killedAt).Round(10*time.Millisecond))

	d := startProc(t, e, "d")
	rest = append(rest, d)
	waitFor(t, 30*time.Second, "the 4th process takes partitions", spread(rest, parts))
	<-done
	awaitCopied(t, e, "us-east.orders", parts, n)
	time.Sleep(1500 * time.Millisecond) // a heartbeat and a checkpoint pass by the new leader
	close(stopCommits)
	<-commitsDone
	for _, p := range rest {
		if code := p.term(t); code != 130 {
			t.Errorf("%s: exit %d after SIGTERM, want 130", p.name, code)
		}
	}
	dups := checkAll(t, e, "us-east.orders", parts, n)
	t.Logf("%d records per partition over %d partitions; repeats per partition after one SIGKILL: %v (total %d)", n, parts, dups, total(dups))
	// The killed process wrote progress every 200 ms; what it copied after
	// its last write is copied again. 50 records per partition arrive every
	// 40 ms, so a 200 ms window holds about 250; allow four windows.
	for p, d := range dups {
		if d > 1000 {
			t.Errorf("partition %d: %d repeats, more than the killed process could have copied since its last progress write", p, d)
		}
	}
	// One heartbeat per second from the leader, not one per process.
	hbs := e.ReadAll(t, "eu-west", "heartbeats")[0]
	close2 := 0
	for i := 1; i < len(hbs); i++ {
		if hbs[i].Timestamp.Sub(hbs[i-1].Timestamp) < 500*time.Millisecond {
			close2++
		}
	}
	after := 0
	for _, h := range hbs {
		if h.Timestamp.After(takeoverAt) {
			after++
		}
	}
	t.Logf("%d heartbeats, %d closer than half an interval, %d after the takeover", len(hbs), close2, after)
	if len(hbs) == 0 || close2 > 2 {
		t.Errorf("%d of %d heartbeats closer than half an interval: more than one process emits them", close2, len(hbs))
	}
	if after == 0 {
		t.Error("no heartbeat after the leader was killed: nobody took the leadership over")
	}
	// Checkpoints: each (group, partition, upstream offset) written once,
	// by whichever process led at the time, not once per process.
	cks := e.ReadAll(t, "eu-west", "us-east.checkpoints.internal")[0]
	seen := map[string]int{}
	repeated := 0
	for _, r := range cks {
		ck, err := mm2.DecodeCheckpoint(r.Key, r.Value)
		if err != nil {
			t.Fatalf("checkpoint at offset %d: %v", r.Offset, err)
		}
		k := fmt.Sprintf("%s/%s/%d/%d", ck.Group, ck.Topic, ck.Partition, ck.UpstreamOffset)
		if seen[k]++; seen[k] > 1 {
			repeated++
		}
	}
	t.Logf("%d checkpoints, %d repeated", len(cks), repeated)
	if len(cks) == 0 || repeated > parts {
		t.Errorf("%d checkpoints, %d of them repeats: more than one process writes them", len(cks), repeated)
	}
}

// lagOwners runs `lag -o json` and says what is missing ("" when nothing)
// of: members processes in the flow's group, a leader, an owner for each of
// parts partitions.
func lagOwners(t *testing.T, e *env, members, parts int) string {
	t.Helper()
	_, stdout, stderr := run(t, "lag", "-c", e.config, "-o", "json")
	var res struct {
		Flows []struct {
			Members []struct {
				ClientID   string `json:"client_id"`
				Host       string `json:"host"`
				Partitions int    `json:"partitions"`
			} `json:"members"`
			Leader *struct {
				ClientID string `json:"client_id"`
				Host     string `json:"host"`
			} `json:"leader"`
			Partitions []struct {
				Owner string `json:"owner"`
			} `json:"partitions"`
			OwnershipError string `json:"ownership_error"`
		} `json:"flows"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || len(res.Flows) != 1 {
		return fmt.Sprintf("lag -o json: %v: %s %s", err, stdout, stderr)
	}
	f := res.Flows[0]
	owned := 0
	for _, p := range f.Partitions {
		if p.Owner != "" {
			owned++
		}
	}
	leaderIsMember := false
	for _, m := range f.Members {
		if f.Leader != nil && m.ClientID == f.Leader.ClientID && m.Host == f.Leader.Host {
			leaderIsMember = true
		}
	}
	if f.OwnershipError != "" || len(f.Members) != members || f.Leader == nil || owned != parts || !leaderIsMember {
		return fmt.Sprintf("lag: %d members, leader %v (a member: %v), %d of %d partitions owned, error %q; want %d members, a leader named as one of them, every partition owned",
			len(f.Members), f.Leader, leaderIsMember, owned, len(f.Partitions), f.OwnershipError, members)
	}
	return ""
}

// Two processes, each killed with SIGKILL at random moments and restarted,
// while records keep arriving: nothing is lost, order is kept, and the
// repeats each kill causes are reported. The full version (1M records, 10
// kills) runs against real brokers in make test-kafka.
func TestRandomSIGKILLsLoseNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts subprocesses")
	}
	e := scaleEnv(t, "tasks.max = 2\n")
	const parts, kills = 6, 4
	createTopics(t, e.Client(t, "us-east"), parts, "orders")
	procs := []*proc{startProc(t, e, "a0"), startProc(t, e, "b0")}
	waitFor(t, 30*time.Second, "6 partitions over 2 processes", spread(procs, parts))
	stop := streamUntil(t, e, "orders", parts, 60*time.Millisecond)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	var prev []int
	for k := 0; k < kills; k++ {
		time.Sleep(time.Duration(200+rng.IntN(600)) * time.Millisecond)
		i := rng.IntN(len(procs))
		procs[i].kill(t)
		procs[i] = startProc(t, e, fmt.Sprintf("%c%d", 'a'+i, k+1))
		waitFor(t, 30*time.Second, fmt.Sprintf("kill %d: both processes copying again", k+1), spread(procs, parts))
		// Repeats so far (a read of what is on the target now).
		awaitEnd(t, e, "us-east.orders", parts, 1)
		got := e.ReadAll(t, "eu-west", "us-east.orders")
		var now []int
		for p := int32(0); p < parts; p++ {
			seen := map[string]int{}
			dup := 0
			for _, r := range got[p] {
				seen[string(r.Value)]++
				if seen[string(r.Value)] > 1 {
					dup++
				}
			}
			now = append(now, dup)
		}
		delta := total(now) - total(prev)
		t.Logf("kill %d (%s): %d records repeated by it", k+1, procs[i].name, delta)
		prev = now
	}
	n := stop()
	awaitCopied(t, e, "us-east.orders", parts, n)
	for _, p := range procs {
		p.term(t)
	}
	dups := checkAll(t, e, "us-east.orders", parts, n)
	t.Logf("%d kills: 0 lost, order kept, %d repeats in all (%v per partition)", kills, total(dups), dups)
}

// Two processes started at the same moment on one config (tasks.max left at
// 1): one copies, the other waits as a standby; no second copy.
func TestTwoProcessesStartedAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts subprocesses")
	}
	e := scaleEnv(t, "")
	const parts, n = 4, 2000
	createTopics(t, e.Client(t, "us-east"), parts, "orders")
	e.produceN(t, "us-east", "orders", parts, n)
	a, b := startProc(t, e, "a"), startProc(t, e, "b")
	awaitCopied(t, e, "us-east.orders", parts, n)
	waitFor(t, 30*time.Second, "one member and one standby", func() bool {
		sa, oka := a.status()
		sb, okb := b.status()
		if !oka || !okb {
			return false
		}
		roles := sa.Membership.Membership + "," + sb.Membership.Membership
		return roles == "member,standby" || roles == "standby,member"
	})
	// The standby says so at the default log level (an MM2 file carried
	// over with tasks.max = 1 copies on one replica only), and a dry run
	// warns that another process would copy nothing.
	const standbyLine = "warning: standby: the flow has tasks.max members copying it; this process copies nothing until a slot is free"
	if !strings.Contains(a.stderr.String()+b.stderr.String(), standbyLine) {
		t.Errorf("no process logged the standby warning %q", standbyLine)
	}
	if code, _, stderr := run(t, "replicate", "--dry-run", "-c", e.config); code != 0 ||
		!strings.Contains(stderr, "tasks.max 1 admits 1 process copying and 1 run now: a process started on this file waits as a standby and copies nothing") {
		t.Errorf("dry run: exit %d, no tasks.max warning: %s", code, stderr)
	}
	a.term(t)
	b.term(t)
	dups := checkAll(t, e, "us-east.orders", parts, n)
	t.Logf("repeats: %v", dups)
	if total(dups) > parts*n/10 {
		t.Errorf("%d repeats of %d records: more than a small fraction", total(dups), parts*n)
	}
}
