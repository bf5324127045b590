package dump

import (
	"strings"
	"testing"

	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// TestCheckpointsDumpEscapesControlCharacters writes a checkpoint whose group
// name and metadata hold terminal escape sequences (clear screen, set the
// window title, OSC 52 clipboard write) and checks that no format but JSON
// prints them raw, and that JSON keeps them as JSON escapes.
func TestCheckpointsDumpEscapesControlCharacters(t *testing.T) {
	p := newClusterPair(t)
	evil := mm2.Checkpoint{
		Group: "evil\x1b[2J\x1b]0;owned\a", Topic: "us-east.orders", Partition: 0,
		UpstreamOffset: 5, DownstreamOffset: 5, Metadata: "\x1b]52;c;cm0gLXJmIH4=\a\u009b31m",
	}
	p.produce(t, "us-west", "us-east.checkpoints.internal", []rec{cpRec(t, evil, t0)})
	for _, tc := range []struct {
		format output.Format
		tty    bool
	}{{output.FormatTable, false}, {output.FormatTable, true}, {output.FormatTSV, false}, {output.FormatCSV, false}, {output.FormatJSON, false}} {
		f, out, errOut := p.factory(t, tc.format, tc.tty)
		if err := run(t, NewCmdCheckpointsDump(f, nil)); err != nil {
			t.Fatalf("%s tty=%v: %v", tc.format, tc.tty, err)
		}
		got := out.String() + errOut.String()
		if strings.ContainsAny(got, "\x1b\a") || strings.Contains(got, "\u009b") {
			t.Errorf("%s tty=%v: raw control characters reach the terminal: %q", tc.format, tc.tty, got)
		}
		want := `evil\x1b[2J\x1b]0;owned\x07`
		if tc.format == output.FormatJSON {
			want = `evil\u001b[2J\u001b]0;owned\u0007`
		}
		if !strings.Contains(got, want) {
			t.Errorf("%s tty=%v: group not shown escaped (%s): %q", tc.format, tc.tty, want, got)
		}
	}
}

// TestDumpProgressOnlyOnATerminal: with stderr a terminal a dump draws a
// progress bar there (and erases it); stdout is the same either way.
func TestDumpProgressOnlyOnATerminal(t *testing.T) {
	p := newClusterPair(t)
	p.produce(t, "us-west", "us-east.checkpoints.internal", checkpointFixture(t))
	f, plainOut, plainErr := p.factory(t, output.FormatTable, false)
	if err := run(t, NewCmdCheckpointsDump(f, nil)); err != nil {
		t.Fatal(err)
	}
	f, out, errOut := p.factory(t, output.FormatTable, false)
	f.IO.SetStderrTTY(true)
	if err := run(t, NewCmdCheckpointsDump(f, nil)); err != nil {
		t.Fatal(err)
	}
	if out.String() != plainOut.String() {
		t.Fatalf("stdout differs with a terminal on stderr:\n%s\nvs\n%s", out, plainOut)
	}
	if strings.Contains(plainErr.String(), "reading ") {
		t.Fatalf("progress drawn off a terminal: %q", plainErr)
	}
	if !strings.Contains(errOut.String(), "reading us-east.checkpoints.internal on us-west") || !strings.Contains(errOut.String(), "/11") {
		t.Fatalf("no progress against the 11 records on a terminal: %q", errOut)
	}
}
