// Package tracing sets up OpenTelemetry traces from the standard OTEL_* settings
// and puts the trace id on log lines.
//
// Traces are off unless an OTLP endpoint is configured
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), or
// OTEL_SDK_DISABLED=true turns them off outright: a service nobody collects
// traces from should pay nothing for them. When on, the exporter is OTLP over
// HTTP/protobuf and reads its own settings (headers, timeout, compression,
// certificates), the sampler is OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG
// (default parentbased_always_on, so a caller's sampling decision in traceparent
// is kept), and the resource names the service from OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES ("partnerd" when unset). W3C traceparent and baggage
// are read from requests either way, so a caller's trace id still reaches the
// logs and error bodies when we export nothing; traceparent is written to
// outbound calls (webhook deliveries) while traces are exported.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// DefaultServiceName names the service in traces when OTEL_SERVICE_NAME is unset.
const DefaultServiceName = "partnerd"

// Enabled reports whether getenv configures trace export: an OTLP endpoint is
// set and the SDK is not disabled.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if v := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); v == "none" {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Settings are the OTEL_* settings the service reads through its configuration
// (config.Load keeps their values, so a test's settings are the ones used). The
// exporter's other settings (headers, timeout, compression, certificates) and the
// sampler's are read by the SDK from the process environment.
var Settings = []string{
	"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SERVICE_NAME",
}

// Provider is one service instance's tracer provider, handed to each
// instrumentation explicitly rather than installed globally, so two instances
// in one process (tests) each export to their own collector.
type Provider struct {
	trace.TracerProvider
	enabled  bool
	shutdown func(context.Context) error
}

// Enabled reports whether spans are exported. Instrumentation that would cost
// something on every unit of work (a chain call, a statement) is installed only
// when it is.
func (p *Provider) Enabled() bool { return p != nil && p.enabled }

// Shutdown flushes the spans still buffered and stops the exporter; call it once
// on the way out. It does nothing when traces are off.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil || p.shutdown == nil {
		return nil
	}
	return p.shutdown(ctx)
}

// Off is the provider of a service that exports no traces: OpenTelemetry's
// no-op provider, whose spans record nothing but carry a caller's trace context.
func Off() *Provider { return &Provider{TracerProvider: noop.NewTracerProvider()} }

// Propagator reads and writes W3C traceparent, tracestate and baggage. The
// instrumentations are handed it explicitly (Setup also installs it globally),
// so a handler built without Setup (a test's) still honours a caller's trace.
var Propagator propagation.TextMapPropagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// Setup installs the global propagator (W3C trace context and baggage), which
// every instrumentation reads and writes traceparent with, and returns the
// provider getenv configures: exporting over OTLP/HTTP when Enabled, else Off.
// W3C traceparent is read from requests either way, so a caller's trace id still
// reaches the logs and error bodies when we export nothing.
func Setup(ctx context.Context, getenv func(string) string) (*Provider, error) {
	otel.SetTextMapPropagator(Propagator)
	if !Enabled(getenv) {
		return Off(), nil
	}
	// The endpoint is read through getenv (the exporter's own options win over
	// the process environment it reads for everything else), so the settings
	// the service was given are the ones used.
	var opts []otlptracehttp.Option
	if u := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); u != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(u))
	} else if u := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); u != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimRight(u, "/")+"/v1/traces"))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	// The process's OTEL_RESOURCE_ATTRIBUTES win over the default name, and
	// OTEL_SERVICE_NAME as given wins over both.
	res, err := resource.Merge(resource.NewSchemaless(semconv.ServiceName(DefaultServiceName)), resource.Environment())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	if name := getenv("OTEL_SERVICE_NAME"); name != "" {
		if res, err = resource.Merge(res, resource.NewSchemaless(semconv.ServiceName(name))); err != nil {
			return nil, err
		}
	}
	// No WithSampler: the SDK reads OTEL_TRACES_SAMPLER and its argument itself.
	return NewProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

// NewProvider returns an exporting provider built from the SDK options given:
// Setup's (the OTLP exporter), or a test's (an in-memory exporter), so a test
// sees the same rules the service runs with, Untraced among them.
func NewProvider(opts ...sdktrace.TracerProviderOption) *Provider {
	tp := sdktrace.NewTracerProvider(opts...)
	return &Provider{TracerProvider: quietProvider{tp}, enabled: true, shutdown: tp.Shutdown}
}

type untracedKey struct{}

// Untraced marks ctx as the context of routine background work (the key cache's
// poll several times a second) whose statements would otherwise each start a
// trace of their own: hundreds of thousands of traces a day that say nothing.
// Spans that would start a new trace under it are not recorded; work already in
// a trace (a request's, a job's) is traced as before.
func Untraced(ctx context.Context) context.Context {
	return context.WithValue(ctx, untracedKey{}, true)
}

// quietProvider hands out tracers that honour Untraced.
type quietProvider struct{ trace.TracerProvider }

func (p quietProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return quietTracer{p.TracerProvider.Tracer(name, opts...)}
}

type quietTracer struct{ trace.Tracer }

func (t quietTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if ctx.Value(untracedKey{}) != nil && !trace.SpanContextFromContext(ctx).IsValid() {
		// The span ctx already holds: a no-op span when it holds none.
		return ctx, trace.SpanFromContext(ctx)
	}
	return t.Tracer.Start(ctx, name, opts...)
}

// LogHandler wraps h so that every record logged with a context carrying a span
// (a request's, a job's) gets trace_id and span_id attributes: an operator finds
// the trace from a log line and the log lines from a trace. A record that names
// its own trace_id (or a logger made With one) keeps it alone, so no line holds
// the key twice.
func LogHandler(h slog.Handler) slog.Handler { return logHandler{Handler: h} }

type logHandler struct {
	slog.Handler
	// named is set when the logger's own attributes already hold trace_id.
	named bool
}

func (l logHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && !l.named && !hasTraceID(r) {
		r = r.Clone()
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return l.Handler.Handle(ctx, r)
}

// hasTraceID reports whether r names a trace_id itself.
func hasTraceID(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = a.Key == "trace_id"
		return !found
	})
	return found
}

func (l logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	named := l.named
	for _, a := range as {
		named = named || a.Key == "trace_id"
	}
	return logHandler{Handler: l.Handler.WithAttrs(as), named: named}
}

func (l logHandler) WithGroup(name string) slog.Handler {
	return logHandler{Handler: l.Handler.WithGroup(name), named: l.named}
}

// TraceID returns the trace id of ctx's span, or "" when it has none, for error
// bodies and log lines written without a context-aware logger.
func TraceID(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		return sc.TraceID().String()
	}
	return ""
}
