package apikeys_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/internal/apikeys"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func at(t time.Time) *time.Time { return &t }

// Status and Usable at a key's edges: an expiry is exclusive (a key expiring now no
// longer works), and a revocation wins over any expiry.
func TestStatusAndUsable(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		key    apikeys.Key
		status string
		usable bool
	}{
		{"no expiry", apikeys.Key{}, "active", true},
		{"expiring later", apikeys.Key{ExpiresAt: at(now.Add(time.Second))}, "expiring", true},
		{"expiring now", apikeys.Key{ExpiresAt: at(now)}, "expired", false},
		{"expired", apikeys.Key{ExpiresAt: at(now.Add(-time.Hour))}, "expired", false},
		{"revoked", apikeys.Key{RevokedAt: at(now.Add(-time.Minute))}, "revoked", false},
		{"revoked while expiring", apikeys.Key{RevokedAt: at(now), ExpiresAt: at(now.Add(time.Hour))}, "revoked", false},
		{"revoked and expired", apikeys.Key{RevokedAt: at(now), ExpiresAt: at(now.Add(-time.Hour))}, "revoked", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, c.status, c.key.Status(now))
			require.Equal(t, c.usable, c.key.Usable(now))
		})
	}
}

func TestPrefix(t *testing.T) {
	t.Parallel()
	require.Equal(t, 14, apikeys.PrefixLen)
	cases := []struct{ secret, want string }{
		{"sk_sandbox_AbCdEfGhIjKl", "sk_sandbox_AbC"},
		{"sk_op_0123456789abcdef", "sk_op_01234567"},
		{"short", "short"},
		{"exactly14chars", "exactly14chars"},
	}
	for _, c := range cases {
		t.Run(c.secret, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, c.want, apikeys.Prefix(c.secret))
		})
	}
}

// clock is a settable time for a service under test.
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

func sha(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

// minter returns secrets "sk_test_<n>_…" in turn.
func minter() func() (string, error) {
	n := 0
	return func() (string, error) {
		n++
		return "sk_test_" + string(rune('a'+n)) + "_" + uuid.NewString(), nil
	}
}

// The key lifecycle on the real store: issue keeps only the hash and prefix; roll
// bounds the overlap, shortens but never lengthens an expiry, and refuses a key that
// no longer works; revoke is final and idempotent; another owner's key is NotFound.
func TestIssueRollRevoke(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st, err := store.Open(ctx, db.URL)
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			_, err = st.Migrate(ctx)
			require.NoError(t, err)
			c := &clock{now: store.Now()}
			svc := apikeys.New(st, c.Now)
			mint := minter()
			owner := uuid.New()

			first, err := svc.Issue(ctx, st, apikeys.Operator, owner, mint, sha)
			require.NoError(t, err)
			require.Equal(t, first.Secret[:14], first.Key.Prefix)
			stored, err := svc.Get(ctx, apikeys.Operator, owner, first.Key.ID)
			require.NoError(t, err)
			require.Equal(t, sha(first.Secret), stored.Hash, "only the hash is stored")
			require.NotContains(t, stored.Hash, first.Secret)
			require.Equal(t, "active", stored.Status(c.Now()))

			// The same id under another owner or kind is not found.
			_, err = svc.Get(ctx, apikeys.Partner, owner, first.Key.ID)
			require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
			_, err = svc.Get(ctx, apikeys.Operator, uuid.New(), first.Key.ID)
			require.Equal(t, apperr.NotFound, apperr.CodeOf(err))

			for _, bad := range []time.Duration{-time.Second, apikeys.MaxOverlap + time.Second} {
				_, err = svc.Roll(ctx, st, apikeys.Operator, owner, first.Key.ID, bad, mint, sha)
				e, ok := apperr.As(err)
				require.True(t, ok, bad)
				require.Equal(t, apperr.InvalidRequest, e.Code)
				require.Equal(t, "/overlap", e.Details[0].Field)
			}

			// Roll with a 10 h overlap: the old key expires 10 h from now.
			t0 := c.Now()
			c.Add(time.Minute)
			second, err := svc.Roll(ctx, st, apikeys.Operator, owner, first.Key.ID, 10*time.Hour, mint, sha)
			require.NoError(t, err)
			require.NotEqual(t, first.Secret, second.Secret)
			old, err := svc.Get(ctx, apikeys.Operator, owner, first.Key.ID)
			require.NoError(t, err)
			require.True(t, old.ExpiresAt.Equal(t0.Add(time.Minute+10*time.Hour)), "%v", old.ExpiresAt)
			require.Equal(t, "expiring", old.Status(c.Now()))

			// Rolling it again with a longer overlap keeps the earlier expiry...
			third, err := svc.Roll(ctx, st, apikeys.Operator, owner, first.Key.ID, apikeys.MaxOverlap, mint, sha)
			require.NoError(t, err)
			old, err = svc.Get(ctx, apikeys.Operator, owner, first.Key.ID)
			require.NoError(t, err)
			require.True(t, old.ExpiresAt.Equal(t0.Add(time.Minute+10*time.Hour)), "a roll never extends a key: %v", old.ExpiresAt)
			// ...and a shorter one brings it forward.
			_, err = svc.Roll(ctx, st, apikeys.Operator, owner, first.Key.ID, time.Hour, mint, sha)
			require.NoError(t, err)
			old, err = svc.Get(ctx, apikeys.Operator, owner, first.Key.ID)
			require.NoError(t, err)
			require.True(t, old.ExpiresAt.Equal(t0.Add(time.Minute+time.Hour)), "%v", old.ExpiresAt)

			// Past its expiry it can no longer be rolled.
			c.Add(time.Hour)
			_, err = svc.Roll(ctx, st, apikeys.Operator, owner, first.Key.ID, time.Hour, mint, sha)
			e, ok := apperr.As(err)
			require.True(t, ok)
			require.Equal(t, apperr.InvalidStateTransition, e.Code)
			require.Contains(t, e.Message, "expired")

			// Revoke: once, then unchanged.
			c.Add(time.Second)
			revokedAt := c.Now()
			r, err := svc.Revoke(ctx, st, apikeys.Operator, owner, second.Key.ID)
			require.NoError(t, err)
			require.True(t, r.RevokedAt.Equal(revokedAt))
			c.Add(time.Hour)
			r, err = svc.Revoke(ctx, st, apikeys.Operator, owner, second.Key.ID)
			require.NoError(t, err)
			require.True(t, r.RevokedAt.Equal(revokedAt), "a revoked key stays revoked at its first revocation")
			_, err = svc.Roll(ctx, st, apikeys.Operator, owner, second.Key.ID, 0, mint, sha)
			require.Equal(t, apperr.InvalidStateTransition, apperr.CodeOf(err))
			_, err = svc.Revoke(ctx, st, apikeys.Operator, uuid.New(), third.Key.ID)
			require.Equal(t, apperr.NotFound, apperr.CodeOf(err))

			list, err := svc.List(ctx, apikeys.Operator, owner)
			require.NoError(t, err)
			require.Len(t, list, 4)
			status := map[uuid.UUID]string{}
			for _, k := range list {
				status[k.ID] = k.Status(c.Now())
			}
			require.Equal(t, "expired", status[first.Key.ID])
			require.Equal(t, "revoked", status[second.Key.ID])
			require.Equal(t, "active", status[third.Key.ID])
			for i := 1; i < len(list); i++ {
				require.False(t, list[i].CreatedAt.After(list[i-1].CreatedAt), "newest first")
			}
		})
	}
}
