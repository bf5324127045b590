package output

import (
	"strings"
	"testing"
	"time"

	"github.com/mirrorctl/mirrorctl/internal/iostreams"
)

func TestProgressOnlyOnATerminal(t *testing.T) {
	ios, _, out, errOut := iostreams.Test() // stderr not a terminal
	p := NewProgress(ios, "reading", 100, "records")
	p.Set(50)
	p.Stop()
	c := NewCopyProgress(ios)
	c.Update(CopyStatus{Records: 5, Total: 10})
	c.Stop()
	if out.Len() != 0 || errOut.Len() != 0 {
		t.Fatalf("progress off a terminal wrote stdout %q stderr %q", out, errOut)
	}
}

func TestCopyProgressOnATerminal(t *testing.T) {
	ios, _, out, errOut := iostreams.Test()
	ios.SetStderrTTY(true)
	c := NewCopyProgress(ios)
	c.Update(CopyStatus{Records: 250, Bytes: 12_300_000, Total: 1000, Stopped: 1})
	time.Sleep(150 * time.Millisecond) // past the redraw throttle
	c.Update(CopyStatus{Records: 500, Bytes: 24_600_000, Total: 1000, Stopped: 1})
	got := errOut.String()
	for _, want := range []string{"copying 24.6 MB, 1 partition stopped", "50%", "500/1000", "records"} {
		if !strings.Contains(got, want) {
			t.Errorf("progress lacks %q: %q", want, got)
		}
	}
	c.Stop()
	if strings.Contains(errOut.String(), "✓") || out.Len() != 0 {
		t.Fatalf("progress printed a success mark or wrote stdout: %q / %q", errOut, out)
	}
	c.Update(CopyStatus{Records: 900, Total: 1000}) // after Stop: nothing
}

func TestByteSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 999: "999 B", 1500: "1.5 kB", 12_345_678: "12.3 MB", 4_000_000_000: "4.0 GB"} {
		if got := ByteSize(n); got != want {
			t.Errorf("ByteSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// A log record written while the bar is drawn (through AroundStatusLine, as
// the CLI's logger does) gets a line of its own: the bar is erased first and
// drawn again after it.
func TestProgressErasedAroundOtherWrites(t *testing.T) {
	ios, _, _, errOut := iostreams.Test()
	ios.SetStderrTTY(true)
	c := NewCopyProgress(ios)
	c.Update(CopyStatus{Records: 250, Bytes: 1000, Total: 1000})
	errOut.Reset()
	AroundStatusLine(func() { errOut.WriteString("error: source records not copied\n") })
	got := errOut.String()
	i, j := strings.Index(got, "\r"), strings.Index(got, "error: source records not copied\n")
	if i < 0 || j < i || strings.Contains(got[:j], "copying") {
		t.Fatalf("the bar was not erased before the record: %q", got)
	}
	if !strings.Contains(got[j:], "copying") {
		t.Fatalf("the bar was not drawn again after the record: %q", got)
	}
	c.Stop()
	errOut.Reset()
	AroundStatusLine(func() { errOut.WriteString("after stop\n") })
	if errOut.String() != "after stop\n" {
		t.Fatalf("after Stop, AroundStatusLine wrote %q, want only the record", errOut)
	}
}
