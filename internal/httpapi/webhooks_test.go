package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/webhook"
	"partnerd/internal/webhook/sign"
)

// fastWebhooks shortens the retry schedule and the job poll interval by
// configuration, so retries are seconds apart instead of minutes.
var fastWebhooks = map[string]string{"WEBHOOK_RETRY_SCHEDULE": "1s,1s,1s,1s,1s,1s,1s", "JOB_POLL_INTERVAL": "100ms"}

// delivery is one request a receiver got.
type delivery struct {
	Header http.Header
	Body   []byte
	At     time.Time
}

// receiver is a real local webhook endpoint. fail answers with a status for the
// first failures requests, then 200.
type receiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	got      []delivery
	failures int
	failWith int
	inFlight map[string]bool
	overlap  atomic.Int32 // the same event delivered concurrently twice
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{inFlight: map[string]bool{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		id := req.Header.Get("webhook-id")
		r.mu.Lock()
		if r.inFlight[id] {
			r.overlap.Add(1)
		}
		r.inFlight[id] = true
		r.got = append(r.got, delivery{Header: req.Header.Clone(), Body: body, At: time.Now()})
		status := http.StatusOK
		if r.failures > 0 {
			r.failures--
			status = r.failWith
		}
		r.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		r.mu.Lock()
		delete(r.inFlight, id)
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

func (r *receiver) failNext(n, status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures, r.failWith = n, status
}

// byID groups successful-or-not deliveries by webhook id.
func (r *receiver) byID() map[string][]delivery {
	out := map[string][]delivery{}
	for _, d := range r.deliveries() {
		id := d.Header.Get("webhook-id")
		out[id] = append(out[id], d)
	}
	return out
}

func register(t *testing.T, c *client.ClientWithResponses, url string) string {
	t.Helper()
	res, err := c.PutWebhookEndpointWithResponse(context.Background(), nil, client.WebhookEndpointRequest{Url: url, Enabled: true})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	return deref(res.JSON200.Data.SigningSecret)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

type payload struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Data struct {
		ID     uuid.UUID `json:"id"`
		Status string    `json:"status"`
	} `json:"data"`
}

func decode(t *testing.T, d delivery) payload {
	t.Helper()
	var p payload
	require.NoError(t, json.Unmarshal(d.Body, &p))
	return p
}

func TestWebhooksArriveSigned(t *testing.T) {
	t.Parallel()
	onBoth(t, fastWebhooks, func(t *testing.T, env *apitest.Env) {
		rcv := newReceiver(t)
		key := env.NewPartner(t)
		c := env.Client(t, key)
		ctx := context.Background()
		secret := register(t, c, rcv.srv.URL+"/hooks")
		require.Regexp(t, `^whsec_[A-Za-z0-9+/]{43}=$`, secret)

		got, err := c.GetWebhookEndpointWithResponse(ctx)
		require.NoError(t, err)
		require.Nil(t, got.JSON200.Data.SigningSecret, "the secret is shown only when created")
		require.True(t, got.JSON200.Data.Enabled)

		tx := create(t, c, direct("WH-1", "bep20", "2000"))
		for _, ev := range []sim{evDetected, evConfirmed, evCompleted, evPayout} {
			mustSimulate(t, c, tx.Id, ev)
		}
		// A second transaction covers the other event types.
		tx2 := create(t, c, direct("WH-2", "trc20", "2000"))
		for _, ev := range []sim{evExpired, evDetected, evFailed, evRefunded} {
			mustSimulate(t, c, tx2.Id, ev)
		}
		want := []string{"transaction.created", "deposit.detected", "deposit.confirmed", "transaction.completed", "payout.settled",
			"transaction.created", "transaction.expired", "deposit.detected", "transaction.failed", "transaction.refunded"}
		require.Eventually(t, func() bool { return len(rcv.byID()) == len(want) }, 20*time.Second, 50*time.Millisecond)

		var types []string
		stored, err := env.Store.ListEvents(ctx, env.PartnerID(t, key), webhook.ListQuery{Limit: 100})
		require.NoError(t, err)
		require.Len(t, stored, len(want))
		for _, ds := range rcv.byID() {
			d := ds[0]
			p := decode(t, d)
			types = append(types, p.Type)
			require.Contains(t, []uuid.UUID{tx.Id, tx2.Id}, p.Data.ID)
			require.Equal(t, "application/json", d.Header.Get("Content-Type"))
			require.Equal(t, p.ID, d.Header.Get("X-Service-Webhook-Id"))
			require.Equal(t, p.ID, d.Header.Get("webhook-id"))
			require.Equal(t, d.Header.Get("webhook-signature"), d.Header.Get("X-Service-Webhook-Signature"))
			require.Equal(t, d.Header.Get("webhook-timestamp"), d.Header.Get("X-Service-Webhook-Timestamp"))
			require.NoError(t, sign.Verify(secret, d.Header, d.Body, time.Now(), 0))
			verifyOfficial(t, secret, d)
			for _, s := range stored {
				if s.ID.String() == p.ID {
					require.Equal(t, string(s.Payload), string(d.Body), "the stored payload is what was sent")
				}
			}
		}
		require.ElementsMatch(t, want, types)

		// The event log shows every event delivered, with its attempt.
		list, err := c.ListWebhookEventsWithResponse(ctx, &client.ListWebhookEventsParams{TransactionId: &tx.Id})
		require.NoError(t, err)
		require.Len(t, list.JSON200.Data.Data, 5)
		require.Eventually(t, func() bool {
			l, err := c.ListWebhookEventsWithResponse(ctx, &client.ListWebhookEventsParams{PublishStatus: ptr(client.PublishStatusDelivered)})
			require.NoError(t, err)
			return len(l.JSON200.Data.Data) == len(want)
		}, 10*time.Second, 50*time.Millisecond)
		one := list.JSON200.Data.Data[0]
		detail, err := c.GetWebhookEventWithResponse(ctx, one.EventId)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, detail.StatusCode(), string(detail.Body))
		require.Equal(t, one.EventId, detail.JSON200.Data.Payload.Id)
		require.Len(t, detail.JSON200.Data.DeliveryAttempts, 1)
		require.Equal(t, 200, *detail.JSON200.Data.DeliveryAttempts[0].StatusCode)

		// Another partner sees none of it.
		other := env.Client(t, env.NewPartner(t))
		o, err := other.GetWebhookEventWithResponse(ctx, one.EventId)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, o.StatusCode())
		r, err := other.ReplayWebhookEventWithResponse(ctx, one.EventId, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, r.StatusCode())
		e, err := other.GetWebhookEndpointWithResponse(ctx)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, e.StatusCode())
	})
}

func TestEventsWaitForAnEnabledEndpoint(t *testing.T) {
	t.Parallel()
	onBoth(t, fastWebhooks, func(t *testing.T, env *apitest.Env) {
		rcv := newReceiver(t)
		c := env.Client(t, env.NewPartner(t))
		ctx := context.Background()
		tx := create(t, c, direct("WAIT-1", "trc20", "2000"))
		time.Sleep(500 * time.Millisecond) // its job has run and found no endpoint
		list, err := c.ListWebhookEventsWithResponse(ctx, &client.ListWebhookEventsParams{TransactionId: &tx.Id})
		require.NoError(t, err)
		require.Equal(t, client.PublishStatusPending, list.JSON200.Data.Data[0].PublishStatus)
		require.Zero(t, list.JSON200.Data.Data[0].Attempts)

		res, err := c.PutWebhookEndpointWithResponse(ctx, nil, client.WebhookEndpointRequest{Url: rcv.srv.URL, Enabled: false})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode())
		time.Sleep(300 * time.Millisecond)
		require.Empty(t, rcv.deliveries(), "a disabled endpoint gets nothing")

		res, err = c.PutWebhookEndpointWithResponse(ctx, nil, client.WebhookEndpointRequest{Url: rcv.srv.URL, Enabled: true})
		require.NoError(t, err)
		require.Nil(t, res.JSON200.Data.SigningSecret, "an update keeps the secret")
		require.Eventually(t, func() bool { return len(rcv.deliveries()) == 1 }, 15*time.Second, 50*time.Millisecond)
	})
}

func TestRetriesUntilTheReceiverRecovers(t *testing.T) {
	t.Parallel()
	onBoth(t, fastWebhooks, func(t *testing.T, env *apitest.Env) {
		rcv := newReceiver(t)
		rcv.failNext(3, http.StatusInternalServerError)
		c := env.Client(t, env.NewPartner(t))
		ctx := context.Background()
		register(t, c, rcv.srv.URL)
		tx := create(t, c, direct("RETRY-1", "bep20", "2000"))
		require.Eventually(t, func() bool { return len(rcv.deliveries()) == 4 }, 40*time.Second, 50*time.Millisecond)
		ds := rcv.deliveries()
		for i := 1; i < len(ds); i++ {
			require.Equal(t, ds[0].Header.Get("webhook-id"), ds[i].Header.Get("webhook-id"), "the same id on every retry")
			require.GreaterOrEqual(t, ds[i].At.Sub(ds[i-1].At), 800*time.Millisecond, "retries wait for the schedule (1 s ± 10 %)")
		}
		var ev client.WebhookEvent
		require.Eventually(t, func() bool {
			l, err := c.ListWebhookEventsWithResponse(ctx, &client.ListWebhookEventsParams{TransactionId: &tx.Id})
			require.NoError(t, err)
			ev = l.JSON200.Data.Data[0]
			return ev.PublishStatus == client.PublishStatusDelivered
		}, 10*time.Second, 50*time.Millisecond)
		require.Equal(t, 4, ev.Attempts)
		detail, err := c.GetWebhookEventWithResponse(ctx, ev.EventId)
		require.NoError(t, err)
		var codes []int
		for _, a := range detail.JSON200.Data.DeliveryAttempts {
			codes = append(codes, *a.StatusCode)
		}
		require.Equal(t, []int{500, 500, 500, 200}, codes)
	})
}

func TestGivesUpAfterTheLastAttemptAndReplays(t *testing.T) {
	t.Parallel()
	onBoth(t, map[string]string{"WEBHOOK_RETRY_SCHEDULE": "1s", "JOB_POLL_INTERVAL": "100ms"}, func(t *testing.T, env *apitest.Env) {
		rcv := newReceiver(t)
		rcv.failNext(2, http.StatusBadGateway)
		c := env.Client(t, env.NewPartner(t))
		ctx := context.Background()
		register(t, c, rcv.srv.URL)
		tx := create(t, c, direct("GIVEUP-1", "bep20", "2000"))
		var ev client.WebhookEvent
		require.Eventually(t, func() bool {
			l, err := c.ListWebhookEventsWithResponse(ctx, &client.ListWebhookEventsParams{TransactionId: &tx.Id})
			require.NoError(t, err)
			ev = l.JSON200.Data.Data[0]
			return ev.PublishStatus == client.PublishStatusFailed
		}, 20*time.Second, 50*time.Millisecond)
		require.Equal(t, 2, ev.Attempts, "one attempt and one retry, then failed")

		rep, err := c.ReplayWebhookEventWithResponse(ctx, ev.EventId, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, rep.StatusCode(), string(rep.Body))
		require.Equal(t, client.PublishStatusPending, rep.JSON202.Data.PublishStatus)
		require.Equal(t, ev.EventId, rep.JSON202.Data.EventId)
		require.Equal(t, "Event queued for redelivery.", *rep.JSON202.Message)
		require.Eventually(t, func() bool { return len(rcv.deliveries()) == 3 }, 15*time.Second, 50*time.Millisecond)
		ds := rcv.deliveries()
		require.Equal(t, ds[0].Header.Get("webhook-id"), ds[2].Header.Get("webhook-id"), "replay keeps the id")
		require.Equal(t, string(ds[0].Body), string(ds[2].Body), "and the payload")

		unknown, err := c.ReplayWebhookEventWithResponse(ctx, uuid.New(), nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, unknown.StatusCode())
	})
}

func TestGoneDisablesTheEndpoint(t *testing.T) {
	t.Parallel()
	onBoth(t, fastWebhooks, func(t *testing.T, env *apitest.Env) {
		rcv := newReceiver(t)
		rcv.failNext(1, http.StatusGone)
		c := env.Client(t, env.NewPartner(t))
		register(t, c, rcv.srv.URL)
		create(t, c, direct("GONE-1", "bep20", "2000"))
		require.Eventually(t, func() bool {
			e, err := c.GetWebhookEndpointWithResponse(context.Background())
			require.NoError(t, err)
			return !e.JSON200.Data.Enabled
		}, 15*time.Second, 50*time.Millisecond)
		// Re-enabling delivers the waiting event.
		register(t, c, rcv.srv.URL)
		require.Eventually(t, func() bool { return len(rcv.deliveries()) == 2 }, 15*time.Second, 50*time.Millisecond)
	})
}

func TestRotatedSecretsBothVerify(t *testing.T) {
	t.Parallel()
	onBoth(t, fastWebhooks, func(t *testing.T, env *apitest.Env) {
		rcv := newReceiver(t)
		c := env.Client(t, env.NewPartner(t))
		ctx := context.Background()
		old := register(t, c, rcv.srv.URL)
		rot, err := c.RotateWebhookSecretWithResponse(ctx, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, rot.StatusCode())
		fresh := deref(rot.JSON200.Data.SigningSecret)
		require.NotEqual(t, old, fresh)
		require.WithinDuration(t, time.Now().Add(24*time.Hour), *rot.JSON200.Data.PreviousSecretExpiresAt, time.Minute)

		create(t, c, direct("ROT-1", "bep20", "2000"))
		require.Eventually(t, func() bool { return len(rcv.deliveries()) == 1 }, 15*time.Second, 50*time.Millisecond)
		d := rcv.deliveries()[0]
		for _, s := range []string{old, fresh} {
			require.NoError(t, sign.Verify(s, d.Header, d.Body, time.Now(), 0))
			verifyOfficial(t, s, d)
		}
		require.Error(t, sign.Verify(mustSecret(t), d.Header, d.Body, time.Now(), 0))

		none, err := env.Client(t, env.NewPartner(t)).RotateWebhookSecretWithResponse(ctx, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, none.StatusCode())
	})
}

func mustSecret(t *testing.T) string {
	s, err := sign.NewSecret()
	require.NoError(t, err)
	return s
}

// TestPrivateWebhookURLsRefused: private, loopback, link-local (the cloud metadata
// address included), unique-local and unspecified destinations are refused in every
// environment unless WEBHOOK_ALLOW_PRIVATE_URLS=true; production also wants https.
func TestPrivateWebhookURLsRefused(t *testing.T) {
	t.Parallel()
	private := []string{
		"https://127.0.0.1/hooks", "https://[::1]/hooks", "https://10.1.2.3/hooks", "https://192.168.1.1/",
		"http://169.254.169.254/latest/meta-data", "https://[fd00::1]/", "https://0.0.0.0/", "https://localhost/hooks",
	}
	refused := func(t *testing.T, env *apitest.Env, urls []string) {
		c := env.Client(t, env.NewPartner(t))
		for _, url := range urls {
			res, err := c.PutWebhookEndpointWithResponse(context.Background(), nil, client.WebhookEndpointRequest{Url: url, Enabled: true})
			require.NoError(t, err)
			require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode(), "%s: %s", url, res.Body)
			require.Equal(t, client.ErrorCodeWebhookUrlNotAllowed, res.JSON422.Error.Code, url)
			get, err := c.GetWebhookEndpointWithResponse(context.Background())
			require.NoError(t, err)
			require.Equal(t, http.StatusNotFound, get.StatusCode(), "nothing was registered")
		}
	}
	t.Run("staging", func(t *testing.T) {
		t.Parallel()
		onBoth(t, map[string]string{"WEBHOOK_ALLOW_PRIVATE_URLS": "false"}, func(t *testing.T, env *apitest.Env) {
			refused(t, env, private)
		})
	})
	t.Run("staging allowing private URLs", func(t *testing.T) {
		t.Parallel()
		env := apitest.Start(t, testdb.Database{Name: "sqlite", URL: testdb.SQLite(t)}, map[string]string{"WEBHOOK_ALLOW_PRIVATE_URLS": "true"})
		c := env.Client(t, env.NewPartner(t))
		res, err := c.PutWebhookEndpointWithResponse(context.Background(), nil, client.WebhookEndpointRequest{Url: "http://127.0.0.1:9000/", Enabled: true})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	})
	t.Run("production", func(t *testing.T) {
		t.Parallel()
		onProduction(t, func(t *testing.T, env *apitest.Env) {
			refused(t, env, append(private, "http://8.8.8.8/hooks", "ftp://8.8.8.8/x"))
		})
	})
}

func TestTwoInstancesDeliverEveryEventOnce(t *testing.T) {
	t.Parallel()
	db := testdb.Database{Name: "postgres", URL: testdb.PostgresSchema(t)}
	a := apitest.Start(t, db, fastWebhooks)
	b := apitest.Start(t, db, fastWebhooks)
	rcv := newReceiver(t)
	key := a.NewPartner(t)
	ca, cb := a.Client(t, key), b.Client(t, key)
	register(t, ca, rcv.srv.URL)
	const n = 1000
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c := ca
			if i%2 == 1 {
				c = cb
			}
			res, err := c.CreateTransactionWithResponse(context.Background(), params(), direct(fmt.Sprintf("MANY-%04d", i), "bep20", "2000"), idem())
			if err != nil {
				t.Errorf("create %d: %v", i, err)
			} else if res.StatusCode() != http.StatusCreated {
				t.Errorf("create %d: %d %s", i, res.StatusCode(), res.Body)
			}
		}()
	}
	wg.Wait()
	require.Eventually(t, func() bool { return len(rcv.byID()) == n }, 60*time.Second, 100*time.Millisecond)
	require.Zero(t, rcv.overlap.Load(), "no event was delivered concurrently twice")
}

// verifyOfficial checks a delivery with the Standard Webhooks reference library, as a
// partner would.
func verifyOfficial(t *testing.T, secret string, d delivery) {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	require.NoError(t, wh.Verify(d.Body, d.Header), "verifies with the official library")
}

// TestConcurrentEndpointWrites: of concurrent first registrations exactly one
// creates the signing secret (and it is the one stored); concurrent rotations each
// take effect in turn, so the stored secret is one that was returned and its
// previous secret is another returned one (or the original).
func TestConcurrentEndpointWrites(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		key := env.NewPartner(t)
		c := env.Client(t, key)
		ctx := context.Background()
		const n = 8
		var wg sync.WaitGroup
		secrets := make(chan string, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := c.PutWebhookEndpointWithResponse(ctx, nil, client.WebhookEndpointRequest{Url: fmt.Sprintf("http://127.0.0.1:9/%d", i), Enabled: true})
				if err != nil || res.StatusCode() != http.StatusOK {
					t.Errorf("put %d: %v %s", i, err, bodyText(res))
					return
				}
				if s := res.JSON200.Data.SigningSecret; s != nil {
					secrets <- *s
				}
			}()
		}
		wg.Wait()
		close(secrets)
		var created []string
		for s := range secrets {
			created = append(created, s)
		}
		require.Len(t, created, 1, "exactly one registration creates the secret")
		stored, err := env.Store.EndpointOf(ctx, env.PartnerID(t, key))
		require.NoError(t, err)
		require.Equal(t, created[0], stored.Secret, "the secret returned is the one that signs")

		rotated := make(chan string, n)
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := c.RotateWebhookSecretWithResponse(ctx, nil)
				if err != nil || res.StatusCode() != http.StatusOK {
					t.Errorf("rotate: %v %s", err, bodyText(res))
					return
				}
				rotated <- *res.JSON200.Data.SigningSecret
			}()
		}
		wg.Wait()
		close(rotated)
		issued := map[string]bool{created[0]: true}
		for s := range rotated {
			issued[s] = true
		}
		require.Len(t, issued, n+1, "every rotation issued its own secret")
		stored, err = env.Store.EndpointOf(ctx, env.PartnerID(t, key))
		require.NoError(t, err)
		require.True(t, issued[stored.Secret], "the stored secret was returned to a caller")
		require.NotNil(t, stored.PreviousSecret)
		require.True(t, issued[*stored.PreviousSecret], "the previous secret was returned to a caller")
		require.NotEqual(t, stored.Secret, *stored.PreviousSecret)
	})
}

// bodyText returns a generated response's body as text for failure messages, ""
// when there is no response.
func bodyText(res interface{ GetBody() []byte }) string {
	if res == nil || reflect.ValueOf(res).IsNil() {
		return ""
	}
	return string(res.GetBody())
}

// TestMalformedWebhookURLIsARequestError: text that is not an absolute http(s)
// URL is 400 invalid_request on the url field (the error table's row for a schema
// violation), even where private URLs are allowed; a well-formed URL the
// environment refuses stays 422 webhook_url_not_allowed (TestPrivateWebhookURLsRefused).
func TestMalformedWebhookURLIsARequestError(t *testing.T) {
	t.Parallel()
	onBoth(t, map[string]string{"WEBHOOK_ALLOW_PRIVATE_URLS": "true"}, func(t *testing.T, env *apitest.Env) {
		c := env.Client(t, env.NewPartner(t))
		for _, url := range []string{"not a url", "/hooks", "mailto:ops@example.com", "https://", "https://host:99999/", "https://bad_host!/"} {
			res, err := c.PutWebhookEndpointWithResponse(context.Background(), nil, client.WebhookEndpointRequest{Url: url, Enabled: true})
			require.NoError(t, err)
			require.Equal(t, http.StatusBadRequest, res.StatusCode(), "%s: %s", url, res.Body)
			require.Equal(t, client.ErrorCodeInvalidRequest, res.JSON400.Error.Code, url)
			require.Equal(t, "/url", res.JSON400.Error.Details[0].Field, url)
			get, err := c.GetWebhookEndpointWithResponse(context.Background())
			require.NoError(t, err)
			require.Equal(t, http.StatusNotFound, get.StatusCode(), "nothing was registered")
		}
	})
}
