package dashboard_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	oc "partnerd/gen/operatorclient"
	"partnerd/internal/apikeys"
	"partnerd/internal/partnerusers"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/web/webkit/webtest"
)

// statusWith is the partner API's answer status to a read with key.
func statusWith(t *testing.T, s *site, key string) int {
	t.Helper()
	res, err := s.Env.Client(t, key).ListTransactionsWithResponse(context.Background(), nil)
	require.NoError(t, err)
	return res.StatusCode()
}

// The API keys page in Chromium: an admin sees the partner's key, creates one
// (shown once), rolls the first with a short overlap (the old key works during
// it, then 401; the new one works), revokes the created one (401 at once); the
// actions are audited naming the user (actor partner_user); a form sent twice
// acts once; a finance user gets the 403 page and changes nothing.
func TestKeyPages(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			s := signedIn(t, db, partnerusers.Admin)
			ctx := s.Browser
			oldPrefix := apikeys.Prefix(s.Key)
			require.Equal(t, http.StatusOK, open(t, ctx, s.Base+"/keys"))
			require.Contains(t, text(t, ctx, "#keys"), oldPrefix)
			require.NotContains(t, text(t, ctx, "#keys"), s.Key, "never the key itself")

			// Create: the key is shown once and works.
			var formKey string
			require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`document.querySelector('#create-form input[name=idempotency_key]').value`, &formKey)))
			submit(t, ctx, "#create-key", "#secret")
			created := text(t, ctx, "#secret")
			require.Equal(t, http.StatusOK, statusWith(t, s, created))
			// The same form sent again (a double click) creates nothing.
			require.NoError(t, chromedp.Run(ctx, chromedp.SetAttributeValue(`#create-form input[name=idempotency_key]`, "value", formKey, chromedp.ByQuery)))
			submit(t, ctx, "#create-key", "#error")
			require.Contains(t, text(t, ctx, "#error"), "already sent")
			var rows int
			require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`document.querySelectorAll('#keys tbody tr').length`, &rows)))
			require.Equal(t, 2, rows)

			// Roll the first key with a 3 s overlap: both work, then the old one is 401.
			row := `#keys tr[data-prefix="` + oldPrefix + `"]`
			require.NoError(t, chromedp.Run(ctx, chromedp.SetValue(row+" input.overlap", "3s", chromedp.ByQuery)))
			rolledAt := time.Now()
			submit(t, ctx, row+" button.roll-submit", "#secret")
			rolled := text(t, ctx, "#secret")
			require.NotEqual(t, s.Key, rolled)
			require.Contains(t, text(t, ctx, row+" .status"), "expiring")
			require.Equal(t, http.StatusOK, statusWith(t, s, rolled))
			if time.Since(rolledAt) < 2*time.Second {
				require.Equal(t, http.StatusOK, statusWith(t, s, s.Key), "the old key works during the overlap")
			}
			require.Eventually(t, func() bool { return statusWith(t, s, s.Key) == http.StatusUnauthorized }, 10*time.Second, 200*time.Millisecond)
			require.GreaterOrEqual(t, time.Since(rolledAt), 2*time.Second, "not before the overlap ends")
			require.Equal(t, http.StatusOK, statusWith(t, s, rolled))

			// Revoke the created key: 401 at once.
			require.Equal(t, http.StatusOK, open(t, ctx, s.Base+"/keys"))
			createdRow := `#keys tr[data-prefix="` + apikeys.Prefix(created) + `"]`
			submit(t, ctx, createdRow+" button.revoke-submit", "#notice")
			require.Contains(t, text(t, ctx, "#notice"), "revoked")
			require.Contains(t, text(t, ctx, createdRow+" .status"), "revoked")
			require.Equal(t, http.StatusUnauthorized, statusWith(t, s, created))
			webtest.Shot(t, ctx, "keys.png")

			// The audit names the user.
			ops := s.Env.OperatorClient(t, s.Env.NewOperator(t))
			audit, err := ops.ListAuditWithResponse(context.Background(), &oc.ListAuditParams{})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, audit.StatusCode(), string(audit.Body))
			var mine []string
			for _, e := range audit.JSON200.Data.Data {
				if e.PartnerUserId != nil && *e.PartnerUserId == s.User.ID {
					require.Equal(t, oc.AuditActor("partner_user"), e.Actor)
					require.Equal(t, s.Email, e.OperatorName)
					mine = append(mine, string(e.Action))
				}
			}
			require.Equal(t, []string{"key_revoked", "key_rolled", "key_created"}, mine)

			// A finance user gets the 403 page; a roll sent anyway changes nothing.
			fin := newUser(t, s.Env, s.PartnerID, partnerusers.Finance)
			fctx := webtest.Browser(t)
			signIn(t, fctx, s.Base, fin.Email, testPassword)
			require.Equal(t, http.StatusForbidden, open(t, fctx, s.Base+"/keys"))
			require.Contains(t, text(t, fctx, "#forbidden"), "Not for your role")
			var navKeys int
			require.NoError(t, chromedp.Run(fctx, chromedp.Evaluate(`document.querySelectorAll('#nav-keys').length`, &navKeys)))
			require.Zero(t, navKeys, "no keys link for finance")
			cookie := sessionCookie(t, fctx)
			var csrf string
			require.NoError(t, chromedp.Run(fctx, chromedp.Evaluate(`document.querySelector('input[name=csrf]').value`, &csrf)))
			req, err := http.NewRequest(http.MethodPost, s.Base+"/keys", strings.NewReader("csrf="+csrf))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.AddCookie(cookie)
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			_ = res.Body.Close()
			require.Equal(t, http.StatusForbidden, res.StatusCode)
			keys, err := s.Env.App.Keys().List(context.Background(), apikeys.Partner, s.PartnerID)
			require.NoError(t, err)
			require.Len(t, keys, 3, "the first, the rolled and the created: nothing more")

			// Another partner's key cannot be rolled or revoked from here (404).
			otherKey := s.Env.NewPartner(t)
			otherKeys, err := s.Env.App.Keys().List(context.Background(), apikeys.Partner, s.Env.PartnerID(t, otherKey))
			require.NoError(t, err)
			adminCookie := sessionCookie(t, ctx)
			require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`document.querySelector('input[name=csrf]').value`, &csrf)))
			for _, action := range []string{"roll", "revoke"} {
				req, err := http.NewRequest(http.MethodPost, s.Base+"/keys/"+otherKeys[0].ID.String()+"/"+action,
					strings.NewReader("overlap=1h&csrf="+csrf))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.AddCookie(adminCookie)
				res, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				_ = res.Body.Close()
				require.Equal(t, http.StatusNotFound, res.StatusCode, action)
			}
			require.Equal(t, http.StatusOK, statusWith(t, s, otherKey), "their key untouched")
			_ = client.ErrorCodeUnauthorized
		})
	}
}
