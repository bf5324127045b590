package replicate_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/mirrorctl/mirrorctl/internal/cli"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

// statusRE matches the start of the status line's text.
var statusRE = regexp.MustCompile(`copied [0-9,]+ records \(`)

// waitTargetEnd waits (bounded) until every partition of topic on alias
// ends at want.
func waitTargetEnd(t *testing.T, adm *kadm.Client, topic string, partitions int, want int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ends, err := adm.ListEndOffsets(context.Background(), topic)
		n := 0
		if err == nil {
			ends.Each(func(o kadm.ListedOffset) {
				if o.Err == nil && o.Offset == want {
					n++
				}
			})
		}
		if n == partitions {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not reach %d on %d partitions (%d did; %v)", topic, want, partitions, n, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestContinuousStatusLine runs continuous `replicate` with stderr on a
// terminal: a live status line (records, rate, records behind, partitions)
// is redrawn in place, erased on Ctrl-C, and the interrupted run prints no
// success mark. Off a terminal and with -o json there is no line.
func TestContinuousStatusLine(t *testing.T) {
	e := newEnv(t, "")
	createTopics(t, e.Client(t, testkit.East), 2, "orders")
	e.produceN(t, testkit.East, "orders", 2, 500)
	target := e.Admin(t, testkit.West)

	start := func(tty bool, args ...string) (*lockedBuffer, func() int) {
		ios, _, _, _ := iostreams.Test()
		errOut := &lockedBuffer{}
		ios.ErrOut = errOut
		ios.SetStderrTTY(tty)
		ios.SetColorDisabled(true)
		ios.SetTerminalWidth(200)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		done := make(chan int, 1)
		go func() { done <- cli.Run(ctx, ios, append([]string{"replicate", "-c", e.config}, args...), nil) }()
		return errOut, func() int {
			cancel()
			select {
			case code := <-done:
				return code
			case <-time.After(30 * time.Second):
				t.Fatal("replicate did not stop within 30 s of the interrupt")
				return 0
			}
		}
	}

	// With --metrics-addr the high watermarks come from the metrics
	// observer, which the engine gets unwrapped.
	for _, args := range [][]string{nil, {"--metrics-addr", "127.0.0.1:0"}} {
		t.Run(fmt.Sprint("terminal", args), func(t *testing.T) {
			if args != nil {
				e.produceN(t, testkit.East, "orders", 2, 500) // more to copy
			}
			// Each run copies 1,000 records: the first all, the second the new ones.
			copied := "copied 1,000 records"
			errOut, stop := start(true, args...)
			deadline := time.Now().Add(30 * time.Second)
			want := []string{copied, "0 behind", "/s, 0 behind", "2 partitions", "us-east->eu-west: leader, 2 tasks"}
			for {
				got := errOut.String()
				all := true
				for _, w := range want {
					all = all && strings.Contains(got, w)
				}
				if all {
					break
				}
				if time.Now().After(deadline) {
					stop()
					t.Fatalf("status line never showed all of %q:\n%q", want, got)
				}
				time.Sleep(20 * time.Millisecond)
			}
			drawn := errOut.String()
			if strings.Count(drawn, "\r") < 2 {
				t.Errorf("status line not redrawn in place: %q", drawn)
			}
			if i := statusRE.FindStringIndex(drawn); i != nil && strings.Contains(drawn[i[0]:], "\n") {
				t.Errorf("a newline after the status line: it is not redrawn in place: %q", drawn)
			}
			code := stop()
			got := errOut.String()
			if code != 130 {
				t.Fatalf("exit %d, want 130: %q", code, got)
			}
			if strings.Contains(got, "✓") {
				t.Fatalf("interrupted run printed a success mark: %q", got)
			}
			all := statusRE.FindAllStringIndex(got, -1)
			tail := got[all[len(all)-1][0]:]
			if !strings.Contains(tail, "\x1b[2K") || !strings.Contains(tail, "stopped: position saved") {
				t.Fatalf("the line was not erased before the closing words: %q", tail)
			}
		})
	}

	for _, tt := range []struct {
		name string
		tty  bool
		args []string
	}{
		{name: "piped"},
		{name: "json", tty: true, args: []string{"-o", "json"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e.produceN(t, testkit.East, "orders", 2, 500) // more to copy
			errOut, stop := start(tt.tty, tt.args...)
			ends, err := e.Admin(t, testkit.East).ListEndOffsets(context.Background(), "orders")
			if err != nil {
				t.Fatal(err)
			}
			// The line is drawn as the run starts; once the target has
			// everything, it would be there.
			waitTargetEnd(t, target, "us-east.orders", 2, ends["orders"][0].Offset)
			if code := stop(); code != 130 {
				t.Fatalf("exit %d, want 130: %q", code, errOut)
			}
			if got := errOut.String(); statusRE.MatchString(got) || strings.Contains(got, "\r") {
				t.Fatalf("status line drawn %s: %q", tt.name, got)
			}
		})
	}
}
