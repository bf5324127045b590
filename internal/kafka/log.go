package kafka

import (
	"context"
	"log/slog"
)

// demoteBy is how far franz-go's log levels are lowered: its Info lines
// (connection and metadata chatter) become Debug, and its Debug lines become
// Debug-4, visible only with the most verbose logger. Warn and Error are
// lowered to Info and Warn: franz-go retries most of what it warns about.
const demoteBy = 4

// demoteHandler lowers every record's level by demoteBy before handing it on,
// so that kslog's level probe (Enabled) and the records agree.
type demoteHandler struct{ h slog.Handler }

func (d demoteHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return d.h.Enabled(ctx, l-demoteBy)
}

func (d demoteHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Level -= demoteBy
	return d.h.Handle(ctx, r)
}

func (d demoteHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return demoteHandler{d.h.WithAttrs(as)}
}

func (d demoteHandler) WithGroup(name string) slog.Handler {
	return demoteHandler{d.h.WithGroup(name)}
}

// discardLogger returns a logger that drops everything.
func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
