package replicate_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

// TestZombieCopiesAreCounted: a process stopped with SIGSTOP past its
// session timeout while it copies (a zombie: the group gave its partitions
// to the other process) and resumed with SIGCONT finds out at once that it
// did not run (the freeze guard): it hands nothing more to its producer,
// releases its tasks without writing progress, joins the group again, and
// counts the copies its producer still delivered after the removal
// (late_copies in /status, and a warning): at least every record that
// landed on the target after the other process had copied everything.
// No record is lost.
func TestZombieCopiesAreCounted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts subprocesses")
	}
	e := scaleEnv(t, "tasks.max = 2\n")
	const parts = 4
	topic := testkit.Name("zombie")
	remote := testkit.East + "." + topic
	e.CreateTopic(t, testkit.East, topic, parts, nil)
	a, b := startProc(t, e, "a"), startProc(t, e, "b")
	waitFor(t, 30*time.Second, "4 partitions over 2 processes", spread([]*proc{a, b}, parts))
	stop := streamUntil(t, e, topic, parts, 2*time.Millisecond)
	awaitEnd(t, e, remote, parts, 500)
	// Frozen before its first progress reached the target, a's partitions
	// could not be resumed by b at all (no progress, no offset sync, the
	// remote partitions not empty: refused, fail closed); this test is
	// about the copies of a process frozen later.
	awaitProgress(t, e, topic, parts, 1)
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	defer func() {
		if stopped {
			_ = a.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	waitFor(t, 30*time.Second, "b to own every partition", spread([]*proc{b}, parts))
	n := stop()
	awaitCopied(t, e, remote, parts, n)
	adm := kadm.NewClient(e.Client(t, testkit.West))
	sum := func() int64 {
		ends, err := adm.ListEndOffsets(context.Background(), remote)
		if err != nil {
			t.Fatal(err)
		}
		var s int64
		ends.Each(func(o kadm.ListedOffset) { s += o.Offset })
		return s
	}
	before := sum()
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	waitFor(t, 30*time.Second, "the zombie to see its freeze and join again", func() bool {
		out := a.stderr.String()
		return strings.Contains(out, "did not run for longer than the session timeout") && strings.Contains(out, "joining the group again after the freeze")
	})
	waitFor(t, 30*time.Second, "both processes copying again", spread([]*proc{a, b}, parts))
	after := sum()
	st, ok := a.status()
	if !ok {
		t.Fatal("no /status from the resumed process")
	}
	late := st.Membership.LateCopies
	t.Logf("records written to the target after the other process had copied everything: %d; counted by the zombie: %d", after-before, late)
	if late < after-before {
		t.Errorf("the zombie counted %d late copies, but %d records landed after its removal", late, after-before)
	}
	if late > 0 && !strings.Contains(a.stderr.String(), "copies acknowledged after this process was removed from the group") {
		t.Errorf("late copies not warned about")
	}
	checkAll(t, e, remote, parts, n)
}
