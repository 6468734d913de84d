package tracing_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"partnerd/internal/tracing"
)

// receiver is an OTLP/HTTP trace receiver: it decodes each export's protobuf as a
// collector would and keeps the spans with their resource's service name.
type receiver struct {
	*httptest.Server
	mu      sync.Mutex
	spans   []*tracepb.Span
	service []string
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		var export coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &export); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range export.GetResourceSpans() {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.GetKey() == "service.name" {
					r.service = append(r.service, a.GetValue().GetStringValue())
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				r.spans = append(r.spans, ss.GetSpans()...)
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.Close)
	return r
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestEnabled(t *testing.T) {
	t.Parallel()
	require.False(t, tracing.Enabled(env(nil)), "off unless configured")
	require.True(t, tracing.Enabled(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"})))
	require.True(t, tracing.Enabled(env(map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"})))
	require.False(t, tracing.Enabled(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"})))
	require.False(t, tracing.Enabled(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"})))
}

// With an endpoint set, a span continuing a caller's traceparent reaches a real
// OTLP receiver under the caller's trace id and the configured service name, and
// a log line written in its context carries that trace id.
func TestSetupExportsToOTLPReceiver(t *testing.T) {
	rec := newReceiver(t)
	ctx := context.Background()
	tp, err := tracing.Setup(ctx, env(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": rec.URL, "OTEL_SERVICE_NAME": "partnerd-test",
	}))
	require.NoError(t, err)
	require.True(t, tp.Enabled())

	const callerTrace, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	carrier := propagation.HeaderCarrier{"Traceparent": []string{"00-" + callerTrace + "-" + callerSpan + "-01"}}
	ctx = otel.GetTextMapPropagator().Extract(ctx, carrier)
	ctx, span := tp.Tracer("test").Start(ctx, "work")
	var logs bytes.Buffer
	slog.New(tracing.LogHandler(slog.NewJSONHandler(&logs, nil))).InfoContext(ctx, "working")
	require.Equal(t, callerTrace, tracing.TraceID(ctx))
	span.End()
	require.NoError(t, tp.Shutdown(ctx)) // flushes the batch

	require.Contains(t, logs.String(), `"trace_id":"`+callerTrace+`"`)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.spans, 1)
	got := rec.spans[0]
	require.Equal(t, "work", got.GetName())
	require.Equal(t, callerTrace, hex.EncodeToString(got.GetTraceId()))
	require.Equal(t, callerSpan, hex.EncodeToString(got.GetParentSpanId()))
	require.Contains(t, rec.service, "partnerd-test")
}

// Without a span in the context the handler adds nothing.
func TestLogHandlerWithoutSpan(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	slog.New(tracing.LogHandler(slog.NewJSONHandler(&logs, nil))).With("k", "v").InfoContext(context.Background(), "plain")
	require.NotContains(t, logs.String(), "trace_id")
	require.Contains(t, logs.String(), `"k":"v"`)
	require.Empty(t, tracing.TraceID(context.Background()))
}
