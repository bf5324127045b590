package output

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/schollz/progressbar/v3"

	"github.com/mirrorctl/mirrorctl/internal/iostreams"
)

// StatusLine is one line of live status on ios.ErrOut, redrawn in place (a
// spinner and a text), for work without an end such as continuous
// `replicate`. Like Progress it is drawn only when stderr is a terminal:
// off a terminal every method is a no-op and nothing is written. The text
// is cut to the terminal width so that the line never wraps (a wrapped line
// could not be redrawn in place). Stop erases it and never prints a success
// mark.
//
// Anything else written to stderr while the line is shown (a log record, a
// warning) must go through Interrupt, or AroundStatusLine for writers that
// do not know the line (a Progress is erased the same way) (the CLI's logger and warning helpers), which erase
// the line first and draw it again after, so the two never share a row.
//
// A StatusLine is safe for concurrent use.
type StatusLine struct {
	mu    sync.Mutex
	bar   *progressbar.ProgressBar // nil off a terminal and after Stop
	width int                      // terminal columns
	text  string                   // last text drawn
}

// NewStatusLine returns a StatusLine on ios.ErrOut, or a no-op one when
// stderr is not a terminal. Nothing is drawn until the first Set.
func NewStatusLine(ios *iostreams.IOStreams) *StatusLine {
	if !ios.IsStderrTTY() {
		return &StatusLine{}
	}
	bar := progressbar.NewOptions64(-1,
		progressbar.OptionSetWriter(ios.ErrOut),
		progressbar.OptionUseANSICodes(true),
		progressbar.OptionEnableColorCodes(false),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetRenderBlankState(false),
		// Redrawn on Set only: no ticker goroutine of the library's.
		progressbar.OptionSetSpinnerChangeInterval(0),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionSetElapsedTime(false),
	)
	s := &StatusLine{bar: bar, width: ios.TerminalWidth()}
	activeLine.Store(s)
	return s
}

// activeLine is the StatusLine drawn now, if any, and activeBar the
// Progress (one of each per process: the terminal has one stderr).
var (
	activeLine atomic.Pointer[StatusLine]
	activeBar  atomic.Pointer[Progress]
)

// AroundStatusLine calls write (which writes whole lines to stderr) with
// the status line or progress bar drawn now, if any, erased around it; with
// none it just calls write.
func AroundStatusLine(write func()) {
	if s := activeLine.Load(); s != nil {
		s.Interrupt(write)
		return
	}
	if p := activeBar.Load(); p != nil {
		p.Interrupt(write)
		return
	}
	write()
}

// Enabled reports whether the line is drawn (stderr is a terminal and Stop
// was not called).
func (s *StatusLine) Enabled() bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bar != nil
}

// Set draws text (one line: newlines become spaces; cut with "…" to fit the
// terminal) in place of the previous text.
func (s *StatusLine) Set(text string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bar == nil {
		return
	}
	text = strings.NewReplacer("\n", " ", "\r", " ").Replace(text)
	// The library draws "\r<spinner> <text>  ": keep the whole line
	// under the terminal's width with room for the "^C" a terminal echoes
	// at the cursor (a line that wrapped could not be erased).
	s.text = truncate(text, max(s.width-8, 1))
	s.bar.Describe(s.text)
}

// Interrupt erases the line, calls write (which writes whole lines to
// stderr) and draws the line again below what write wrote. Off a terminal
// it just calls write.
func (s *StatusLine) Interrupt(write func()) {
	if s == nil {
		write()
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bar == nil || s.text == "" {
		write()
		return
	}
	_ = s.bar.Clear()
	write()
	s.bar.Describe(s.text)
}

// Stop erases the line. It is idempotent; later calls to Set draw nothing.
func (s *StatusLine) Stop() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bar != nil {
		_ = s.bar.Clear()
		_ = s.bar.Exit()
		s.bar = nil
	}
	activeLine.CompareAndSwap(s, nil)
}

// ReplicateStatus is what continuous `replicate` reports on its status line:
// totals over the partitions this process copies.
type ReplicateStatus struct {
	// Records and Bytes are the records the target acknowledged since the
	// run started, and their value bytes.
	Records int64
	Bytes   int64
	// Rate is records per second over the last few seconds; negative
	// while not measured yet.
	Rate float64
	// Behind is the records between what the target acknowledged and the
	// source high watermark of the latest fetch, summed over the
	// partitions this process copies; negative when not known yet.
	Behind int64
	// Partitions is how many partitions this process copies now, Stopped
	// how many of those an error stopped.
	Partitions int
	Stopped    int
	// Flows holds one short note per flow ("us-east->eu-west: leader, 4
	// tasks"), shown after the totals as far as the width allows.
	Flows []string
}

// String is the status line's text, e.g. "copied 1,204,332 records
// (118.2 MB) at 10,512/s, 3,200 behind, 12 partitions, 1 stopped;
// us-east->eu-west: leader, 12 tasks".
func (r ReplicateStatus) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "copied %s records (%s)", groupThousands(fmt.Sprint(r.Records)), ByteSize(r.Bytes))
	if r.Rate >= 0 {
		fmt.Fprintf(&b, " at %s/s", groupThousands(fmt.Sprintf("%.0f", r.Rate)))
	}
	if r.Behind >= 0 {
		fmt.Fprintf(&b, ", %s behind", groupThousands(fmt.Sprint(r.Behind)))
	} else {
		b.WriteString(", behind unknown")
	}
	if r.Partitions == 1 {
		b.WriteString(", 1 partition")
	} else {
		fmt.Fprintf(&b, ", %d partitions", r.Partitions)
	}
	if r.Stopped > 0 {
		fmt.Fprintf(&b, ", %d stopped", r.Stopped)
	}
	for _, f := range r.Flows {
		b.WriteString("; ")
		b.WriteString(f)
	}
	return b.String()
}
