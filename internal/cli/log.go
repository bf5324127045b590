package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/mirrorctl/mirrorctl/internal/output"
)

// levelSetter is implemented by the handler NewLogger builds, so Run can
// apply -v after flags are parsed. Loggers from elsewhere (tests) keep their
// own level.
type levelSetter interface{ SetLevel(slog.Level) }

// leveledHandler writes records at or above a level that can be changed
// after the logger was handed out; loggers derived with With share it.
// Warnings and errors are written in the CLI's one voice,
// "warning: <msg> key=value ..." and "error: <msg> key=value ...", like
// cmdutil.Warnf; info and debug records (-v, -vv) are slog text records
// with a time. Values are escaped with output.Escape: they carry names read
// from clusters.
type leveledHandler struct {
	slog.Handler // text handler for info and debug
	level        *slog.LevelVar
	w            io.Writer
	mu           *sync.Mutex
	attrs        []slog.Attr // from With, in order
	group        string      // from WithGroup, dotted
}

func (h *leveledHandler) SetLevel(l slog.Level) { h.level.Set(l) }

func (h *leveledHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

// Handle writes r with a live status line on stderr, if one is drawn,
// erased around it (output.AroundStatusLine).
func (h *leveledHandler) Handle(ctx context.Context, r slog.Record) error {
	var err error
	output.AroundStatusLine(func() { err = h.handle(ctx, r) })
	return err
}

func (h *leveledHandler) handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return h.Handler.Handle(ctx, r)
	}
	var b strings.Builder
	if r.Level >= slog.LevelError {
		b.WriteString("error: ")
	} else {
		b.WriteString("warning: ")
	}
	b.WriteString(output.Escape(r.Message))
	var write func(prefix string, a slog.Attr)
	write = func(prefix string, a slog.Attr) {
		a.Value = a.Value.Resolve()
		if a.Equal(slog.Attr{}) {
			return
		}
		key := a.Key
		if prefix != "" {
			key = prefix + "." + key
		}
		if a.Value.Kind() == slog.KindGroup {
			for _, g := range a.Value.Group() {
				write(key, g)
			}
			return
		}
		v := output.Escape(a.Value.String())
		if v == "" || strings.ContainsAny(v, " =\"") {
			v = strconv.Quote(v)
		}
		fmt.Fprintf(&b, " %s=%s", key, v)
	}
	for _, a := range h.attrs {
		write("", a)
	}
	r.Attrs(func(a slog.Attr) bool {
		write(h.group, a)
		return true
	})
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *leveledHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.Handler = h.Handler.WithAttrs(as)
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), prefixed(h.group, as)...)
	return &c
}

func (h *leveledHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.Handler = h.Handler.WithGroup(name)
	if c.group != "" {
		c.group += "." + name
	} else {
		c.group = name
	}
	return &c
}

func prefixed(group string, as []slog.Attr) []slog.Attr {
	if group == "" {
		return as
	}
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = slog.Attr{Key: group + "." + a.Key, Value: a.Value}
	}
	return out
}

// NewLogger returns a logger writing to w (stderr in Main), at
// slog.LevelWarn until Run applies -v.
func NewLogger(w io.Writer) *slog.Logger {
	lv := new(slog.LevelVar)
	lv.Set(slog.LevelWarn)
	return slog.New(&leveledHandler{
		Handler: slog.NewTextHandler(w, &slog.HandlerOptions{Level: lv}),
		level:   lv,
		w:       w,
		mu:      new(sync.Mutex),
	})
}

// verbosityLevel maps the -v count to a level: 0 warn, 1 info, 2 debug,
// 3+ also franz-go's own debug lines (every request written and read, with
// its timings), which internal/kafka logs 4 levels below debug.
func verbosityLevel(v int) slog.Level {
	switch {
	case v <= 0:
		return slog.LevelWarn
	case v == 1:
		return slog.LevelInfo
	case v == 2:
		return slog.LevelDebug
	default:
		return slog.LevelDebug - 8
	}
}
