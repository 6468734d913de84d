package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/internal/audit"
	"partnerd/internal/backoffice/batches"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/lifecycle"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/transactions"
)

// Migration 00035 gives every transaction an operator paid out on its own before
// payouts of one were recorded its payout of one: the transaction's amounts, the
// operator and reference of its payout:settled entry, dated when its payout settled,
// and the action's audit row names it. A simulated payout (no operator), a
// transaction awaiting its payout and one already in a batch get none, and
// migrating again adds nothing.
func TestMigrationGivesSinglePayoutsTheirPayoutOfOne(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, err := store.Open(ctx, db.URL)
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			require.NoError(t, s.MigrateTo(ctx, 34))

			p := newPartner(t, s)
			op := &operators.Operator{ID: uuid.New(), Name: "Ada", KeyHash: uuid.NewString(), KeyPrefix: "sk_op_", CreatedAt: store.Now()}
			require.NoError(t, s.CreateOperator(ctx, op))
			// paid makes a completed transaction of fiat NGN, paid out an hour ago
			// with history metadata meta (none: awaiting its payout).
			n := 0
			paid := func(fiat, crypto string, meta map[string]any) *lifecycle.Transaction {
				t.Helper()
				n++
				now := store.Now()
				at := now.Add(-time.Hour)
				tr := &lifecycle.Transaction{ID: uuid.New(), PartnerID: p.ID, MerchantReference: "OLD-" + uuid.NewString(),
					Token: "usdt", Network: "bep20", Status: lifecycle.Completed, Rate: decimal.RequireFromString("1500"),
					CryptoAmount: decimal.RequireFromString(crypto), FiatAmount: decimal.RequireFromString(fiat),
					DepositAddress: "addr-" + uuid.NewString(), AddressIndex: uint32(n), CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour)}
				tr.ReferenceKey = transactions.ReferenceKey(tr.MerchantReference)
				if meta != nil {
					tr.PayoutSettledAt = &at
				}
				require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
					// The row as the schema of 00034 holds it (the store's own insert
					// writes the columns of today's).
					if err := tx.Exec(ctx, `INSERT INTO transactions (id, partner_id, merchant_reference, reference_key,
						crypto_currency, network, crypto_amount, fiat_amount, rate, deposit_address, address_index, status,
						created_at, updated_at, expires_at, payout_settled_at, version)
						VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)`,
						tr.ID, tr.PartnerID, tr.MerchantReference, tr.ReferenceKey, tr.Token, tr.Network, tr.CryptoAmount,
						tr.FiatAmount, tr.Rate, tr.DepositAddress, int64(tr.AddressIndex), string(tr.Status),
						tr.CreatedAt, tr.UpdatedAt, tr.ExpiresAt, tr.PayoutSettledAt); err != nil {
						return err
					}
					if meta == nil {
						return nil
					}
					return tx.InsertHistory(ctx, &lifecycle.HistoryEntry{TransactionID: tr.ID, From: lifecycle.Completed, To: lifecycle.Completed,
						Reason: "payout:settled", Metadata: meta, ChangedAt: at})
				}))
				return tr
			}
			settledAt := func(id uuid.UUID) time.Time {
				t.Helper()
				tr, err := s.Transaction(ctx, id)
				require.NoError(t, err)
				return *tr.PayoutSettledAt
			}
			alone := paid("22500.75", "14.520000", map[string]any{"operator_id": op.ID.String(), "reference": "NIP-ALONE"})
			simulated := paid("1000.00", "1", map[string]any{"payout_settled_at": store.Now().Format(time.RFC3339Nano)})
			waiting := paid("3000.00", "2", nil)
			inBatch := paid("5000.00", "3", map[string]any{"operator_id": op.ID.String(), "reference": "NIP-BATCH"})
			batch := &batches.Batch{ID: uuid.New(), Kind: batches.Payout, PartnerID: &p.ID, Reference: "NIP-BATCH",
				FiatAmount: inBatch.FiatAmount, CryptoAmount: inBatch.CryptoAmount, TransactionIDs: []uuid.UUID{inBatch.ID},
				OperatorID: op.ID, CreatedAt: *inBatch.PayoutSettledAt}
			require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error { return tx.InsertBatch(ctx, batch) }))
			tid, ref := alone.ID, "NIP-ALONE"
			require.NoError(t, s.InsertAudit(ctx, &audit.Entry{ID: uuid.New(), OperatorID: op.ID, Action: audit.Payout,
				TransactionID: &tid, Reference: &ref, CreatedAt: store.Now()}))

			ran, err := s.Migrate(ctx)
			require.NoError(t, err)
			require.Positive(t, ran, "00035 and anything after it ran")

			list, err := s.ListBatches(ctx, batches.Query{Kind: batches.Payout, PartnerID: &p.ID, Limit: 10})
			require.NoError(t, err)
			require.Len(t, list, 2, "the single payout's and the batch, nothing for %s or %s", simulated.ID, waiting.ID)
			one, err := s.BatchOf(ctx, batches.Payout, alone.ID)
			require.NoError(t, err)
			require.NotNil(t, one, "the single payout is a payout")
			require.NotEqual(t, batch.ID, one.ID)
			require.Equal(t, []uuid.UUID{alone.ID}, one.TransactionIDs)
			require.Equal(t, p.ID, *one.PartnerID)
			require.Equal(t, op.ID, one.OperatorID)
			require.Equal(t, "NIP-ALONE", one.Reference)
			require.Equal(t, "22500.75", one.FiatAmount.StringFixed(2))
			require.True(t, decimal.RequireFromString("14.52").Equal(one.CryptoAmount), one.CryptoAmount.String())
			require.True(t, settledAt(alone.ID).Equal(one.CreatedAt), "dated when the payout settled: %s", one.CreatedAt)
			require.Nil(t, one.Rate)
			require.Equal(t, uuid.Version(4), one.ID.Version(), "a random id")
			inBatchOf, err := s.BatchOf(ctx, batches.Payout, inBatch.ID)
			require.NoError(t, err)
			require.Equal(t, batch.ID, inBatchOf.ID, "a batched transaction keeps its batch")
			for _, id := range []uuid.UUID{simulated.ID, waiting.ID} {
				none, err := s.BatchOf(ctx, batches.Payout, id)
				require.NoError(t, err)
				require.Nil(t, none)
			}

			entries, err := s.ListAudit(ctx, audit.Filter{TransactionID: &tid}, nil, 10)
			require.NoError(t, err)
			require.Len(t, entries, 1)
			require.Equal(t, one.ID, *entries[0].BatchID, "the payout's audit row names its payout")

			again, err := s.Migrate(ctx)
			require.NoError(t, err)
			require.Zero(t, again)
			list, err = s.ListBatches(ctx, batches.Query{Kind: batches.Payout, PartnerID: &p.ID, Limit: 10})
			require.NoError(t, err)
			require.Len(t, list, 2)
		})
	}
}

// Migration 00036 makes every operator who existed before roles an admin, as
// each could do everything.
func TestMigrationMakesEarlierOperatorsAdmins(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, err := store.Open(ctx, db.URL)
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			require.NoError(t, s.MigrateTo(ctx, 35))
			op := &operators.Operator{ID: uuid.New(), Name: "Ada", KeyHash: uuid.NewString(), KeyPrefix: "sk_op_", CreatedAt: store.Now()}
			require.NoError(t, s.CreateOperator(ctx, op))
			_, err = s.Migrate(ctx)
			require.NoError(t, err)
			got, err := s.OperatorByID(ctx, op.ID)
			require.NoError(t, err)
			require.Equal(t, []operators.Role{operators.Admin}, got.Roles)
		})
	}
}
