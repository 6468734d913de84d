package webhook_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"partnerd/gen/api"
	"partnerd/internal/audit/actor"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/cursor"
	"partnerd/internal/kit/safeurl"
	"partnerd/internal/kit/uow"
	"partnerd/internal/lifecycle"
	"partnerd/internal/partners"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/transactions"
	"partnerd/internal/webhook"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// The default schedule is the one the contract promises receivers.
func TestDefaultSchedule(t *testing.T) {
	t.Parallel()
	require.Equal(t, []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour},
		webhook.DefaultSchedule)
	spec, err := api.GetSpec()
	require.NoError(t, err)
	payload := strings.Join(strings.Fields(spec.Components.Schemas["WebhookPayload"].Value.Description), " ")
	require.Contains(t, payload, "retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h")
	require.Equal(t, "5s,5m,30m,2h,5h,10h,10h", webhook.ScheduleString(webhook.DefaultSchedule))
}

func TestScheduleString(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   []time.Duration
		want string
	}{
		{nil, ""},
		{[]time.Duration{90 * time.Second}, "90s"},
		{[]time.Duration{90 * time.Minute, 24 * time.Hour}, "90m,24h"},
		{[]time.Duration{1500 * time.Millisecond}, "1.5s"},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, c.want, webhook.ScheduleString(c.in))
		})
	}
}

// A rotated-out secret signs beside the new one until its overlap ends (exclusive).
func TestSecrets(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	old := "whsec_old"
	cases := []struct {
		name  string
		until *time.Time
		prev  *string
		want  []string
	}{
		{"no previous secret", nil, nil, []string{"whsec_new"}},
		{"during the overlap", ptr(now.Add(time.Second)), &old, []string{"whsec_new", old}},
		{"at its end", ptr(now), &old, []string{"whsec_new"}},
		{"after it", ptr(now.Add(-time.Hour)), &old, []string{"whsec_new"}},
		{"no end recorded", nil, &old, []string{"whsec_new"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := webhook.Endpoint{Secret: "whsec_new", PreviousSecret: c.prev, PreviousSecretExpiresAt: c.until}
			require.Equal(t, c.want, e.Secrets(now))
		})
	}
}

func ptr[T any](v T) *T { return &v }

// receiver is a partner's endpoint answering each delivery in turn.
type receiver struct {
	mu      sync.Mutex
	answers []answer // the last one repeats
	got     []delivery
	srv     *httptest.Server
}

type answer struct {
	status     int
	retryAfter string
}

type delivery struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, answers ...answer) *receiver {
	r := &receiver{answers: answers}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		a := r.answers[min(len(r.got), len(r.answers)-1)]
		r.got = append(r.got, delivery{header: req.Header.Clone(), body: body})
		r.mu.Unlock()
		if a.retryAfter != "" {
			w.Header().Set("Retry-After", a.retryAfter)
		}
		w.WriteHeader(a.status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// queue records what the endpoints and the log queue.
type queue struct {
	mu  sync.Mutex
	ids []uuid.UUID
}

func (q *queue) Redeliver(_ context.Context, id uuid.UUID) (time.Time, time.Time, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ids = append(q.ids, id)
	return time.Time{}, time.Time{}, nil
}

func (q *queue) RedeliverMany(_ context.Context, ids []uuid.UUID) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ids = append(q.ids, ids...)
	return nil
}

func (q *queue) queued() []uuid.UUID {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]uuid.UUID(nil), q.ids...)
}

type bed struct {
	st        *store.Store
	endpoints *webhook.Endpoints
	queue     *queue
	local     safeurl.Policy
}

func newBed(t *testing.T, url string) *bed {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, err = st.Migrate(ctx)
	require.NoError(t, err)
	require.NoError(t, st.EnsureAddressSequences(ctx, []string{"bep20"}))
	q := &queue{}
	local := safeurl.Policy{AllowPrivate: true}
	return &bed{st: st, queue: q, local: local, endpoints: webhook.NewEndpoints(store.For(st, func(tx *store.Tx) webhook.Tx { return tx }), local, q, store.Now)}
}

// partnerWithEvent creates a partner and one transaction, whose creation writes
// a transaction.created event; it returns the partner and the event.
func (b *bed) partnerWithEvent(t *testing.T) (uuid.UUID, uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	p := &partners.Partner{ID: uuid.New(), Name: "P", Environment: partners.Sandbox, KeyHash: uuid.NewString(),
		FeeRate: decimal.RequireFromString("0.01"), ShareRate: decimal.RequireFromString("0.5"), CreatedAt: store.Now()}
	require.NoError(t, b.st.CreatePartner(ctx, p))
	now := store.Now()
	tr := &lifecycle.Transaction{ID: uuid.New(), PartnerID: p.ID, MerchantReference: "R-" + uuid.NewString(),
		Token: "usdt", Network: "bep20", Status: lifecycle.AwaitingDeposit, Rate: decimal.RequireFromString("1500"),
		CryptoAmount: decimal.RequireFromString("10"), FiatAmount: decimal.RequireFromString("15000"),
		DepositAddress: "addr-" + uuid.NewString(), CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour)}
	tr.ReferenceKey = transactions.ReferenceKey(tr.MerchantReference)
	require.NoError(t, store.For(b.st, func(tx *store.Tx) transactions.Tx { return tx }).WithTx(ctx, func(ctx context.Context, tx transactions.Tx) error {
		idx, err := tx.NextAddressIndex(ctx, tr.Network)
		if err != nil {
			return err
		}
		tr.AddressIndex = idx
		if err := tx.InsertTransaction(ctx, tr); err != nil {
			return err
		}
		return lifecycle.Record(ctx, tx, tr, lifecycle.MustLookup(lifecycle.None, lifecycle.Create), nil, now)
	}))
	evs, err := b.st.ListEvents(ctx, p.ID, webhook.ListQuery{Limit: 10})
	require.NoError(t, err)
	require.Len(t, evs, 1)
	require.Equal(t, "transaction.created", evs[0].Type)
	require.Equal(t, webhook.Pending, evs[0].PublishStatus)
	return p.ID, evs[0].ID
}

func (b *bed) deliverer(schedule ...time.Duration) *webhook.Deliverer {
	return webhook.NewDeliverer(b.st, b.local, schedule, store.Now, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
}

func (b *bed) event(t *testing.T, id uuid.UUID) (*webhook.Event, []webhook.Attempt) {
	t.Helper()
	ev, err := b.st.EventByID(context.Background(), nil, id)
	require.NoError(t, err)
	at, err := b.st.AttemptsOf(context.Background(), id)
	require.NoError(t, err)
	return ev, at
}

// Delivery on the real store to a local receiver: signed so the Standard Webhooks
// library verifies it (with the new and, during the overlap, the rotated-out secret),
// the stored payload sent as is, retried on the schedule with ±10 % jitter until it
// runs out, Retry-After honoured on 429 and 503 only (capped at 24 h), 410 turning
// the endpoint off, and nothing sent while no endpoint is enabled.
func TestDeliver(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := newBed(t, db.URL)

			t.Run("signed and delivered once", func(t *testing.T) {
				rcv := newReceiver(t, answer{status: http.StatusNoContent})
				partner, id := b.partnerWithEvent(t)
				ep, secret, err := b.endpoints.Put(ctx, uow.Plain[webhook.Registered, webhook.Tx](), actor.OfPartnerKey(partner, ""), partner, rcv.srv.URL+"/hooks", true, nil)
				require.NoError(t, err)
				require.True(t, strings.HasPrefix(secret, "whsec_"))
				require.Equal(t, secret, ep.Secret)
				require.Equal(t, []uuid.UUID{id}, b.queue.queued()[len(b.queue.queued())-1:], "enabling releases the waiting event")

				retry, wait, err := b.deliverer().Deliver(ctx, id)
				require.NoError(t, err)
				require.False(t, retry)
				require.Zero(t, wait)
				got := rcv.deliveries()
				require.Len(t, got, 1)
				wh, err := standardwebhooks.NewWebhook(secret)
				require.NoError(t, err)
				require.NoError(t, wh.Verify(got[0].body, got[0].header))
				require.Equal(t, id.String(), got[0].header.Get("webhook-id"))
				require.Equal(t, id.String(), got[0].header.Get("X-Service-Webhook-Id"))
				require.Equal(t, "application/json", got[0].header.Get("Content-Type"))
				ev, attempts := b.event(t, id)
				require.Equal(t, string(ev.Payload), string(got[0].body), "the stored payload, byte for byte")
				require.Equal(t, webhook.Delivered, ev.PublishStatus)
				require.Equal(t, 1, ev.Attempts)
				require.Len(t, attempts, 1)
				require.Equal(t, http.StatusNoContent, *attempts[0].StatusCode)
				require.Nil(t, attempts[0].Error)

				// Delivered is final: a second run sends nothing.
				retry, _, err = b.deliverer().Deliver(ctx, id)
				require.NoError(t, err)
				require.False(t, retry)
				require.Len(t, rcv.deliveries(), 1)

				// Rotation: during the overlap each delivery verifies with either secret.
				_, fresh, err := b.endpoints.Rotate(ctx, uow.Plain[webhook.Registered, webhook.Tx](), actor.OfPartnerKey(partner, ""), partner)
				require.NoError(t, err)
				require.NotEqual(t, secret, fresh)
				rotated, err := b.endpoints.Get(ctx, partner)
				require.NoError(t, err)
				require.Equal(t, secret, *rotated.PreviousSecret)
				require.WithinDuration(t, store.Now().Add(24*time.Hour), *rotated.PreviousSecretExpiresAt, time.Minute)
				_, err = b.st.Requeue(ctx, &partner, id, store.Now())
				require.NoError(t, err)
				_, _, err = b.deliverer().Deliver(ctx, id)
				require.NoError(t, err)
				got = rcv.deliveries()
				require.Len(t, got, 2, "a replay is delivered again")
				require.Len(t, strings.Fields(got[1].header.Get("webhook-signature")), 2)
				for _, s := range []string{secret, fresh} {
					wh, err := standardwebhooks.NewWebhook(s)
					require.NoError(t, err)
					require.NoError(t, wh.Verify(got[1].body, got[1].header))
				}
				require.Equal(t, id.String(), got[1].header.Get("webhook-id"), "the same id across replays")
			})

			t.Run("the schedule, then failed", func(t *testing.T) {
				rcv := newReceiver(t, answer{status: http.StatusInternalServerError, retryAfter: "3600"})
				partner, id := b.partnerWithEvent(t)
				_, _, err := b.endpoints.Put(ctx, uow.Plain[webhook.Registered, webhook.Tx](), actor.OfPartnerKey(partner, ""), partner, rcv.srv.URL, true, nil)
				require.NoError(t, err)
				d := b.deliverer(10*time.Second, 100*time.Second)
				for i, base := range []time.Duration{10 * time.Second, 100 * time.Second} {
					retry, wait, err := d.Deliver(ctx, id)
					require.NoError(t, err)
					require.True(t, retry, i)
					require.GreaterOrEqual(t, wait, base*9/10, "jitter is within ±10 %%; a 500's Retry-After is ignored")
					require.LessOrEqual(t, wait, base*11/10)
					ev, _ := b.event(t, id)
					require.Equal(t, webhook.Pending, ev.PublishStatus)
					require.Equal(t, i+1, ev.Attempts)
					require.WithinDuration(t, ev.LastAttemptAt.Add(wait), *ev.NextAttemptAt, time.Millisecond)
				}
				retry, _, err := d.Deliver(ctx, id)
				require.NoError(t, err)
				require.False(t, retry, "the schedule ran out")
				ev, attempts := b.event(t, id)
				require.Equal(t, webhook.Failed, ev.PublishStatus)
				require.Equal(t, 3, ev.Attempts)
				require.Nil(t, ev.NextAttemptAt)
				require.Len(t, attempts, 3)
				for _, a := range attempts {
					require.Equal(t, 500, *a.StatusCode)
					require.Equal(t, "HTTP 500", *a.Error)
				}
				require.Len(t, rcv.deliveries(), 3)
			})

			t.Run("Retry-After", func(t *testing.T) {
				rcv := newReceiver(t, answer{status: http.StatusServiceUnavailable, retryAfter: "120"},
					answer{status: http.StatusTooManyRequests, retryAfter: "200000"},
					answer{status: http.StatusTooManyRequests, retryAfter: "soon"})
				partner, id := b.partnerWithEvent(t)
				_, _, err := b.endpoints.Put(ctx, uow.Plain[webhook.Registered, webhook.Tx](), actor.OfPartnerKey(partner, ""), partner, rcv.srv.URL, true, nil)
				require.NoError(t, err)
				d := b.deliverer(time.Second, time.Second, time.Second)
				for _, want := range []time.Duration{120 * time.Second, 24 * time.Hour} {
					retry, wait, err := d.Deliver(ctx, id)
					require.NoError(t, err)
					require.True(t, retry)
					require.Equal(t, want, wait)
				}
				_, wait, err := d.Deliver(ctx, id)
				require.NoError(t, err)
				require.LessOrEqual(t, wait, 1100*time.Millisecond, "an unreadable Retry-After falls back to the schedule")
			})

			t.Run("410 turns the endpoint off", func(t *testing.T) {
				rcv := newReceiver(t, answer{status: http.StatusGone})
				partner, id := b.partnerWithEvent(t)
				_, _, err := b.endpoints.Put(ctx, uow.Plain[webhook.Registered, webhook.Tx](), actor.OfPartnerKey(partner, ""), partner, rcv.srv.URL, true, nil)
				require.NoError(t, err)
				retry, _, err := b.deliverer().Deliver(ctx, id)
				require.NoError(t, err)
				require.False(t, retry)
				ep, err := b.endpoints.Get(ctx, partner)
				require.NoError(t, err)
				require.False(t, ep.Enabled)
				ev, attempts := b.event(t, id)
				require.Equal(t, webhook.Pending, ev.PublishStatus, "it waits for an enabled endpoint")
				require.Equal(t, "410 Gone: endpoint disabled", *attempts[0].Error)
				retry, _, err = b.deliverer().Deliver(ctx, id)
				require.NoError(t, err)
				require.False(t, retry)
				require.Len(t, rcv.deliveries(), 1, "nothing is sent to a disabled endpoint")
			})

			t.Run("no endpoint", func(t *testing.T) {
				_, id := b.partnerWithEvent(t)
				retry, _, err := b.deliverer().Deliver(ctx, id)
				require.NoError(t, err)
				require.False(t, retry)
				ev, attempts := b.event(t, id)
				require.Equal(t, webhook.Pending, ev.PublishStatus)
				require.Zero(t, ev.Attempts)
				require.Empty(t, attempts)
				retry, _, err = b.deliverer().Deliver(ctx, uuid.New())
				require.NoError(t, err, "a purged event is done with")
				require.False(t, retry)
			})
		})
	}
}

// Endpoints refuse URLs the environment's policy refuses, register the secret once
// and rotate only an existing endpoint; the log replays and purges by its own rules.
func TestEndpointsAndLog(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := newBed(t, db.URL)
			partner, id := b.partnerWithEvent(t)

			strict := webhook.NewEndpoints(store.For(b.st, func(tx *store.Tx) webhook.Tx { return tx }), safeurl.Policy{RequireHTTPS: true}, b.queue, store.Now)
			for _, u := range []string{"http://8.8.8.8/hook", "https://127.0.0.1/hook", "https://10.0.0.1/hook", "ftp://8.8.8.8/x"} {
				_, _, err := strict.Put(ctx, uow.Plain[webhook.Registered, webhook.Tx](), actor.OfPartnerKey(partner, ""), partner, u, true, nil)
				e, ok := apperr.As(err)
				require.True(t, ok, u)
				require.Equal(t, apperr.WebhookURLNotAllowed, e.Code, u)
				require.Equal(t, "/url", e.Details[0].Field)
			}
			_, err := b.endpoints.Get(ctx, partner)
			require.Equal(t, apperr.NotFound, apperr.CodeOf(err), "a refused URL registers nothing")
			_, _, err = b.endpoints.Rotate(ctx, uow.Plain[webhook.Registered, webhook.Tx](), actor.OfPartnerKey(partner, ""), partner)
			require.Equal(t, apperr.NotFound, apperr.CodeOf(err))

			before := len(b.queue.queued())
			ep, secret, err := b.endpoints.Put(ctx, uow.Plain[webhook.Registered, webhook.Tx](), actor.OfPartnerKey(partner, ""), partner, "http://127.0.0.1:9/a", false, nil)
			require.NoError(t, err)
			require.NotEmpty(t, secret)
			require.False(t, ep.Enabled)
			require.Len(t, b.queue.queued(), before, "a disabled endpoint releases nothing")
			ep, again, err := b.endpoints.Put(ctx, uow.Plain[webhook.Registered, webhook.Tx](), actor.OfPartnerKey(partner, ""), partner, "http://127.0.0.1:9/b", true, nil)
			require.NoError(t, err)
			require.Empty(t, again, "the secret is shown on first registration only")
			require.Equal(t, secret, ep.Secret)
			require.Equal(t, "http://127.0.0.1:9/b", ep.URL)
			require.Equal(t, []uuid.UUID{id}, b.queue.queued()[before:], "enabling releases the pending event")
			_, again, err = b.endpoints.Put(ctx, uow.Plain[webhook.Registered, webhook.Tx](), actor.OfPartnerKey(partner, ""), partner, "http://127.0.0.1:9/b", true, nil)
			require.NoError(t, err)
			require.Empty(t, again)
			require.Len(t, b.queue.queued(), before+1, "already enabled: nothing more is released")

			now := store.Now()
			log := webhook.NewLog(b.st, b.queue, cursor.NewCodec([]byte("s")), func() time.Time { return now })
			ev, r, err := log.Replay(ctx, uow.Plain[webhook.Requeued, webhook.Tx](), actor.OfPartnerKey(partner, ""), partner, id)
			require.NoError(t, err)
			require.Equal(t, id, ev.ID)
			require.Equal(t, now, r.ScheduledAt)
			require.Nil(t, r.InProgressSince)
			require.Equal(t, id, b.queue.queued()[len(b.queue.queued())-1])
			_, _, err = log.Replay(ctx, uow.Plain[webhook.Requeued, webhook.Tx](), actor.OfPartnerKey(uuid.Nil, ""), uuid.New(), id)
			require.Equal(t, apperr.NotFound, apperr.CodeOf(err), "another partner's event")
			page, err := log.List(ctx, partner, webhook.Filter{}, 0, "")
			require.NoError(t, err)
			require.Len(t, page.Events, 1)
			_, _, err = log.Get(ctx, uuid.New(), id)
			require.Equal(t, apperr.NotFound, apperr.CodeOf(err))

			// Events are kept 30 days.
			n, err := webhook.NewLog(b.st, b.queue, cursor.NewCodec([]byte("s")), func() time.Time { return now.Add(29 * 24 * time.Hour) }).Purge(ctx)
			require.NoError(t, err)
			require.Zero(t, n)
			n, err = webhook.NewLog(b.st, b.queue, cursor.NewCodec([]byte("s")), func() time.Time { return now.Add(31 * 24 * time.Hour) }).Purge(ctx)
			require.NoError(t, err)
			require.Equal(t, int64(1), n)
			_, _, err = log.Get(ctx, partner, id)
			require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
		})
	}
}
