package httpkit

import (
	"strings"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/contrib/instrumentation/github.com/labstack/echo/otelecho"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"partnerd/internal/tracing"
)

// Trace opens a server span for every API request (partner and operator, under
// /api/), continuing the caller's W3C traceparent and named by the route
// ("POST /api/v1/partner/transactions"); the use case, its statements and the
// jobs it enqueues are its children. tp nil is OpenTelemetry's no-op provider:
// nothing is recorded, but a caller's trace id still reaches the request's
// context, hence its log lines and error body. Probes, metrics, documents and
// the sites' pages are left out: they are noise in a trace store.
func Trace(tp trace.TracerProvider) echo.MiddlewareFunc {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return otelecho.Middleware(tracing.DefaultServiceName,
		otelecho.WithTracerProvider(tp), otelecho.WithPropagators(tracing.Propagator),
		otelecho.WithSkipper(func(c echo.Context) bool {
			return !strings.HasPrefix(c.Request().URL.Path, "/api/")
		}))
}
