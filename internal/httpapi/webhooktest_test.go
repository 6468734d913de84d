package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/webhook/sign"
)

// answeringReceiver is a real local endpoint that answers each request with the
// next of its scripted answers (the last one repeats), and keeps what it got.
type answeringReceiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	answers []answer
	got     []delivery
}

type answer struct {
	status int
	body   string
}

func newAnsweringReceiver(t *testing.T, answers ...answer) *answeringReceiver {
	r := &answeringReceiver{answers: answers}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		a := r.answers[min(len(r.got), len(r.answers)-1)]
		r.got = append(r.got, delivery{Header: req.Header.Clone(), Body: body, At: time.Now()})
		r.mu.Unlock()
		w.WriteHeader(a.status)
		_, _ = io.WriteString(w, a.body)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *answeringReceiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

func sendTest(t *testing.T, c *client.ClientWithResponses, key string) *client.SendTestWebhookEventResponse {
	t.Helper()
	res, err := c.SendTestWebhookEventWithResponse(context.Background(), &client.SendTestWebhookEventParams{IdempotencyKey: key})
	require.NoError(t, err)
	return res
}

// A test event goes through the outbox like any event: signed, retried until the
// receiver answers 2xx, logged with every attempt and what the receiver answered;
// its payload says it is a test of no transaction.
func TestSendTestWebhookEvent(t *testing.T) {
	t.Parallel()
	onBoth(t, fastWebhooks, func(t *testing.T, env *apitest.Env) {
		long := strings.Repeat("x", 255) + "é and more" // é is bytes 256 and 257
		rcv := newAnsweringReceiver(t, answer{http.StatusInternalServerError, long}, answer{http.StatusOK, `{"received":true}`})
		c := env.Client(t, env.NewPartner(t))
		ctx := context.Background()

		// No endpoint: 404, nothing emitted.
		none := sendTest(t, c, uuid.NewString())
		require.Equal(t, http.StatusNotFound, none.StatusCode(), string(none.Body))
		require.Equal(t, client.ErrorCodeNotFound, none.JSON404.Error.Code)

		secret := register(t, c, rcv.srv.URL)
		// The Idempotency-Key is required.
		res, err := c.SendTestWebhookEventWithResponse(ctx, &client.SendTestWebhookEventParams{IdempotencyKey: "x"},
			func(_ context.Context, r *http.Request) error { r.Header.Del("Idempotency-Key"); return nil })
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, res.StatusCode(), string(res.Body))
		require.Equal(t, client.ErrorCodeIdempotencyKeyMissing, res.JSON400.Error.Code)

		key := uuid.NewString()
		sent := sendTest(t, c, key)
		require.Equal(t, http.StatusAccepted, sent.StatusCode(), string(sent.Body))
		ev := sent.JSON202.Data
		require.True(t, ev.Test)
		require.Equal(t, client.WebhookEventType("transaction.created"), ev.EventType)
		require.Equal(t, uuid.Nil, ev.AggregateId)
		require.Equal(t, client.PublishStatusPending, ev.PublishStatus)
		// A retry with the key answers the same event and sends no other.
		again := sendTest(t, c, key)
		require.Equal(t, http.StatusAccepted, again.StatusCode())
		require.Equal(t, ev.EventId, again.JSON202.Data.EventId)
		require.Equal(t, "true", again.HTTPResponse.Header.Get("Idempotent-Replayed"))

		var detail client.WebhookEventDetail
		require.Eventually(t, func() bool {
			d, err := c.GetWebhookEventWithResponse(ctx, ev.EventId)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, d.StatusCode(), string(d.Body))
			detail = d.JSON200.Data
			return detail.PublishStatus == client.PublishStatusDelivered
		}, 20*time.Second, 50*time.Millisecond)
		require.True(t, detail.Test)
		require.Len(t, detail.DeliveryAttempts, 2)
		first, second := detail.DeliveryAttempts[0], detail.DeliveryAttempts[1]
		require.Equal(t, 500, *first.StatusCode)
		require.Equal(t, strings.Repeat("x", 255), *first.ResponseExcerpt, "the first 256 bytes, without the character the cut split")
		require.Equal(t, 200, *second.StatusCode)
		require.Equal(t, `{"received":true}`, *second.ResponseExcerpt)
		require.Nil(t, second.Error)
		require.Equal(t, uuid.Nil, detail.Payload.Data.Id)
		require.Equal(t, "WEBHOOK-TEST", detail.Payload.Data.MerchantReference)

		// What arrived: one event (twice, the retry), signed, marked as a test.
		ds := rcv.deliveries()
		require.Len(t, ds, 2)
		for _, d := range ds {
			require.Equal(t, ev.EventId.String(), d.Header.Get("webhook-id"))
			verifyOfficial(t, secret, d)
			var body map[string]any
			require.NoError(t, json.Unmarshal(d.Body, &body))
			require.Equal(t, true, body["test"])
			require.Equal(t, "transaction.created", body["type"])
			require.Equal(t, uuid.Nil.String(), body["data"].(map[string]any)["id"])
		}
		require.NoError(t, sign.Verify(secret, ds[0].Header, ds[0].Body, time.Now(), 5*time.Minute))

		// The event log lists it as a test; no transaction has it.
		list, err := c.ListWebhookEventsWithResponse(ctx, &client.ListWebhookEventsParams{})
		require.NoError(t, err)
		require.Len(t, list.JSON200.Data.Data, 1)
		require.True(t, list.JSON200.Data.Data[0].Test)

		// Another partner's key cannot read, replay or see it.
		other := env.Client(t, env.NewPartner(t))
		got, err := other.GetWebhookEventWithResponse(ctx, ev.EventId)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, got.StatusCode())
		rep, err := other.ReplayWebhookEventWithResponse(ctx, ev.EventId, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, rep.StatusCode())

		// A replay of the test event delivers it again.
		rep, err = c.ReplayWebhookEventWithResponse(ctx, ev.EventId, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, rep.StatusCode(), string(rep.Body))
		require.Eventually(t, func() bool { return len(rcv.deliveries()) == 3 }, 20*time.Second, 50*time.Millisecond)
	})
}

// A transaction's events are not tests, and an attempt that got no response has
// no excerpt.
func TestAttemptWithoutResponseHasNoExcerpt(t *testing.T) {
	t.Parallel()
	onBoth(t, fastWebhooks, func(t *testing.T, env *apitest.Env) {
		rcv := newAnsweringReceiver(t, answer{http.StatusOK, ""})
		url := rcv.srv.URL
		rcv.srv.Close() // connection refused
		c := env.Client(t, env.NewPartner(t))
		ctx := context.Background()
		register(t, c, url)
		tx := create(t, c, direct("NO-ANSWER-1", "bep20", "2000"))
		var detail client.WebhookEventDetail
		require.Eventually(t, func() bool {
			l, err := c.ListWebhookEventsWithResponse(ctx, &client.ListWebhookEventsParams{TransactionId: &tx.Id})
			require.NoError(t, err)
			if len(l.JSON200.Data.Data) == 0 || l.JSON200.Data.Data[0].Attempts == 0 {
				return false
			}
			require.False(t, l.JSON200.Data.Data[0].Test)
			d, err := c.GetWebhookEventWithResponse(ctx, l.JSON200.Data.Data[0].EventId)
			require.NoError(t, err)
			detail = d.JSON200.Data
			return len(detail.DeliveryAttempts) > 0
		}, 20*time.Second, 50*time.Millisecond)
		require.False(t, detail.Test)
		require.Equal(t, tx.Id, detail.AggregateId)
		a := detail.DeliveryAttempts[0]
		require.Nil(t, a.StatusCode)
		require.Nil(t, a.ResponseExcerpt)
		require.NotNil(t, a.Error)
	})
}
