package deposits_test

import (
	"context"
	"math/big"
	"os"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/internal/chain"
	"partnerd/internal/deposits"
	"partnerd/internal/lifecycle"
	"partnerd/internal/partners"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/transactions"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// bed is a migrated store with one partner, the engine and the deposits service
// on it, as the service wires them.
type bed struct {
	st      *store.Store
	partner uuid.UUID
	d       *deposits.Deposits
	block   uint64
}

func newBed(t *testing.T, url string) *bed {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, err = st.Migrate(ctx)
	require.NoError(t, err)
	require.NoError(t, st.EnsureAddressSequences(ctx, []string{chain.BEP20}))
	p := &partners.Partner{ID: uuid.New(), Name: "P", Environment: partners.Sandbox, KeyHash: uuid.NewString(),
		FeeRate: decimal.RequireFromString("0.01"), ShareRate: decimal.RequireFromString("0.5"), CreatedAt: store.Now()}
	require.NoError(t, st.CreatePartner(ctx, p))
	engine := lifecycle.NewEngine(store.For(st, func(tx *store.Tx) lifecycle.Tx { return tx }), lifecycle.Config{Required: map[string]int{chain.BEP20: 2}, Now: store.Now})
	return &bed{st: st, partner: p.ID, d: deposits.New(engine, store.For(st, func(tx *store.Tx) deposits.Tx { return tx }), nil, nil), block: 100}
}

// awaiting inserts a transaction of 10 USDT awaiting its deposit at addr.
func (b *bed) awaiting(t *testing.T, addr string) uuid.UUID {
	t.Helper()
	now := store.Now()
	tr := &lifecycle.Transaction{ID: uuid.New(), PartnerID: b.partner, MerchantReference: "R-" + uuid.NewString(),
		Token: "usdt", Network: chain.BEP20, Status: lifecycle.AwaitingDeposit, Rate: decimal.RequireFromString("1500"),
		CryptoAmount: decimal.RequireFromString("10"), FiatAmount: decimal.RequireFromString("15000"),
		DepositAddress: addr, CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour)}
	tr.ReferenceKey = transactions.ReferenceKey(tr.MerchantReference)
	require.NoError(t, store.For(b.st, func(tx *store.Tx) transactions.Tx { return tx }).WithTx(context.Background(), func(ctx context.Context, tx transactions.Tx) error {
		idx, err := tx.NextAddressIndex(ctx, tr.Network)
		if err != nil {
			return err
		}
		tr.AddressIndex = idx
		if err := tx.InsertTransaction(ctx, tr); err != nil {
			return err
		}
		return lifecycle.Record(ctx, tx, tr, lifecycle.MustLookup(lifecycle.None, lifecycle.Create), nil, now)
	}))
	return tr.ID
}

// transfer is a transfer of amount USDT to addr in the next block.
func (b *bed) transfer(addr, amount string) chain.Transfer {
	b.block++
	a := decimal.RequireFromString(amount)
	return chain.Transfer{Network: chain.BEP20, Token: "usdt", TxHash: common.BytesToHash(uuid.New().NodeID()), LogIndex: 0,
		Block: b.block, BlockHash: common.BigToHash(new(big.Int).SetUint64(b.block)), BlockTime: store.Now(),
		ToAddress: addr, Raw: a.Shift(18).BigInt(), Amount: a, Confirmations: 1}
}

func (b *bed) reasons(t *testing.T, id uuid.UUID) []string {
	t.Helper()
	h, err := b.st.History(context.Background(), id)
	require.NoError(t, err)
	out := make([]string, len(h))
	for i, e := range h {
		out[i] = e.Reason
	}
	return out
}

func (b *bed) row(t *testing.T, tr chain.Transfer) *deposits.ChainTransfer {
	t.Helper()
	r, err := b.st.ChainTransfer(context.Background(), tr.Network, chain.FormatHash(tr.Network, tr.TxHash), tr.LogIndex)
	require.NoError(t, err)
	require.NotNil(t, r)
	return r
}

// TestTransfersThroughTheirLife: a batch applies its transfers and moves the
// cursor in one unit of work (a batch recorded against a moved cursor leaves
// nothing); a counted transfer confirms at the required confirmations once final;
// a transfer reorganised away no longer counts (its transaction waits again, its
// deposit gone); a second transfer to a paid transaction is kept for the
// operators.
func TestTransfersThroughTheirLife(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := newBed(t, db.URL)
			paid, reorged := b.awaiting(t, "0x00000000000000000000000000000000000000a1"), b.awaiting(t, "0x00000000000000000000000000000000000000a2")
			first, second := b.transfer("0x00000000000000000000000000000000000000a1", "10"), b.transfer("0x00000000000000000000000000000000000000a2", "10")
			next := chain.Cursor{Block: b.block, Hash: second.BlockHash}

			// Against a cursor another scanner moved: nothing recorded.
			moved := chain.Cursor{Block: 1}
			require.ErrorIs(t, b.d.Record(ctx, chain.BEP20, &moved, next, []chain.Transfer{first}), deposits.ErrCursorMoved)
			tx, err := b.st.Transaction(ctx, paid)
			require.NoError(t, err)
			require.Equal(t, lifecycle.AwaitingDeposit, tx.Status, "the batch's changes rolled back with it")

			require.NoError(t, b.d.Record(ctx, chain.BEP20, nil, next, []chain.Transfer{first, second}))
			cur, err := b.d.Cursor(ctx, chain.BEP20)
			require.NoError(t, err)
			require.Equal(t, next, *cur)
			require.Equal(t, deposits.TransferPending, b.row(t, first).State)
			require.Equal(t, []string{"transaction:created", "deposit:detected"}, b.reasons(t, paid))
			pending, err := b.d.Pending(ctx, chain.BEP20)
			require.NoError(t, err)
			require.Len(t, pending, 2)

			// Confirmed only at 2 confirmations and final.
			p := chain.Pending{Network: chain.BEP20, TxHash: first.TxHash, LogIndex: 0, Block: first.Block, BlockHash: first.BlockHash}
			require.NoError(t, b.d.Confirm(ctx, p, 2, false))
			require.Equal(t, deposits.TransferPending, b.row(t, first).State, "not final yet")
			require.NoError(t, b.d.Confirm(ctx, p, 2, true))
			require.Equal(t, deposits.TransferConfirmed, b.row(t, first).State)
			require.Contains(t, b.reasons(t, paid), "deposit:confirmed")
			tx, err = b.st.Transaction(ctx, paid)
			require.NoError(t, err)
			require.NotNil(t, tx.Deposit.ConfirmedAt)

			// Reorganised away before confirming: the transaction waits again.
			q := chain.Pending{Network: chain.BEP20, TxHash: second.TxHash, LogIndex: 0, Block: second.Block, BlockHash: second.BlockHash}
			require.NoError(t, b.d.Drop(ctx, q))
			require.Equal(t, deposits.TransferReorged, b.row(t, second).State)
			tx, err = b.st.Transaction(ctx, reorged)
			require.NoError(t, err)
			require.Equal(t, lifecycle.AwaitingDeposit, tx.Status)
			require.Nil(t, tx.Deposit, "no transfer left: the deposit is removed")
			require.Equal(t, []string{"transaction:created", "deposit:detected", "deposit:reorged"}, b.reasons(t, reorged))

			// A second payment to the paid transaction is kept for the operators.
			again := b.transfer("0x00000000000000000000000000000000000000a1", "10")
			require.NoError(t, b.d.Record(ctx, chain.BEP20, &next, chain.Cursor{Block: b.block, Hash: again.BlockHash}, []chain.Transfer{again}))
			require.Equal(t, deposits.TransferUnmatched, b.row(t, again).State)
			pending, err = b.d.Pending(ctx, chain.BEP20)
			require.NoError(t, err)
			require.Len(t, pending, 1)
			require.True(t, pending[0].Unmatched)
		})
	}
}
