package sign_test

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"partnerd/internal/webhook/sign"
)

const (
	testID   = "5b2f0a64-8c1e-4d7a-9f3b-2c6d1e0a9b47"
	testBody = `{"id":"5b2f0a64-8c1e-4d7a-9f3b-2c6d1e0a9b47","type":"transaction.completed","created_at":"2026-01-02T03:04:05Z","data":{"id":"tx-1","status":"completed"}}`
)

func newSecret(t *testing.T) string {
	t.Helper()
	s, err := sign.NewSecret()
	require.NoError(t, err)
	return s
}

func TestNewSecret(t *testing.T) {
	t.Parallel()
	a, b := newSecret(t), newSecret(t)
	require.Regexp(t, `^whsec_[A-Za-z0-9+/]{43}=$`, a)
	require.NotEqual(t, a, b)
	key, err := sign.ParseSecret(a)
	require.NoError(t, err)
	require.Len(t, key, sign.SecretBytes)
}

func TestSignatureKnownValue(t *testing.T) {
	t.Parallel()
	// The test vector published with the Standard Webhooks specification.
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	ts := time.Unix(1614265330, 0)
	body := []byte(`{"test": 2432232314}`)
	sig, err := sign.Signature(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", ts, body)
	require.NoError(t, err)
	require.Equal(t, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", sig)
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	secret := newSecret(t)
	now := time.Unix(1_760_000_000, 0)
	h, err := sign.Headers([]string{secret}, testID, now, []byte(testBody))
	require.NoError(t, err)

	require.Equal(t, testID, h.Get("webhook-id"))
	require.Equal(t, testID, h.Get("X-Service-Webhook-Id"))
	require.Equal(t, "1760000000", h.Get("webhook-timestamp"))
	require.Equal(t, "1760000000", h.Get("X-Service-Webhook-Timestamp"))
	want, err := sign.Signature(secret, testID, now, []byte(testBody))
	require.NoError(t, err)
	require.Equal(t, want, h.Get("webhook-signature"))
	require.Equal(t, want, h.Get("X-Service-Webhook-Signature"))
	require.Equal(t, testID, sign.MessageID(h))

	require.NoError(t, sign.Verify(secret, h, []byte(testBody), now, 0))
	require.NoError(t, sign.Verify(secret, h, []byte(testBody), now.Add(4*time.Minute), 0))
	require.NoError(t, sign.Verify(secret, h, []byte(testBody), now.Add(-4*time.Minute), 0))
}

func TestHeadersSeveralSecrets(t *testing.T) {
	t.Parallel()
	current, previous := newSecret(t), newSecret(t)
	now := time.Unix(1_760_000_000, 0)
	h, err := sign.Headers([]string{current, previous}, testID, now, []byte(testBody))
	require.NoError(t, err)

	sigs := strings.Split(h.Get("webhook-signature"), " ")
	require.Len(t, sigs, 2)
	for i, s := range []string{current, previous} {
		want, err := sign.Signature(s, testID, now, []byte(testBody))
		require.NoError(t, err)
		require.Equal(t, want, sigs[i], "signatures follow the order of the secrets")
		require.NoError(t, sign.Verify(s, h, []byte(testBody), now, time.Minute))
	}
	require.ErrorIs(t, sign.Verify(newSecret(t), h, []byte(testBody), now, 0), sign.ErrNoMatchingSignature)
}

func TestOfficialLibraryVerifiesHeaders(t *testing.T) {
	t.Parallel()
	one, two := newSecret(t), newSecret(t)
	for name, secrets := range map[string][]string{
		"one secret":  {one},
		"two secrets": {one, two},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// The official library checks the timestamp against the real clock.
			h, err := sign.Headers(secrets, testID, time.Now(), []byte(testBody))
			require.NoError(t, err)
			for _, s := range secrets {
				wh, err := standardwebhooks.NewWebhook(s)
				require.NoError(t, err)
				require.NoError(t, wh.Verify([]byte(testBody), h))
				require.Error(t, wh.Verify([]byte(testBody+" "), h))
			}
			stranger, err := standardwebhooks.NewWebhook(newSecret(t))
			require.NoError(t, err)
			require.ErrorIs(t, stranger.Verify([]byte(testBody), h), standardwebhooks.ErrNoMatchingSignature)
		})
	}
}

func TestVerifiesOfficialLibrarySignature(t *testing.T) {
	t.Parallel()
	secret := newSecret(t)
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	now := time.Now()
	sig, err := wh.Sign(testID, now, []byte(testBody))
	require.NoError(t, err)
	h := http.Header{}
	h.Set(standardwebhooks.HeaderWebhookID, testID)
	h.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
	h.Set(standardwebhooks.HeaderWebhookSignature, sig)
	require.NoError(t, sign.Verify(secret, h, []byte(testBody), now, 0))
}

func TestVerifyRejectsTampering(t *testing.T) {
	t.Parallel()
	secret := newSecret(t)
	now := time.Unix(1_760_000_000, 0)
	signed := func(t *testing.T) http.Header {
		t.Helper()
		h, err := sign.Headers([]string{secret}, testID, now, []byte(testBody))
		require.NoError(t, err)
		return h
	}
	setBoth := func(h http.Header, spec, service, v string) {
		h.Set(spec, v)
		h.Set(service, v)
	}

	t.Run("body", func(t *testing.T) {
		t.Parallel()
		body := strings.Replace(testBody, "completed", "failed", 1)
		require.ErrorIs(t, sign.Verify(secret, signed(t), []byte(body), now, 0), sign.ErrNoMatchingSignature)
	})
	t.Run("id", func(t *testing.T) {
		t.Parallel()
		h := signed(t)
		setBoth(h, sign.HeaderID, sign.ServiceHeaderID, "6b2f0a64-8c1e-4d7a-9f3b-2c6d1e0a9b47")
		require.ErrorIs(t, sign.Verify(secret, h, []byte(testBody), now, 0), sign.ErrNoMatchingSignature)
	})
	t.Run("timestamp", func(t *testing.T) {
		t.Parallel()
		h := signed(t)
		setBoth(h, sign.HeaderTimestamp, sign.ServiceHeaderTimestamp, strconv.FormatInt(now.Unix()+1, 10))
		require.ErrorIs(t, sign.Verify(secret, h, []byte(testBody), now, 0), sign.ErrNoMatchingSignature)
	})
	t.Run("signature", func(t *testing.T) {
		t.Parallel()
		h := signed(t)
		sig := h.Get(sign.HeaderSignature)
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(sig, "v1,"))
		require.NoError(t, err)
		raw[0] ^= 1
		setBoth(h, sign.HeaderSignature, sign.ServiceHeaderSignature, "v1,"+base64.StdEncoding.EncodeToString(raw))
		require.ErrorIs(t, sign.Verify(secret, h, []byte(testBody), now, 0), sign.ErrNoMatchingSignature)
	})
	t.Run("other version", func(t *testing.T) {
		t.Parallel()
		h := signed(t)
		sig := strings.Replace(h.Get(sign.HeaderSignature), "v1,", "v1a,", 1)
		setBoth(h, sign.HeaderSignature, sign.ServiceHeaderSignature, sig)
		require.ErrorIs(t, sign.Verify(secret, h, []byte(testBody), now, 0), sign.ErrNoMatchingSignature)
	})
}

func TestVerifyTimestamp(t *testing.T) {
	t.Parallel()
	secret := newSecret(t)
	sent := time.Unix(1_760_000_000, 0)
	h, err := sign.Headers([]string{secret}, testID, sent, []byte(testBody))
	require.NoError(t, err)

	require.ErrorIs(t, sign.Verify(secret, h, []byte(testBody), sent.Add(6*time.Minute), 0), sign.ErrBadTimestamp, "too old")
	require.ErrorIs(t, sign.Verify(secret, h, []byte(testBody), sent.Add(-6*time.Minute), 0), sign.ErrBadTimestamp, "too new")
	require.NoError(t, sign.Verify(secret, h, []byte(testBody), sent.Add(6*time.Minute), 10*time.Minute))
	require.ErrorIs(t, sign.Verify(secret, h, []byte(testBody), sent.Add(2*time.Minute), time.Minute), sign.ErrBadTimestamp)

	for _, bad := range []string{"soon", "1760000000.5", "-"} {
		h := h.Clone()
		h.Set(sign.HeaderTimestamp, bad)
		h.Set(sign.ServiceHeaderTimestamp, bad)
		require.ErrorIs(t, sign.Verify(secret, h, []byte(testBody), sent, 0), sign.ErrBadTimestamp, bad)
	}
}

func TestVerifyHeaderFamilies(t *testing.T) {
	t.Parallel()
	secret := newSecret(t)
	now := time.Unix(1_760_000_000, 0)
	full, err := sign.Headers([]string{secret}, testID, now, []byte(testBody))
	require.NoError(t, err)

	only := func(names ...string) http.Header {
		h := http.Header{}
		for _, n := range names {
			h.Set(n, full.Get(n))
		}
		return h
	}
	spec := only(sign.HeaderID, sign.HeaderTimestamp, sign.HeaderSignature)
	require.NoError(t, sign.Verify(secret, spec, []byte(testBody), now, 0))
	service := only(sign.ServiceHeaderID, sign.ServiceHeaderTimestamp, sign.ServiceHeaderSignature)
	require.NoError(t, sign.Verify(secret, service, []byte(testBody), now, 0))
	require.Equal(t, testID, sign.MessageID(service))

	// The specification's headers win when both are complete.
	both := full.Clone()
	both.Set(sign.ServiceHeaderSignature, "v1,bm90IGEgc2lnbmF0dXJl")
	require.NoError(t, sign.Verify(secret, both, []byte(testBody), now, 0))
	both = full.Clone()
	both.Set(sign.HeaderSignature, "v1,bm90IGEgc2lnbmF0dXJl")
	require.ErrorIs(t, sign.Verify(secret, both, []byte(testBody), now, 0), sign.ErrNoMatchingSignature)

	// An incomplete family is not mixed with the other one.
	partial := only(sign.HeaderID, sign.HeaderTimestamp, sign.ServiceHeaderSignature)
	require.ErrorIs(t, sign.Verify(secret, partial, []byte(testBody), now, 0), sign.ErrMissingHeaders)
	require.Empty(t, sign.MessageID(partial))
	require.ErrorIs(t, sign.Verify(secret, http.Header{}, []byte(testBody), now, 0), sign.ErrMissingHeaders)
}

func TestVerifyAmongSeveralSignatures(t *testing.T) {
	t.Parallel()
	secret := newSecret(t)
	now := time.Unix(1_760_000_000, 0)
	sig, err := sign.Signature(secret, testID, now, []byte(testBody))
	require.NoError(t, err)
	h := http.Header{}
	h.Set(sign.HeaderID, testID)
	h.Set(sign.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	h.Set(sign.HeaderSignature, "v1a,c29tZXRoaW5nIGVsc2U= garbage  v1,bm90IGl0 "+sig)
	require.NoError(t, sign.Verify(secret, h, []byte(testBody), now, 0))
}

func TestMalformedSecret(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_760_000_000, 0)
	good := newSecret(t)
	h, err := sign.Headers([]string{good}, testID, now, []byte(testBody))
	require.NoError(t, err)

	for _, bad := range []string{
		"",
		"whsec_",
		strings.TrimPrefix(good, "whsec_"),
		"whsk_" + strings.TrimPrefix(good, "whsec_"),
		"whsec_not base64!",
		"whsec_" + base64.StdEncoding.EncodeToString([]byte("too short")),
		"whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 65)),
		good[:len(good)-1],
	} {
		_, err := sign.Signature(bad, testID, now, []byte(testBody))
		require.ErrorIs(t, err, sign.ErrMalformedSecret, bad)
		_, err = sign.Headers([]string{good, bad}, testID, now, []byte(testBody))
		require.ErrorIs(t, err, sign.ErrMalformedSecret, bad)
		require.ErrorIs(t, sign.Verify(bad, h, []byte(testBody), now, 0), sign.ErrMalformedSecret, bad)
	}
	_, err = sign.Headers(nil, testID, now, []byte(testBody))
	require.ErrorIs(t, err, sign.ErrNoSecret)
}
