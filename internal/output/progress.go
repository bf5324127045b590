package output

import (
	"fmt"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/mirrorctl/mirrorctl/internal/iostreams"
)

// Progress is a progress bar for long work (large dumps, exact translation,
// `replicate --once`), drawn on ios.ErrOut only when stderr is a terminal,
// redrawn at most every 100 ms, with count, rate and an ETA against a
// known total. Off a terminal every method is a no-op and nothing is
// written, so scripts and logs never see it. Stdout is never touched.
//
// A Progress is safe for concurrent use. Stop erases it; it never prints a
// success mark: the caller says how the work ended.
type Progress struct {
	mu    sync.Mutex
	bar   *progressbar.ProgressBar // nil off a terminal
	total int64
	drawn time.Time // last redraw; updates within redrawEvery are dropped
}

// redrawEvery is the shortest time between two redraws.
const redrawEvery = 100 * time.Millisecond

// NewProgress returns a Progress for work of total units (records,
// partitions: unit names them, plural), described by description ("reading
// us-east.checkpoints.internal"). total <= 0 means unknown: a spinner with a
// count. It returns a no-op Progress when stderr is not a terminal.
func NewProgress(ios *iostreams.IOStreams, description string, total int64, unit string) *Progress {
	if !ios.IsStderrTTY() {
		return &Progress{}
	}
	if total <= 0 {
		total = -1
	}
	bar := progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(ios.ErrOut),
		progressbar.OptionSetDescription(description),
		progressbar.OptionSetItsString(unit),
		progressbar.OptionShowIts(),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionUseANSICodes(true),
		progressbar.OptionEnableColorCodes(false),
		progressbar.OptionSetRenderBlankState(true),
		// No redraw goroutine of the library's own (it animates a spinner
		// of unknown total on a ticker, racing Clear): we redraw on
		// updates only.
		progressbar.OptionSetSpinnerChangeInterval(0),
	)
	p := &Progress{bar: bar, total: total}
	activeBar.Store(p)
	return p
}

// Interrupt erases the bar, calls write (which writes whole lines to
// stderr) and draws the bar again below what write wrote; a log record or a
// warning written while the bar is shown goes through it (or through
// AroundStatusLine). Off a terminal, or after Stop, it just calls write.
func (p *Progress) Interrupt(write func()) {
	if !p.Enabled() {
		write()
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar == nil {
		write()
		return
	}
	_ = p.bar.Clear()
	write()
	_ = p.bar.RenderBlank()
}

// due reports whether a redraw is due (or forced by reaching the total),
// and if so takes the slot. p.mu must be held.
func (p *Progress) due(done int64) bool {
	if now := time.Now(); now.Sub(p.drawn) >= redrawEvery || (p.total > 0 && done >= p.total) {
		p.drawn = now
		return true
	}
	return false
}

// Enabled reports whether the bar is drawn (stderr is a terminal).
func (p *Progress) Enabled() bool { return p != nil && p.bar != nil }

// Set sets the units done so far.
func (p *Progress) Set(done int64) {
	if !p.Enabled() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil && p.due(done) {
		_ = p.bar.Set64(done)
	}
}

// SetTotal changes the total (e.g. once end offsets are known).
func (p *Progress) SetTotal(total int64) {
	if !p.Enabled() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.total = total
		p.bar.ChangeMax64(total)
	}
}

// Describe replaces the description shown before the bar.
func (p *Progress) Describe(description string) {
	if !p.Enabled() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Describe(description)
	}
}

// Stop erases the bar from the terminal. It is idempotent; later calls to
// the other methods do nothing.
func (p *Progress) Stop() {
	if !p.Enabled() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Clear()
		_ = p.bar.Exit()
		p.bar = nil
	}
	activeBar.CompareAndSwap(p, nil)
}

// CopyStatus is what `replicate --once` reports as it copies: the totals
// over every partition of every flow since the run started.
type CopyStatus struct {
	// Records and Bytes are the records copied and acknowledged by the
	// target so far, and their key+value bytes.
	Records int64
	Bytes   int64
	// Total is the records the run has to copy: for each partition, its
	// end offset when the run started minus the offset it started from
	// (0 while not known yet).
	Total int64
	// Stopped is the number of partitions stopped by an error.
	Stopped int
}

// CopyProgress draws a CopyStatus: records against Total with rate and
// ETA, and bytes and stopped partitions in the description. Like Progress
// it draws only when stderr is a terminal, and Stop never prints a success
// mark.
type CopyProgress struct {
	p         *Progress
	mu        sync.Mutex
	lastTotal int64
	drawn     time.Time
}

// NewCopyProgress returns a CopyProgress for ios (a no-op off a terminal).
func NewCopyProgress(ios *iostreams.IOStreams) *CopyProgress {
	return &CopyProgress{p: NewProgress(ios, "copying", 0, "records")}
}

// Enabled reports whether the bar is drawn (stderr is a terminal): off it,
// Update does nothing and callers need not gather its figures.
func (c *CopyProgress) Enabled() bool { return c.p.Enabled() }

// Update draws s. It is cheap to call often (the bar redraws at most every
// 100 ms) and safe from any goroutine.
func (c *CopyProgress) Update(s CopyStatus) {
	if !c.p.Enabled() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if now.Sub(c.drawn) < redrawEvery && !(s.Total > 0 && s.Records >= s.Total) {
		return
	}
	c.drawn = now
	if s.Total > 0 && s.Total != c.lastTotal {
		c.p.SetTotal(s.Total)
		c.lastTotal = s.Total
	}
	desc := "copying " + ByteSize(s.Bytes)
	if s.Stopped > 0 {
		if s.Stopped == 1 {
			desc += ", 1 partition stopped"
		} else {
			desc += fmt.Sprintf(", %d partitions stopped", s.Stopped)
		}
	}
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	if c.p.bar != nil {
		_ = c.p.bar.Set64(s.Records)
		c.p.bar.Describe(desc)
	}
}

// Stop erases the bar.
func (c *CopyProgress) Stop() { c.p.Stop() }

// ByteSize formats n bytes for humans in SI units: "999 B", "1.5 kB",
// "12.3 MB", "4.0 GB".
func ByteSize(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}
