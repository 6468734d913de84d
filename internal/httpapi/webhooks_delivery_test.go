package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/lifecycle"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/apitest"
)

// A replay that arrives while the event's attempt is in flight is not lost: the
// attempt's outcome is saved, the job sees the requeue and delivers once more.
func TestReplayDuringAnAttemptDeliversAgain(t *testing.T) {
	t.Parallel()
	onBoth(t, fastWebhooks, func(t *testing.T, env *apitest.Env) {
		var mu sync.Mutex
		var got []time.Time
		overlap := 0
		inFlight := false
		arrived := make(chan struct{}, 10)
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			_, _ = io.Copy(io.Discard, req.Body)
			mu.Lock()
			if inFlight {
				overlap++
			}
			inFlight = true
			got = append(got, time.Now())
			first := len(got) == 1
			mu.Unlock()
			arrived <- struct{}{}
			if first {
				<-release // held until the test has replayed the event
			}
			mu.Lock()
			inFlight = false
			mu.Unlock()
			w.WriteHeader(http.StatusOK)
		}))
		t.Cleanup(srv.Close)

		c := env.Client(t, env.NewPartner(t))
		ctx := context.Background()
		register(t, c, srv.URL)
		tx := create(t, c, direct("REPLAY-IN-FLIGHT", "bep20", "2000"))
		select {
		case <-arrived:
		case <-time.After(15 * time.Second):
			t.Fatal("the first delivery never arrived")
		}
		list, err := c.ListWebhookEventsWithResponse(ctx, &client.ListWebhookEventsParams{TransactionId: &tx.Id})
		require.NoError(t, err)
		id := list.JSON200.Data.Data[0].EventId
		rep, err := c.ReplayWebhookEventWithResponse(ctx, id, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, rep.StatusCode(), string(rep.Body))
		close(release)

		require.Eventually(t, func() bool {
			d, err := c.GetWebhookEventWithResponse(ctx, id)
			require.NoError(t, err)
			ev := d.JSON200.Data
			return ev.PublishStatus == client.PublishStatusDelivered && ev.Attempts == 2
		}, 15*time.Second, 50*time.Millisecond)
		time.Sleep(500 * time.Millisecond) // nothing more comes
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, got, 2, "the first attempt and the replay")
		require.Zero(t, overlap, "never two deliveries of the event at once")
	})
}

// Enabling an endpoint releases every pending event, however many (more than one
// batch of job inserts), each delivered once.
func TestEnablingReleasesEveryPendingEvent(t *testing.T) {
	t.Parallel()
	onBoth(t, fastWebhooks, func(t *testing.T, env *apitest.Env) {
		rcv := newReceiver(t)
		c := env.Client(t, env.NewPartner(t))
		ctx := context.Background()
		res, err := c.PutWebhookEndpointWithResponse(ctx, nil, client.WebhookEndpointRequest{Url: rcv.srv.URL, Enabled: false})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode())
		created := create(t, c, direct("RELEASE-MANY", "trc20", "2000"))
		tr, err := env.Store.Transaction(ctx, created.Id)
		require.NoError(t, err)

		const extra = 1100
		require.NoError(t, env.Store.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			for i := range extra {
				id := uuid.New()
				payload := fmt.Sprintf(`{"id":%q,"type":"transaction.created","data":{"id":%q,"n":%d}}`, id, created.Id, i)
				if err := tx.AppendEvent(ctx, &lifecycle.Event{ID: id, PartnerID: tr.PartnerID, TransactionID: created.Id,
					Type: lifecycle.EventCreated, Payload: []byte(payload), CreatedAt: store.Now()}); err != nil {
					return err
				}
			}
			return nil
		}))

		res, err = c.PutWebhookEndpointWithResponse(ctx, nil, client.WebhookEndpointRequest{Url: rcv.srv.URL, Enabled: true})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		require.Eventually(t, func() bool { return len(rcv.byID()) == extra+1 }, 60*time.Second, 100*time.Millisecond)
		time.Sleep(300 * time.Millisecond)
		for id, ds := range rcv.byID() {
			require.Len(t, ds, 1, "event %s delivered once", id)
		}
		require.Zero(t, rcv.overlap.Load())
	})
}
