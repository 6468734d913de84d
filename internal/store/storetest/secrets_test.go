package storetest_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/internal/idempotency"
	"partnerd/internal/kit/secrets"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/webhook"
)

// placeholder is the database's first bind parameter.
func placeholder(db testdb.Database) string {
	if db.Name == "postgres" {
		return "$1"
	}
	return "?"
}

func newKey(t *testing.T) string {
	b := make([]byte, 32)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return base64.StdEncoding.EncodeToString(b)
}

// TestSealedSecrets: TOTP and webhook signing secrets, and the answers kept for
// retries, are stored sealed (the
// plaintext never in the column, the key's id beside it) and read back whole;
// RotateSecrets moves them to a new current key, after which the old key can
// go; a second rotation rewrites nothing.
func TestSealedSecrets(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, db testdb.Database, s *store.Store) {
		ctx := context.Background()
		k1, k2 := newKey(t), newKey(t)
		old, err := secrets.Parse("one:" + k1)
		require.NoError(t, err)
		s.UseSecrets(old)
		p := newPartner(t, s)
		u := newPartnerUser(t, s, p.ID, "sealed@example.com")
		totp := "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
		u.TOTPSecret = &totp
		require.NoError(t, s.UpdatePartnerUser(ctx, u))
		signing := "whsec_" + base64.StdEncoding.EncodeToString([]byte("a signing secret of 32 bytes!!!"))
		now := store.Now()
		ok, err := s.InsertEndpoint(ctx, &webhook.Endpoint{PartnerID: p.ID, URL: "https://example.com/hook", Enabled: true, Secret: signing, CreatedAt: now, UpdatedAt: now})
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, s.RotateSecret(ctx, p.ID, signing+"2", now.Add(24*3600e9), now))
		// An answer kept for retries, holding a new key.
		answer := []byte(`{"data":{"key":"sk_live_thekeyshownonce"},"success":true}`)
		ik := idempotency.Key{PartnerID: p.ID, Operation: "createPartnerKey", Key: "k-1"}
		require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			ok, err := tx.SaveKey(ctx, &idempotency.Record{Key: ik, Fingerprint: "fp", State: idempotency.Done, ResponseStatus: 200,
				ResponseBody: answer, LockedAt: now, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}, now, now.Add(-time.Minute))
			require.True(t, ok)
			return err
		}))

		raw := openStore(t, db.URL) // the database as a reader sees it: nothing opens
		check := func(keyID string) {
			t.Helper()
			var secret, key string
			require.NoError(t, raw.SQL().QueryRowContext(ctx, "SELECT totp_secret, totp_secret_key FROM partner_users WHERE id = "+placeholder(db), u.ID.String()).Scan(&secret, &key))
			require.NotContains(t, secret, totp)
			require.NotContains(t, secret, totp[:16])
			require.Equal(t, keyID, key)
			var sec, secKey, prev, prevKey string
			require.NoError(t, raw.SQL().QueryRowContext(ctx, "SELECT secret, secret_key, previous_secret, previous_secret_key FROM webhook_endpoints WHERE partner_id = "+placeholder(db), p.ID.String()).
				Scan(&sec, &secKey, &prev, &prevKey))
			require.NotContains(t, sec, "whsec_")
			require.NotContains(t, prev, "whsec_")
			require.Equal(t, keyID, secKey)
			require.Equal(t, keyID, prevKey)
			got2, err := s.PartnerUser(ctx, p.ID, u.ID)
			require.NoError(t, err)
			require.Equal(t, totp, *got2.TOTPSecret)
			e, err := s.EndpointOf(ctx, p.ID)
			require.NoError(t, err)
			require.Equal(t, signing+"2", e.Secret)
			require.Equal(t, signing, *e.PreviousSecret)
			var body []byte
			var bodyKey string
			require.NoError(t, raw.SQL().QueryRowContext(ctx, "SELECT response_body, response_key FROM idempotency_keys WHERE key = 'k-1'").Scan(&body, &bodyKey))
			require.NotContains(t, string(body), "sk_live_")
			require.Equal(t, keyID, bodyKey)
			require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
				got, err := tx.GetKey(ctx, ik)
				require.NoError(t, err)
				require.Equal(t, answer, got.ResponseBody, "opened whole")
				return nil
			}))
		}
		check("one")

		ring, err := secrets.Parse("two:" + k2 + ",one:" + k1)
		require.NoError(t, err)
		s.UseSecrets(ring)
		n, err := s.RotateSecrets(ctx)
		require.NoError(t, err)
		require.Equal(t, 3, n)
		only, err := secrets.Parse("two:" + k2)
		require.NoError(t, err)
		s.UseSecrets(only)
		check("two")
		n, err = s.RotateSecrets(ctx)
		require.NoError(t, err)
		require.Zero(t, n)
		users, err := s.PartnerUsers(ctx, p.ID)
		require.NoError(t, err)
		require.Equal(t, []string{totp}, []string{*users[0].TOTPSecret})
	})
}
