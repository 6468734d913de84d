package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/web/webkit/webtest"
)

// The overview says how a partner's endpoint fails (the status it answered and
// since when), and its "Resend backlog" button sends the waiting events now,
// saying how many it queued.
func TestConsoleOverviewResendsAFailingBacklog(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			resendFlow(t, db)
		})
	}
}

func resendFlow(t *testing.T, db testdb.Database) {
	// Retries an hour apart: only the resend explains a delivery within the test.
	env := apitest.Start(t, db, map[string]string{"WEBHOOK_RETRY_SCHEDULE": "1h", "JOB_POLL_INTERVAL": "100ms"})
	var up atomic.Bool
	var delivered atomic.Int32
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if !up.Load() {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		delivered.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(rcv.Close)
	ctx := context.Background()
	pc := env.Client(t, env.NewPartner(t))
	put, err := pc.PutWebhookEndpointWithResponse(ctx, nil, client.WebhookEndpointRequest{Url: rcv.URL, Enabled: true})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, put.StatusCode(), string(put.Body))
	sent, err := pc.SendTestWebhookEventWithResponse(ctx, &client.SendTestWebhookEventParams{IdempotencyKey: uuid.NewString()})
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, sent.StatusCode(), string(sent.Body))
	id := sent.JSON202.Data.EventId
	require.Eventually(t, func() bool {
		ev, err := pc.GetWebhookEventWithResponse(ctx, id)
		require.NoError(t, err)
		return ev.JSON200.Data.Attempts == 1
	}, 15*time.Second, 50*time.Millisecond)

	base := env.Root + "/console"
	b := webtest.Browser(t)
	var status, since, notice string
	require.NoError(t, chromedp.Run(b,
		chromedp.Navigate(base+"/login"),
		chromedp.SetValue("#key", env.NewOperator(t), chromedp.ByID),
		chromedp.Click("#signin", chromedp.ByID),
		chromedp.WaitVisible("#failing-webhooks", chromedp.ByID),
		chromedp.Text("#failing-webhooks .last-status", &status, chromedp.ByQuery),
		chromedp.Text("#failing-webhooks .since", &since, chromedp.ByQuery),
	))
	require.Equal(t, "HTTP 502", status)
	require.Regexp(t, `^failing since \d+ s ago$`, since)

	up.Store(true) // the partner fixed its receiver
	require.NoError(t, chromedp.Run(b,
		chromedp.Click("#failing-webhooks .resend", chromedp.ByQuery),
		chromedp.WaitVisible("#notice", chromedp.ByID),
		chromedp.Text("#notice", &notice, chromedp.ByID),
	))
	require.Equal(t, "1 webhook event queued for delivery now.", notice)
	require.Eventually(t, func() bool { return delivered.Load() == 1 }, 15*time.Second, 50*time.Millisecond)
	ev, err := pc.GetWebhookEventWithResponse(ctx, id)
	require.NoError(t, err)
	require.Equal(t, client.PublishStatusDelivered, ev.JSON200.Data.PublishStatus)
}
