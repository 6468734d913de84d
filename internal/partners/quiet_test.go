package partners_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"partnerd/internal/partners"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/tracing"
)

// A quiet service makes no trace: the key cache's reads of the keys' version,
// made through the real store with its statements traced, export no span
// however many ticks pass, while a statement outside the watch still does.
func TestKeyWatchMakesNoTrace(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, testdb.SQLite(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, err = st.Migrate(ctx)
	require.NoError(t, err)
	spans := tracetest.NewInMemoryExporter()
	tp := tracing.NewProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	require.NoError(t, st.Trace(tp))
	svc := partners.NewService(store.For(st, func(tx *store.Tx) partners.Tx { return tx }), partners.Sandbox, partners.Defaults{}, store.Now)

	// The exporter is live: the same read outside the watch is a span.
	_, err = st.KeysVersion(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, spans.GetSpans())
	spans.Reset()

	watchCtx, stop := context.WithCancel(ctx)
	tick := make(chan time.Time)
	done := make(chan struct{})
	go func() { defer close(done); svc.WatchKeysOn(watchCtx, tick) }()
	// Each send is taken only once the previous tick's read has finished, so
	// after the last send at least ten reads have run.
	for range 11 {
		tick <- time.Now()
	}
	stop()
	<-done
	require.Empty(t, spans.GetSpans(), "spans exported by the key watch")
}
