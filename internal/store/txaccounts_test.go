package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/internal/apikeys"
	"partnerd/internal/audit"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/chain"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/lifecycle"
	"partnerd/internal/partners"
	"partnerd/internal/partnerusers"
	"partnerd/internal/store"
	"partnerd/internal/webhook"
)

// TestTheAccountsUnitOfWorkWritesInItself: the statements an operator action or a
// partner user's change makes through the unit of work it is handed (accounts,
// keys, audit rows, refund tasks resolved, partner users, a webhook delivery's
// steps) run in that transaction: the unit reads its own writes, and a rollback
// leaves nothing, on both databases.
func TestTheAccountsUnitOfWorkWritesInItself(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := store.Now()
		rollback := errors.New("roll back")
		p := &partners.Partner{ID: uuid.New(), Name: "Acme", Environment: partners.Sandbox, KeyHash: partners.HashKey("sk_sandbox_x"),
			KeyPrefix: "sk_sandbox_x", FeeRate: decimal.RequireFromString("0.01"), ShareRate: decimal.RequireFromString("0.5"), CreatedAt: now}
		o := &operators.Operator{ID: uuid.New(), Name: "Ada", KeyHash: partners.HashKey("ok_x"), KeyPrefix: "ok_x", CreatedAt: now}
		u := &partnerusers.User{ID: uuid.New(), PartnerID: p.ID, Email: "a@example.com", Role: partnerusers.Admin, Status: partnerusers.Invited,
			CreatedAt: now, UpdatedAt: now}
		ev := &webhook.Event{ID: uuid.New(), PartnerID: p.ID, Type: "test", Payload: []byte(`{}`), CreatedAt: now}
		hash := "0x" + "7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b"
		err := s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			require.NoError(t, tx.CreatePartner(ctx, p))
			gotP, err := tx.PartnerByID(ctx, p.ID)
			require.NoError(t, err)
			require.Equal(t, "Acme", gotP.Name)
			require.NoError(t, tx.CreateOperator(ctx, o))
			gotO, err := tx.OperatorByID(ctx, o.ID)
			require.NoError(t, err)
			require.Equal(t, "Ada", gotO.Name)

			k := &apikeys.Key{ID: uuid.New(), Owner: apikeys.Partner, OwnerID: p.ID, Hash: partners.HashKey("sk_sandbox_y"), Prefix: "sk_sandbox_y", CreatedAt: now}
			require.NoError(t, tx.InsertAPIKey(ctx, k))
			k.RevokedAt = &now
			require.NoError(t, tx.UpdateAPIKey(ctx, k))
			gotK, err := tx.APIKey(ctx, apikeys.Partner, p.ID, k.ID)
			require.NoError(t, err)
			require.NotNil(t, gotK.RevokedAt, "the unit reads its own update")
			require.NoError(t, tx.InsertAudit(ctx, &audit.Entry{ID: uuid.New(), OperatorID: o.ID, Action: audit.KeyRevoked, SubjectID: &k.ID, CreatedAt: now}))

			fills, err := tx.FillsOf(ctx, []uuid.UUID{uuid.New()})
			require.NoError(t, err)
			require.Empty(t, fills)
			_, err = tx.Transaction(ctx, uuid.New())
			require.Equal(t, apperr.NotFound, apperr.CodeOf(err))

			task, err := tx.InsertUnmatchedDeposit(ctx, &lifecycle.RefundTask{ID: uuid.New(), Kind: lifecycle.TaskUnmatched, Network: chain.BEP20,
				TxHash: hash, FromAddress: "0xfrom", ToAddress: "0xto", Amount: decimal.RequireFromString("1"), RawAmount: "1000000",
				BlockNumber: 7, Status: lifecycle.TaskOpen, CreatedAt: now})
			require.NoError(t, err)
			ok, err := tx.ResolveUnmatchedDeposit(ctx, task.ID, lifecycle.TaskResolution{Status: lifecycle.TaskCredited, Note: ptr("kept"), OperatorID: o.ID, At: now})
			require.NoError(t, err)
			require.True(t, ok)
			closed, err := tx.UnmatchedDeposit(ctx, task.ID)
			require.NoError(t, err)
			require.Equal(t, lifecycle.TaskCredited, closed.Status)

			require.NoError(t, tx.InsertPartnerUser(ctx, u))
			u.Role = partnerusers.Developer
			require.NoError(t, tx.UpdatePartnerUser(ctx, u))
			byEmail, err := tx.PartnerUserByEmail(ctx, p.ID, partnerusers.EmailKey(u.Email))
			require.NoError(t, err)
			require.Equal(t, partnerusers.Developer, byEmail.Role)
			team, err := tx.PartnerUsers(ctx, p.ID)
			require.NoError(t, err)
			require.Len(t, team, 1)
			inv := &partnerusers.Invitation{ID: uuid.New(), UserID: u.ID, TokenHash: partnerusers.HashToken("t"),
				By: partnerusers.Inviter{Kind: partnerusers.ByCLI}, ExpiresAt: now.Add(partnerusers.InvitationTTL), CreatedAt: now}
			require.NoError(t, tx.InsertPartnerInvitation(ctx, inv))
			used, err := tx.UsePartnerInvitation(ctx, inv.ID, now)
			require.NoError(t, err)
			require.True(t, used)
			require.NoError(t, tx.DeletePartnerInvitations(ctx, u.ID))
			require.NoError(t, tx.ReplacePartnerRecoveryCodes(ctx, u.ID, []string{"h1", "h2"}, now))
			got, err := tx.PartnerUser(ctx, p.ID, u.ID)
			require.NoError(t, err)
			require.Equal(t, u.ID, got.ID)

			require.NoError(t, tx.AppendTestEvent(ctx, ev))
			taken, ep, requeued, err := tx.TakeDelivery(ctx, ev.ID)
			require.NoError(t, err)
			require.Equal(t, ev.ID, taken.ID)
			require.Nil(t, ep, "no endpoint")
			require.False(t, requeued)
			taken.PublishStatus, taken.Attempts = webhook.Failed, 1
			requeued, err = tx.SaveEventState(ctx, taken, &webhook.Attempt{AttemptedAt: now, DurationMS: 3, Error: ptr("refused")}, now)
			require.NoError(t, err)
			require.False(t, requeued)
			return rollback
		})
		require.ErrorIs(t, err, rollback)

		_, err = s.PartnerByID(ctx, p.ID)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err), "rolled back with the unit")
		_, err = s.OperatorByID(ctx, o.ID)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
		_, err = s.PartnerUserByID(ctx, u.ID)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
		_, err = s.EventByID(ctx, nil, ev.ID)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
		all, err := s.ListAudit(ctx, audit.Filter{OperatorID: &o.ID}, nil, 10)
		require.NoError(t, err)
		require.Empty(t, all)
	})
}

func ptr[T any](v T) *T { return &v }
