package tracing_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"partnerd/internal/tracing"
)

// Every line logged while a span is open carries its trace and span ids, at
// every level and through a logger made With attributes or a group; a line or
// logger that names its own trace_id keeps it, once.
func TestLogHandlerAddsTraceIDOnce(t *testing.T) {
	t.Parallel()
	tp := tracing.NewProvider(sdktrace.WithSyncer(tracetest.NewInMemoryExporter()))
	ctx, span := tp.Tracer("test").Start(context.Background(), "work")
	defer span.End()
	traceID, spanID := span.SpanContext().TraceID().String(), span.SpanContext().SpanID().String()

	var logs bytes.Buffer
	log := slog.New(tracing.LogHandler(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	lines := func() []string {
		defer logs.Reset()
		return strings.Split(strings.TrimSpace(logs.String()), "\n")
	}

	log.DebugContext(ctx, "d")
	log.WarnContext(ctx, "w")
	log.With("k", "v").ErrorContext(ctx, "e")
	log.WithGroup("g").InfoContext(ctx, "grouped", "k", "v")
	for _, line := range lines() {
		require.Equal(t, 1, strings.Count(line, `"trace_id":"`+traceID+`"`), line)
		require.Equal(t, 1, strings.Count(line, spanID), line)
	}

	log.InfoContext(ctx, "own", "trace_id", "given")
	log.With("trace_id", "given").InfoContext(ctx, "own logger")
	for _, line := range lines() {
		require.Equal(t, 1, strings.Count(line, `"trace_id"`), line)
		require.Contains(t, line, `"trace_id":"given"`)
	}
}

// Under Untraced a span that would start a trace is not recorded, while one
// under a span already open (a request's, a job's) still is.
func TestUntraced(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewInMemoryExporter()
	tp := tracing.NewProvider(sdktrace.WithSyncer(spans))
	tr := tp.Tracer("test")

	quiet := tracing.Untraced(context.Background())
	ctx, span := tr.Start(quiet, "poll")
	require.False(t, span.IsRecording())
	_, child := tr.Start(ctx, "statement")
	child.End()
	span.End()
	require.Empty(t, spans.GetSpans())

	ctx, parent := tr.Start(context.Background(), "request")
	_, child = tr.Start(tracing.Untraced(ctx), "statement")
	child.End()
	parent.End()
	require.Len(t, spans.GetSpans(), 2)
}
