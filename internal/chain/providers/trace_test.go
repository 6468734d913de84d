package providers_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"partnerd/internal/chain/providers"
	"partnerd/internal/chain/rpc"
)

// TestCallSpans: under traced work, each call to a provider is a client span
// named by its method, a child of the work's span, naming the provider without
// its key and the outcome, a failover's failed call included; outside traced work
// (the pool's background head reads) no span is started.
func TestCallSpans(t *testing.T) {
	t.Parallel()
	ch := startChain(t)
	first, second := addProxy(t, ch), addProxy(t, ch)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	firstURL, secondURL := first.URL+"/v3/SECRETKEY1", second.URL+"/?apikey=SECRETKEY2"
	pool := newPool(providers.Options{Tracing: tp},
		providers.Provider{URL: firstURL, Client: client(t, firstURL), ChainIDChecked: true},
		providers.Provider{URL: secondURL, Client: client(t, secondURL), ChainIDChecked: true})

	_, err := pool.BlockNumber(context.Background())
	require.NoError(t, err)
	require.Empty(t, rec.Ended(), "no span without traced work")

	require.NoError(t, first.Close())
	ctx, work := tp.Tracer("test").Start(context.Background(), "work")
	head, err := pool.BlockNumber(ctx)
	require.NoError(t, err)
	_, err = pool.Logs(ctx, head-2, head, nil, topic)
	require.NoError(t, err)
	work.End()

	type call struct{ method, provider, outcome string }
	var calls []call
	for _, sp := range rec.Ended() {
		if sp.Name() == "work" {
			continue
		}
		require.Equal(t, trace.SpanKindClient, sp.SpanKind())
		require.Equal(t, work.SpanContext().SpanID(), sp.Parent().SpanID(), "span %q", sp.Name())
		a := map[attribute.Key]attribute.Value{}
		for _, kv := range sp.Attributes() {
			a[kv.Key] = kv.Value
			require.NotContains(t, kv.Value.Emit(), "SECRETKEY")
		}
		require.Equal(t, "bep20", a["chain.network"].AsString())
		require.Equal(t, sp.Name(), a["rpc.method"].AsString())
		calls = append(calls, call{sp.Name(), a["chain.provider"].AsString(), a["chain.outcome"].AsString()})
	}
	require.Contains(t, calls, call{"eth_blockNumber", providers.Name(first.URL), rpc.KindTransport}, "the failed call: %v", calls)
	require.Contains(t, calls, call{"eth_blockNumber", providers.Name(second.URL), "ok"}, "the failover: %v", calls)
	require.Contains(t, calls, call{"eth_getLogs", providers.Name(second.URL), "ok"}, "%v", calls)
}
