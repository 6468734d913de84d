package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"partnerd/internal/chain"
	"partnerd/internal/idempotency"
	"partnerd/internal/lifecycle"
	"partnerd/internal/store"
	"partnerd/internal/webhook"
)

// A unit of work's history rows, events and stored key answers are written
// behind: on PostgreSQL the ones waiting go as one statement (in statements of at
// most 32) just before the unit's next statement or its commit; on SQLite each
// goes when it is made. Either way what the unit reads afterwards sees them, an
// event of a partner whose deliveries are on gets its job, and a write that fails
// ends the unit of work with its error and leaves nothing behind.
func TestWritesBehind(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		spans := tracetest.NewInMemoryExporter()
		require.NoError(t, s.Trace(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))))
		p := newPartner(t, s)
		now := store.Now()
		require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			if _, err := tx.InsertEndpoint(ctx, &webhook.Endpoint{PartnerID: p.ID, URL: "https://example.com/h", Secret: "s", CreatedAt: now, UpdatedAt: now}); err != nil {
				return err
			}
			_, err := tx.UpdateEndpoint(ctx, p.ID, "https://example.com/h", true, nil, now)
			return err
		}))
		tr := &lifecycle.Transaction{ID: uuid.New(), PartnerID: p.ID, MerchantReference: "behind-1", ReferenceKey: "behind-1",
			Token: "usdt", Network: chain.BEP20, CryptoAmount: decimal.RequireFromString("10"), FiatAmount: decimal.RequireFromString("14900"),
			Rate: decimal.RequireFromString("1490"), DepositAddress: "0x" + uuid.NewString(), Status: lifecycle.AwaitingDeposit,
			CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour)}
		history := func(i int) *lifecycle.HistoryEntry {
			return &lifecycle.HistoryEntry{TransactionID: tr.ID, From: lifecycle.None, To: lifecycle.AwaitingDeposit,
				Reason: fmt.Sprintf("step %02d", i), ChangedAt: now}
		}
		ev := &lifecycle.Event{ID: uuid.New(), PartnerID: p.ID, TransactionID: tr.ID, Type: "transaction.created", Payload: []byte(`{}`), CreatedAt: now}
		key := &idempotency.Record{Key: idempotency.Key{PartnerID: p.ID, Operation: "test", Key: uuid.NewString()}, Fingerprint: "f",
			State: idempotency.Done, ResponseStatus: 201, ResponseBody: []byte(`{}`), LockedAt: now, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}

		// A create's shape: the row, then its history, its event and the key's
		// answer, then a read in the same unit of work.
		spans.Reset()
		require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			require.NoError(t, tx.InsertTransaction(ctx, tr))
			require.NoError(t, tx.InsertHistory(ctx, history(0)))
			require.NoError(t, tx.AppendEvent(ctx, ev))
			saved, err := tx.SaveKey(ctx, key, now, now.Add(-time.Minute))
			require.NoError(t, err)
			require.True(t, saved)
			saved, err = tx.SaveKey(ctx, key, now, now.Add(-time.Minute))
			require.NoError(t, err)
			require.False(t, saved, "the key is held by the answer written just before")
			// Forty more history rows wait, and are sent before this read.
			for i := 1; i <= 40; i++ {
				require.NoError(t, tx.InsertHistory(ctx, history(i)))
			}
			got, err := tx.TransactionForUpdate(ctx, tr.ID)
			require.NoError(t, err)
			require.Equal(t, tr.ID, got.ID)
			return nil
		}))
		statements := 0
		for _, sp := range spans.GetSpans() {
			if !strings.HasPrefix(sp.Name, "river.") { // the job's insert, a span of River's
				statements++
			}
		}
		// PostgreSQL: the row; history, event and key together; the second key;
		// the forty rows in two statements (32 and 8); the read (two statements
		// there, one on SQLite). SQLite: each write on its own.
		want := map[store.Dialect]int{store.Postgres: 7, store.SQLite: 46}[s.Dialect()]
		require.Equal(t, want, statements, "statements sent")

		h, err := s.History(ctx, tr.ID)
		require.NoError(t, err)
		require.Len(t, h, 41)
		for i, e := range h {
			require.Equal(t, fmt.Sprintf("step %02d", i), e.Reason, "in the order written")
		}
		_, err = s.EventByID(ctx, &p.ID, ev.ID)
		require.NoError(t, err)
		var jobs int
		require.NoError(t, s.SQL().QueryRowContext(ctx,
			"SELECT count(*) FROM river_job WHERE kind = 'deliver_webhook_event'").Scan(&jobs))
		require.Equal(t, 1, jobs, "the event's delivery job commits with it")

		// A write behind that fails (history of a transaction that does not exist)
		// fails the unit of work, whose earlier writes roll back with it.
		missing := *history(99)
		missing.TransactionID = uuid.New()
		other := *tr
		other.ID, other.MerchantReference, other.ReferenceKey, other.DepositAddress = uuid.New(), "behind-2", "behind-2", "0x"+uuid.NewString()
		other.AddressIndex = 1
		err = s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			require.NoError(t, tx.InsertTransaction(ctx, &other))
			return tx.InsertHistory(ctx, &missing)
		})
		require.Error(t, err)
		_, err = s.Transaction(ctx, other.ID)
		require.Error(t, err, "rolled back with the failed write")
	})
}
