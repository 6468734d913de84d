package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/testsupport/apitest"
)

// The operations that took no Idempotency-Key take an optional one: with it a
// retry replays the first answer (so a retry after a lost answer or a 5xx is
// safe); without it each request runs, as before.
func TestOptionalIdempotencyKeys(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		ctx := context.Background()
		c := env.Client(t, env.NewPartner(t))

		// PUT /webhooks/endpoint: the first registration's secret comes back on a retry.
		putKey := uuid.NewString()
		req := client.WebhookEndpointRequest{Url: "http://127.0.0.1:9/first", Enabled: true}
		first, err := c.PutWebhookEndpointWithResponse(ctx, &client.PutWebhookEndpointParams{IdempotencyKey: &putKey}, req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, first.StatusCode(), string(first.Body))
		require.NotNil(t, first.JSON200.Data.SigningSecret)
		again, err := c.PutWebhookEndpointWithResponse(ctx, &client.PutWebhookEndpointParams{IdempotencyKey: &putKey}, req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, again.StatusCode(), string(again.Body))
		require.Equal(t, "true", again.HTTPResponse.Header.Get("Idempotent-Replayed"))
		require.Equal(t, first.Body, again.Body, "the first answer, byte for byte")
		other, err := c.PutWebhookEndpointWithResponse(ctx, &client.PutWebhookEndpointParams{IdempotencyKey: &putKey},
			client.WebhookEndpointRequest{Url: "http://127.0.0.1:9/other", Enabled: true})
		require.NoError(t, err)
		require.Equal(t, http.StatusUnprocessableEntity, other.StatusCode(), string(other.Body))
		require.Equal(t, client.ErrorCode("idempotency_key_reused"), other.JSON422.Error.Code)

		// rotate-secret: one rotation per key.
		rotKey := uuid.NewString()
		rot1, err := c.RotateWebhookSecretWithResponse(ctx, &client.RotateWebhookSecretParams{IdempotencyKey: &rotKey})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, rot1.StatusCode(), string(rot1.Body))
		rot2, err := c.RotateWebhookSecretWithResponse(ctx, &client.RotateWebhookSecretParams{IdempotencyKey: &rotKey})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, rot2.StatusCode(), string(rot2.Body))
		require.Equal(t, "true", rot2.HTTPResponse.Header.Get("Idempotent-Replayed"))
		require.Equal(t, *rot1.JSON200.Data.SigningSecret, *rot2.JSON200.Data.SigningSecret, "a retry does not rotate again")
		// Without a key each request rotates.
		rot3, err := c.RotateWebhookSecretWithResponse(ctx, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, rot3.StatusCode(), string(rot3.Body))
		require.Empty(t, rot3.HTTPResponse.Header.Get("Idempotent-Replayed"))
		require.NotEqual(t, *rot1.JSON200.Data.SigningSecret, *rot3.JSON200.Data.SigningSecret)

		// replay: replayed with a key; an unknown event's 404 is replayed too.
		create(t, c, direct("RETRY-1", "bep20", "2000"))
		events, err := c.ListWebhookEventsWithResponse(ctx, &client.ListWebhookEventsParams{})
		require.NoError(t, err)
		require.NotEmpty(t, events.JSON200.Data.Data)
		ev := events.JSON200.Data.Data[0].EventId
		repKey := uuid.NewString()
		rep1, err := c.ReplayWebhookEventWithResponse(ctx, ev, &client.ReplayWebhookEventParams{IdempotencyKey: &repKey})
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, rep1.StatusCode(), string(rep1.Body))
		rep2, err := c.ReplayWebhookEventWithResponse(ctx, ev, &client.ReplayWebhookEventParams{IdempotencyKey: &repKey})
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, rep2.StatusCode(), string(rep2.Body))
		require.Equal(t, "true", rep2.HTTPResponse.Header.Get("Idempotent-Replayed"))
		require.Equal(t, rep1.Body, rep2.Body)

		// A key that breaks the text rule is refused with the field named.
		bad := "k\u0085"
		res, err := c.RotateWebhookSecretWithResponse(ctx, &client.RotateWebhookSecretParams{IdempotencyKey: &bad})
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, res.StatusCode(), string(res.Body))
		require.Equal(t, []string{"Idempotency-Key"}, fieldsOf(*res.JSON400))
	})
}
