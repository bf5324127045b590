package replicate_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

// crashEnv is a cluster pair whose groups keep a dead member for 4 s (the
// session timeout). A process killed within the few ms between its first
// copies of a partition and that partition's first progress write leaves
// copies no progress or offset sync accounts for; the next start would
// refuse the flow (mirrorctl.resume.unknown = refuse, by design), so the
// crash loop's survivors copy such a partition again from its log start.
func crashEnv(t *testing.T, extra string) *env {
	t.Helper()
	p := testkit.NewPairWith(t, kfake.GroupMinSessionTimeout(100*time.Millisecond))
	return &env{Pair: p, config: p.WriteConfig(t, `us-east.consumer.session.timeout.ms = 4000
eu-west.consumer.session.timeout.ms = 4000
mirrorctl.progress.interval.ms = 200
mirrorctl.resume.unknown = log-start
tasks.max = 8
mirrorctl.stop.budget.ms = 3000
`+extra)}
}

// crashLoop starts four replicate processes of e and kills each with
// SIGKILL 0.3-1.2 s apart, as a crash-looping deployment does.
func crashLoop(t *testing.T, e *env) {
	t.Helper()
	var ps []*proc
	for i := range 4 {
		ps = append(ps, startProc(t, e, fmt.Sprintf("crashed-%d", i)))
	}
	waitFor(t, 30*time.Second, "the four processes to join", func() bool {
		for _, p := range ps {
			if st, ok := p.status(); !ok || st.Membership.MemberID == "" {
				return false
			}
		}
		return true
	})
	for _, p := range ps {
		p.kill(t)
		time.Sleep(300*time.Millisecond + rand.N(900*time.Millisecond))
	}
}

// TestStopAfterCrashLoopWithinBudget: after a crash loop (four processes
// killed with SIGKILL 0.3-1.2 s apart, while records keep arriving) one more
// process starts; SIGINT ends it within its stop budget
// (mirrorctl.stop.budget.ms = 3000) plus a second, exit 130, in both
// delivery modes: sent once the survivor copied everything ("copied", the
// operator's way), and sent while a join it is in is held by the
// coordinator ("held"). Nothing is lost. Before: the flow
// stopped, then the process hung in the leader group's leave (kgo's Close
// waits for a join the coordinator holds), 60 s and more on the real
// brokers. The "held" case holds it like that here: the target's
// coordinator answers no JoinGroup of the leader group (kfake's group
// coordinator completes joins without waiting for dead members), and
// before it was stuck until the test released the join.
func TestStopAfterCrashLoopWithinBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("starts five processes")
	}
	for _, mode := range []struct{ name, props string }{
		{"at-least-once", ""},
		{"exactly-once", "eu-west.exactly.once.source.support = enabled\nmirrorctl.transaction.interval.ms = 100\n"},
	} {
		for _, when := range []string{"copied", "held"} {
			t.Run(mode.name+"/"+when, func(t *testing.T) {
				e := crashEnv(t, mode.props)
				topic := testkit.Name("crash")
				remote := testkit.East + "." + topic
				e.CreateTopic(t, testkit.East, topic, 4, nil)
				stop := streamUntil(t, e, topic, 4, 20*time.Millisecond)
				crashLoop(t, e)
				release := func() {}
				if when == "held" {
					release = holdJoins(t, e, "mirrorctl-us-east-eu-west-leader")
				}
				p := startProc(t, e, "survivor")
				waitFor(t, 30*time.Second, "the survivor to start its flow", func() bool {
					return strings.Contains(p.stderr.String(), `msg="flow started"`)
				})
				n := 0
				if when == "copied" {
					waitFor(t, 30*time.Second, "the survivor to own every partition", func() bool {
						st, ok := p.status()
						return ok && st.Membership.Tasks == 4
					})
					n = stop()
					awaitCopied(t, e, remote, 4, n)
				} else {
					time.Sleep(time.Second) // copying, its leader-group join held
				}
				start := time.Now()
				if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
					t.Fatal(err)
				}
				select {
				case <-p.done:
				case <-time.After(20 * time.Second):
					t.Fatalf("still running 20 s after SIGINT (stop budget 3 s)")
				}
				took := time.Since(start)
				t.Logf("stopped in %s, exit %d", took.Round(time.Millisecond), p.code)
				if lines := strings.Split(strings.TrimSpace(p.stderr.String()), "\n"); len(lines) > 0 {
					t.Logf("its last lines:\n%s", strings.Join(lines[max(0, len(lines)-4):], "\n"))
				}
				if took > 4*time.Second {
					t.Errorf("stopped in %s: over the 3 s stop budget and a second", took)
				}
				if p.code != 130 {
					t.Errorf("exit %d, want 130", p.code)
				}
				if when != "copied" {
					release() // the process that checks the copy joins freely
					n = stop()
					q := startProc(t, e, "after")
					awaitCopied(t, e, remote, 4, n)
					q.term(t)
				}
				checkAll(t, e, remote, 4, n) // every record, runs in order
			})
		}
	}
}

// holdJoins has the target's coordinator answer no JoinGroup of group
// until release is called or the test ends: a join the process is in never
// completes. release may be called more than once.
func holdJoins(t *testing.T, e *env, group string) (release func()) {
	held := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(held) }) }
	t.Cleanup(release)
	e.West.ControlKey(kmsg.JoinGroup.Int16(), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		e.West.KeepControl()
		if kreq.(*kmsg.JoinGroupRequest).Group == group {
			e.West.SleepControl(func() { <-held })
		}
		return nil, nil, false
	})
	return release
}
