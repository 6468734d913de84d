package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/webhook/sign"
)

// slowReceiver holds every delivery open while slow is set (until the caller's
// connection closes), and afterwards answers 200 and records each event.
type slowReceiver struct {
	mu        sync.Mutex
	slow      bool
	holding   int
	inFlight  map[string]bool
	overlap   int
	delivered map[string]time.Time
}

func (r *slowReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	// Read to the end: only then does the server watch the connection, so the
	// request's context ends when the sender dies.
	_, _ = io.Copy(io.Discard, req.Body)
	id := req.Header.Get(sign.HeaderID)
	r.mu.Lock()
	if r.inFlight[id] {
		r.overlap++
	}
	r.inFlight[id] = true
	slow := r.slow
	if slow {
		r.holding++
	}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.inFlight, id)
		if slow {
			r.holding--
		}
		r.mu.Unlock()
	}()
	if slow {
		<-req.Context().Done() // the sender died
		return
	}
	r.mu.Lock()
	if _, ok := r.delivered[id]; !ok {
		r.delivered[id] = time.Now()
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// A server killed (kill -9) while six deliveries hang at a slow receiver: after the
// restart each event is delivered within two minutes (the jobs left running by the
// dead process are rescued after JOB_RESCUE_AFTER, not River's default hour), never
// twice at once; a replay during the stuck window says which attempt it waits for
// and its event is delivered.
func TestKilledDuringSlowDeliveriesRedelivers(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			url := "sqlite:" + filepath.Join(t.TempDir(), "p.db")
			if db.Name == "postgres" {
				url = testdb.PostgresSchema(t)
			}
			rcv := &slowReceiver{slow: true, inFlight: map[string]bool{}, delivered: map[string]time.Time{}}
			hook := httptest.NewServer(rcv)
			t.Cleanup(hook.Close)

			bin := buildBinary(t)
			env := []string{"DATABASE_URL=" + url, "APP_ENV=staging", "WEBHOOK_ALLOW_PRIVATE_URLS=true", "JOB_POLL_INTERVAL=100ms"}
			srv, key := startBinary(t, bin, env)
			require.NotEmpty(t, key)
			ctx := context.Background()
			c := apitest.Remote(t, srv.base).Client(t, key)
			ep, err := c.PutWebhookEndpointWithResponse(ctx, &client.PutWebhookEndpointParams{}, client.PutWebhookEndpointJSONRequestBody{Url: hook.URL, Enabled: true})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, ep.StatusCode(), string(ep.Body))

			const n = 6
			for i := range n {
				fiat := "5000"
				res, err := c.CreateTransactionWithResponse(ctx, &client.CreateTransactionParams{},
					client.CreateTransactionRequest{MerchantReference: "SLOW-" + uuid.NewString(), CryptoCurrency: "usdt", Network: "bep20", FiatAmount: &fiat},
					func(_ context.Context, r *http.Request) error {
						r.Header.Set("Idempotency-Key", uuid.NewString())
						return nil
					})
				require.NoError(t, err)
				require.Equal(t, http.StatusCreated, res.StatusCode(), "#%d: %s", i, res.Body)
			}
			require.Eventually(t, func() bool {
				rcv.mu.Lock()
				defer rcv.mu.Unlock()
				return rcv.holding == n
			}, 30*time.Second, 20*time.Millisecond, "every delivery hangs at the receiver")

			require.NoError(t, srv.cmd.Process.Kill())
			<-srv.done
			rcv.mu.Lock()
			rcv.slow = false
			rcv.mu.Unlock()

			srv2, _ := startBinary(t, bin, env)
			restarted := time.Now()
			c = apitest.Remote(t, srv2.base).Client(t, key)
			list, err := c.ListWebhookEventsWithResponse(ctx, &client.ListWebhookEventsParams{})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, list.StatusCode(), string(list.Body))
			events := list.JSON200.Data.Data
			require.Len(t, events, n)

			// A replay now waits for the interrupted attempt, and says so.
			replayed := events[0].EventId
			rep, err := c.ReplayWebhookEventWithResponse(ctx, replayed, &client.ReplayWebhookEventParams{})
			require.NoError(t, err)
			require.Equal(t, http.StatusAccepted, rep.StatusCode(), string(rep.Body))
			require.NotNil(t, rep.JSON202.Data.InProgressSince, "the replay names the attempt it waits for: %s", rep.Body)
			require.Contains(t, *rep.JSON202.Message, "in progress")
			require.True(t, rep.JSON202.Data.ReplayScheduledAt.After(*rep.JSON202.Data.InProgressSince))
			require.True(t, rep.JSON202.Data.ReplayScheduledAt.Before(restarted.Add(2*time.Minute)),
				"the latest redelivery, %s, is within two minutes of the restart", rep.JSON202.Data.ReplayScheduledAt)

			require.Eventually(t, func() bool {
				rcv.mu.Lock()
				defer rcv.mu.Unlock()
				return len(rcv.delivered) == n
			}, 2*time.Minute, 100*time.Millisecond, "every event is delivered within two minutes of the restart")
			rcv.mu.Lock()
			defer rcv.mu.Unlock()
			for _, ev := range events {
				require.Contains(t, rcv.delivered, ev.EventId.String())
			}
			require.Contains(t, rcv.delivered, replayed.String(), "the replayed event is delivered")
			require.Zero(t, rcv.overlap, "no event was delivered twice at once")
		})
	}
}
