package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/testsupport/apitest"
)

// everyEventType is the contract's WebhookEventType, in its order.
var everyEventType = []client.WebhookEventType{
	client.WebhookEventTypeTransactionCreated, client.WebhookEventTypeTransactionCompleted, client.WebhookEventTypeDepositDetected, client.WebhookEventTypeDepositConfirmed,
	client.WebhookEventTypeTransactionFailed, client.WebhookEventTypeTransactionExpired, client.WebhookEventTypeTransactionRefunded, client.WebhookEventTypePayoutSettled,
}

// putEndpoint registers or updates the endpoint with the given event types (nil:
// the request has none).
func putEndpoint(t *testing.T, c *client.ClientWithResponses, url string, enabled bool, events []client.WebhookEventType) *client.PutWebhookEndpointResponse {
	t.Helper()
	body := client.WebhookEndpointRequest{Url: url, Enabled: enabled}
	if events != nil {
		body.EnabledEvents = &events
	}
	res, err := c.PutWebhookEndpointWithResponse(context.Background(), nil, body)
	require.NoError(t, err)
	return res
}

// eventsOf lists the partner's events of the transaction (every event when id is
// nil), newest first.
func eventsOf(t *testing.T, c *client.ClientWithResponses, id *uuid.UUID) []client.WebhookEvent {
	t.Helper()
	l, err := c.ListWebhookEventsWithResponse(context.Background(), &client.ListWebhookEventsParams{TransactionId: id})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, l.StatusCode(), string(l.Body))
	return l.JSON200.Data.Data
}

// An endpoint receiving transaction.completed only: of a transaction driven
// through deposit.detected, deposit.confirmed and transaction.completed, only
// transaction.completed is recorded (the event log lists nothing else) and
// delivered. An event recorded before the endpoint narrowed its types is
// delivered as recorded; a partner without an endpoint has every event recorded.
func TestEnabledEventsFilterWhatIsRecorded(t *testing.T) {
	t.Parallel()
	onBoth(t, fastWebhooks, func(t *testing.T, env *apitest.Env) {
		t.Run("only the enabled type", func(t *testing.T) {
			t.Parallel()
			rcv := newReceiver(t)
			key := env.NewPartner(t)
			c := env.Client(t, key)
			res := putEndpoint(t, c, rcv.srv.URL, true, []client.WebhookEventType{client.WebhookEventTypeTransactionCompleted})
			require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
			require.Equal(t, []client.WebhookEventType{client.WebhookEventTypeTransactionCompleted}, res.JSON200.Data.EnabledEvents)

			tx := create(t, c, direct("ONLY-COMPLETED", "bep20", "2000"))
			for _, ev := range []sim{evDetected, evConfirmed, evCompleted} {
				mustSimulate(t, c, tx.Id, ev)
			}
			var completed client.WebhookEvent
			require.Eventually(t, func() bool {
				evs := eventsOf(t, c, &tx.Id)
				require.Len(t, evs, 1, "only the enabled type is recorded")
				completed = evs[0]
				return completed.PublishStatus == client.PublishStatusDelivered
			}, 20*time.Second, 50*time.Millisecond)
			require.Equal(t, client.WebhookEventTypeTransactionCompleted, completed.EventType)
			require.Len(t, eventsOf(t, c, nil), 1, "nor any other event of the partner")
			ds := rcv.deliveries()
			require.Len(t, ds, 1, "the one event recorded, delivered once")
			require.Equal(t, completed.EventId.String(), ds[0].Header.Get("webhook-id"))
			p := decode(t, ds[0])
			require.Equal(t, "transaction.completed", p.Type)
			require.Equal(t, tx.Id, p.Data.ID)
		})

		t.Run("recorded before a change, delivered as recorded", func(t *testing.T) {
			t.Parallel()
			rcv := newReceiver(t)
			key := env.NewPartner(t)
			c := env.Client(t, key)
			res := putEndpoint(t, c, rcv.srv.URL, false, nil)
			require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
			tx := create(t, c, direct("BEFORE-CHANGE", "bep20", "2000"))
			created := eventsOf(t, c, &tx.Id)
			require.Len(t, created, 1)
			require.Equal(t, client.WebhookEventTypeTransactionCreated, created[0].EventType)

			// Enabled now, for transaction.completed only: the waiting
			// transaction.created goes out all the same; deposit.detected is not
			// recorded.
			res = putEndpoint(t, c, rcv.srv.URL, true, []client.WebhookEventType{client.WebhookEventTypeTransactionCompleted})
			require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
			mustSimulate(t, c, tx.Id, evDetected)
			require.Eventually(t, func() bool {
				evs := eventsOf(t, c, &tx.Id)
				require.Len(t, evs, 1)
				return evs[0].PublishStatus == client.PublishStatusDelivered
			}, 20*time.Second, 50*time.Millisecond)
			ds := rcv.deliveries()
			require.Len(t, ds, 1)
			require.Equal(t, created[0].EventId.String(), ds[0].Header.Get("webhook-id"))
		})

		t.Run("no endpoint records every event", func(t *testing.T) {
			t.Parallel()
			key := env.NewPartner(t)
			c := env.Client(t, key)
			tx := create(t, c, direct("NO-ENDPOINT", "bep20", "2000"))
			mustSimulate(t, c, tx.Id, evDetected)
			var types []client.WebhookEventType
			for _, ev := range eventsOf(t, c, &tx.Id) {
				types = append(types, ev.EventType)
			}
			require.ElementsMatch(t, []client.WebhookEventType{client.WebhookEventTypeTransactionCreated, client.WebhookEventTypeDepositDetected}, types)
		})
	})
}

// enabled_events: a first registration without it receives every type; an
// update without it keeps them; every answer lists them in the order of the
// contract's enum; a list that is empty, names an unknown type or one type twice
// is 400 invalid_request and changes nothing.
func TestEnabledEventsOfTheEndpoint(t *testing.T) {
	t.Parallel()
	onBoth(t, map[string]string{"WEBHOOK_ALLOW_PRIVATE_URLS": "true"}, func(t *testing.T, env *apitest.Env) {
		ctx := context.Background()
		key := env.NewPartner(t)
		c := env.Client(t, key)
		bad := [][]client.WebhookEventType{
			{},
			{client.WebhookEventTypeTransactionCompleted, "transaction.unknown"},
			{client.WebhookEventTypePayoutSettled, client.WebhookEventTypeTransactionCompleted, client.WebhookEventTypePayoutSettled},
		}
		refused := func(events []client.WebhookEventType) {
			t.Helper()
			res := putEndpoint(t, c, "http://127.0.0.1:9/changed", true, events)
			require.Equal(t, http.StatusBadRequest, res.StatusCode(), "%v: %s", events, res.Body)
			require.Equal(t, client.ErrorCodeInvalidRequest, res.JSON400.Error.Code, events)
		}

		// Refused on a first registration: nothing is registered.
		for _, events := range bad {
			refused(events)
			get, err := c.GetWebhookEndpointWithResponse(ctx)
			require.NoError(t, err)
			require.Equal(t, http.StatusNotFound, get.StatusCode(), "nothing was registered")
		}

		res := putEndpoint(t, c, "http://127.0.0.1:9/a", true, nil)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		require.Equal(t, everyEventType, res.JSON200.Data.EnabledEvents, "a first registration without a list receives every type")

		res = putEndpoint(t, c, "http://127.0.0.1:9/b", true, []client.WebhookEventType{client.WebhookEventTypePayoutSettled, client.WebhookEventTypeTransactionCompleted})
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		chosen := []client.WebhookEventType{client.WebhookEventTypeTransactionCompleted, client.WebhookEventTypePayoutSettled}
		require.Equal(t, chosen, res.JSON200.Data.EnabledEvents, "in the order of the enum")

		res = putEndpoint(t, c, "http://127.0.0.1:9/c", false, nil)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		require.Equal(t, chosen, res.JSON200.Data.EnabledEvents, "an update without a list keeps it")
		require.False(t, res.JSON200.Data.Enabled)

		get, err := c.GetWebhookEndpointWithResponse(ctx)
		require.NoError(t, err)
		require.Equal(t, chosen, get.JSON200.Data.EnabledEvents)
		rot, err := c.RotateWebhookSecretWithResponse(ctx, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, rot.StatusCode(), string(rot.Body))
		require.Equal(t, chosen, rot.JSON200.Data.EnabledEvents)

		// Refused on an update: the endpoint stays as it was.
		for _, events := range bad {
			refused(events)
			get, err := c.GetWebhookEndpointWithResponse(ctx)
			require.NoError(t, err)
			require.Equal(t, "http://127.0.0.1:9/c", get.JSON200.Data.Url)
			require.False(t, get.JSON200.Data.Enabled)
			require.Equal(t, chosen, get.JSON200.Data.EnabledEvents)
		}

		// Every type, listed: kept as listed.
		res = putEndpoint(t, c, "http://127.0.0.1:9/c", true, everyEventType)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		require.Equal(t, everyEventType, res.JSON200.Data.EnabledEvents)
	})
}

// The replay of an event whose type the endpoint no longer receives is 409
// invalid_state_transition and changes nothing; once the type is enabled again
// it replays.
func TestReplayOfATypeNotEnabled(t *testing.T) {
	t.Parallel()
	onBoth(t, fastWebhooks, func(t *testing.T, env *apitest.Env) {
		ctx := context.Background()
		rcv := newReceiver(t)
		key := env.NewPartner(t)
		c := env.Client(t, key)
		register(t, c, rcv.srv.URL)
		tx := create(t, c, direct("REPLAY-NOT-ENABLED", "bep20", "2000"))
		var ev client.WebhookEvent
		require.Eventually(t, func() bool {
			evs := eventsOf(t, c, &tx.Id)
			require.Len(t, evs, 1)
			ev = evs[0]
			return ev.PublishStatus == client.PublishStatusDelivered
		}, 20*time.Second, 50*time.Millisecond)
		require.Equal(t, client.WebhookEventTypeTransactionCreated, ev.EventType)

		res := putEndpoint(t, c, rcv.srv.URL, true, []client.WebhookEventType{client.WebhookEventTypeTransactionCompleted})
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		rep, err := c.ReplayWebhookEventWithResponse(ctx, ev.EventId, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusConflict, rep.StatusCode(), string(rep.Body))
		require.Equal(t, client.ErrorCodeInvalidStateTransition, rep.JSON409.Error.Code)
		require.Contains(t, rep.JSON409.Message, "transaction.created")
		d, err := c.GetWebhookEventWithResponse(ctx, ev.EventId)
		require.NoError(t, err)
		require.Equal(t, client.PublishStatusDelivered, d.JSON200.Data.PublishStatus, "not requeued")
		require.Nil(t, d.JSON200.Data.NextAttemptAt)
		require.Equal(t, 1, d.JSON200.Data.Attempts)
		require.Len(t, rcv.deliveries(), 1)

		res = putEndpoint(t, c, rcv.srv.URL, true, []client.WebhookEventType{client.WebhookEventTypeTransactionCreated, client.WebhookEventTypeTransactionCompleted})
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		rep, err = c.ReplayWebhookEventWithResponse(ctx, ev.EventId, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, rep.StatusCode(), string(rep.Body))
		require.Eventually(t, func() bool { return len(rcv.deliveries()) == 2 }, 20*time.Second, 50*time.Millisecond)
	})
}

// The test event is a transaction.created when the endpoint receives it, else
// the first type it receives in the order of the enum; it is still a test.
func TestTestEventTakesAnEnabledType(t *testing.T) {
	t.Parallel()
	onBoth(t, fastWebhooks, func(t *testing.T, env *apitest.Env) {
		ctx := context.Background()
		rcv := newReceiver(t)
		key := env.NewPartner(t)
		c := env.Client(t, key)
		cases := []struct {
			enabled []client.WebhookEventType
			want    client.WebhookEventType
		}{
			{[]client.WebhookEventType{client.WebhookEventTypePayoutSettled, client.WebhookEventTypeDepositConfirmed, client.WebhookEventTypeTransactionFailed}, client.WebhookEventTypeDepositConfirmed},
			{[]client.WebhookEventType{client.WebhookEventTypePayoutSettled}, client.WebhookEventTypePayoutSettled},
			{[]client.WebhookEventType{client.WebhookEventTypePayoutSettled, client.WebhookEventTypeTransactionCreated, client.WebhookEventTypeTransactionCompleted}, client.WebhookEventTypeTransactionCreated},
		}
		for i, tc := range cases {
			res := putEndpoint(t, c, rcv.srv.URL, true, tc.enabled)
			require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
			sent := sendTest(t, c, uuid.NewString())
			require.Equal(t, http.StatusAccepted, sent.StatusCode(), string(sent.Body))
			ev := sent.JSON202.Data
			require.Equal(t, tc.want, ev.EventType, tc.enabled)
			require.True(t, ev.Test)
			require.Equal(t, uuid.Nil, ev.AggregateId)
			require.Eventually(t, func() bool { return len(rcv.deliveries()) == i+1 }, 20*time.Second, 50*time.Millisecond)
			d := rcv.deliveries()[i]
			require.Equal(t, ev.EventId.String(), d.Header.Get("webhook-id"))
			var body map[string]any
			require.NoError(t, json.Unmarshal(d.Body, &body))
			require.Equal(t, string(tc.want), body["type"])
			require.Equal(t, true, body["test"])
			require.Equal(t, uuid.Nil.String(), body["data"].(map[string]any)["id"])
		}
		list, err := c.ListWebhookEventsWithResponse(ctx, &client.ListWebhookEventsParams{})
		require.NoError(t, err)
		require.Len(t, list.JSON200.Data.Data, len(cases))
	})
}
