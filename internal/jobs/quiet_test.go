package jobs

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRiverInfoIsDebug: River's routine INFO lines do not reach a log at INFO,
// its warnings do, and at DEBUG both appear (demoted).
func TestRiverInfoIsDebug(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(quietInfo{slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})}).With("component", "river")
	log.Info("producer: queue idle")
	log.Warn("producer: job rescued")
	require.NotContains(t, buf.String(), "queue idle")
	require.Contains(t, buf.String(), "level=WARN msg=\"producer: job rescued\" component=river")

	buf.Reset()
	log = slog.New(quietInfo{slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})})
	log.Info("producer: queue idle")
	require.Contains(t, buf.String(), "level=DEBUG msg=\"producer: queue idle\"")
}
