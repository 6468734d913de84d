package operators_test

import (
	"context"
	"encoding/base64"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/internal/apikeys"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/partners"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// An operator key is "sk_op_" and 32 random bytes in unpadded base64url: 43
// characters of [A-Za-z0-9_-], different every time.
func TestNewKeyShape(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 50 {
		k, err := operators.NewKey()
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(k, "sk_op_"), k)
		require.Len(t, k, len("sk_op_")+43)
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(k, "sk_op_"))
		require.NoError(t, err)
		require.Len(t, raw, 32)
		require.False(t, seen[k])
		seen[k] = true
	}
	require.Equal(t, partners.OperatorKeyPrefix, operators.KeyPrefix)
	for _, env := range []partners.Environment{partners.Sandbox, partners.Production} {
		require.False(t, strings.HasPrefix(env.KeyPrefix(), operators.KeyPrefix), "no partner key looks like an operator key")
	}
}

func openStore(t *testing.T, url string) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, err = st.Migrate(ctx)
	require.NoError(t, err)
	return st
}

// Operators on the real store: the name rule, the key shown once and stored as its
// SHA-256, authentication by that key only (a partner key, a stranger's key or an
// overlong one is Unauthorized), keys rolled and revoked through apikeys, listing.
func TestOperatorsOnTheStore(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := openStore(t, db.URL)
			svc := operators.NewService(st, store.Now)

			for _, name := range []string{"", "   ", strings.Repeat("x", 201)} {
				_, _, err := func() (x *operators.Operator, key string, err error) {
					err = st.Transact(ctx, func(ctx context.Context, tx *store.Tx) (err error) {
						x, key, err = svc.Create(ctx, tx, name, operators.Roles)
						return err
					})
					return x, key, err
				}()
				e, ok := apperr.As(err)
				require.True(t, ok, "%q", name)
				require.Equal(t, apperr.InvalidRequest, e.Code)
				require.Equal(t, "name", e.Details[0].Field)
			}

			ada, adaKey, err := func() (x *operators.Operator, key string, err error) {
				err = st.Transact(ctx, func(ctx context.Context, tx *store.Tx) (err error) {
					x, key, err = svc.Create(ctx, tx, "  Ada Ops \t", operators.Roles)
					return err
				})
				return x, key, err
			}()
			require.NoError(t, err)
			require.Equal(t, "Ada Ops", ada.Name, "the name is trimmed")
			require.Equal(t, partners.HashKey(adaKey), ada.KeyHash)
			require.Equal(t, ada.ID, ada.KeyID, "the first key's id is the operator's")
			require.Equal(t, adaKey[:apikeys.PrefixLen], ada.KeyPrefix)
			long := strings.Repeat("y", 200)
			bob, bobKey, err := func() (x *operators.Operator, key string, err error) {
				err = st.Transact(ctx, func(ctx context.Context, tx *store.Tx) (err error) {
					x, key, err = svc.Create(ctx, tx, long, operators.Roles)
					return err
				})
				return x, key, err
			}()
			require.NoError(t, err)
			require.Equal(t, long, bob.Name, "200 characters is allowed")

			got, err := svc.Authenticate(ctx, adaKey)
			require.NoError(t, err)
			require.Equal(t, ada.ID, got.ID)
			require.Equal(t, "Ada Ops", got.Name)
			got, err = svc.Authenticate(ctx, bobKey)
			require.NoError(t, err)
			require.Equal(t, bob.ID, got.ID)

			partnerKey, err := partners.NewKey(partners.Sandbox)
			require.NoError(t, err)
			stranger, err := operators.NewKey()
			require.NoError(t, err)
			for name, key := range map[string]string{
				"empty": "", "a partner key": partnerKey, "an unknown operator key": stranger,
				"a key with a suffix": adaKey + "x", "overlong": adaKey + strings.Repeat("A", 200),
				"the hash itself": partners.HashKey(adaKey),
			} {
				_, err := svc.Authenticate(ctx, key)
				require.ErrorIs(t, err, operators.ErrUnauthorized, name)
			}

			// A rolled key works beside the new one during the overlap; a revoked one stops.
			keys := apikeys.New(st, store.Now)
			rolled, err := keys.Roll(ctx, st, apikeys.Operator, ada.ID, ada.KeyID, time.Hour, operators.NewKey, partners.HashKey)
			require.NoError(t, err)
			for _, k := range []string{adaKey, rolled.Secret} {
				got, err := svc.Authenticate(ctx, k)
				require.NoError(t, err)
				require.Equal(t, ada.ID, got.ID)
			}
			_, err = keys.Revoke(ctx, st, apikeys.Operator, ada.ID, ada.KeyID)
			require.NoError(t, err)
			_, err = svc.Authenticate(ctx, adaKey)
			require.ErrorIs(t, err, operators.ErrUnauthorized)
			// A zero overlap ends the old key at once.
			again, err := keys.Roll(ctx, st, apikeys.Operator, ada.ID, rolled.Key.ID, 0, operators.NewKey, partners.HashKey)
			require.NoError(t, err)
			_, err = svc.Authenticate(ctx, rolled.Secret)
			require.ErrorIs(t, err, operators.ErrUnauthorized)
			got, err = svc.Authenticate(ctx, again.Secret)
			require.NoError(t, err)
			require.Equal(t, ada.ID, got.ID)

			all, err := svc.List(ctx)
			require.NoError(t, err)
			require.Len(t, all, 2)
			require.Equal(t, []uuid.UUID{ada.ID, bob.ID}, []uuid.UUID{all[0].ID, all[1].ID}, "oldest first")
			one, err := svc.Get(ctx, bob.ID)
			require.NoError(t, err)
			require.Equal(t, long, one.Name)
			_, err = svc.Get(ctx, uuid.New())
			require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
		})
	}
}
