// Package apitest starts the real service for component tests and hands out
// clients generated from the contract. Every response a client receives is checked
// against openapi/partner.yaml (status declared, headers and body valid), so drift
// between code and contract fails the test that provoked it.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/app"
	"partnerd/internal/config"
	"partnerd/internal/contract/contractcheck"
	"partnerd/internal/httpapi"
	"partnerd/internal/partners"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/tracing"
)

// TestXPub is a valid account xpub that is not one of the public demo keys
// (production refuses those): BIP-32 test vector 1 at m/0H/1.
const TestXPub = "xpub6ASuArnXKPbfEwhqN6e3mwBcDTgzisQN1wXN9BJcM47sSikHjJf3UFHKkNAWbWMiGj7Wf5uMash7SyYq527Hqck2AxYysAA7xmALppuCkwQ"

// Env is one running service.
type Env struct {
	// BaseURL is the partner API's base address, e.g. http://127.0.0.1:PORT/api/v1/partner.
	BaseURL string
	// Root is the server's root address (for /healthz and the like).
	Root string
	App  *app.App
	// Store is a second connection to the service's database, for setting up state
	// the API cannot (such as a partner of the other environment).
	Store *store.Store
	check *contractcheck.Checker
	// stop stops the service (once); Stop and the test's cleanup call it.
	stop func()
}

// Start runs the service on a random loopback port against db with the staging
// defaults, overridden by settings (environment variable names → values). The
// service stops when the test ends.
func Start(t *testing.T, db testdb.Database, settings map[string]string) *Env {
	t.Helper()
	return StartLogged(t, db, settings, testLogOutput())
}

// StartLogged is Start with the service's log lines (text, with trace_id and
// span_id on lines logged in a traced context, as in production) written to w.
func StartLogged(t *testing.T, db testdb.Database, settings map[string]string, w io.Writer) *Env {
	t.Helper()
	vars := map[string]string{"DATABASE_URL": db.URL, "LISTEN_ADDR": "127.0.0.1:0"}
	if settings["APP_ENV"] != "production" {
		// Test receivers listen on loopback; production refuses the setting.
		vars["WEBHOOK_ALLOW_PRIVATE_URLS"] = "true"
	} else {
		// Production requires keys of its own for the sealed secrets, and the
		// https address people reach it at (the links it hands out start with it).
		vars["SECRETS_KEYS"] = "test:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
		vars["PUBLIC_URL"] = "https://partnerd.test"
	}
	for k, v := range settings {
		vars[k] = v
	}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	log := slog.New(tracing.LogHandler(slog.NewTextHandler(w, nil)))
	a, err := app.Open(ctx, cfg, log)
	require.NoError(t, err)
	a.CheckInProcess(checkedInProcess(t))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, ln) }()

	// The test's own connection only sets up state: two connections are plenty.
	st, err := store.Open(ctx, testdb.WithPoolSize(db.URL, 2))
	require.NoError(t, err)
	stop := sync.OnceFunc(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("server did not stop within 30 s")
		}
		_ = st.Close()
		_ = a.Close()
	})
	t.Cleanup(stop)

	check, err := contractcheck.Partner(contractcheck.AsDeclared)
	require.NoError(t, err)
	root := "http://" + ln.Addr().String()
	return &Env{BaseURL: root + httpapi.BasePath, Root: root, App: a, Store: st, check: check, stop: stop}
}

// checkedInProcess returns the wrapper of the sites' in-process calls (the
// console's to the operator API, the dashboard's to the partner API): each answer
// is checked against its contract like a client's, so a page's call that drifts
// from the contract fails the test that provoked it.
func checkedInProcess(t *testing.T) func(http.Handler) http.Handler {
	operator, err := contractcheck.Operator(contractcheck.AsDeclared)
	require.NoError(t, err)
	partner, err := contractcheck.Partner(contractcheck.AsDeclared)
	require.NoError(t, err)
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var reqBody []byte
			if r.Body != nil {
				reqBody, _ = io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(reqBody))
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			res := rec.Result()
			body := rec.Body.Bytes()
			check, contract := operator, "operator"
			if strings.HasPrefix(r.URL.Path, httpapi.BasePath+"/") { // the dashboard's calls
				check, contract = partner, "partner"
			}
			if _, err := check.Check(r.Clone(r.Context()), reqBody, res, body); err != nil {
				t.Errorf("the in-process call %s %s breaks the %s contract: %v", r.Method, r.URL.Path, contract, err)
			}
			for k, v := range res.Header {
				w.Header()[k] = v
			}
			w.WriteHeader(res.StatusCode)
			_, _ = w.Write(body)
		})
	}
}

// Remote returns an Env for a service running elsewhere (a binary a test started)
// at root, http://HOST:PORT, for its typed clients checked against the contract;
// App and Store are nil, and Stop does nothing.
func Remote(t *testing.T, root string) *Env {
	t.Helper()
	check, err := contractcheck.Partner(contractcheck.AsDeclared)
	require.NoError(t, err)
	return &Env{BaseURL: root + httpapi.BasePath, Root: root, check: check, stop: func() {}}
}

// NewPartner creates a partner of the service's environment and returns its API key.
func (e *Env) NewPartner(t *testing.T) string {
	t.Helper()
	_, key, err := e.App.Partners().CreateAlone(context.Background(), "Test partner "+t.Name())
	require.NoError(t, err)
	return key
}

// NewPartnerIn creates a partner of env directly in the database (the service
// itself only creates partners of its own environment) and returns its key.
func (e *Env) NewPartnerIn(t *testing.T, env partners.Environment) string {
	t.Helper()
	svc := partners.NewService(store.For(e.Store, func(tx *store.Tx) partners.Tx { return tx }), env, partners.Defaults{}, store.Now)
	_, key, err := svc.CreateAlone(context.Background(), "Other environment "+t.Name())
	require.NoError(t, err)
	return key
}

// Client returns a typed client that sends key as X-API-KEY (none when key is "")
// and checks every response against the contract.
func (e *Env) Client(t *testing.T, key string) *client.ClientWithResponses {
	t.Helper()
	c, err := client.NewClientWithResponses(e.BaseURL,
		client.WithHTTPClient(e.HTTPClient(t)),
		client.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			if key != "" {
				req.Header.Set("X-API-KEY", key)
			}
			return nil
		}))
	require.NoError(t, err)
	return c
}

// HTTPClient returns a plain HTTP client whose responses are checked against the
// contract, for requests the typed client cannot make (a malformed body, a wrong
// content type, an unknown route).
func (e *Env) HTTPClient(t *testing.T) *http.Client {
	return checkedClient(t, e.check)
}

// checkedClient returns an HTTP client that fails t on every answer check finds in
// breach of its contract.
func checkedClient(t *testing.T, check *contractcheck.Checker) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &contractcheck.Transport{Checker: check, Observe: func(x contractcheck.Exchange) {
		if x.Err != nil {
			t.Errorf("response to %s %s breaks %s: %v\nstatus %d body: %s", x.Request.Method, x.Request.URL.Path, check.Name, x.Err, x.Response.StatusCode, x.Body)
		}
	}}}
}

// ValidateSchema checks body against the named component schema of the contract.
func (e *Env) ValidateSchema(name string, body []byte) error {
	return e.check.ValidateSchema(name, body)
}

// PartnerID returns the id of the partner owning key.
func (e *Env) PartnerID(t *testing.T, key string) uuid.UUID {
	t.Helper()
	p, err := e.Store.PartnerByKeyHash(context.Background(), partners.HashKey(key))
	require.NoError(t, err)
	return p.ID
}

// testLogOutput is where the server under test logs: nowhere, unless
// PARTNERD_TEST_LOGS is set (to see a failing test's server side).
func testLogOutput() io.Writer {
	if os.Getenv("PARTNERD_TEST_LOGS") != "" {
		return os.Stderr
	}
	return io.Discard
}

// EventTypes returns the types of transaction id's webhook events in lifecycle
// order, checking each stored payload against the contract.
func (env *Env) EventTypes(t *testing.T, id uuid.UUID) []string {
	t.Helper()
	rows, err := env.Store.SQL().QueryContext(context.Background(),
		"SELECT type, payload, created_at FROM events WHERE transaction_id = $1", id.String())
	require.NoError(t, err)
	defer rows.Close()
	type event struct {
		typ     string
		payload []byte
		at      time.Time
	}
	var evs []event
	for rows.Next() {
		var e event
		require.NoError(t, rows.Scan(&e.typ, &e.payload, &e.at))
		evs = append(evs, e)
	}
	require.NoError(t, rows.Err())
	// Events of one unit of work share their created_at: order those by the lifecycle.
	slices.SortStableFunc(evs, func(a, b event) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return eventRank(a.typ) - eventRank(b.typ)
	})
	out := make([]string, len(evs))
	for i, e := range evs {
		require.NoError(t, env.ValidateSchema("WebhookPayload", e.payload), "event payloads keep the contract")
		out[i] = e.typ
	}
	return out
}

// Event returns the data of transaction id's first stored event of type typ (the
// transaction as the event told it), checked against the contract.
func (env *Env) Event(t *testing.T, id uuid.UUID, typ string) map[string]any {
	t.Helper()
	var payload []byte
	require.NoError(t, env.Store.SQL().QueryRowContext(context.Background(),
		"SELECT payload FROM events WHERE transaction_id = $1 AND type = $2 ORDER BY created_at LIMIT 1", id.String(), typ).Scan(&payload))
	require.NoError(t, env.ValidateSchema("WebhookPayload", payload))
	var body struct {
		Data map[string]any `json:"data"`
	}
	require.NoError(t, json.Unmarshal(payload, &body))
	return body.Data
}

// eventRank is an event type's place in the lifecycle.
func eventRank(typ string) int {
	return slices.Index([]string{"transaction.created", "deposit.detected", "deposit.confirmed", "transaction.completed",
		"payout.settled", "transaction.failed", "transaction.expired", "transaction.refunded"}, typ)
}

// History returns transaction id's status history through the partner API.
func History(t *testing.T, c *client.ClientWithResponses, id uuid.UUID) client.StatusHistory {
	t.Helper()
	res, err := c.GetTransactionStatusHistoryWithResponse(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	return res.JSON200.Data
}

// Reasons returns the history's reasons, oldest first.
func Reasons(h client.StatusHistory) []string {
	out := make([]string, len(h.History))
	for i, e := range h.History {
		out[i] = e.Reason
	}
	return out
}
