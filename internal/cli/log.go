package cli

import (
	"io"
	"log/slog"
)

// levelSetter is implemented by the handler NewLogger builds, so Run can
// apply -v after flags are parsed. Loggers from elsewhere (tests) keep their
// own level.
type levelSetter interface{ SetLevel(slog.Level) }

// leveledHandler is a slog text handler whose minimum level can be changed
// after the logger was handed out; loggers derived with With share it.
type leveledHandler struct {
	slog.Handler
	level *slog.LevelVar
}

func (h *leveledHandler) SetLevel(l slog.Level) { h.level.Set(l) }

// NewLogger returns a logger writing slog text records to w (stderr in
// Main), at slog.LevelWarn until Run applies -v.
func NewLogger(w io.Writer) *slog.Logger {
	lv := new(slog.LevelVar)
	lv.Set(slog.LevelWarn)
	return slog.New(&leveledHandler{
		Handler: slog.NewTextHandler(w, &slog.HandlerOptions{Level: lv}),
		level:   lv,
	})
}

// verbosityLevel maps the -v count to a level: 0 warn, 1 info, 2+ debug.
func verbosityLevel(v int) slog.Level {
	switch {
	case v <= 0:
		return slog.LevelWarn
	case v == 1:
		return slog.LevelInfo
	default:
		return slog.LevelDebug
	}
}
