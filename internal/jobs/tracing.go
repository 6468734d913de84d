package jobs

import (
	"context"
	"encoding/json"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/riverqueue/rivercontrib/otelriver"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TraceMiddleware is River's middleware that carries a trace from the code
// that enqueues a job to the work it does: on insert, River's otelriver writes
// the enqueuing span's traceparent into the job's metadata; on work, the job's
// span is a child of that span (joinTrace), so a webhook delivery caused by a
// request is found in that request's trace, and the work's statements and
// outbound calls are its children. otelriver alone only links the work span to
// the enqueuing one, which starts a new trace per job. Give it to the Runner
// (Options.Tracing) and to every client that inserts jobs.
func TraceMiddleware(tp trace.TracerProvider) []rivertype.Middleware {
	return []rivertype.Middleware{
		&joinTrace{},
		otelriver.NewMiddleware(&otelriver.MiddlewareConfig{
			TracerProvider: tp, EnableTracePropagation: true, EnableWorkSpanJobKindSuffix: true,
		}),
	}
}

// joinTrace makes the trace context in a job's metadata the parent of its work,
// running outside otelriver's middleware so that its work span starts there.
type joinTrace struct{ river.WorkerMiddlewareDefaults }

func (*joinTrace) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	if len(job.Metadata) > 0 {
		var meta map[string]any
		if err := json.Unmarshal(job.Metadata, &meta); err == nil {
			carrier := propagation.MapCarrier{}
			for _, k := range []string{"traceparent", "tracestate"} {
				if s, ok := meta[k].(string); ok {
					carrier[k] = s
				}
			}
			if sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier)); sc.IsValid() {
				ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
			}
		}
	}
	return doInner(ctx)
}
