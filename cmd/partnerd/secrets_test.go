package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/pquerna/otp/totp"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/audit/actor"
	"partnerd/internal/kit/uow"
	"partnerd/internal/partnerusers"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// secretsKey is a fresh SECRETS_KEYS entry id:key (32 random bytes).
func secretsKey(t *testing.T, id string) string {
	t.Helper()
	b := make([]byte, 32)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return id + ":" + base64.StdEncoding.EncodeToString(b)
}

// sealedFixture is what a service running under one key sealed: a user with
// the second factor on, and a partner's webhook endpoint whose secret was
// rotated once (a current and a previous signing secret).
type sealedFixture struct {
	// Key is the partner's API key.
	Key               string
	PartnerID, UserID uuid.UUID
	Email             string
	TOTP              string
	Signing, Previous string
}

const fixturePassword = "plum-orbit-lantern-42"

// sealUnder runs the service on db with settings (SECRETS_KEYS among them),
// seals a fixture's secrets through its own use cases (the endpoint at hook),
// and stops it.
func sealUnder(t *testing.T, db testdb.Database, settings map[string]string, hook string) sealedFixture {
	t.Helper()
	ctx := context.Background()
	env := apitest.Start(t, db, settings)
	defer env.Stop()
	key := env.NewPartner(t)
	f := sealedFixture{Key: key, PartnerID: env.PartnerID(t, key), Email: "second-factor-" + uuid.NewString()[:8] + "@example.com"}
	users := env.App.PartnerUsers()
	inv, err := users.Invite(ctx, uow.Plain[*partnerusers.NewInvitation, partnerusers.Tx](), f.PartnerID, f.Email, partnerusers.Admin, actor.CLI)
	require.NoError(t, err)
	u, err := users.Accept(ctx, inv.Token, fixturePassword)
	require.NoError(t, err)
	f.UserID = u.ID
	enrolment, err := users.EnrollTOTP(ctx, f.PartnerID, u.ID)
	require.NoError(t, err)
	f.TOTP = enrolment.Secret
	code, err := totp.GenerateCode(f.TOTP, time.Now())
	require.NoError(t, err)
	_, err = users.ConfirmTOTP(ctx, f.PartnerID, u.ID, code)
	require.NoError(t, err)

	c := env.Client(t, key)
	res, err := c.PutWebhookEndpointWithResponse(ctx, nil, client.WebhookEndpointRequest{Url: hook, Enabled: true})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	f.Previous = *res.JSON200.Data.SigningSecret
	rot, err := c.RotateWebhookSecretWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, rot.StatusCode(), string(rot.Body))
	f.Signing = *rot.JSON200.Data.SigningSecret
	return f
}

// rawDB is the database as a reader of it (or of a backup) sees it: a second
// connection that opens nothing.
func rawDB(t *testing.T, dbURL string) *sql.DB {
	t.Helper()
	st, err := store.Open(context.Background(), testdb.WithPoolSize(dbURL, 2))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st.SQL()
}

// requireSealed checks f's secret columns in db: each sealed under keyID, and
// neither a secret nor a long piece of one readable in them.
func requireSealed(t *testing.T, db *sql.DB, f sealedFixture, keyID string) {
	t.Helper()
	ctx := context.Background()
	var totpCol, totpKey string
	require.NoError(t, db.QueryRowContext(ctx, "SELECT totp_secret, totp_secret_key FROM partner_users WHERE id = $1", f.UserID.String()).Scan(&totpCol, &totpKey))
	require.Equal(t, keyID, totpKey, "the TOTP secret's key id")
	require.NotContains(t, totpCol, f.TOTP[:16])
	var sec, secKey, prev, prevKey string
	require.NoError(t, db.QueryRowContext(ctx, "SELECT secret, secret_key, previous_secret, previous_secret_key FROM webhook_endpoints WHERE partner_id = $1", f.PartnerID.String()).
		Scan(&sec, &secKey, &prev, &prevKey))
	require.Equal(t, keyID, secKey, "the signing secret's key id")
	require.Equal(t, keyID, prevKey, "the previous signing secret's key id")
	for _, col := range []string{sec, prev} {
		require.NotContains(t, col, "whsec_")
		for _, plain := range []string{f.Signing, f.Previous} {
			key := strings.TrimPrefix(plain, "whsec_")
			require.NotContains(t, col, key[:16])
		}
	}
}

// rotateCommand runs the built binary's `partnerd secrets rotate` on dbURL with
// keys as SECRETS_KEYS, and returns its output and exit status.
func rotateCommand(t *testing.T, bin, dbURL, keys string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, "secrets", "rotate")
	cmd.Env = append(os.Environ(), "APP_ENV=staging", "DATABASE_URL="+dbURL, "SECRETS_KEYS="+keys)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), exit.ExitCode()
	}
	require.NoError(t, err)
	return out.String(), 0
}

var rotatedRows = regexp.MustCompile(`secrets sealed again under the current key: (\d+) rows`)

// TestSecretsRotateCommand: `partnerd secrets rotate`, run as the binary, seals
// every secret a former key sealed again under SECRETS_KEYS' first key: it exits
// 0 and prints how many rows it rewrote; the columns then hold the new key's id
// and never a secret in the clear; a second run rewrites nothing; run without
// the key the secrets are under, it fails naming that key and rewrites nothing.
func TestSecretsRotateCommand(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			k1, k2, k3 := secretsKey(t, "k1"), secretsKey(t, "k2"), secretsKey(t, "k3")
			f := sealUnder(t, db, map[string]string{"SECRETS_KEYS": k1}, "https://example.com/hook")
			raw := rawDB(t, db.URL)
			requireSealed(t, raw, f, "k1")

			out, status := rotateCommand(t, bin, db.URL, k2+","+k1)
			require.Zero(t, status, out)
			m := rotatedRows.FindStringSubmatch(out)
			require.NotNil(t, m, out)
			require.Equal(t, "2", m[1], "the user's TOTP secret and the endpoint's secrets: %s", out)
			requireSealed(t, raw, f, "k2")

			out, status = rotateCommand(t, bin, db.URL, k2+","+k1)
			require.Zero(t, status, out)
			require.Contains(t, out, "current key: 0 rows", "nothing left under another key")

			out, status = rotateCommand(t, bin, db.URL, k3)
			require.NotZero(t, status, out)
			require.Contains(t, out, `"k2"`, "names the key it lacks")
			requireSealed(t, raw, f, "k2")
		})
	}
}

// TestSecretsSurviveRotation: secrets sealed under k1, rotated by the command
// onto k2, and the service started with k2 alone (k1 gone from SECRETS_KEYS):
// the user with a second factor signs in to the dashboard with a code of their
// authenticator app, and a webhook delivery verifies, with the official
// Standard Webhooks library, under the endpoint's signing secret and (during
// the overlap) its previous one.
func TestSecretsSurviveRotation(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			k1, k2 := secretsKey(t, "k1"), secretsKey(t, "k2")
			hook := newHookReceiver(t)
			f := sealUnder(t, db, map[string]string{"SECRETS_KEYS": k1}, hook.srv.URL)
			out, status := rotateCommand(t, bin, db.URL, k2+","+k1)
			require.Zero(t, status, out)
			requireSealed(t, rawDB(t, db.URL), f, "k2")

			env := apitest.Start(t, db, map[string]string{"SECRETS_KEYS": k2, "JOB_POLL_INTERVAL": "100ms"})

			// (a) Password, then a code of the app: a step after the one the
			// enrolment used (a code is accepted once, one step early or late).
			base := env.Root + "/dashboard"
			jar, err := cookiejar.New(nil)
			require.NoError(t, err)
			c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			_, page, _ := answer(t, c, http.MethodGet, base+"/signin", nil)
			status, _, loc := answer(t, c, http.MethodPost, base+"/signin", url.Values{"csrf": {csrfIn(t, page)}, "email": {f.Email}, "password": {fixturePassword}})
			require.Equal(t, http.StatusSeeOther, status)
			require.Equal(t, "/dashboard/signin/code", loc, "the second factor is asked")
			_, page, _ = answer(t, c, http.MethodGet, base+"/signin/code", nil)
			code, err := totp.GenerateCode(f.TOTP, time.Now().Add(30*time.Second))
			require.NoError(t, err)
			status, _, loc = answer(t, c, http.MethodPost, base+"/signin/code", url.Values{"csrf": {csrfIn(t, page)}, "code": {code}})
			require.Equal(t, http.StatusSeeOther, status, "the code of the secret sealed under k1, now under k2")
			require.Equal(t, "/dashboard", loc)
			status, _, _ = answer(t, c, http.MethodGet, base+"/transactions", nil)
			require.Equal(t, http.StatusOK, status, "signed in")

			// (b) A delivery signed with the endpoint's secrets.
			sent, err := env.Client(t, f.Key).SendTestWebhookEventWithResponse(ctx, &client.SendTestWebhookEventParams{IdempotencyKey: uuid.NewString()})
			require.NoError(t, err)
			require.Equal(t, http.StatusAccepted, sent.StatusCode(), string(sent.Body))
			var got hookDelivery
			require.Eventually(t, func() bool {
				var ok bool
				got, ok = hook.first()
				return ok
			}, 30*time.Second, 50*time.Millisecond, "the test event is delivered")
			for _, secret := range []string{f.Signing, f.Previous} {
				wh, err := standardwebhooks.NewWebhook(secret)
				require.NoError(t, err)
				require.NoError(t, wh.Verify(got.Body, got.Header), "verifies with the official library")
			}
			stranger, err := standardwebhooks.NewWebhook("whsec_" + base64.StdEncoding.EncodeToString([]byte("thirty-two bytes of nobody's key")))
			require.NoError(t, err)
			require.Error(t, stranger.Verify(got.Body, got.Header))
		})
	}
}

// hookReceiver is a local webhook endpoint that keeps what it receives.
type hookReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []hookDelivery
}

type hookDelivery struct {
	Header http.Header
	Body   []byte
}

func newHookReceiver(t *testing.T) *hookReceiver {
	r := &hookReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, hookDelivery{Header: req.Header.Clone(), Body: body})
		r.mu.Unlock()
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *hookReceiver) first() (hookDelivery, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.got) == 0 {
		return hookDelivery{}, false
	}
	return r.got[0], true
}

// answer sends a request (a form when form is not nil) with c and returns the
// status, body and Location of its answer.
func answer(t *testing.T, c *http.Client, method, target string, form url.Values) (int, string, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, target, body)
	require.NoError(t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	res, err := c.Do(req)
	require.NoError(t, err)
	defer func() { _ = res.Body.Close() }()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(b), res.Header.Get("Location")
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrfIn is the first CSRF token of a page's forms.
func csrfIn(t *testing.T, page string) string {
	t.Helper()
	m := csrfInput.FindStringSubmatch(page)
	require.NotNil(t, m, "a form with a csrf field")
	return m[1]
}
