package storetest_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/internal/backoffice/refunds"
	"partnerd/internal/chain"
	"partnerd/internal/deposits"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/lifecycle"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

// TestChainCursorCompareAndSet: of concurrent movers from one cursor exactly one
// moves it.
func TestChainCursorCompareAndSet(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		cur, err := s.ChainCursor(ctx, "bep20")
		require.NoError(t, err)
		require.Nil(t, cur)
		first := chain.Cursor{Block: 10, Hash: common.HexToHash("0x0a")}
		ok, err := s.MoveChainCursor(ctx, "bep20", nil, first)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = s.MoveChainCursor(ctx, "bep20", nil, first)
		require.NoError(t, err)
		require.False(t, ok, "a cursor exists already")

		var moved atomic.Int32
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := s.MoveChainCursor(ctx, "bep20", &first, chain.Cursor{Block: uint64(11 + i), Hash: common.BigToHash(common.Big1)})
				if err != nil {
					t.Error(err)
				}
				if ok {
					moved.Add(1)
				}
			}()
		}
		wg.Wait()
		require.EqualValues(t, 1, moved.Load())
		cur, err = s.ChainCursor(ctx, "bep20")
		require.NoError(t, err)
		require.Greater(t, cur.Block, uint64(10))
	})
}

func TestChainTransfers(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		p := newPartner(t, s)
		tr := newTransaction(t, s, p, txOpts{network: "bep20", address: "0xwatched"})

		watched, err := s.WatchedAddresses(ctx, "bep20", []string{"0xwatched", "0xother"})
		require.NoError(t, err)
		require.Equal(t, map[string]bool{"0xwatched": true}, watched)
		id, err := s.TransactionIDByAddress(ctx, "bep20", "0xwatched")
		require.NoError(t, err)
		require.Equal(t, tr.ID, id)
		_, err = s.TransactionIDByAddress(ctx, "trc20", "0xwatched")
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))

		got, err := s.ChainTransfer(ctx, "bep20", "0xhash", 0)
		require.NoError(t, err)
		require.Nil(t, got)
		matched := &deposits.ChainTransfer{Network: "bep20", TxHash: "0xhash", LogIndex: 0, Token: "usdt", Block: 100,
			BlockHash: "0xb100", BlockTime: store.Now(), From: "0xfrom", To: "0xwatched",
			Raw: dec("100000001000000000000"), Amount: dec("100.000001"), TransactionID: &tr.ID, DepositID: "dep-1",
			State: deposits.TransferPending}
		require.NoError(t, s.SaveChainTransfer(ctx, matched))
		require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			return tx.SaveDeposit(ctx, tr.ID, &lifecycle.Deposit{ID: "dep-1", Status: lifecycle.DepositStatusConfirming,
				Confirmations: 2, RequiredConfirmations: 3, Hash: "0xhash", Amount: matched.Amount, ReceivedAt: store.Now()})
		}))
		stray := &deposits.ChainTransfer{Network: "bep20", TxHash: "0xstray", LogIndex: 3, Token: "usdt", Block: 99,
			BlockHash: "0xb99", BlockTime: store.Now(), From: "0xfrom", To: "0xnobody",
			Raw: dec("5000000000000000000"), Amount: dec("5"), DepositID: "stray", State: deposits.TransferUnmatched}
		require.NoError(t, s.SaveChainTransfer(ctx, stray))

		pending, err := s.PendingChainTransfers(ctx, "bep20")
		require.NoError(t, err)
		require.Len(t, pending, 2)
		require.Equal(t, "0xstray", pending[0].TxHash, "oldest block first")
		require.Equal(t, 2, pending[1].Confirmations, "with the deposit's confirmations")
		require.True(t, matched.Raw.Equal(pending[1].Raw), "78-digit raw amounts are exact")

		stray.Final = true
		require.NoError(t, s.SaveChainTransfer(ctx, stray))
		pending, err = s.PendingChainTransfers(ctx, "bep20")
		require.NoError(t, err)
		require.Len(t, pending, 1, "a final unmatched transfer is no longer checked")

		all, err := s.ChainTransfers(ctx, false, 10)
		require.NoError(t, err)
		require.Len(t, all, 2)
		unmatchedOnly, err := s.ChainTransfers(ctx, true, 10)
		require.NoError(t, err)
		require.Len(t, unmatchedOnly, 1)
		require.True(t, unmatchedOnly[0].Final)
		got, err = s.ChainTransfer(ctx, "bep20", "0xhash", 0)
		require.NoError(t, err)
		require.Equal(t, &tr.ID, got.TransactionID)
	})
}

// TestLocksExcludeAcrossStores: two stores on one database compete for one lock;
// stores on different databases do not.
func TestLocksExcludeAcrossStores(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, db testdb.Database, a *store.Store) {
		ctx := context.Background()
		b := openStore(t, db.URL)
		name := "suite-lock/" + uuid.NewString()

		la, ok, err := a.TryLock(ctx, name)
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, la.Alive(ctx))
		_, ok, err = b.TryLock(ctx, name)
		require.NoError(t, err)
		require.False(t, ok, "the second store on the database is excluded")
		_, ok, err = a.TryLock(ctx, name)
		require.NoError(t, err)
		require.False(t, ok, "and so is a second take by the holder")

		lo, ok, err := b.TryLock(ctx, name+"/other")
		require.NoError(t, err)
		require.True(t, ok, "another name is free")
		lo.Release()

		elsewhere := openStore(t, otherDatabase(t, db))
		le, ok, err := elsewhere.TryLock(ctx, name)
		require.NoError(t, err)
		require.True(t, ok, "a store on another database is not excluded")
		le.Release()

		la.Release()
		la.Release() // idempotent
		lb, ok, err := b.TryLock(ctx, name)
		require.NoError(t, err)
		require.True(t, ok, "released: the other store takes it")
		lb.Release()
	})
}

// otherDatabase returns a second, separate database of db's kind.
func otherDatabase(t *testing.T, db testdb.Database) string {
	if db.Name == "postgres" {
		return testdb.PostgresSchema(t)
	}
	return testdb.SQLite(t)
}

func TestUnmatchedDeposits(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		op := newOperator(t, s)
		base := store.Now()
		var stored []uuid.UUID
		for i := range 3 {
			d, err := s.InsertUnmatchedDeposit(ctx, unmatchedDeposit(i, base.Add(time.Duration(i)*time.Second)))
			require.NoError(t, err)
			stored = append(stored, d.ID)
		}
		again, err := s.InsertUnmatchedDeposit(ctx, unmatchedDeposit(0, base))
		require.NoError(t, err)
		require.Equal(t, stored[0], again.ID, "a transfer is recorded once")

		open, err := s.ListRefundTasks(ctx, refunds.Filter{Open: true}, nil, 2)
		require.NoError(t, err)
		require.Len(t, open, 2)
		require.Equal(t, stored[2], open[0].ID, "newest first")

		var resolved atomic.Int32
		var wg sync.WaitGroup
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := s.ResolveUnmatchedDeposit(ctx, stored[1], resolution(op.ID))
				if err != nil {
					t.Error(err)
				}
				if ok {
					resolved.Add(1)
				}
			}()
		}
		wg.Wait()
		require.EqualValues(t, 1, resolved.Load(), "resolved once")
		d, err := s.UnmatchedDeposit(ctx, stored[1])
		require.NoError(t, err)
		require.EqualValues(t, "refunded", d.Status)
		require.Equal(t, op.ID, *d.ResolvedBy)
		_, err = s.UnmatchedDeposit(ctx, uuid.New())
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))

		// A reorganised-away transfer takes its open deposit with it, not a resolved one.
		require.NoError(t, s.DeleteOpenUnmatchedDeposit(ctx, "bep20", "0xu0", 0))
		require.NoError(t, s.DeleteOpenUnmatchedDeposit(ctx, "bep20", "0xu1", 1))
		_, err = s.UnmatchedDeposit(ctx, stored[0])
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
		_, err = s.UnmatchedDeposit(ctx, stored[1])
		require.NoError(t, err)
	})
}

// TestRefundTasksOfATransaction: the kinds tied to a transaction are filtered by
// kind, partner and network; closing or forgetting a transaction's open tasks of one
// kind leaves its other kinds and its resolved tasks alone.
func TestRefundTasksOfATransaction(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		op := newOperator(t, s)
		p := newPartner(t, s)
		tr := newTransaction(t, s, p, txOpts{})
		task := func(kind lifecycle.TaskKind, i int) *lifecycle.RefundTask {
			d := unmatchedDeposit(i, store.Now())
			d.Kind, d.TransactionID, d.PartnerID, d.ToAddress, d.FromAddress = kind, &tr.ID, &p.ID, tr.DepositAddress, "0xsender"
			got, err := s.InsertUnmatchedDeposit(ctx, d)
			require.NoError(t, err)
			return got
		}
		short, excess, dust := task(lifecycle.TaskShort, 1), task(lifecycle.TaskExcess, 2), task(lifecycle.TaskDust, 3)

		kind, network := lifecycle.TaskShort, "bep20"
		list, err := s.ListRefundTasks(ctx, refunds.Filter{Open: true, Kind: &kind, PartnerID: &p.ID, Network: &network}, nil, 10)
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.Equal(t, short.ID, list[0].ID)
		require.Equal(t, "0xsender", list[0].FromAddress)
		other := uuid.New()
		list, err = s.ListRefundTasks(ctx, refunds.Filter{Open: true, PartnerID: &other}, nil, 10)
		require.NoError(t, err)
		require.Empty(t, list, "another partner's tasks are not listed")

		// The partner's chosen destination is set on the open tasks of one kind only.
		require.NoError(t, s.DirectOpenRefundTasks(ctx, tr.ID, lifecycle.TaskShort, "0xchosen"))
		got, err := s.UnmatchedDeposit(ctx, short.ID)
		require.NoError(t, err)
		require.NotNil(t, got.RefundTo)
		require.Equal(t, "0xchosen", *got.RefundTo)
		require.Equal(t, "0xsender", got.FromAddress, "the sender is kept")
		got, err = s.UnmatchedDeposit(ctx, excess.ID)
		require.NoError(t, err)
		require.Nil(t, got.RefundTo, "another kind keeps its sender")

		require.NoError(t, s.ResolveOpenRefundTasks(ctx, tr.ID, lifecycle.TaskShort, resolution(op.ID)))
		got, err = s.UnmatchedDeposit(ctx, short.ID)
		require.NoError(t, err)
		require.Equal(t, lifecycle.TaskRefunded, got.Status)
		require.Equal(t, op.ID, *got.ResolvedBy)
		got, err = s.UnmatchedDeposit(ctx, excess.ID)
		require.NoError(t, err)
		require.Equal(t, lifecycle.TaskOpen, got.Status, "another kind stays open")

		require.NoError(t, s.DeleteOpenRefundTasks(ctx, tr.ID, lifecycle.TaskDust))
		require.NoError(t, s.DeleteOpenRefundTasks(ctx, tr.ID, lifecycle.TaskShort))
		_, err = s.UnmatchedDeposit(ctx, dust.ID)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
		_, err = s.UnmatchedDeposit(ctx, short.ID)
		require.NoError(t, err, "a resolved task is kept")

		// A short task recorded again under a resolved one's identity re-opens it
		// with the new total.
		again := unmatchedDeposit(1, store.Now())
		again.Kind, again.TransactionID, again.PartnerID, again.ToAddress, again.FromAddress = lifecycle.TaskShort, &tr.ID, &p.ID, tr.DepositAddress, "0xsender"
		again.Amount = dec("7.5")
		again.Status = lifecycle.TaskOpen
		reopened, err := s.InsertUnmatchedDeposit(ctx, again)
		require.NoError(t, err)
		require.Equal(t, short.ID, reopened.ID, "the same task")
		require.Equal(t, lifecycle.TaskOpen, reopened.Status)
		require.True(t, dec("7.5").Equal(reopened.Amount))
		require.Nil(t, reopened.ResolvedBy)
		require.Nil(t, reopened.ResolutionTxHash)
		require.Nil(t, reopened.ResolvedAt)
	})
}
