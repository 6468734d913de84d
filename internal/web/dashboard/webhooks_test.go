package dashboard_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	oc "partnerd/gen/operatorclient"
	"partnerd/internal/partnerusers"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/web/webkit/webtest"
)

// fastWebhooks retries within a second and polls jobs often, so attempts come
// while the page is watched.
var fastWebhooks = map[string]string{"WEBHOOK_RETRY_SCHEDULE": "1s,1s,1s,1s,1s,1s,1s", "JOB_POLL_INTERVAL": "100ms"}

// signedInWith is signedIn on a service started with settings.
func signedInWith(t *testing.T, db testdb.Database, role partnerusers.Role, settings map[string]string) *site {
	t.Helper()
	env := startSite(t, db, settings)
	key := env.NewPartner(t)
	s := &site{Env: env, Base: env.Root + "/dashboard", Key: key, PartnerID: env.PartnerID(t, key), API: env.Client(t, key)}
	s.User = newUser(t, env, s.PartnerID, role)
	s.Email, s.Password = s.User.Email, testPassword
	s.Browser = webtest.Browser(t)
	signIn(t, s.Browser, s.Base, s.Email, s.Password)
	return s
}

// flakyReceiver is a real local webhook endpoint: it answers 500 with an error
// page to the first request, then 200 with a small JSON body.
type flakyReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	n   int
}

func newFlakyReceiver(t *testing.T) *flakyReceiver {
	f := &flakyReceiver{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		f.mu.Lock()
		f.n++
		first := f.n == 1
		f.mu.Unlock()
		if first {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, "<h1>Receiver down for maintenance</h1>")
			return
		}
		_, _ = io.WriteString(w, `{"received":true}`)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// submit clicks sel and waits for wait on the page that answers.
func submit(t *testing.T, ctx context.Context, sel, wait string) {
	t.Helper()
	require.NoError(t, chromedp.Run(ctx, chromedp.Click(sel, chromedp.ByQuery), chromedp.WaitVisible(wait, chromedp.ByQuery)))
}

// attemptRows reads the event page's attempts table: status and response cells.
func attemptRows(t *testing.T, ctx context.Context) [][]string {
	t.Helper()
	var rows [][]string
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`Array.from(document.querySelectorAll('#attempts tr.attempt')).map(tr =>
		[tr.querySelector('.status').textContent.trim(), tr.querySelector('.latency').textContent.trim(), tr.querySelector('.excerpt').textContent.trim()])`, &rows)))
	return rows
}

// waitAttempts reloads the event page until it lists n attempts.
func waitAttempts(t *testing.T, ctx context.Context, url string, n int) [][]string {
	t.Helper()
	var rows [][]string
	require.Eventually(t, func() bool {
		require.Equal(t, http.StatusOK, open(t, ctx, url))
		rows = attemptRows(t, ctx)
		return len(rows) >= n
	}, 30*time.Second, 300*time.Millisecond)
	require.Len(t, rows, n)
	return rows
}

// The webhooks pages in Chromium: the endpoint registered from the form (its
// secret shown once), an event with its failed and successful attempts (status,
// latency, the receiver's first bytes), a replay adding an attempt, a selection
// replayed, a test event, the secret rotated with its dual-signing window;
// another partner's event is 404 and a finance user gets the 403 page.
func TestWebhookPages(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			s := signedInWith(t, db, partnerusers.Developer, fastWebhooks)
			ctx, c := s.Browser, context.Background()
			rcv := newFlakyReceiver(t)
			tx, err := s.API.CreateTransactionWithResponse(c, &client.CreateTransactionParams{IdempotencyKey: uuid.NewString()},
				client.CreateTransactionRequest{MerchantReference: "HOOK-1", CryptoCurrency: "usdt", Network: "bep20", FiatAmount: ptr("150000.00")})
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, tx.StatusCode(), string(tx.Body))

			// No endpoint yet: the event waits; register one from the form.
			require.Equal(t, http.StatusOK, open(t, ctx, s.Base+"/webhooks"))
			require.Contains(t, text(t, ctx, "#no-endpoint"), "No endpoint")
			require.NoError(t, chromedp.Run(ctx, chromedp.SetValue("#url", rcv.srv.URL, chromedp.ByID)))
			submit(t, ctx, "#save-endpoint", "#secret")
			require.True(t, strings.HasPrefix(text(t, ctx, "#secret"), "whsec_"), "the secret, shown once")
			require.Equal(t, rcv.srv.URL, text(t, ctx, "#endpoint-url"))
			require.Equal(t, "every event of your transactions: transaction.created, transaction.completed, deposit.detected, "+
				"deposit.confirmed, transaction.failed, transaction.expired, transaction.refunded, payout.settled", text(t, ctx, "#endpoint-events"))
			require.Equal(t, http.StatusOK, open(t, ctx, s.Base+"/webhooks"))
			var secrets int
			require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`document.querySelectorAll('#secret').length`, &secrets)))
			require.Zero(t, secrets, "never shown again")

			// The event: a failed attempt, then the retry that succeeded.
			list, err := s.API.ListWebhookEventsWithResponse(c, &client.ListWebhookEventsParams{TransactionId: &tx.JSON201.Data.Id})
			require.NoError(t, err)
			require.Len(t, list.JSON200.Data.Data, 1)
			eventURL := s.Base + "/webhooks/events/" + list.JSON200.Data.Data[0].EventId.String()
			rows := waitAttempts(t, ctx, eventURL, 2)
			require.Equal(t, "500", rows[0][0])
			require.Regexp(t, `^\d+ ms$`, rows[0][1])
			require.Equal(t, "<h1>Receiver down for maintenance</h1>", rows[0][2], "the first bytes of the answer, as text")
			require.Equal(t, "200", rows[1][0])
			require.Equal(t, `{"received":true}`, rows[1][2])
			// The event's state and its attempts are read by two statements of the
			// API: a page read between them may show the new attempt before the
			// state it left; a reload shows both.
			require.Eventually(t, func() bool {
				require.Equal(t, http.StatusOK, open(t, ctx, eventURL))
				return strings.Contains(text(t, ctx, "#delivery"), "delivered")
			}, 10*time.Second, 200*time.Millisecond)
			webtest.Shot(t, ctx, "webhook-event.png")

			// A replay adds an attempt.
			submit(t, ctx, "#replay", "#notice")
			rows = waitAttempts(t, ctx, eventURL, 3)
			require.Equal(t, "200", rows[2][0])

			// The list names the event's transaction by its merchant reference.
			require.Equal(t, http.StatusOK, open(t, ctx, s.Base+"/webhooks"))
			require.Equal(t, "HOOK-1", text(t, ctx, "#event-"+list.JSON200.Data.Data[0].EventId.String()+" td.transaction"))

			// A test event, then a selection of two events replayed.
			submit(t, ctx, "#send-test", "#attempts, #no-attempts")
			require.Contains(t, text(t, ctx, "h1"), "test")
			require.Contains(t, text(t, ctx, "#payload"), `"test": true`)
			var testURL string
			require.NoError(t, chromedp.Run(ctx, chromedp.Location(&testURL)))
			testURL, _, _ = strings.Cut(testURL, "?")
			waitAttempts(t, ctx, testURL, 1)
			require.Equal(t, http.StatusOK, open(t, ctx, s.Base+"/webhooks"))
			var boxes int
			require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`document.querySelectorAll('#events input[name=event_id]').length`, &boxes)))
			require.Equal(t, 2, boxes)
			require.NoError(t, chromedp.Run(ctx,
				chromedp.Click(`#events input[name=event_id]`, chromedp.ByQuery),
				chromedp.Evaluate(`document.querySelectorAll('#events input[name=event_id]')[1].checked = true`, nil)))
			submit(t, ctx, "#replay-selected", "#notice")
			require.Contains(t, text(t, ctx, "#notice"), "2 event(s) queued")
			waitAttempts(t, ctx, eventURL, 4)
			waitAttempts(t, ctx, testURL, 2)

			// Rotation shows the new secret once and the window the old one signs in.
			require.Equal(t, http.StatusOK, open(t, ctx, s.Base+"/webhooks"))
			submit(t, ctx, "#rotate", "#secret")
			require.True(t, strings.HasPrefix(text(t, ctx, "#secret"), "whsec_"))
			require.Contains(t, text(t, ctx, "#window"), "the previous secret signs beside the new one until")

			// Another partner's event by URL is the 404 page; so is no event.
			other := s.Env.Client(t, s.Env.NewPartner(t))
			_, err = other.PutWebhookEndpointWithResponse(c, nil, client.WebhookEndpointRequest{Url: rcv.srv.URL, Enabled: false})
			require.NoError(t, err)
			theirs, err := other.SendTestWebhookEventWithResponse(c, &client.SendTestWebhookEventParams{IdempotencyKey: uuid.NewString()})
			require.NoError(t, err)
			require.Equal(t, http.StatusAccepted, theirs.StatusCode(), string(theirs.Body))
			require.Equal(t, http.StatusNotFound, open(t, ctx, s.Base+"/webhooks/events/"+theirs.JSON202.Data.EventId.String()))
			require.Contains(t, text(t, ctx, "#notfound"), "Not found")
			require.Equal(t, http.StatusNotFound, open(t, ctx, s.Base+"/webhooks/events/not-an-id"))
			// Their event slipped into a replayed selection: 404, and it is not replayed.
			require.Equal(t, http.StatusOK, open(t, ctx, s.Base+"/webhooks"))
			var csrf string
			require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`document.querySelector('#replay-form input[name=csrf]').value`, &csrf)))
			form := url.Values{"csrf": {csrf}, "idempotency_key": {uuid.NewString()}, "event_id": {theirs.JSON202.Data.EventId.String()}}
			req, err := http.NewRequest(http.MethodPost, s.Base+"/webhooks/replay", strings.NewReader(form.Encode()))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.AddCookie(sessionCookie(t, ctx))
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			_ = res.Body.Close()
			require.Equal(t, http.StatusNotFound, res.StatusCode)
			after, err := other.GetWebhookEventWithResponse(c, theirs.JSON202.Data.EventId)
			require.NoError(t, err)
			require.Zero(t, after.JSON200.Data.Attempts)
			require.Nil(t, after.JSON200.Data.NextAttemptAt, "not requeued")

			// The operators' audit and the activity name the user for each change;
			// the other partner's changes, made with an API key, are a server's and
			// are not audited.
			ops := s.Env.OperatorClient(t, s.Env.NewOperator(t))
			log, err := ops.ListAuditWithResponse(c, &oc.ListAuditParams{})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, log.StatusCode(), string(log.Body))
			var mine []string
			for _, e := range log.JSON200.Data.Data {
				if strings.HasPrefix(string(e.Action), "webhook_") {
					require.NotNil(t, e.PartnerUserId, "a webhook change is audited only for a person: %s", e.Action)
					require.Equal(t, s.User.ID, *e.PartnerUserId)
					require.Equal(t, oc.AuditActor("partner_user"), e.Actor)
					mine = append(mine, string(e.Action))
				}
			}
			require.Equal(t, []string{"webhook_secret_rotated", "webhook_event_replayed", "webhook_event_replayed",
				"webhook_test_sent", "webhook_event_replayed", "webhook_endpoint_updated"}, mine)

			// A finance user does not open the webhooks.
			fin := newUser(t, s.Env, s.PartnerID, partnerusers.Finance)
			fctx := webtest.Browser(t)
			signIn(t, fctx, s.Base, fin.Email, testPassword)
			require.Equal(t, http.StatusForbidden, open(t, fctx, s.Base+"/webhooks"))
			require.Equal(t, http.StatusForbidden, open(t, fctx, eventURL))
		})
	}
}

func ptr[T any](v T) *T { return &v }
