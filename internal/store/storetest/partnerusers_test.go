package storetest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/internal/audit"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/partnerusers"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

func newPartnerUser(t *testing.T, s *store.Store, partnerID uuid.UUID, email string) *partnerusers.User {
	t.Helper()
	now := store.Now()
	u := &partnerusers.User{ID: uuid.New(), PartnerID: partnerID, Email: email, Role: partnerusers.Admin,
		Status: partnerusers.Invited, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, s.InsertPartnerUser(context.Background(), u))
	return u
}

// TestPartnerUsers: users are unique per partner by address whatever its case
// (Unicode folded), read back exactly, scoped to their partner; every write of
// the second factor and invitations is conditional and holds once.
func TestPartnerUsers(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		p, other := newPartner(t, s), newPartner(t, s)
		u := newPartnerUser(t, s, p.ID, "Ada.Ünal@Example.com")
		err := s.InsertPartnerUser(ctx, &partnerusers.User{ID: uuid.New(), PartnerID: p.ID, Email: "ada.ünal@example.COM",
			Role: partnerusers.Finance, Status: partnerusers.Invited, CreatedAt: store.Now(), UpdatedAt: store.Now()})
		require.Equal(t, apperr.InvalidRequest, apperr.CodeOf(err), "one user per address and partner, whatever the case: %v", err)
		same := newPartnerUser(t, s, other.ID, "ada.ünal@example.com") // another partner's team may hold it

		got, err := s.PartnerUserByEmail(ctx, p.ID, partnerusers.EmailKey("ADA.ÜNAL@EXAMPLE.COM"))
		require.NoError(t, err)
		require.Equal(t, u, got)
		_, err = s.PartnerUser(ctx, other.ID, u.ID)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err), "another partner's user is not found")
		byID, err := s.PartnerUserByID(ctx, u.ID)
		require.NoError(t, err)
		require.Equal(t, u, byID)
		both, err := s.PartnerUsersByEmail(ctx, partnerusers.EmailKey(u.Email))
		require.NoError(t, err)
		require.Len(t, both, 2)
		require.Equal(t, []uuid.UUID{u.ID, same.ID}, []uuid.UUID{both[0].ID, both[1].ID})

		// Every column written and read back.
		now := store.Now()
		secret := "JBSWY3DPEHPK3PXP"
		u.Status, u.Role, u.PasswordHash, u.TOTPSecret, u.TOTPEnabledAt = partnerusers.Active, partnerusers.Developer, "$argon2id$x", &secret, &now
		u.SessionEpoch, u.UpdatedAt, u.PasswordChangedAt, u.DisabledAt = 3, now, &now, &now
		require.NoError(t, s.UpdatePartnerUser(ctx, u))
		got, err = s.PartnerUser(ctx, p.ID, u.ID)
		require.NoError(t, err)
		require.Equal(t, u, got)
		list, err := s.PartnerUsers(ctx, p.ID)
		require.NoError(t, err)
		require.Equal(t, []*partnerusers.User{u}, list)

		// TOTP steps only move forward.
		for _, c := range []struct {
			step int64
			ok   bool
		}{{100, true}, {100, false}, {99, false}, {101, true}} {
			ok, err := s.AdvancePartnerTOTPStep(ctx, u.ID, c.step)
			require.NoError(t, err)
			require.Equal(t, c.ok, ok, "step %d", c.step)
		}
		got, _ = s.PartnerUser(ctx, p.ID, u.ID)
		require.Equal(t, int64(101), *got.TOTPLastStep)

		// Invitations: by hash only, used once, not after expiry, deleted when unused.
		inv := &partnerusers.Invitation{ID: uuid.New(), UserID: u.ID, TokenHash: partnerusers.HashToken("tok"),
			By: partnerusers.Inviter{Kind: partnerusers.ByCLI}, ExpiresAt: now.Add(time.Hour), CreatedAt: now}
		require.NoError(t, s.InsertPartnerInvitation(ctx, inv))
		op := newOperator(t, s)
		byOp := &partnerusers.Invitation{ID: uuid.New(), UserID: u.ID, TokenHash: partnerusers.HashToken("tok2"),
			By: partnerusers.Inviter{Kind: partnerusers.ByOperator, ID: op.ID}, ExpiresAt: now.Add(time.Hour), CreatedAt: now}
		require.NoError(t, s.InsertPartnerInvitation(ctx, byOp))
		gotInv, err := s.PartnerInvitationByHash(ctx, partnerusers.HashToken("tok"))
		require.NoError(t, err)
		require.Equal(t, inv, gotInv)
		gotOp, err := s.PartnerInvitationByHash(ctx, partnerusers.HashToken("tok2"))
		require.NoError(t, err)
		require.Equal(t, partnerusers.Inviter{Kind: partnerusers.ByOperator, ID: op.ID}, gotOp.By)
		_, err = s.PartnerInvitationByHash(ctx, "tok")
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err), "the token itself finds nothing")
		ok, err := s.UsePartnerInvitation(ctx, inv.ID, now.Add(time.Hour))
		require.NoError(t, err)
		require.False(t, ok, "not at or after its expiry")
		ok, err = s.UsePartnerInvitation(ctx, inv.ID, now.Add(time.Minute))
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = s.UsePartnerInvitation(ctx, inv.ID, now.Add(2*time.Minute))
		require.NoError(t, err)
		require.False(t, ok, "once")
		require.NoError(t, s.DeletePartnerInvitations(ctx, u.ID))
		_, err = s.PartnerInvitationByHash(ctx, partnerusers.HashToken("tok2"))
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err), "the unused one is gone")
		gotInv, err = s.PartnerInvitationByHash(ctx, partnerusers.HashToken("tok"))
		require.NoError(t, err, "the used one stays, as the record of the acceptance")
		require.NotNil(t, gotInv.UsedAt)

		// Recovery codes: replaced as a set, each used once.
		require.NoError(t, s.ReplacePartnerRecoveryCodes(ctx, u.ID, []string{"h1", "h2"}, now))
		require.NoError(t, s.ReplacePartnerRecoveryCodes(ctx, u.ID, []string{"h3", "h4", "h5"}, now))
		left, err := s.PartnerRecoveryCodesLeft(ctx, u.ID)
		require.NoError(t, err)
		require.Equal(t, 3, left)
		ok, err = s.UsePartnerRecoveryCode(ctx, u.ID, "h1", now)
		require.NoError(t, err)
		require.False(t, ok, "replaced codes are gone")
		ok, err = s.UsePartnerRecoveryCode(ctx, same.ID, "h3", now)
		require.NoError(t, err)
		require.False(t, ok, "another user's code")
		ok, err = s.UsePartnerRecoveryCode(ctx, u.ID, "h3", now)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = s.UsePartnerRecoveryCode(ctx, u.ID, "h3", now)
		require.NoError(t, err)
		require.False(t, ok, "once")
		left, _ = s.PartnerRecoveryCodesLeft(ctx, u.ID)
		require.Equal(t, 2, left)

		// The audit names the user's partner and address.
		ref := u.Email
		entry := audit.Entry{ID: uuid.New(), OperatorID: op.ID, Action: audit.PartnerUserInvited, SubjectID: &u.ID, Reference: &ref, CreatedAt: now}
		require.NoError(t, s.InsertAudit(ctx, &entry))
		parties, err := s.AuditParties(ctx, []uuid.UUID{entry.ID})
		require.NoError(t, err)
		require.Equal(t, p.ID, *parties[entry.ID].PartnerID)
		require.Equal(t, u.Email, *parties[entry.ID].SubjectName)
	})
}

// TestPartnerTeamLock: units of work that lock a partner's team and then count
// its admins run one after the other, so of many parallel demotions of the last
// two admins only one happens (without the lock, PostgreSQL's READ COMMITTED
// lets two see the other still admin); an unknown partner is NotFound.
func TestPartnerTeamLock(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		p := newPartner(t, s)
		admins := []*partnerusers.User{newPartnerUser(t, s, p.ID, "one@example.com"), newPartnerUser(t, s, p.ID, "two@example.com")}
		for _, u := range admins {
			u.Status = partnerusers.Active
			require.NoError(t, s.UpdatePartnerUser(ctx, u))
		}
		var wg sync.WaitGroup
		errs := make(chan error, 24)
		start := make(chan struct{})
		for i := range 24 {
			wg.Go(func() {
				<-start
				errs <- s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
					if err := tx.LockPartnerTeam(ctx, p.ID); err != nil {
						return err
					}
					team, err := tx.PartnerUsers(ctx, p.ID)
					if err != nil {
						return err
					}
					var target *partnerusers.User
					left := 0
					for _, u := range team {
						if u.Role == partnerusers.Admin {
							left++
							if u.ID == admins[i%2].ID {
								target = u
							}
						}
					}
					if left < 2 || target == nil {
						return nil
					}
					target.Role = partnerusers.Developer
					return tx.UpdatePartnerUser(ctx, target)
				})
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		team, err := s.PartnerUsers(ctx, p.ID)
		require.NoError(t, err)
		left := 0
		for _, u := range team {
			if u.Role == partnerusers.Admin {
				left++
			}
		}
		require.Equal(t, 1, left)

		err = s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error { return tx.LockPartnerTeam(ctx, uuid.New()) })
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
	})
}
