package storetest_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/internal/backoffice"
	"partnerd/internal/idempotency"
	"partnerd/internal/jobs"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/cursor"
	"partnerd/internal/lifecycle"
	"partnerd/internal/pricing/quotes"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/transactions"
)

func TestTransactionReadsAndHistory(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		p, other := newPartner(t, s), newPartner(t, s)
		tr := newTransaction(t, s, p, txOpts{merchantID: ptr("M-1")})

		got, err := s.TransactionByID(ctx, p.ID, tr.ID)
		require.NoError(t, err)
		require.Equal(t, tr.ID, got.ID)
		require.True(t, tr.CryptoAmount.Equal(got.CryptoAmount), "exact amounts: %s", got.CryptoAmount)
		require.True(t, tr.FiatAmount.Equal(got.FiatAmount))
		require.Equal(t, tr.CreatedAt, got.CreatedAt)
		require.Equal(t, "M-1", *got.MerchantID)
		require.Nil(t, got.Deposit)

		_, err = s.TransactionByID(ctx, other.ID, tr.ID)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err), "another partner's transaction is not found")
		got, err = s.TransactionByReference(ctx, p.ID, tr.ReferenceKey)
		require.NoError(t, err)
		require.Equal(t, tr.ID, got.ID)
		_, err = s.TransactionByReference(ctx, other.ID, tr.ReferenceKey)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
		got, err = s.Transaction(ctx, tr.ID)
		require.NoError(t, err)
		require.Equal(t, p.ID, got.PartnerID)
		_, err = s.Transaction(ctx, uuid.New())
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))

		// A second create with the same reference key is refused and leaves the unit
		// of work usable.
		dup := *tr
		dup.ID = uuid.New()
		err = s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			err := tx.InsertTransaction(ctx, &dup)
			require.Equal(t, apperr.DuplicateMerchantReference, apperr.CodeOf(err))
			_, err = tx.TransactionForUpdate(ctx, tr.ID)
			return err
		})
		require.NoError(t, err)

		hist, err := s.History(ctx, tr.ID)
		require.NoError(t, err)
		require.Len(t, hist, 1)
		require.Equal(t, lifecycle.None, hist[0].From)
		require.Equal(t, lifecycle.AwaitingDeposit, hist[0].To)
	})
}

// TestTwoWritersOneWinner: two units of work read the same version of a
// transaction and both try to move it; exactly one update applies.
func TestTwoWritersOneWinner(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		p := newPartner(t, s)
		tr := newTransaction(t, s, p, txOpts{})
		var wins atomic.Int32
		var wg sync.WaitGroup
		for _, to := range []lifecycle.Status{lifecycle.Cancelled, lifecycle.Expired} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
					cur := *tr // both writers hold the version read before either wrote
					cur.Status, cur.UpdatedAt = to, store.Now()
					ok, err := tx.UpdateTransaction(ctx, &cur)
					if err != nil || !ok {
						return err
					}
					wins.Add(1)
					return tx.InsertHistory(ctx, &lifecycle.HistoryEntry{TransactionID: tr.ID, From: tr.Status, To: to, Reason: "race", ChangedAt: cur.UpdatedAt})
				})
				if err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		require.EqualValues(t, 1, wins.Load(), "exactly one writer wins")
		got, err := s.Transaction(ctx, tr.ID)
		require.NoError(t, err)
		require.EqualValues(t, 1, got.Version)
		hist, err := s.History(ctx, tr.ID)
		require.NoError(t, err)
		require.Len(t, hist, 2, "only the winner's history entry")
		require.Equal(t, got.Status, hist[1].To)
	})
}

func TestQuoteIsUsedOnce(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		p := newPartner(t, s)
		now := store.Now()
		q := &quotes.Quote{ID: uuid.New(), PartnerID: p.ID, Token: "usdt", Network: "bep20", BaseRate: dec("1550.00"),
			AdjustedRate: dec("1542.25"), CryptoAmount: dec("100.000000"), FiatAmount: dec("154225.00"),
			CreatedAt: now, ExpiresAt: now.Add(2 * time.Minute)}
		require.NoError(t, s.CreateQuote(ctx, q))
		var wins atomic.Int32
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
					got, err := tx.QuoteByID(ctx, p.ID, q.ID)
					if err != nil {
						return err
					}
					if !got.FiatAmount.Equal(q.FiatAmount) {
						return errors.New("quote read back differs")
					}
					ok, err := tx.MarkQuoteUsed(ctx, q.ID, store.Now())
					if ok {
						wins.Add(1)
					}
					return err
				})
				if err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		require.EqualValues(t, 1, wins.Load(), "a quote is used once")
		stranger := newPartner(t, s)
		err := s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			_, err := tx.QuoteByID(ctx, stranger.ID, q.ID)
			return err
		})
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err), "another partner's quote")
	})
}

func TestDepositsAndRates(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		p := newPartner(t, s)
		tr := newTransaction(t, s, p, txOpts{})
		dep := &lifecycle.Deposit{ID: "dep-1", Status: lifecycle.DepositStatusConfirming, Confirmations: 1, RequiredConfirmations: 3,
			Hash: "0xabc", Amount: dec("100.000001"), ReceivedAt: store.Now()}
		require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			fee, share, err := tx.PartnerRates(ctx, p.ID)
			require.NoError(t, err)
			require.True(t, fee.Equal(p.FeeRate) && share.Equal(p.ShareRate), "rates %s %s", fee, share)
			return tx.SaveDeposit(ctx, tr.ID, dep)
		}))
		dep.Confirmations, dep.Status, dep.ConfirmedAt = 3, lifecycle.DepositStatusConfirmed, ptr(store.Now())
		require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error { return tx.SaveDeposit(ctx, tr.ID, dep) }))
		got, err := s.Transaction(ctx, tr.ID)
		require.NoError(t, err)
		require.NotNil(t, got.Deposit)
		require.Equal(t, 3, got.Deposit.Confirmations, "a second save updates the deposit")
		require.True(t, dep.Amount.Equal(got.Deposit.Amount))
		require.Equal(t, *dep.ConfirmedAt, *got.Deposit.ConfirmedAt)

		require.NoError(t, s.DeleteDeposit(ctx, tr.ID))
		got, err = s.Transaction(ctx, tr.ID)
		require.NoError(t, err)
		require.Nil(t, got.Deposit)
	})
}

func TestListsAndExpiry(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		p := newPartner(t, s)
		base := store.Now().Add(-time.Hour)
		var made []*lifecycle.Transaction
		for i := range 5 {
			made = append(made, newTransaction(t, s, p, txOpts{created: base.Add(time.Duration(i) * time.Minute), merchantID: ptr("M-list")}))
		}
		// Newest first, keyset-paged.
		page, err := s.ListTransactions(ctx, p.ID, transactions.ListQuery{Limit: 2})
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{made[4].ID, made[3].ID}, ids(page))
		page, err = s.ListTransactions(ctx, p.ID, transactions.ListQuery{Limit: 10,
			After: &cursor.Position{Time: page[1].CreatedAt, ID: page[1].ID.String()}})
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{made[2].ID, made[1].ID, made[0].ID}, ids(page))
		page, err = s.ListTransactions(ctx, p.ID, transactions.ListQuery{Limit: 10, Filter: transactions.Filter{MerchantID: ptr("other")}})
		require.NoError(t, err)
		require.Empty(t, page)

		// Every transaction here expires 30 minutes after creation, so by now the
		// first two are due.
		due, err := s.DueForExpiry(ctx, base.Add(31*time.Minute+30*time.Second), 10)
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{made[0].ID, made[1].ID}, due)

		// The operators' stages.
		filled := newTransaction(t, s, p, txOpts{status: lifecycle.OrderFilled})
		stage, err := s.ListStage(ctx, backoffice.StageQuery{StageFilter: backoffice.StageFilter{Stage: backoffice.AwaitingSettlement, PartnerID: &p.ID}, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{filled.ID}, ids(stage))
		_, err = s.ListStage(ctx, backoffice.StageQuery{StageFilter: backoffice.StageFilter{Stage: "nope"}, Limit: 10})
		require.Equal(t, apperr.InvalidRequest, apperr.CodeOf(err))
	})
}

func ids(ts []*lifecycle.Transaction) []uuid.UUID {
	out := make([]uuid.UUID, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

// TestUnitOfWorkCommitsTogether: a job enqueued, a fill and a scheduled step commit
// with the unit of work or not at all, and after-commit hooks run only on commit.
func TestUnitOfWorkCommitsTogether(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		p := newPartner(t, s)
		tr := newTransaction(t, s, p, txOpts{status: lifecycle.OrderFilled})
		op := newOperator(t, s)
		fill := &lifecycle.Fill{TransactionID: tr.ID, Rate: dec("1541.10"), FiatAmount: dec("154110.00"), Reference: "LP-1", OperatorID: op.ID, FilledAt: store.Now()}
		depth0, err := s.QueueDepth(ctx)
		require.NoError(t, err)

		boom := errors.New("boom")
		var hooked bool
		err = s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			require.Equal(t, s.Dialect(), tx.Dialect())
			tx.AfterCommit(func() { hooked = true })
			require.NoError(t, tx.InsertFill(ctx, fill))
			require.NoError(t, tx.ScheduleStep(ctx, tr.ID, "settle", store.Now().Add(time.Hour)))
			require.NoError(t, tx.Enqueue(ctx, jobs.DeliverEventArgs{EventID: uuid.New()}, nil))
			return boom
		})
		require.ErrorIs(t, err, boom)
		require.False(t, hooked, "no hook after a rollback")
		fills, err := s.FillsOf(ctx, []uuid.UUID{tr.ID})
		require.NoError(t, err)
		require.Empty(t, fills)
		depth, err := s.QueueDepth(ctx)
		require.NoError(t, err)
		require.Equal(t, depth0, depth, "rolled-back jobs are gone")

		require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			tx.AfterCommit(func() { hooked = true })
			require.NoError(t, tx.InsertFill(ctx, fill))
			require.NoError(t, tx.ScheduleStep(ctx, tr.ID, "settle", store.Now().Add(time.Hour)))
			return tx.Enqueue(ctx, jobs.DeliverEventArgs{EventID: uuid.New()}, nil)
		}))
		require.True(t, hooked)
		fills, err = s.FillsOf(ctx, []uuid.UUID{tr.ID, uuid.New()})
		require.NoError(t, err)
		require.Len(t, fills, 1)
		require.True(t, fill.FiatAmount.Equal(fills[tr.ID].FiatAmount))
		depth, err = s.QueueDepth(ctx)
		require.NoError(t, err)
		require.Equal(t, depth0+2, depth, "the step and the job committed")
	})
}

// TestScopedUnitOfWork: For/WithTx hand the unit of work out as a domain
// package's transaction interface, and idempotency keys are kept per table.
func TestScopedUnitOfWork(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		p := newPartner(t, s)
		now := store.Now()
		rec := &idempotency.Record{Key: idempotency.Key{PartnerID: p.ID, Operation: "op", Key: "k-1"}, Fingerprint: "f",
			State: idempotency.Done, ResponseStatus: 201, ResponseBody: []byte(`{"ok":true}`), LockedAt: now, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		require.NoError(t, store.For(s, func(tx *store.Tx) idempotency.Tx { return tx }).WithTx(ctx, func(ctx context.Context, tx idempotency.Tx) error {
			ok, err := tx.SaveKey(ctx, rec, now, now.Add(-time.Minute))
			require.True(t, ok)
			return err
		}))
		require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			got, err := tx.GetKey(ctx, rec.Key)
			require.NoError(t, err)
			require.Equal(t, rec.ResponseBody, got.ResponseBody)
			ok, err := tx.SaveKey(ctx, rec, now, now.Add(-time.Minute))
			require.False(t, ok, "a live key is not overwritten")
			return err
		}))
		n, err := s.PartnerKeys().PurgeKeys(ctx, now.Add(2*time.Hour))
		require.NoError(t, err)
		require.EqualValues(t, 1, n)

		// Operator keys live in their own table.
		op := newOperator(t, s)
		keys := s.OperatorKeys()
		orec := *rec
		orec.PartnerID = op.ID
		require.NoError(t, keys.WithTx(ctx, func(ctx context.Context, tx idempotency.Tx) error {
			ok, err := tx.SaveKey(ctx, &orec, now, now.Add(-time.Minute))
			require.True(t, ok)
			return err
		}))
		// A use case's own unit of work hands each owner its own table
		// (Tx.Keys, how idempotency.Run stores a keyed answer beside the effects).
		require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			got, err := tx.Keys(idempotency.Operators).GetKey(ctx, orec.Key)
			require.NoError(t, err)
			require.Equal(t, orec.ResponseBody, got.ResponseBody)
			_, err = tx.Keys(idempotency.Partners).GetKey(ctx, orec.Key)
			require.Equal(t, apperr.NotFound, apperr.CodeOf(err), "not among the partners' keys")
			return nil
		}))
		require.Equal(t, idempotency.Operators, keys.Owner())
		require.Equal(t, idempotency.Partners, s.PartnerKeys().Owner())
		n, err = keys.PurgeKeys(ctx, now.Add(2*time.Hour))
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
	})
}

// TestAddressIndexesAreHandedBack: an index released in its unit of work is the
// next one taken, and IssuedAddresses lists every issued address by index with its
// transaction.
func TestAddressIndexesAreHandedBack(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		take := func(release bool) uint32 {
			var idx uint32
			require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
				var err error
				if idx, err = tx.NextAddressIndex(ctx, "trc20"); err != nil {
					return err
				}
				if release {
					return tx.ReleaseAddressIndex(ctx, "trc20", idx)
				}
				return nil
			}))
			return idx
		}
		released := take(true)
		require.Equal(t, released, take(false), "a released index is taken next")
		require.Equal(t, released+1, take(false))

		p := newPartner(t, s)
		a := newTransaction(t, s, p, txOpts{network: "trc20"})
		b := newTransaction(t, s, p, txOpts{network: "trc20"})
		newTransaction(t, s, p, txOpts{network: "bep20"})
		var got []store.IssuedAddress
		require.NoError(t, s.IssuedAddresses(ctx, "trc20", func(ia store.IssuedAddress) error {
			got = append(got, ia)
			return nil
		}))
		require.Len(t, got, 2, "only the network's addresses")
		require.Equal(t, []uuid.UUID{a.ID, b.ID}, []uuid.UUID{got[0].TransactionID, got[1].TransactionID}, "by index")
		require.Equal(t, a.AddressIndex, got[0].Index)
		require.Equal(t, a.DepositAddress, got[0].Address)
		require.Equal(t, "awaiting_deposit", got[0].Status)
		require.Nil(t, got[0].Received, "no deposit yet")
	})
}

// TestALockedReadSeesTheDepositAsCommitted: a unit of work that waited for the
// transaction's lock reads its deposit as the unit it waited for left it (on
// PostgreSQL a FOR UPDATE re-reads only the locked row after a wait: a deposit
// read in the same statement would be the one from before, and written back
// over the change).
func TestALockedReadSeesTheDepositAsCommitted(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		p := newPartner(t, s)
		tr := newTransaction(t, s, p, txOpts{})
		dep := &lifecycle.Deposit{ID: "dep-1", Status: lifecycle.DepositStatusPartial, Confirmations: 1, RequiredConfirmations: 3,
			Hash: "0xabc", Amount: dec("3"), ReceivedAt: store.Now()}
		require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error { return tx.SaveDeposit(ctx, tr.ID, dep) }))
		// Both read the deposit once first, so neither statement is the first of its
		// unit of work when it locks (the snapshot, if any, is already taken).
		locked, release := make(chan struct{}), make(chan struct{})
		first := make(chan error, 1)
		go func() {
			first <- s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
				cur, err := tx.TransactionForUpdate(ctx, tr.ID)
				if err != nil {
					return err
				}
				close(locked)
				<-release
				cur.Deposit.Status = lifecycle.DepositStatusUnderpaid
				return tx.SaveDeposit(ctx, tr.ID, cur.Deposit)
			})
		}()
		<-locked
		var seen string
		second := make(chan error, 1)
		go func() {
			second <- s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
				cur, err := tx.TransactionForUpdate(ctx, tr.ID) // waits for the first
				if err == nil {
					seen = cur.Deposit.Status
				}
				return err
			})
		}()
		time.Sleep(100 * time.Millisecond) // let the second reach the lock (on SQLite, the writer)
		close(release)
		require.NoError(t, <-first)
		require.NoError(t, <-second)
		require.Equal(t, lifecycle.DepositStatusUnderpaid, seen, "the deposit as the first unit of work committed it")
	})
}
