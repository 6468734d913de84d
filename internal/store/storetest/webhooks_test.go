package storetest_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/internal/kit/apperr"
	"partnerd/internal/lifecycle"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/webhook"
)

func TestWebhookEndpoints(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		p := newPartner(t, s)
		_, err := s.EndpointOf(ctx, p.ID)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
		now := store.Now()
		ep := &webhook.Endpoint{PartnerID: p.ID, URL: "https://example.com/a", Enabled: false, Secret: "whsec_1", CreatedAt: now, UpdatedAt: now}

		// Of concurrent first registrations exactly one inserts.
		var inserted atomic.Int32
		var wg sync.WaitGroup
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := s.InsertEndpoint(ctx, ep)
				if err != nil {
					t.Error(err)
				}
				if ok {
					inserted.Add(1)
				}
			}()
		}
		wg.Wait()
		require.EqualValues(t, 1, inserted.Load())

		// Of concurrent enablers exactly one sees the switch.
		var switched atomic.Int32
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				on, err := s.UpdateEndpoint(ctx, p.ID, "https://example.com/b", true, nil, store.Now())
				if err != nil {
					t.Error(err)
				}
				if on {
					switched.Add(1)
				}
			}()
		}
		wg.Wait()
		require.EqualValues(t, 1, switched.Load())
		_, err = s.UpdateEndpoint(ctx, uuid.New(), "https://example.com/c", true, nil, now)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))

		until := store.Now().Add(time.Hour)
		require.NoError(t, s.RotateSecret(ctx, p.ID, "whsec_2", until, store.Now()))
		require.Equal(t, apperr.NotFound, apperr.CodeOf(s.RotateSecret(ctx, uuid.New(), "x", until, now)))
		got, err := s.EndpointOf(ctx, p.ID)
		require.NoError(t, err)
		require.Equal(t, "https://example.com/b", got.URL)
		require.True(t, got.Enabled)
		require.Equal(t, "whsec_2", got.Secret)
		require.Equal(t, "whsec_1", *got.PreviousSecret)
		require.Equal(t, until, *got.PreviousSecretExpiresAt)

		require.NoError(t, s.DisableEndpoint(ctx, p.ID, store.Now()))
		got, err = s.EndpointOf(ctx, p.ID)
		require.NoError(t, err)
		require.False(t, got.Enabled)
		require.Equal(t, "whsec_2", got.Secret, "disabling leaves the rest")
	})
}

// TestEventDelivery walks one event through the delivery bookkeeping: taken,
// attempted, requeued during an attempt, listed, purged.
func TestEventDelivery(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		p, other := newPartner(t, s), newPartner(t, s)
		tr := newTransaction(t, s, p, txOpts{})
		events, err := s.ListEvents(ctx, p.ID, webhook.ListQuery{Limit: 10})
		require.NoError(t, err)
		require.Len(t, events, 1)
		ev := events[0]
		require.Equal(t, tr.ID, ev.TransactionID)
		require.Equal(t, webhook.Pending, ev.PublishStatus)
		_, err = s.EventByID(ctx, &other.ID, ev.ID)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err), "another partner's event")

		got, ep, requeued, err := s.TakeDelivery(ctx, ev.ID)
		require.NoError(t, err)
		require.Equal(t, ev.ID, got.ID)
		require.Nil(t, ep, "no endpoint yet")
		require.False(t, requeued)
		_, _, _, err = s.TakeDelivery(ctx, uuid.New())
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))

		// A failed attempt, recorded with the event's new state.
		now := store.Now()
		got.PublishStatus, got.Attempts, got.CycleAttempts, got.LastAttemptAt, got.NextAttemptAt = webhook.Pending, 1, 1, &now, ptr(now.Add(time.Minute))
		requeued, err = s.SaveEventState(ctx, got, &webhook.Attempt{AttemptedAt: now, StatusCode: ptr(500), DurationMS: 12, Error: ptr("server error")}, now)
		require.NoError(t, err)
		require.False(t, requeued)
		attempts, err := s.AttemptsOf(ctx, ev.ID)
		require.NoError(t, err)
		require.Len(t, attempts, 1)
		require.Equal(t, 500, *attempts[0].StatusCode)

		// A success to the endpoint makes the waiting event due now, once.
		none, err := s.RequeueWaiting(ctx, p.ID, now.Add(2*time.Minute), 1)
		require.NoError(t, err)
		require.Empty(t, none, "its retry is due before: an attempt may be running")
		due, err := s.RequeueWaiting(ctx, p.ID, now, 1)
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{ev.ID}, due)
		none, err = s.RequeueWaiting(ctx, p.ID, now.Add(-time.Hour), 1)
		require.NoError(t, err)
		require.Empty(t, none, "marked already")
		_, err = s.TakeRequeue(ctx, ev.ID)
		require.NoError(t, err)

		// Enabling the endpoint requeues the pending events; a requeue during an
		// attempt wins over the attempt's outcome.
		_, err = s.InsertEndpoint(ctx, &webhook.Endpoint{PartnerID: p.ID, URL: "https://example.com/", Enabled: true, Secret: "whsec", CreatedAt: now, UpdatedAt: now})
		require.NoError(t, err)
		queued, err := s.RequeuePending(ctx, p.ID, now)
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{ev.ID}, queued)
		stale, err := s.StaleRequeues(ctx, now.Add(time.Second), 10)
		require.NoError(t, err)
		require.Contains(t, stale, ev.ID, "requeued and not yet taken")
		got.PublishStatus = webhook.Delivered
		requeued, err = s.SaveEventState(ctx, got, nil, now.Add(time.Second))
		require.NoError(t, err)
		require.True(t, requeued)
		after, err := s.EventByID(ctx, nil, ev.ID)
		require.NoError(t, err)
		require.Equal(t, webhook.Pending, after.PublishStatus, "the requeue mark wins")

		got, ep, requeued, err = s.TakeDelivery(ctx, ev.ID)
		require.NoError(t, err)
		require.True(t, requeued, "the mark is taken once")
		require.NotNil(t, ep)
		require.Equal(t, "whsec", ep.Secret)
		taken, err := s.TakeRequeue(ctx, ev.ID)
		require.NoError(t, err)
		require.False(t, taken, "already cleared")

		re, err := s.Requeue(ctx, &p.ID, ev.ID, now)
		require.NoError(t, err)
		require.Equal(t, webhook.Pending, re.PublishStatus)
		_, err = s.Requeue(ctx, &other.ID, ev.ID, now)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
		taken, err = s.TakeRequeue(ctx, ev.ID)
		require.NoError(t, err)
		require.True(t, taken)

		n, err := s.PurgeEvents(ctx, got.CreatedAt)
		require.NoError(t, err)
		require.Zero(t, n, "nothing older than the event")
		n, err = s.PurgeEvents(ctx, store.Now().Add(time.Second))
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		attempts, err = s.AttemptsOf(ctx, ev.ID)
		require.NoError(t, err)
		require.Empty(t, attempts, "attempts go with their event")
	})
}

// A test event belongs to no transaction: it is stored, listed, taken for
// delivery and purged as the others, its attempts keep what the receiver
// answered, and its delivery job is queued only while the endpoint is enabled.
func TestTestEventsAndResponseExcerpts(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		p, other := newPartner(t, s), newPartner(t, s)
		now := store.Now()
		ev := &webhook.Event{ID: uuid.New(), PartnerID: p.ID, Type: webhook.TestType, Payload: []byte(`{"test":true}`), CreatedAt: now}
		require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error { return tx.AppendTestEvent(ctx, ev) }))
		require.Zero(t, deliveryJobs(t, s), "no delivery job without an enabled endpoint")
		got, err := s.EventByID(ctx, &p.ID, ev.ID)
		require.NoError(t, err)
		require.Equal(t, uuid.Nil, got.TransactionID)
		require.True(t, got.Test())
		require.Equal(t, webhook.Pending, got.PublishStatus)
		_, err = s.EventByID(ctx, &other.ID, ev.ID)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
		listed, err := s.ListEvents(ctx, p.ID, webhook.ListQuery{Limit: 10})
		require.NoError(t, err)
		require.Len(t, listed, 1)
		require.True(t, listed[0].Test())
		taken, _, _, err := s.TakeDelivery(ctx, ev.ID)
		require.NoError(t, err)
		require.True(t, taken.Test())

		// Each attempt keeps its excerpt (none when no response arrived); the
		// one-statement path (outside a unit of work) and the stepwise one both.
		taken.Attempts, taken.CycleAttempts, taken.LastAttemptAt = 1, 1, &now
		_, err = s.SaveEventState(ctx, taken, &webhook.Attempt{AttemptedAt: now, StatusCode: ptr(502), DurationMS: 3,
			Error: ptr("HTTP 502"), ResponseExcerpt: ptr("<h1>Bad gateway</h1> é")}, now)
		require.NoError(t, err)
		require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			taken.Attempts, taken.CycleAttempts = 2, 2
			_, err := tx.SaveEventState(ctx, taken, &webhook.Attempt{AttemptedAt: now, DurationMS: 15000, Error: ptr("timeout")}, now)
			return err
		}))
		attempts, err := s.AttemptsOf(ctx, ev.ID)
		require.NoError(t, err)
		require.Len(t, attempts, 2)
		require.Equal(t, "<h1>Bad gateway</h1> é", *attempts[0].ResponseExcerpt)
		require.Nil(t, attempts[1].ResponseExcerpt)

		// With an enabled endpoint the delivery job commits with the event.
		_, err = s.InsertEndpoint(ctx, &webhook.Endpoint{PartnerID: other.ID, URL: "https://example.com/", Enabled: true, Secret: "whsec", CreatedAt: now, UpdatedAt: now})
		require.NoError(t, err)
		queued := &webhook.Event{ID: uuid.New(), PartnerID: other.ID, Type: webhook.TestType, Payload: []byte(`{"test":true}`), CreatedAt: now}
		require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error { return tx.AppendTestEvent(ctx, queued) }))
		require.Equal(t, 1, deliveryJobs(t, s), "queued for the enabled endpoint only")

		n, err := s.PurgeEvents(ctx, store.Now().Add(time.Second))
		require.NoError(t, err)
		require.EqualValues(t, 2, n)
	})
}

// deliveryJobs counts the webhook delivery jobs in the queue.
func deliveryJobs(t *testing.T, s *store.Store) int {
	t.Helper()
	var n int
	require.NoError(t, s.SQL().QueryRowContext(context.Background(),
		"SELECT count(*) FROM river_job WHERE kind = 'deliver_webhook_event'").Scan(&n))
	return n
}

// An endpoint's enabled event types are stored and read back (nil: every
// type), an update without types keeps them, and AppendEvent records exactly the
// events webhook.Receives says the endpoint takes (every event with no
// endpoint).
func TestEnabledEventsDecideWhatIsRecorded(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		now := store.Now()
		some := []string{"transaction.completed", "payout.settled"}
		for _, c := range []struct {
			name     string
			endpoint bool
			events   []string // stored at registration (nil: every type)
			update   []string // set by an update (nil: unchanged)
		}{
			{name: "no endpoint"},
			{name: "every type", endpoint: true},
			{name: "some types, kept by an update", endpoint: true, events: some},
			{name: "one type, set by an update", endpoint: true, update: []string{"deposit.detected"}},
		} {
			p := newPartner(t, s)
			var ep *webhook.Endpoint
			if c.endpoint {
				ok, err := s.InsertEndpoint(ctx, &webhook.Endpoint{PartnerID: p.ID, URL: "https://example.com/e", Secret: "whsec_e",
					EnabledEvents: c.events, CreatedAt: now, UpdatedAt: now})
				require.NoError(t, err)
				require.True(t, ok)
				_, err = s.UpdateEndpoint(ctx, p.ID, "https://example.com/e", true, c.update, now)
				require.NoError(t, err, c.name)
				ep, err = s.EndpointOf(ctx, p.ID)
				require.NoError(t, err)
				want := c.events
				if c.update != nil {
					want = c.update
				}
				require.Equal(t, want, ep.EnabledEvents, c.name)
			}
			tr := newTransaction(t, s, p, txOpts{})
			before, err := s.ListEvents(ctx, p.ID, webhook.ListQuery{Limit: 100})
			require.NoError(t, err)
			var want []string
			for _, typ := range webhook.EventTypes {
				require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
					return tx.AppendEvent(ctx, &lifecycle.Event{ID: uuid.New(), PartnerID: p.ID, TransactionID: tr.ID,
						Type: lifecycle.EventType(typ), Payload: []byte(`{}`), CreatedAt: store.Now()})
				}))
				if webhook.Receives(ep, typ) {
					want = append(want, typ)
				}
			}
			after, err := s.ListEvents(ctx, p.ID, webhook.ListQuery{Limit: 100})
			require.NoError(t, err)
			var got []string
			for _, e := range after {
				if !slices.ContainsFunc(before, func(b *webhook.Event) bool { return b.ID == e.ID }) {
					got = append(got, e.Type)
				}
			}
			require.ElementsMatch(t, want, got, c.name)
		}
	})
}
