package store_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"partnerd/internal/kit/apperr"
	"partnerd/internal/store"
)

// With Trace, a statement read or written through a unit of work is a client
// span under the caller's span, named by operation and table, carrying the SQL
// without its values, on both databases.
func TestStatementSpans(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, s *store.Store) {
		spans := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
		require.NoError(t, s.Trace(tp))
		ctx, parent := tp.Tracer("test").Start(context.Background(), "use case")
		id := uuid.New()
		_, err := s.TransactionByID(ctx, uuid.New(), id)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
		require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			_, err := tx.TransactionIDByAddress(ctx, "bep20", "0x"+id.String())
			if apperr.CodeOf(err) == apperr.NotFound {
				return nil
			}
			return err
		}))
		parent.End()

		var selects int
		for _, sp := range spans.GetSpans() {
			if sp.Name != "SELECT transactions" && sp.Name != "SELECT deposit_addresses" {
				continue
			}
			selects++
			require.Equal(t, parent.SpanContext().SpanID(), sp.Parent.SpanID())
			attrs := map[string]string{}
			for _, a := range sp.Attributes {
				attrs[string(a.Key)] = a.Value.Emit()
			}
			require.Equal(t, map[store.Dialect]string{store.Postgres: "postgresql", store.SQLite: "sqlite"}[s.Dialect()], attrs["db.system.name"])
			require.NotEmpty(t, attrs["db.collection.name"])
			require.Contains(t, attrs["db.query.text"], "SELECT")
			require.NotContains(t, attrs["db.query.text"], id.String(), "values are left out")
		}
		require.Equal(t, 2, selects)
	})
}
