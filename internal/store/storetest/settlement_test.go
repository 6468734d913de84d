package storetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/internal/backoffice/settlement"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

// TestSettlementAccounts: a partner has none until one is put, which a second put
// replaces (one row per partner), read back with the partner's name; in a unit of
// work, a put rolled back leaves nothing.
func TestSettlementAccounts(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		now := store.Now()
		p := partnerAt(t, s, "Acme Trading Ltd", now)
		o := newOperator(t, s)
		_, err := s.SettlementAccount(ctx, p.ID)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))

		a := &settlement.Account{PartnerID: p.ID, BankCode: "058", BankName: "Guaranty Trust Bank", AccountNumber: "0123456789",
			AccountName: "ACME TRADING LIMITED", NameMatches: true, VerifiedAt: now, SetBy: o.ID, UpdatedAt: now}
		require.NoError(t, s.PutSettlementAccount(ctx, a))
		got, err := s.SettlementAccount(ctx, p.ID)
		require.NoError(t, err)
		want := *a
		want.PartnerName = p.Name
		require.Equal(t, &want, got)

		b := *a
		b.BankCode, b.BankName, b.AccountNumber, b.AccountName, b.NameMatches = "057", "Zenith Bank", "9876543210", "JOHN DOE", false
		b.UpdatedAt = now.Add(time.Minute)
		err = s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			require.NoError(t, tx.PutSettlementAccount(ctx, &b))
			return apperr.New(apperr.Internal, "rolled back")
		})
		require.Error(t, err)
		got, err = s.SettlementAccount(ctx, p.ID)
		require.NoError(t, err)
		require.Equal(t, "0123456789", got.AccountNumber, "the rolled-back put left nothing")

		require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error { return tx.PutSettlementAccount(ctx, &b) }))
		got, err = s.SettlementAccount(ctx, p.ID)
		require.NoError(t, err)
		want = b
		want.PartnerName = p.Name
		require.Equal(t, &want, got)
	})
}
