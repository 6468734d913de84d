package dashboard_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/partnerusers"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/web/webkit/webtest"
)

// What a partner's team reads of text from elsewhere, in real Chromium on both
// databases: a webhook receiver that answers 500 with U+202E and a terminal
// escape sequence has its answer shown with those characters made visible
// ("\u202e", "\x1b"), never raw, in its own isolate; the partner's
// right-to-left name and a transaction's reference, merchant and terminal
// each sit in their own <bdi>.
func TestDashboardShowsOutsideTextInert(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			const name, ref, merchant, terminal = "999 שלום", "5000 עסקה", "מוכר 7", "מסוף 3"
			const answer = "\u202eevil\x1b[31m red\x1b[0m"
			c := context.Background()
			env := startSite(t, db, fastWebhooks)
			_, key, err := env.App.Partners().CreateAlone(c, name)
			require.NoError(t, err)
			s := &site{Env: env, Base: env.Root + "/dashboard", Key: key, PartnerID: env.PartnerID(t, key), API: env.Client(t, key)}
			s.User = newUser(t, env, s.PartnerID, partnerusers.Developer)
			ctx := webtest.Browser(t)
			signIn(t, ctx, s.Base, s.User.Email, testPassword)

			rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = io.WriteString(w, answer)
			}))
			t.Cleanup(rcv.Close)
			ep, err := s.API.PutWebhookEndpointWithResponse(c, nil, client.WebhookEndpointRequest{Url: rcv.URL, Enabled: true})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, ep.StatusCode(), string(ep.Body))
			tx, err := s.API.CreateTransactionWithResponse(c, &client.CreateTransactionParams{IdempotencyKey: uuid.NewString()},
				client.CreateTransactionRequest{MerchantReference: ref, MerchantId: ptr(merchant), TerminalId: ptr(terminal),
					CryptoCurrency: "usdt", Network: "bep20", FiatAmount: ptr("150000.00")})
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, tx.StatusCode(), string(tx.Body))

			// The transaction: the partner's name, the reference, the merchant and
			// the terminal each in its own isolate.
			require.Equal(t, http.StatusOK, open(t, ctx, s.Base+"/transactions/"+tx.JSON201.Data.Id.String()))
			require.Equal(t, []string{name}, isolated(t, ctx, ".brand"))
			require.Equal(t, []string{ref}, isolated(t, ctx, "h1"))
			require.Equal(t, []string{merchant, terminal}, isolated(t, ctx, "#facts"))
			require.Equal(t, "150,000.00 NGN", text(t, ctx, "#amount"))
			require.Equal(t, http.StatusOK, open(t, ctx, s.Base+"/transactions"))
			require.Equal(t, []string{ref}, isolated(t, ctx, "#transactions"))

			// The failed attempt: the receiver's answer made visible, isolated.
			list, err := s.API.ListWebhookEventsWithResponse(c, &client.ListWebhookEventsParams{TransactionId: &tx.JSON201.Data.Id})
			require.NoError(t, err)
			require.Len(t, list.JSON200.Data.Data, 1)
			eventURL := s.Base + "/webhooks/events/" + list.JSON200.Data.Data[0].EventId.String()
			// The receiver keeps failing, so retries may add attempts meanwhile:
			// every one shows the same answer.
			var rows [][]string
			require.Eventually(t, func() bool {
				require.Equal(t, http.StatusOK, open(t, ctx, eventURL))
				rows = attemptRows(t, ctx)
				return len(rows) > 0
			}, 30*time.Second, 300*time.Millisecond)
			shown := `\u202eevil\x1b[31m red\x1b[0m`
			for _, row := range rows {
				require.Equal(t, "500", row[0])
				require.Equal(t, shown, row[2], "the answer's controls made visible")
			}
			for _, in := range isolated(t, ctx, "#attempts .excerpt") {
				require.Equal(t, shown, in, "in its own isolate")
			}
			require.Len(t, isolated(t, ctx, "#attempts .excerpt"), len(rows))
			var page string
			require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`document.querySelector('main').textContent`, &page)))
			require.NotContains(t, page, "\u202e", "no override reverses the page")
			require.NotContains(t, page, "\x1b", "no escape sequence")
			require.Contains(t, page, "HTTP 500", "the attempt's error")
			require.Contains(t, text(t, ctx, "#payload"), ref, "the payload names the reference")
		})
	}
}

// isolated is the text of every <bdi> under sel (by query).
func isolated(t *testing.T, ctx context.Context, sel string) []string {
	t.Helper()
	var out []string
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`Array.from(document.querySelectorAll(`+"`"+sel+" bdi`"+`)).map(b => b.textContent)`, &out)))
	return out
}
