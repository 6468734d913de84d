package httpkit

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"partnerd/gen/api"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/tracing"
)

// tracedEcho is the shared middleware chain as the APIs mount it (trace, request
// id, access log, error handler), logging to logs through tracing.LogHandler.
func tracedEcho(tp *sdktrace.TracerProvider, logs *bytes.Buffer) *echo.Echo {
	log := slog.New(tracing.LogHandler(slog.NewJSONHandler(logs, nil)))
	e := echo.New()
	e.HTTPErrorHandler = ErrorHandler(log, nil)
	if tp != nil {
		e.Use(Trace(tp))
	} else {
		e.Use(Trace(nil)) // tracing off: OpenTelemetry's no-op provider
	}
	e.Use(RequestID(), AccessLog(log))
	e.GET("/api/v1/partner/things/:id", func(c echo.Context) error {
		return apperr.New(apperr.NotFound, "No such thing.")
	})
	return e
}

// A request sent with traceparent continues the caller's trace, with tracing on
// or off: its error body and its access log line carry the caller's trace id
// beside the request id, and (on) its server span is a child of the caller's.
func TestTraceIDInErrorBodyAndAccessLog(t *testing.T) {
	t.Parallel()
	const callerTrace, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	for _, on := range []bool{false, true} {
		var spans *tracetest.InMemoryExporter
		var tp *sdktrace.TracerProvider
		if on {
			spans = tracetest.NewInMemoryExporter()
			tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
		}
		var logs bytes.Buffer
		e := tracedEcho(tp, &logs)
		req := httptest.NewRequest(http.MethodGet, "/api/v1/partner/things/1", nil)
		req.Header.Set("traceparent", "00-"+callerTrace+"-"+callerSpan+"-01")
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)

		require.Equal(t, http.StatusNotFound, rec.Code)
		var body api.Error
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
		require.Equal(t, rec.Header().Get(echo.HeaderXRequestID), body.Error.RequestId)
		require.NotNil(t, body.Error.TraceId, "tracing on: %v", on)
		require.Equal(t, callerTrace, *body.Error.TraceId)
		require.Contains(t, logs.String(), `"msg":"request"`)
		require.Contains(t, logs.String(), `"trace_id":"`+callerTrace+`"`)
		require.Contains(t, logs.String(), `"request_id":"`+body.Error.RequestId+`"`)
		if on {
			got := spans.GetSpans()
			require.Len(t, got, 1)
			require.Equal(t, "GET /api/v1/partner/things/:id", got[0].Name)
			require.Equal(t, callerSpan, got[0].Parent.SpanID().String())
		}
	}
}

// Without traceparent and with tracing off, a request is in no trace: the error
// body has no trace_id (the field is left out, not empty).
func TestNoTraceIDWithoutTrace(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	rec := httptest.NewRecorder()
	tracedEcho(nil, &logs).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/partner/things/1", nil))
	require.Equal(t, http.StatusNotFound, rec.Code)
	require.NotContains(t, rec.Body.String(), "trace_id")
	require.NotContains(t, logs.String(), "trace_id")
}
