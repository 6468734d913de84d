package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/internal/chain"
	"partnerd/internal/deposits"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/lifecycle"
	"partnerd/internal/pricing/quotes"
	"partnerd/internal/store"
	"partnerd/internal/webhook"
)

// TestTheUnitOfWorkWritesInItself: the statements a use case makes through the
// unit of work it is handed (quotes, webhook endpoints, the deposit watcher's
// bookkeeping, refund tasks, the idempotency keys) run in that transaction: the
// unit sees its own writes, and a rollback leaves nothing, on both databases.
func TestTheUnitOfWorkWritesInItself(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		p := newPartner(t, s)
		now := store.Now()
		rollback := errors.New("roll back")
		q := &quotes.Quote{ID: uuid.New(), PartnerID: p.ID, Token: "usdt", Network: chain.BEP20, BaseRate: decimal.RequireFromString("1500"),
			AdjustedRate: decimal.RequireFromString("1490"), CryptoAmount: decimal.RequireFromString("10"), FiatAmount: decimal.RequireFromString("14900"),
			CreatedAt: now, ExpiresAt: now.Add(quotes.TTL)}
		hash := "0x" + strings.Repeat("7a", 32)
		err := s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			require.NoError(t, tx.CreateQuote(ctx, q))
			got, err := tx.QuoteByID(ctx, p.ID, q.ID)
			require.NoError(t, err)
			require.Equal(t, q.ID, got.ID)

			created, err := tx.InsertEndpoint(ctx, &webhook.Endpoint{PartnerID: p.ID, URL: "https://example.com/a", Secret: "s1", CreatedAt: now, UpdatedAt: now})
			require.NoError(t, err)
			require.True(t, created)
			on, err := tx.UpdateEndpoint(ctx, p.ID, "https://example.com/b", true, nil, now)
			require.NoError(t, err)
			require.True(t, on, "this write turned deliveries on")
			require.NoError(t, tx.RotateSecret(ctx, p.ID, "s2", now.Add(webhook.SecretOverlap), now))
			e, err := tx.EndpointOf(ctx, p.ID)
			require.NoError(t, err)
			require.Equal(t, "s2", e.Secret)
			require.Equal(t, "https://example.com/b", e.URL)

			moved, err := tx.MoveChainCursor(ctx, chain.BEP20, nil, chain.Cursor{Block: 7})
			require.NoError(t, err)
			require.True(t, moved)
			ct := &deposits.ChainTransfer{Network: chain.BEP20, TxHash: hash, LogIndex: 0, Token: "usdt", Block: 7, BlockTime: now,
				From: "0xfrom", To: "0xto", Raw: decimal.RequireFromString("1000000"), Amount: decimal.RequireFromString("1"), State: deposits.TransferUnmatched}
			require.NoError(t, tx.SaveChainTransfer(ctx, ct))
			seen, err := tx.ChainTransfer(ctx, chain.BEP20, hash, 0)
			require.NoError(t, err)
			require.NotNil(t, seen)
			_, err = tx.TransactionIDByAddress(ctx, chain.BEP20, "0xnobody")
			require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
			require.NoError(t, tx.DeleteDeposit(ctx, uuid.New()))

			task, err := tx.InsertUnmatchedDeposit(ctx, &lifecycle.RefundTask{ID: uuid.New(), Kind: lifecycle.TaskUnmatched, Network: chain.BEP20,
				TxHash: hash, FromAddress: "0xfrom", ToAddress: "0xto", Amount: decimal.RequireFromString("1"), RawAmount: "1000000",
				BlockNumber: 7, Status: lifecycle.TaskOpen, CreatedAt: now})
			require.NoError(t, err)
			require.Equal(t, lifecycle.TaskOpen, task.Status)
			require.NoError(t, tx.DeleteOpenUnmatchedDeposit(ctx, chain.BEP20, hash, 0))
			require.NoError(t, tx.DeleteOpenRefundTasks(ctx, uuid.New(), lifecycle.TaskShort))
			require.NoError(t, tx.ResolveOpenRefundTasks(ctx, uuid.New(), lifecycle.TaskShort, lifecycle.TaskResolution{Status: lifecycle.TaskCredited, At: now}))
			require.NoError(t, tx.DirectOpenRefundTasks(ctx, uuid.New(), lifecycle.TaskShort, "0xto"))
			return rollback
		})
		require.ErrorIs(t, err, rollback)

		_, err = s.QuoteByID(ctx, p.ID, q.ID)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err), "rolled back with the unit")
		_, err = s.EndpointOf(ctx, p.ID)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
		cur, err := s.ChainCursor(ctx, chain.BEP20)
		require.NoError(t, err)
		require.Nil(t, cur)
		gone, err := s.ChainTransfer(ctx, chain.BEP20, hash, 0)
		require.NoError(t, err)
		require.Nil(t, gone)
	})
}
