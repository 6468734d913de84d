package storetest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/internal/lifecycle"
	"partnerd/internal/partners"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

// eachDatabase runs fn as a parallel subtest on a migrated PostgreSQL store (a fresh
// schema) and a migrated SQLite store (a fresh file): every case of the suite must
// hold on both.
func eachDatabase(t *testing.T, fn func(t *testing.T, db testdb.Database, s *store.Store)) {
	t.Helper()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, db, openStore(t, db.URL))
		})
	}
}

// openStore opens and migrates url, closing the store when t ends.
func openStore(t *testing.T, url string) *store.Store {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	_, err = s.Migrate(ctx)
	require.NoError(t, err)
	require.NoError(t, s.EnsureAddressSequences(ctx, []string{"bep20", "trc20"}))
	return s
}

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func ptr[T any](v T) *T { return &v }

func newPartner(t *testing.T, s *store.Store) *partners.Partner {
	t.Helper()
	key, err := partners.NewKey(partners.Sandbox)
	require.NoError(t, err)
	p := &partners.Partner{
		ID: uuid.New(), Name: "Suite partner", Environment: partners.Sandbox, KeyHash: partners.HashKey(key),
		FeeRate: dec("0.015"), ShareRate: dec("0.4"), CreatedAt: store.Now(),
	}
	require.NoError(t, s.CreatePartner(context.Background(), p))
	return p
}

// txOpts shapes a transaction newTransaction creates.
type txOpts struct {
	network, address string
	status           lifecycle.Status
	created          time.Time
	merchantID       *string
}

// newTransaction creates a transaction of p with its creation history entry and
// event, as the service does: one unit of work.
func newTransaction(t *testing.T, s *store.Store, p *partners.Partner, o txOpts) *lifecycle.Transaction {
	t.Helper()
	ctx := context.Background()
	if o.network == "" {
		o.network = "bep20"
	}
	if o.status == "" {
		o.status = lifecycle.AwaitingDeposit
	}
	if o.created.IsZero() {
		o.created = store.Now()
	}
	id := uuid.New()
	if o.address == "" {
		o.address = "0x" + id.String()
	}
	ref := "REF-" + id.String()
	tr := &lifecycle.Transaction{
		ID: id, PartnerID: p.ID, MerchantReference: ref, ReferenceKey: ref, MerchantID: o.merchantID,
		Token: "usdt", Network: o.network, CryptoAmount: dec("100.000001"), FiatAmount: dec("154225.37"), Rate: dec("1542.25"),
		DepositAddress: o.address, Status: o.status, CreatedAt: o.created, UpdatedAt: o.created, ExpiresAt: o.created.Add(30 * time.Minute),
	}
	require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
		idx, err := tx.NextAddressIndex(ctx, o.network)
		if err != nil {
			return err
		}
		tr.AddressIndex = idx
		if err := tx.InsertTransaction(ctx, tr); err != nil {
			return err
		}
		if err := tx.InsertHistory(ctx, &lifecycle.HistoryEntry{TransactionID: id, To: o.status, Reason: "created", ChangedAt: o.created}); err != nil {
			return err
		}
		return tx.AppendEvent(ctx, &lifecycle.Event{
			ID: uuid.New(), PartnerID: p.ID, TransactionID: id, Type: lifecycle.EventCreated,
			Payload: []byte(fmt.Sprintf(`{"id":%q}`, id)), CreatedAt: o.created,
		})
	}))
	return tr
}
