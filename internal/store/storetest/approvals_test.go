package storetest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/internal/audit"
	"partnerd/internal/backoffice/approvals"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

// An operator's roles are replaced whole, in or out of a unit of work.
func TestOperatorRoles(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		o := newOperator(t, s)
		got, err := s.OperatorByID(ctx, o.ID)
		require.NoError(t, err)
		require.Equal(t, []operators.Role{operators.Admin}, got.Roles, "no roles given: the column's default")
		require.NoError(t, s.SetOperatorRoles(ctx, o.ID, []operators.Role{operators.Treasury, operators.Compliance}))
		require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			return tx.SetOperatorRoles(ctx, o.ID, []operators.Role{operators.Viewer, operators.Treasury})
		}))
		got, err = s.OperatorByKeyHash(ctx, o.KeyHash)
		require.NoError(t, err)
		require.Equal(t, []operators.Role{operators.Viewer, operators.Treasury}, got.Roles)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(s.SetOperatorRoles(ctx, uuid.New(), []operators.Role{operators.Viewer})))
	})
}

// Proposals: written once per proposer, operation and key with their audit row;
// claimed by one approver of many racing; finished, rejected, listed by status
// (expired read from the clock) and counted while pending.
func TestApprovalsStore(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		ada, bola := newOperator(t, s), newOperator(t, s)
		now := store.Now()
		propose := func(key string, ttl time.Duration) *approvals.Approval {
			t.Helper()
			a := &approvals.Approval{ID: uuid.New(), Action: approvals.Payout, Operation: "createPayout", Method: "POST", Path: "/payouts",
				Body: []byte(`{"reference":"NIP-1"}`), Summary: "payout", RequiredRole: operators.Treasury, Status: approvals.Pending,
				ProposedBy: ada.ID, IdempotencyKey: key, Fingerprint: "fp-" + key, ProposedAt: now, ExpiresAt: now.Add(ttl)}
			id := a.ID
			e := &audit.Entry{ID: uuid.New(), OperatorID: ada.ID, Action: audit.ApprovalProposed, SubjectID: &id, CreatedAt: now}
			ok, err := s.InsertApproval(ctx, a, e)
			require.NoError(t, err)
			require.True(t, ok)
			return a
		}
		a := propose("k1", time.Hour)
		dup := *a
		dup.ID = uuid.New()
		ok, err := s.InsertApproval(ctx, &dup, &audit.Entry{ID: uuid.New(), OperatorID: ada.ID, Action: audit.ApprovalProposed, CreatedAt: now})
		require.NoError(t, err)
		require.False(t, ok, "the same proposer, operation and key: the first proposal stands")
		byKey, err := s.ApprovalByKey(ctx, ada.ID, "createPayout", "k1")
		require.NoError(t, err)
		require.Equal(t, a.ID, byKey.ID)
		require.Equal(t, "fp-k1", byKey.Fingerprint)
		require.Equal(t, "Suite operator", byKey.ProposerName)
		_, err = s.ApprovalByKey(ctx, ada.ID, "createPayout", "k2")
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
		_, err = s.Approval(ctx, uuid.New())
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
		entries, err := s.ListAudit(ctx, audit.Filter{}, nil, 10)
		require.NoError(t, err)
		require.Len(t, entries, 1, "one audit row: the refused duplicate wrote none")

		n, oldest, err := s.PendingApprovals(ctx, now)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.WithinDuration(t, now, *oldest, time.Millisecond)

		// Racing claims: exactly one wins.
		var wg sync.WaitGroup
		wins := make([]bool, 4)
		for i := range wins {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := s.ClaimApproval(ctx, a.ID, bola.ID, now)
				require.NoError(t, err)
				wins[i] = ok
			}()
		}
		wg.Wait()
		won := 0
		for _, w := range wins {
			if w {
				won++
			}
		}
		require.Equal(t, 1, won)
		require.NoError(t, s.FinishApproval(ctx, a.ID, approvals.Approved, []byte(`{"success":true}`), nil, now,
			&audit.Entry{ID: uuid.New(), OperatorID: bola.ID, ProposerID: &ada.ID, Action: audit.ApprovalApproved, CreatedAt: now}))
		got, err := s.Approval(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, approvals.Approved, got.Status)
		require.Equal(t, bola.ID, *got.DecidedBy)
		require.JSONEq(t, `{"success":true}`, string(got.Result))

		// Rejected, and expired.
		r := propose("k3", time.Hour)
		ok, err = s.RejectApproval(ctx, r.ID, bola.ID, "no", now, &audit.Entry{ID: uuid.New(), OperatorID: bola.ID, Action: audit.ApprovalRejected, CreatedAt: now})
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = s.RejectApproval(ctx, r.ID, bola.ID, "again", now, &audit.Entry{ID: uuid.New(), OperatorID: bola.ID, Action: audit.ApprovalRejected, CreatedAt: now})
		require.NoError(t, err)
		require.False(t, ok, "decided once")
		x := propose("k4", time.Minute)
		later := now.Add(2 * time.Minute)
		ok, err = s.ClaimApproval(ctx, x.ID, bola.ID, later)
		require.NoError(t, err)
		require.False(t, ok, "past its expiry")
		list := func(st approvals.Status) []uuid.UUID {
			t.Helper()
			rows, err := s.ListApprovals(ctx, approvals.Filter{Status: &st}, later, nil, 10)
			require.NoError(t, err)
			var ids []uuid.UUID
			for _, a := range rows {
				ids = append(ids, a.ID)
			}
			return ids
		}
		require.Empty(t, list(approvals.Pending))
		require.Equal(t, []uuid.UUID{x.ID}, list(approvals.Expired))
		require.Equal(t, []uuid.UUID{r.ID}, list(approvals.Rejected))
		require.Equal(t, []uuid.UUID{a.ID}, list(approvals.Approved))
		all, err := s.ListApprovals(ctx, approvals.Filter{}, later, nil, 10)
		require.NoError(t, err)
		require.Len(t, all, 3)
		n, oldest, err = s.PendingApprovals(ctx, later)
		require.NoError(t, err)
		require.Zero(t, n)
		require.Nil(t, oldest)
	})
}
