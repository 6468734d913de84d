package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	oc "partnerd/gen/operatorclient"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/testsupport/apitest"
)

// slowBackoff retries an hour after a failed attempt: within a test, only a
// recovery or a resend explains a second attempt.
var slowBackoff = map[string]string{"WEBHOOK_RETRY_SCHEDULE": "1h,1h,1h", "JOB_POLL_INTERVAL": "100ms"}

// outage is a receiver that answers 500 until it recovers, then 200.
type outage struct {
	srv       *httptest.Server
	mu        sync.Mutex
	recovered bool
	// busy answers 503 with a Retry-After of an hour (instead of 500).
	busy     bool
	got      []outageHit
	inFlight map[string]bool
	overlap  int
}

type outageHit struct {
	id     string
	status int
}

func newOutage(t *testing.T) *outage {
	o := &outage{inFlight: map[string]bool{}}
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		id := req.Header.Get("webhook-id")
		o.mu.Lock()
		if o.inFlight[id] {
			o.overlap++
		}
		o.inFlight[id] = true
		status := http.StatusInternalServerError
		switch {
		case o.recovered:
			status = http.StatusOK
		case o.busy:
			status = http.StatusServiceUnavailable
			w.Header().Set("Retry-After", "3600")
		}
		o.got = append(o.got, outageHit{id: id, status: status})
		delete(o.inFlight, id)
		o.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(o.srv.Close)
	return o
}

func (o *outage) recover() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.recovered = true
}

func (o *outage) busyNow() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.busy = true
}

// failures is how many failed attempts id got.
func (o *outage) failures(id string) int {
	n := 0
	for _, h := range o.hits() {
		if h.id == id && h.status != http.StatusOK {
			n++
		}
	}
	return n
}

func (o *outage) hits() []outageHit {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]outageHit(nil), o.got...)
}

// delivered is the ids answered 200, in the order they arrived, and how many
// times each was.
func (o *outage) delivered() ([]string, map[string]int) {
	var order []string
	n := map[string]int{}
	for _, h := range o.hits() {
		if h.status == http.StatusOK {
			order = append(order, h.id)
			n[h.id]++
		}
	}
	return order, n
}

// failedOnce waits until each of ids got one failed attempt.
func (o *outage) failedOnce(t *testing.T, ids ...string) {
	t.Helper()
	require.Eventually(t, func() bool {
		failed := map[string]bool{}
		for _, h := range o.hits() {
			if h.status != http.StatusOK {
				failed[h.id] = true
			}
		}
		for _, id := range ids {
			if !failed[id] {
				return false
			}
		}
		return true
	}, 15*time.Second, 20*time.Millisecond)
}

// recordTest records a test event for the partner and returns its id.
func recordTest(t *testing.T, c *client.ClientWithResponses) string {
	t.Helper()
	res, err := c.SendTestWebhookEventWithResponse(context.Background(), &client.SendTestWebhookEventParams{IdempotencyKey: uuid.NewString()})
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, res.StatusCode(), string(res.Body))
	return res.JSON202.Data.EventId.String()
}

// A receiver that failed for a while gets its backlog as soon as it answers a
// 2xx again, each event once and oldest first, not an hour later when the
// back-off is over.
func TestARecoveredReceiverGetsItsBacklogAtOnce(t *testing.T) {
	t.Parallel()
	onBoth(t, slowBackoff, func(t *testing.T, env *apitest.Env) {
		rcv := newOutage(t)
		c := env.Client(t, env.NewPartner(t))
		register(t, c, rcv.srv.URL)
		var backlog []string
		for range 4 {
			id := recordTest(t, c)
			rcv.failedOnce(t, id) // one at a time: each waits its hour, oldest first
			backlog = append(backlog, id)
		}

		rcv.recover()
		fresh := recordTest(t, c) // answered 200: the endpoint works again
		require.Eventually(t, func() bool {
			_, n := rcv.delivered()
			return len(n) == len(backlog)+1
		}, 20*time.Second, 20*time.Millisecond, "the backlog arrives without waiting for its back-off")

		order, n := rcv.delivered()
		for id, k := range n {
			require.Equal(t, 1, k, "event %s delivered once", id)
		}
		require.Equal(t, fresh, order[0], "the success that shows the receiver is back")
		require.Equal(t, backlog, order[1:], "then the backlog, oldest first")
		rcv.mu.Lock()
		require.Zero(t, rcv.overlap)
		rcv.mu.Unlock()
		for _, id := range backlog {
			ev, err := c.GetWebhookEventWithResponse(context.Background(), uuid.MustParse(id))
			require.NoError(t, err)
			require.Equal(t, client.PublishStatusDelivered, ev.JSON200.Data.PublishStatus)
			require.Equal(t, 2, ev.JSON200.Data.Attempts, "one failure, one success: its id stable")
		}
	})
}

// An operator resends a partner's backlog: pending events and those given up
// on are delivered at once; the answer counts them; it is audited. A partner
// without an endpoint is 404, a disabled endpoint 409, and a viewer may not.
func TestAnOperatorResendsAPartnersBacklog(t *testing.T) {
	t.Parallel()
	// One retry, soon: an event the receiver refuses twice is given up on.
	onBoth(t, map[string]string{"WEBHOOK_RETRY_SCHEDULE": "200ms", "JOB_POLL_INTERVAL": "100ms"}, func(t *testing.T, env *apitest.Env) {
		ctx := context.Background()
		rcv := newOutage(t)
		key := env.NewPartner(t)
		partner := env.PartnerID(t, key)
		c := env.Client(t, key)
		register(t, c, rcv.srv.URL)
		given := recordTest(t, c)
		require.Eventually(t, func() bool {
			ev, err := c.GetWebhookEventWithResponse(ctx, uuid.MustParse(given))
			require.NoError(t, err)
			return ev.JSON200.Data.PublishStatus == client.PublishStatusFailed
		}, 15*time.Second, 20*time.Millisecond, "given up on after its retry")
		require.Equal(t, 2, rcv.failures(given))
		// Then the receiver asks for an hour: the next events wait, pending.
		rcv.busyNow()
		ids := []string{given}
		for range 2 {
			id := recordTest(t, c)
			rcv.failedOnce(t, id)
			ids = append(ids, id)
		}
		rcv.recover()

		_, viewerKey := env.NewOperatorWith(t, "Viewer", operators.Viewer)
		denied, err := env.OperatorClient(t, viewerKey).ResendWebhookBacklogWithResponse(ctx, partner,
			&oc.ResendWebhookBacklogParams{IdempotencyKey: uuid.NewString()})
		require.NoError(t, err)
		require.Equal(t, http.StatusForbidden, denied.StatusCode(), string(denied.Body))

		_, supportKey := env.NewOperatorWith(t, "Support", operators.Support)
		o := env.OperatorClient(t, supportKey)
		ik := uuid.NewString()
		res, err := o.ResendWebhookBacklogWithResponse(ctx, partner, &oc.ResendWebhookBacklogParams{IdempotencyKey: ik})
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, res.StatusCode(), string(res.Body))
		require.Equal(t, partner, res.JSON202.Data.PartnerId)
		require.Equal(t, 3, res.JSON202.Data.Queued)
		require.Eventually(t, func() bool {
			_, n := rcv.delivered()
			return len(n) == 3
		}, 20*time.Second, 20*time.Millisecond)
		_, n := rcv.delivered()
		for _, id := range ids {
			require.Equal(t, 1, n[id], "event %s delivered once", id)
		}

		again, err := o.ResendWebhookBacklogWithResponse(ctx, partner, &oc.ResendWebhookBacklogParams{IdempotencyKey: ik})
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, again.StatusCode())
		require.Equal(t, "true", again.HTTPResponse.Header.Get("Idempotent-Replayed"))
		require.Equal(t, 3, again.JSON202.Data.Queued)

		au, err := o.ListAuditWithResponse(ctx, &oc.ListAuditParams{Action: ptr(oc.AuditAction("webhook_backlog_resent"))})
		require.NoError(t, err)
		require.Len(t, au.JSON200.Data.Data, 1, "audited once")
		entry := au.JSON200.Data.Data[0]
		require.Equal(t, partner, *entry.SubjectId)
		require.Equal(t, strconv.Itoa(3), *entry.Reference)

		// No endpoint: 404; a disabled one: 409.
		none := env.PartnerID(t, env.NewPartner(t))
		nf, err := o.ResendWebhookBacklogWithResponse(ctx, none, &oc.ResendWebhookBacklogParams{IdempotencyKey: uuid.NewString()})
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, nf.StatusCode(), string(nf.Body))
		offKey := env.NewPartner(t)
		put, err := env.Client(t, offKey).PutWebhookEndpointWithResponse(ctx, nil, client.WebhookEndpointRequest{Url: rcv.srv.URL, Enabled: false})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, put.StatusCode())
		off, err := o.ResendWebhookBacklogWithResponse(ctx, env.PartnerID(t, offKey), &oc.ResendWebhookBacklogParams{IdempotencyKey: uuid.NewString()})
		require.NoError(t, err)
		require.Equal(t, http.StatusConflict, off.StatusCode(), string(off.Body))
		require.Equal(t, oc.ErrorCodeInvalidStateTransition, off.JSON409.Error.Code)
	})
}

// The overview says how a failing endpoint fails: the status it answered, or
// why it gave no answer, and since when.
func TestTheOverviewSaysHowAnEndpointFails(t *testing.T) {
	t.Parallel()
	onBoth(t, slowBackoff, func(t *testing.T, env *apitest.Env) {
		ctx := context.Background()
		rcv := newOutage(t)
		answersKey := env.NewPartner(t)
		answers := env.Client(t, answersKey)
		register(t, answers, rcv.srv.URL)
		before := time.Now().Add(-time.Second)
		rcv.failedOnce(t, recordTest(t, answers))

		closed := httptest.NewServer(http.NotFoundHandler())
		closed.Close() // nothing listens: the connection is refused
		refusedKey := env.NewPartner(t)
		refused := env.Client(t, refusedKey)
		register(t, refused, closed.URL)
		recordTest(t, refused)

		o := env.OperatorClient(t, env.NewOperator(t))
		var items map[uuid.UUID]oc.FailingWebhook
		require.Eventually(t, func() bool {
			res, err := o.GetOverviewWithResponse(ctx)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
			items = map[uuid.UUID]oc.FailingWebhook{}
			for _, f := range res.JSON200.Data.FailingWebhooks {
				items[f.PartnerId] = f
			}
			return len(items) == 2
		}, 15*time.Second, 50*time.Millisecond)

		a := items[env.PartnerID(t, answersKey)]
		require.Equal(t, 1, a.FailingEvents)
		require.Equal(t, http.StatusInternalServerError, *a.LastStatus)
		require.Nil(t, a.LastError)
		require.NotNil(t, a.FailingSince)
		require.WithinRange(t, *a.FailingSince, before, time.Now())

		r := items[env.PartnerID(t, refusedKey)]
		require.Nil(t, r.LastStatus)
		require.Equal(t, "connection refused", *r.LastError)
		require.NotNil(t, r.FailingSince)
	})
}
