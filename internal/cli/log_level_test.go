package cli

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

// TestVerbosityLevels checks what each -v count lets through: warnings
// alone by default, info at -v, debug at -vv, and franz-go's own debug lines
// (logged by internal/kafka four levels below debug) only from -vvv.
func TestVerbosityLevels(t *testing.T) {
	kgoDebug := slog.LevelDebug - 4
	for _, tt := range []struct {
		v    int
		want []slog.Level
	}{
		{0, []slog.Level{slog.LevelWarn}},
		{1, []slog.Level{slog.LevelWarn, slog.LevelInfo}},
		{2, []slog.Level{slog.LevelWarn, slog.LevelInfo, slog.LevelDebug}},
		{3, []slog.Level{slog.LevelWarn, slog.LevelInfo, slog.LevelDebug, kgoDebug}},
	} {
		var buf bytes.Buffer
		log := NewLogger(&buf)
		log.Handler().(levelSetter).SetLevel(verbosityLevel(tt.v))
		for _, l := range []slog.Level{slog.LevelWarn, slog.LevelInfo, slog.LevelDebug, kgoDebug} {
			log.Log(context.Background(), l, "line", "level", int(l))
		}
		got := strings.Count(buf.String(), "line level=")
		if got != len(tt.want) {
			t.Errorf("-v x%d: %d lines through, want %d:\n%s", tt.v, got, len(tt.want), buf.String())
		}
	}
}
