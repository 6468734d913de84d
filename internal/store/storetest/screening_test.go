package storetest_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/internal/lifecycle"
	"partnerd/internal/screening"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

// TestScreeningLists: an import is active and names its addresses by key; a
// source's new import replaces its old one (kept as a record, no longer named
// by) and queues the transactions whose funds have not moved on for screening
// again, not the others.
func TestScreeningLists(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		p := newPartner(t, s)
		waiting := newTransaction(t, s, p, txOpts{status: lifecycle.DepositConfirming})
		setScreening(t, s, waiting.ID, lifecycle.ScreeningClear)
		filled := newTransaction(t, s, p, txOpts{status: lifecycle.OrderFilled})
		setScreening(t, s, filled.ID, lifecycle.ScreeningClear)

		have, err := s.HasScreeningSource(ctx, "SDN")
		require.NoError(t, err)
		require.False(t, have)
		named, other := "0x7F367cC41522cE07553e823bf3be79A889DEbe1B", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
		first := entries(t, named, other)
		published := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		depth0, err := s.QueueDepth(ctx)
		require.NoError(t, err)
		l1, queued, err := s.ImportScreeningList(ctx, "SDN", published, first, store.Now())
		require.NoError(t, err)
		require.Equal(t, 1, queued, "only the transaction whose funds wait")
		depth, err := s.QueueDepth(ctx)
		require.NoError(t, err)
		require.Equal(t, depth0+1, depth, "its screening job committed with the list")
		have, err = s.HasScreeningSource(ctx, "SDN")
		require.NoError(t, err)
		require.True(t, have)

		in, err := s.ListedIn(ctx, screening.Key(named))
		require.NoError(t, err)
		require.Len(t, in, 1)
		require.Equal(t, l1.ID, in[0].ID)
		require.Equal(t, "2026-11-01", in[0].Published.Format(time.DateOnly))
		require.Equal(t, 2, in[0].Size)
		ls, err := s.Listings(ctx, screening.Key(named))
		require.NoError(t, err)
		require.Equal(t, []lifecycle.Listing{{Source: "SDN", Published: published, ImportedAt: l1.ImportedAt}}, ls)
		require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			ls, err := tx.Listings(ctx, screening.Key(other))
			require.NoError(t, err)
			require.Len(t, ls, 1, "read in the unit of work too")
			return nil
		}))

		l2, _, err := s.ImportScreeningList(ctx, "SDN", published.AddDate(0, 0, 7), entries(t, other), store.Now().Add(time.Second))
		require.NoError(t, err)
		in, err = s.ListedIn(ctx, screening.Key(named))
		require.NoError(t, err)
		require.Empty(t, in, "the new import replaces the old one")
		lists, err := s.ScreeningLists(ctx)
		require.NoError(t, err)
		require.Len(t, lists, 2)
		require.Equal(t, l2.ID, lists[0].ID, "the active one first")
		require.True(t, lists[0].Active)
		require.False(t, lists[1].Active, "the old import kept as a record")
		require.Equal(t, 2, lists[1].Size)
	})
}

// TestScreeningRecordsAndDecisions: records keep their evidence and order, the
// queue and the counts read the transactions' screening states, and decisions
// are kept with their notes; all of it in the unit of work that counted the
// deposit (a rollback keeps none).
func TestScreeningRecordsAndDecisions(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		p := newPartner(t, s)
		held := newTransaction(t, s, p, txOpts{status: lifecycle.DepositConfirming})
		unknown := newTransaction(t, s, p, txOpts{status: lifecycle.DepositConfirming})
		newTransaction(t, s, p, txOpts{}) // never screened
		setScreening(t, s, held.ID, lifecycle.ScreeningHeld)
		setScreening(t, s, unknown.ID, lifecycle.ScreeningUnknown)

		at := store.Now()
		findings := json.RawMessage(`[{"screener":"list","source":"SDN","hit":true}]`)
		hit := &lifecycle.ScreeningRecord{ID: uuid.New(), TransactionID: held.ID, Network: "bep20", Address: "0xabc",
			Verdict: lifecycle.VerdictHit, Findings: findings, CheckedAt: at}
		released := &lifecycle.ScreeningRecord{ID: uuid.New(), TransactionID: held.ID, Network: "bep20", Address: "0xabc",
			Verdict: lifecycle.VerdictHit, CheckedAt: at.Add(time.Second), Released: true}
		op := newOperator(t, s)
		decision := lifecycle.ScreeningDecision{TransactionID: held.ID, Decision: lifecycle.Release, Note: "false positive", OperatorID: op.ID, DecidedAt: at}

		boom := context.Canceled
		err := s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			require.NoError(t, tx.InsertScreening(ctx, hit))
			require.NoError(t, tx.ScheduleScreening(ctx, held.ID, false))
			return boom
		})
		require.ErrorIs(t, err, boom)
		recs, err := s.Screenings(ctx, held.ID)
		require.NoError(t, err)
		require.Empty(t, recs, "rolled back")

		require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			require.NoError(t, tx.InsertScreening(ctx, hit))
			require.NoError(t, tx.InsertScreening(ctx, released))
			require.NoError(t, tx.InsertScreeningDecision(ctx, decision))
			recs, err := tx.ScreeningsOf(ctx, held.ID)
			require.NoError(t, err)
			require.Len(t, recs, 2, "read in the unit of work")
			return nil
		}))
		recs, err = s.Screenings(ctx, held.ID)
		require.NoError(t, err)
		require.Len(t, recs, 2)
		require.Equal(t, hit.ID, recs[0].ID, "oldest first")
		require.JSONEq(t, string(findings), string(recs[0].Findings))
		require.False(t, recs[0].Released)
		require.True(t, recs[1].Released)
		require.JSONEq(t, `[]`, string(recs[1].Findings), "no findings is an empty list")

		ds, err := s.ScreeningDecisions(ctx, held.ID)
		require.NoError(t, err)
		require.Len(t, ds, 1)
		require.Equal(t, "false positive", ds[0].Note)
		require.Equal(t, op.ID, ds[0].OperatorID)

		queue, err := s.TransactionsInScreening(ctx, []lifecycle.Screening{lifecycle.ScreeningHeld, lifecycle.ScreeningUnknown}, 10)
		require.NoError(t, err)
		var ids []uuid.UUID
		for _, tr := range queue {
			ids = append(ids, tr.ID)
		}
		require.ElementsMatch(t, []uuid.UUID{held.ID, unknown.ID}, ids)
		n, err := s.CountInScreening(ctx, []lifecycle.Screening{lifecycle.ScreeningHeld, lifecycle.ScreeningUnknown, lifecycle.ScreeningPending})
		require.NoError(t, err)
		require.Equal(t, map[lifecycle.Screening]int{lifecycle.ScreeningHeld: 1, lifecycle.ScreeningUnknown: 1}, n)
	})
}

// entries parses addresses as a list file names them.
func entries(t *testing.T, addrs ...string) []store.ListEntry {
	t.Helper()
	var out []store.ListEntry
	for _, a := range addrs {
		out = append(out, store.ListEntry{Key: screening.Key(a), Address: a})
	}
	return out
}

// setScreening sets transaction id's screening state as the engine would.
func setScreening(t *testing.T, s *store.Store, id uuid.UUID, st lifecycle.Screening) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
		cur, err := tx.TransactionForUpdate(ctx, id)
		if err != nil {
			return err
		}
		cur.Screening = st
		ok, err := tx.UpdateTransaction(ctx, cur)
		require.True(t, ok)
		return err
	}))
}
