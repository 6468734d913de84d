package partnerusers_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/internal/audit"
	"partnerd/internal/audit/actor"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/cursor"
	"partnerd/internal/kit/uow"
	"partnerd/internal/partners"
	"partnerd/internal/partnerusers"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type env struct {
	st    *store.Store
	users *partnerusers.Service
	audit *audit.Log
	clk   *clock
	p, q  *partners.Partner
}

// setup opens a migrated store at url with two partners and the service on a
// clock of its own (starting at a step boundary, 10:00:00 UTC).
func setup(t *testing.T, url string) *env {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, err = st.Migrate(ctx)
	require.NoError(t, err)
	clk := &clock{now: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)}
	ps := partners.NewService(store.For(st, func(tx *store.Tx) partners.Tx { return tx }), partners.Sandbox, partners.Defaults{FeeRate: decimal.RequireFromString("0.015"), ShareRate: decimal.RequireFromString("0.4")}, clk.Now)
	p, _, err := func() (x *partners.Partner, key string, err error) {
		err = st.Transact(ctx, func(ctx context.Context, tx *store.Tx) (err error) {
			x, key, err = ps.Create(ctx, tx, "Acme Pay")
			return err
		})
		return x, key, err
	}()
	require.NoError(t, err)
	q, _, err := func() (x *partners.Partner, key string, err error) {
		err = st.Transact(ctx, func(ctx context.Context, tx *store.Tx) (err error) {
			x, key, err = ps.Create(ctx, tx, "Other Pay")
			return err
		})
		return x, key, err
	}()
	require.NoError(t, err)
	log := audit.New(st, cursor.NewCodec([]byte("s")), clk.Now)
	users := partnerusers.New(partnerusers.Deps{Store: store.For(st, func(tx *store.Tx) partnerusers.Tx { return tx }), Partners: ps, Audit: log, Now: clk.Now, Issuer: "partnerd test",
		Logger: slog.New(slog.DiscardHandler)})
	return &env{st: st, users: users, audit: log, clk: clk, p: p, q: q}
}

const goodPassword = "correct horse battery staple"

// active invites email to partner p as role and accepts with goodPassword.
func (e *env) active(t *testing.T, p *partners.Partner, email string, role partnerusers.Role) *partnerusers.User {
	t.Helper()
	ctx := context.Background()
	inv, err := e.users.Invite(ctx, uow.Plain[*partnerusers.NewInvitation, partnerusers.Tx](), p.ID, email, role, actor.CLI)
	require.NoError(t, err)
	u, err := e.users.Accept(ctx, inv.Token, goodPassword)
	require.NoError(t, err)
	return u
}

func code(t *testing.T, err error) apperr.Code {
	t.Helper()
	require.Error(t, err)
	return apperr.CodeOf(err)
}

// TestInviteAndAccept: an invitation is a one-time link valid 72 hours whose
// token is stored only as its hash; accepting sets a password under the rules
// and activates the user; a used, expired or unknown link is refused clearly; a
// new invitation of a still-invited address replaces its link; invitations by an
// operator or the command line are audited.
func TestInviteAndAccept(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, db.URL)
			ctx := context.Background()
			inv, err := e.users.Invite(ctx, uow.Plain[*partnerusers.NewInvitation, partnerusers.Tx](), e.p.ID, " Ada@Example.com ", partnerusers.Admin, actor.CLI)
			require.NoError(t, err)
			require.Equal(t, "Ada@Example.com", inv.User.Email)
			require.Equal(t, partnerusers.Invited, inv.User.Status)
			require.Equal(t, e.clk.Now().Add(72*time.Hour), inv.Invitation.ExpiresAt)
			require.Equal(t, "/dashboard/invite/"+inv.Token, inv.Path())
			require.GreaterOrEqual(t, len(inv.Token), 43, "256 bits")

			// Only the token's hash is stored, nowhere the token.
			var hashes []string
			rows, err := e.st.SQL().QueryContext(ctx, `SELECT token_hash FROM partner_invitations`)
			require.NoError(t, err)
			for rows.Next() {
				var h string
				require.NoError(t, rows.Scan(&h))
				hashes = append(hashes, h)
			}
			require.NoError(t, rows.Err())
			require.Equal(t, []string{partnerusers.HashToken(inv.Token)}, hashes)
			require.NotContains(t, dump(t, e.st, "partner_invitations", "partner_users"), inv.Token)

			// The audit: the command line invited this user.
			page, err := e.audit.List(ctx, audit.Filter{}, 10, "")
			require.NoError(t, err)
			require.Len(t, page.Items, 1)
			got := page.Items[0]
			require.Equal(t, audit.PartnerUserInvited, got.Action)
			require.Equal(t, audit.ByCLI, got.Actor)
			require.Equal(t, inv.User.ID, *got.SubjectID)
			require.Equal(t, "Ada@Example.com", *got.Reference)

			// Refused invitations.
			for _, c := range []struct {
				partner uuid.UUID
				email   string
				role    partnerusers.Role
				want    apperr.Code
			}{
				{uuid.New(), "bob@example.com", partnerusers.Admin, apperr.NotFound},
				{e.p.ID, "not an address", partnerusers.Admin, apperr.InvalidRequest},
				{e.p.ID, "Bob <bob@example.com>", partnerusers.Admin, apperr.InvalidRequest},
				{e.p.ID, "bob@example.com", "owner", apperr.InvalidRequest},
			} {
				_, err := e.users.Invite(ctx, uow.Plain[*partnerusers.NewInvitation, partnerusers.Tx](), c.partner, c.email, c.role, actor.CLI)
				require.Equal(t, c.want, code(t, err), "%s %s: %v", c.email, c.role, err)
			}

			// A weak password is refused and leaves the link usable.
			_, err = e.users.Accept(ctx, inv.Token, "password1234")
			require.Equal(t, apperr.InvalidRequest, code(t, err))
			// So is one made of the partner's name, in words.
			_, err = e.users.Accept(ctx, inv.Token, "AcmePay-acmepay-2026")
			require.Equal(t, apperr.InvalidRequest, code(t, err))
			require.Contains(t, err.Error(), "your email address or your partner's name")
			_, err = e.users.Accept(ctx, "no-such-token", goodPassword)
			require.Equal(t, apperr.NotFound, code(t, err))

			// A new invitation of the same address (any case) replaces the link.
			again, err := e.users.Invite(ctx, uow.Plain[*partnerusers.NewInvitation, partnerusers.Tx](), e.p.ID, "ADA@example.com", partnerusers.Finance, actor.CLI)
			require.NoError(t, err)
			require.Equal(t, inv.User.ID, again.User.ID)
			require.Equal(t, partnerusers.Finance, again.User.Role)
			_, err = e.users.Accept(ctx, inv.Token, goodPassword)
			require.Equal(t, apperr.NotFound, code(t, err), "the replaced link is gone")

			u, err := e.users.Accept(ctx, again.Token, goodPassword)
			require.NoError(t, err)
			require.Equal(t, partnerusers.Active, u.Status)
			require.NotNil(t, u.PasswordChangedAt)
			require.True(t, strings.HasPrefix(u.PasswordHash, "$argon2id$"))
			_, err = e.users.Accept(ctx, again.Token, goodPassword)
			require.Equal(t, apperr.InvalidStateTransition, code(t, err), "used once")
			require.Contains(t, err.Error(), "already used")

			_, err = e.users.Invite(ctx, uow.Plain[*partnerusers.NewInvitation, partnerusers.Tx](), e.p.ID, "ada@example.com", partnerusers.Admin, actor.CLI)
			require.Equal(t, apperr.InvalidRequest, code(t, err), "an active user is not invited again")

			// Expiry: 72 hours.
			late, err := e.users.Invite(ctx, uow.Plain[*partnerusers.NewInvitation, partnerusers.Tx](), e.p.ID, "late@example.com", partnerusers.Developer, actor.CLI)
			require.NoError(t, err)
			e.clk.Add(72 * time.Hour)
			_, err = e.users.Accept(ctx, late.Token, goodPassword)
			require.Equal(t, apperr.InvalidStateTransition, code(t, err))
			require.Contains(t, err.Error(), "expired")

			// The same address may be on another partner's team.
			other, err := e.users.Invite(ctx, uow.Plain[*partnerusers.NewInvitation, partnerusers.Tx](), e.q.ID, "ada@example.com", partnerusers.Admin, actor.CLI)
			require.NoError(t, err)
			require.NotEqual(t, u.ID, other.User.ID)
			list, err := e.users.List(ctx, e.p.ID)
			require.NoError(t, err)
			require.Len(t, list, 2, "Ada and the late one; not the other partner's")
			_, err = e.users.Get(ctx, e.q.ID, u.ID)
			require.Equal(t, apperr.NotFound, code(t, err), "another partner's user")
			_, err = e.users.List(ctx, uuid.New())
			require.Equal(t, apperr.NotFound, code(t, err))

			// A partner's admin invites; a finance user does not, nor another partner's admin.
			admin := e.active(t, e.p, "admin@example.com", partnerusers.Admin)
			_, err = e.users.Invite(ctx, uow.Plain[*partnerusers.NewInvitation, partnerusers.Tx](), e.p.ID, "dev@example.com", partnerusers.Developer, actor.OfPartnerUser(admin.ID, ""))
			require.NoError(t, err)
			_, err = e.users.Invite(ctx, uow.Plain[*partnerusers.NewInvitation, partnerusers.Tx](), e.p.ID, "dev2@example.com", partnerusers.Developer, actor.OfPartnerUser(u.ID, ""))
			require.Equal(t, apperr.Unauthorized, code(t, err), "finance does not invite")
			_, err = e.users.Invite(ctx, uow.Plain[*partnerusers.NewInvitation, partnerusers.Tx](), e.q.ID, "dev3@example.com", partnerusers.Developer, actor.OfPartnerUser(admin.ID, ""))
			require.Equal(t, apperr.NotFound, code(t, err), "not another partner's team")
		})
	}
}

// dump returns every row of tables as text.
func dump(t *testing.T, st *store.Store, tables ...string) string {
	t.Helper()
	var b strings.Builder
	for _, table := range tables {
		rows, err := st.SQL().QueryContext(context.Background(), `SELECT * FROM `+table)
		require.NoError(t, err)
		cols, err := rows.Columns()
		require.NoError(t, err)
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			require.NoError(t, rows.Scan(ptrs...))
			for _, v := range vals {
				if bs, ok := v.([]byte); ok {
					v = string(bs)
				}
				fmt.Fprint(&b, v, "|")
			}
			b.WriteByte('\n')
		}
		require.NoError(t, rows.Err())
		_ = rows.Close()
	}
	require.NotEmpty(t, b.String())
	return b.String()
}

// TestAuthenticate: the right password of an active user signs in; a wrong one,
// an unknown address, a user still invited or disabled are all the same
// Unauthorized, and an unknown address costs an argon2id verification too.
func TestAuthenticate(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, db.URL)
			ctx := context.Background()
			ada := e.active(t, e.p, "ada@example.com", partnerusers.Admin)
			e.active(t, e.p, "second@example.com", partnerusers.Admin)
			_, err := e.users.Invite(ctx, uow.Plain[*partnerusers.NewInvitation, partnerusers.Tx](), e.p.ID, "pending@example.com", partnerusers.Finance, actor.CLI)
			require.NoError(t, err)

			got, err := e.users.Authenticate(ctx, "ADA@example.com", goodPassword)
			require.NoError(t, err)
			require.Len(t, got, 1)
			require.Equal(t, ada.ID, got[0].ID)

			// The same address on two teams with the same password: both, to choose from.
			e.active(t, e.q, "ada@example.com", partnerusers.Finance)
			got, err = e.users.Authenticate(ctx, "ada@example.com", goodPassword)
			require.NoError(t, err)
			require.Len(t, got, 2)

			for _, c := range []struct{ email, password string }{
				{"ada@example.com", goodPassword + "!"}, {"nobody@example.com", goodPassword},
				{"pending@example.com", goodPassword}, {"pending@example.com", ""}, {"ada@example.com", strings.Repeat("x", 10000)},
			} {
				_, err := e.users.Authenticate(ctx, c.email, c.password)
				require.Equal(t, apperr.Unauthorized, code(t, err), c.email)
				ae, _ := apperr.As(err)
				require.Equal(t, "The email or password is wrong.", ae.Message, "which part was wrong is not told")
			}

			// The longest password (128 four-byte characters) signs in; with a byte more it does not.
			longest := strings.Repeat("😀", partnerusers.MaxPasswordLength)
			inv, err := e.users.Invite(ctx, uow.Plain[*partnerusers.NewInvitation, partnerusers.Tx](), e.p.ID, "long@example.com", partnerusers.Developer, actor.CLI)
			require.NoError(t, err)
			_, err = e.users.Accept(ctx, inv.Token, longest)
			require.NoError(t, err)
			_, err = e.users.Authenticate(ctx, "long@example.com", longest)
			require.NoError(t, err)
			_, err = e.users.Authenticate(ctx, "long@example.com", longest+"x")
			require.Equal(t, apperr.Unauthorized, code(t, err))

			_, err = e.users.DisableBy(ctx, e.p.ID, ada.ID, actor.CLI)
			require.NoError(t, err)
			got, err = e.users.Authenticate(ctx, "ada@example.com", goodPassword)
			require.NoError(t, err)
			require.Len(t, got, 1, "the disabled one no longer signs in")
			require.Equal(t, e.q.ID, got[0].PartnerID)
		})
	}
}

// TestSecondFactor: enrolment is confirmed by a first code and yields ten
// one-time recovery codes; a code is accepted one step early or late, never
// twice nor after a later one; recovery codes work once each.
func TestSecondFactor(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, db.URL)
			ctx := context.Background()
			ada := e.active(t, e.p, "ada@example.com", partnerusers.Admin)
			gen := func(at time.Time, secret string) string {
				c, err := totp.GenerateCodeCustom(secret, at, totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
				require.NoError(t, err)
				return c
			}
			_, err := e.users.ConfirmTOTP(ctx, e.p.ID, ada.ID, "123456")
			require.Equal(t, apperr.InvalidStateTransition, code(t, err), "nothing to confirm yet")
			en, err := e.users.EnrollTOTP(ctx, e.p.ID, ada.ID)
			require.NoError(t, err)
			require.Len(t, en.Secret, 32, "160 bits in base32")
			require.Contains(t, en.URL, "otpauth://totp/partnerd%20test:ada@example.com?")
			require.Contains(t, en.URL, "issuer=partnerd%20test")
			_, err = e.users.EnrollTOTP(ctx, e.q.ID, ada.ID)
			require.Equal(t, apperr.NotFound, code(t, err), "another partner's user")

			now := e.clk.Now()
			_, err = e.users.ConfirmTOTP(ctx, e.p.ID, ada.ID, gen(now.Add(-2*30*time.Second), en.Secret))
			require.Equal(t, apperr.Unauthorized, code(t, err), "two steps off")
			codes, err := e.users.ConfirmTOTP(ctx, e.p.ID, ada.ID, gen(now, en.Secret))
			require.NoError(t, err)
			require.Len(t, codes, 10)
			sorted := slices.Clone(codes)
			sort.Strings(sorted)
			require.Len(t, slices.Compact(sorted), 10, "all different")
			for _, c := range codes {
				require.Regexp(t, `^[a-z2-9]{5}-[a-z2-9]{5}$`, c)
			}
			_, err = e.users.EnrollTOTP(ctx, e.p.ID, ada.ID)
			require.Equal(t, apperr.InvalidStateTransition, code(t, err), "already on")
			var hashes string
			require.NoError(t, e.st.SQL().QueryRowContext(ctx, `SELECT COUNT(*) FROM partner_user_recovery_codes WHERE code_hash = '`+
				partnerusers.HashToken(strings.ReplaceAll(codes[0], "-", ""))+`'`).Scan(&hashes))
			require.Equal(t, "1", hashes, "stored as hashes")
			require.NotContains(t, dump(t, e.st, "partner_user_recovery_codes"), codes[0][:5]+codes[0][6:])

			ada, err = e.users.Get(ctx, e.p.ID, ada.ID)
			require.NoError(t, err)
			require.True(t, ada.TOTPEnabled())
			require.Equal(t, apperr.Unauthorized, code(t, e.users.VerifyTOTP(ctx, ada, gen(now, en.Secret))), "the confirming code is spent")

			// The next step's code, once; then the previous step's is refused.
			e.clk.Add(30 * time.Second)
			now = e.clk.Now()
			require.NoError(t, e.users.VerifyTOTP(ctx, ada, gen(now, en.Secret)))
			require.Equal(t, apperr.Unauthorized, code(t, e.users.VerifyTOTP(ctx, ada, gen(now, en.Secret))), "replayed in its step")
			e.clk.Add(2 * 30 * time.Second)
			now = e.clk.Now()
			require.NoError(t, e.users.VerifyTOTP(ctx, ada, gen(now.Add(-30*time.Second), en.Secret)), "one step late")
			require.NoError(t, e.users.VerifyTOTP(ctx, ada, gen(now.Add(30*time.Second), en.Secret)), "one step early")
			require.Equal(t, apperr.Unauthorized, code(t, e.users.VerifyTOTP(ctx, ada, gen(now, en.Secret))), "older than the last accepted")
			require.Equal(t, apperr.Unauthorized, code(t, e.users.VerifyTOTP(ctx, ada, "12345")))
			require.Equal(t, apperr.Unauthorized, code(t, e.users.VerifyTOTP(ctx, ada, "abcdef")))

			// Recovery codes: once each, in any case and spacing.
			require.NoError(t, e.users.UseRecoveryCode(ctx, ada, " "+strings.ToUpper(codes[3])+" "))
			require.Equal(t, apperr.Unauthorized, code(t, e.users.UseRecoveryCode(ctx, ada, codes[3])), "once")
			require.Equal(t, apperr.Unauthorized, code(t, e.users.UseRecoveryCode(ctx, ada, "aaaaa-aaaaa")))
			left, err := e.users.RecoveryCodesLeft(ctx, e.p.ID, ada.ID)
			require.NoError(t, err)
			require.Equal(t, 9, left)
			fresh, err := e.users.RegenerateRecoveryCodes(ctx, e.p.ID, ada.ID)
			require.NoError(t, err)
			require.Len(t, fresh, 10)
			require.Equal(t, apperr.Unauthorized, code(t, e.users.UseRecoveryCode(ctx, ada, codes[4])), "the old set is gone")
			require.NoError(t, e.users.UseRecoveryCode(ctx, ada, fresh[0]))

			bob := e.active(t, e.p, "bob@example.com", partnerusers.Finance)
			require.Equal(t, apperr.Unauthorized, code(t, e.users.VerifyTOTP(ctx, bob, "123456")), "no second factor on")
			require.Equal(t, apperr.Unauthorized, code(t, e.users.UseRecoveryCode(ctx, bob, fresh[1])), "another user's code")
			_, err = e.users.RegenerateRecoveryCodes(ctx, e.p.ID, bob.ID)
			require.Equal(t, apperr.InvalidStateTransition, code(t, err))
		})
	}
}

// TestTeamChanges: role changes and disabling keep an active admin; disabling
// and a password change grow the session epoch (sessions end); a password
// change needs the current password and follows the rules.
func TestTeamChanges(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, db.URL)
			ctx := context.Background()
			ada := e.active(t, e.p, "ada@example.com", partnerusers.Admin)
			bob := e.active(t, e.p, "bob@example.com", partnerusers.Developer)

			_, err := e.users.ChangeRoleBy(ctx, e.p.ID, ada.ID, partnerusers.Finance, actor.CLI)
			require.Equal(t, apperr.InvalidStateTransition, code(t, err), "the last admin")
			_, err = e.users.DisableBy(ctx, e.p.ID, ada.ID, actor.CLI)
			require.Equal(t, apperr.InvalidStateTransition, code(t, err), "the last admin")
			_, err = e.users.ChangeRoleBy(ctx, e.p.ID, bob.ID, "root", actor.CLI)
			require.Equal(t, apperr.InvalidRequest, code(t, err))
			_, err = e.users.ChangeRoleBy(ctx, e.q.ID, bob.ID, partnerusers.Admin, actor.CLI)
			require.Equal(t, apperr.NotFound, code(t, err), "another partner's user")
			bob, err = e.users.ChangeRoleBy(ctx, e.p.ID, bob.ID, partnerusers.Admin, actor.CLI)
			require.NoError(t, err)
			require.Equal(t, partnerusers.Admin, bob.Role)
			require.Zero(t, bob.SessionEpoch, "a role change keeps sessions")

			ada, err = e.users.DisableBy(ctx, e.p.ID, ada.ID, actor.CLI)
			require.NoError(t, err)
			require.Equal(t, partnerusers.Disabled, ada.Status)
			require.Equal(t, e.clk.Now(), *ada.DisabledAt)
			require.Equal(t, int64(1), ada.SessionEpoch, "sessions end")
			again, err := e.users.DisableBy(ctx, e.p.ID, ada.ID, actor.CLI)
			require.NoError(t, err)
			require.Equal(t, int64(1), again.SessionEpoch, "disabling twice changes nothing")
			_, err = e.users.ChangeRoleBy(ctx, e.p.ID, ada.ID, partnerusers.Admin, actor.CLI)
			require.Equal(t, apperr.InvalidStateTransition, code(t, err))
			_, err = e.users.ChangePassword(ctx, e.p.ID, ada.ID, goodPassword, "another long passphrase")
			require.Equal(t, apperr.InvalidStateTransition, code(t, err))

			_, err = e.users.ChangePassword(ctx, e.p.ID, bob.ID, "wrong current password", "another long passphrase")
			require.Equal(t, apperr.Unauthorized, code(t, err))
			_, err = e.users.ChangePassword(ctx, e.p.ID, bob.ID, goodPassword, "short")
			require.Equal(t, apperr.InvalidRequest, code(t, err))
			e.clk.Add(time.Minute)
			bob, err = e.users.ChangePassword(ctx, e.p.ID, bob.ID, goodPassword, "another long passphrase")
			require.NoError(t, err)
			require.Equal(t, int64(1), bob.SessionEpoch, "sessions end")
			require.Equal(t, e.clk.Now(), *bob.PasswordChangedAt)
			_, err = e.users.Authenticate(ctx, "bob@example.com", goodPassword)
			require.Equal(t, apperr.Unauthorized, code(t, err), "the old password")
			_, err = e.users.Authenticate(ctx, "bob@example.com", "another long passphrase")
			require.NoError(t, err)

			// A disabled user's pending invitation goes with them.
			inv, err := e.users.Invite(ctx, uow.Plain[*partnerusers.NewInvitation, partnerusers.Tx](), e.p.ID, "carol@example.com", partnerusers.Finance, actor.CLI)
			require.NoError(t, err)
			_, err = e.users.DisableBy(ctx, e.p.ID, inv.User.ID, actor.CLI)
			require.NoError(t, err)
			_, err = e.users.Accept(ctx, inv.Token, goodPassword)
			require.Equal(t, apperr.NotFound, code(t, err))
		})
	}
}

// TestTeamChangesByUsers: a partner's admin invites, changes roles and disables
// through the By variants, each audited in the change's unit of work naming the
// user (actor partner_user) and listed as the partner's activity; a user who is
// not an active admin of the partner changes nothing and leaves no row; an
// unchanged role leaves no row.
func TestTeamChangesByUsers(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, db.URL)
			ctx := context.Background()
			ada := e.active(t, e.p, "ada@example.com", partnerusers.Admin)
			dev := e.active(t, e.p, "dev@example.com", partnerusers.Developer)
			out := e.active(t, e.q, "out@example.com", partnerusers.Admin)
			by := actor.OfPartnerUser(ada.ID, "")

			inv, err := e.users.Invite(ctx, uow.Plain[*partnerusers.NewInvitation, partnerusers.Tx](), e.p.ID, "fin@example.com", partnerusers.Finance, by)
			require.NoError(t, err)
			_, err = e.users.ChangeRoleBy(ctx, e.p.ID, dev.ID, partnerusers.Admin, actor.OfPartnerUser(dev.ID, ""))
			require.Equal(t, apperr.Unauthorized, code(t, err), "a developer changes no role")
			_, err = e.users.DisableBy(ctx, e.p.ID, dev.ID, actor.OfPartnerUser(out.ID, ""))
			require.Equal(t, apperr.NotFound, code(t, err), "another partner's admin")
			_, err = e.users.ChangeRoleBy(ctx, e.p.ID, dev.ID, partnerusers.Developer, by)
			require.NoError(t, err, "unchanged: no row")
			e.clk.Add(time.Second)
			dev, err = e.users.ChangeRoleBy(ctx, e.p.ID, dev.ID, partnerusers.Finance, by)
			require.NoError(t, err)
			require.Equal(t, partnerusers.Finance, dev.Role)
			e.clk.Add(time.Second)
			_, err = e.users.DisableBy(ctx, e.p.ID, dev.ID, by)
			require.NoError(t, err)

			page, err := e.audit.List(ctx, audit.Filter{UsersOf: &e.p.ID}, 10, "")
			require.NoError(t, err)
			require.Len(t, page.Items, 3)
			want := []struct {
				action  audit.Action
				subject uuid.UUID
				ref     string
			}{{audit.PartnerUserDisabled, dev.ID, "dev@example.com"}, {audit.PartnerUserRoleChanged, dev.ID, "finance"},
				{audit.PartnerUserInvited, inv.User.ID, "fin@example.com"}}
			for i, w := range want {
				got := page.Items[i]
				require.Equal(t, w.action, got.Action)
				require.Equal(t, audit.ByPartnerUser, got.Actor)
				require.Equal(t, ada.ID, *got.PartnerUserID)
				require.Equal(t, "ada@example.com", got.Who())
				require.Equal(t, audit.CLI, got.OperatorID)
				require.Equal(t, w.subject, *got.SubjectID)
				require.Equal(t, w.ref, *got.Reference)
			}
			other, err := e.audit.List(ctx, audit.Filter{UsersOf: &e.q.ID}, 10, "")
			require.NoError(t, err)
			require.Empty(t, other.Items, "another partner's activity")
		})
	}
}

// TestOnceUnderConcurrency: an invitation link and a TOTP code used by several
// requests at once work for exactly one of them.
func TestOnceUnderConcurrency(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, db.URL)
			ctx := context.Background()
			inv, err := e.users.Invite(ctx, uow.Plain[*partnerusers.NewInvitation, partnerusers.Tx](), e.p.ID, "ada@example.com", partnerusers.Admin, actor.CLI)
			require.NoError(t, err)
			race := func(fn func() error) (ok int, codes []apperr.Code) {
				var mu sync.Mutex
				var wg sync.WaitGroup
				for range 4 {
					wg.Go(func() {
						err := fn()
						mu.Lock()
						defer mu.Unlock()
						if err == nil {
							ok++
						} else {
							codes = append(codes, apperr.CodeOf(err))
						}
					})
				}
				wg.Wait()
				return ok, codes
			}
			ok, codes := race(func() error { _, err := e.users.Accept(ctx, inv.Token, goodPassword); return err })
			require.Equal(t, 1, ok, "one acceptance: %v", codes)
			for _, c := range codes {
				require.Equal(t, apperr.InvalidStateTransition, c)
			}

			en, err := e.users.EnrollTOTP(ctx, e.p.ID, inv.User.ID)
			require.NoError(t, err)
			first, err := totp.GenerateCode(en.Secret, e.clk.Now())
			require.NoError(t, err)
			_, err = e.users.ConfirmTOTP(ctx, e.p.ID, inv.User.ID, first)
			require.NoError(t, err)
			u, err := e.users.Get(ctx, e.p.ID, inv.User.ID)
			require.NoError(t, err)
			e.clk.Add(30 * time.Second)
			next, err := totp.GenerateCode(en.Secret, e.clk.Now())
			require.NoError(t, err)
			ok, codes = race(func() error { return e.users.VerifyTOTP(ctx, u, next) })
			require.Equal(t, 1, ok, "one sign-in per code: %v", codes)
			for _, c := range codes {
				require.Equal(t, apperr.Unauthorized, c)
			}
		})
	}
}

// TestUnknownAddressCostsAVerification: an unknown address costs one argon2id
// verification (against a dummy hash of today's parameters), as a wrong password
// of a known address does, so the time of an answer does not tell whether an
// address has an account. Counted, not timed; not parallel, so only this test
// verifies passwords while it counts.
func TestUnknownAddressCostsAVerification(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			e := setup(t, db.URL)
			ctx := context.Background()
			e.active(t, e.p, "known@example.com", partnerusers.Admin)
			cost := func(email string) int64 {
				before := partnerusers.Verifications()
				_, err := e.users.Authenticate(ctx, email, "wrong password here")
				require.Equal(t, apperr.Unauthorized, code(t, err))
				return partnerusers.Verifications() - before
			}
			require.Equal(t, int64(1), cost("known@example.com"))
			require.Equal(t, int64(1), cost("nobody@example.com"), "the same work for an unknown address")
			require.False(t, partnerusers.NeedsRehash(partnerusers.DummyHash()), "the dummy costs what a real hash costs")
		})
	}
}
