package tracing_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"partnerd/gen/client"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// syncBuffer collects the service's log lines from its goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// delivery is what a partner's webhook receiver got: the event's type and the
// attempt's traceparent.
type delivery struct{ typ, traceparent string }

// The whole service with traces exported to a real OTLP receiver, on both
// databases: a partner that traces sends traceparent with POST /transactions and
// with the simulated deposit; both requests continue its trace, and so do their
// statements, the delivery job they enqueue and the delivery's outbound call,
// whose traceparent reaches the partner's receiver; log lines carry the trace id.
func TestOneTraceFromRequestToWebhookDelivery(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			otlp := newReceiver(t)
			var mu sync.Mutex
			var got []delivery
			hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				var ev struct{ Type string }
				_ = json.Unmarshal(body, &ev)
				mu.Lock()
				got = append(got, delivery{ev.Type, r.Header.Get("traceparent")})
				mu.Unlock()
			}))
			t.Cleanup(hooks.Close)
			logs := &syncBuffer{}
			env := apitest.StartLogged(t, db, map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT": otlp.URL, "OTEL_SERVICE_NAME": "partnerd-e2e",
				"WEBHOOK_RETRY_SCHEDULE": "1s,1s,1s", "JOB_POLL_INTERVAL": "100ms",
			}, logs)
			c := env.Client(t, env.NewPartner(t))
			ctx := context.Background()
			res, err := c.PutWebhookEndpointWithResponse(ctx, nil, client.WebhookEndpointRequest{Url: hooks.URL, Enabled: true})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))

			// The partner's trace, and a span of its own per request.
			const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
			const createSpan, simulateSpan = "00f067aa0ba902b7", "00f067aa0ba902b8"
			traced := func(span string) client.RequestEditorFn {
				return func(_ context.Context, r *http.Request) error {
					r.Header.Set("traceparent", "00-"+callerTrace+"-"+span+"-01")
					r.Header.Set("Idempotency-Key", uuid.NewString())
					return nil
				}
			}
			fiat := "150000"
			created, err := c.CreateTransactionWithResponse(ctx, &client.CreateTransactionParams{}, client.CreateTransactionRequest{
				MerchantReference: "TRACE-1", CryptoCurrency: "usdt", Network: "bep20", FiatAmount: &fiat,
			}, traced(createSpan))
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, created.StatusCode(), string(created.Body))
			sim, err := c.SimulateSandboxEventWithResponse(ctx, nil, client.SimulateRequest{
				Event: client.SimulateRequestEventDepositDetected, TransactionId: created.JSON201.Data.Id,
			}, traced(simulateSpan))
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, sim.StatusCode(), string(sim.Body))

			deposited := func() (delivery, bool) {
				mu.Lock()
				defer mu.Unlock()
				for _, d := range got {
					if d.typ == "deposit.detected" {
						return d, true
					}
				}
				return delivery{}, false
			}
			require.Eventually(t, func() bool { _, ok := deposited(); return ok }, 30*time.Second, 50*time.Millisecond)
			env.Stop() // flushes the spans still buffered

			d, _ := deposited()
			parts := strings.Split(d.traceparent, "-")
			require.Len(t, parts, 4, "the delivery carries traceparent: %q", d.traceparent)
			require.Equal(t, callerTrace, parts[1], "the delivery is in the partner's trace")

			otlp.mu.Lock()
			defer otlp.mu.Unlock()
			require.Contains(t, otlp.service, "partnerd-e2e")
			inTrace := map[string][]*tracepb.Span{}
			for _, sp := range otlp.spans {
				if hex.EncodeToString(sp.GetTraceId()) == callerTrace {
					inTrace[sp.GetName()] = append(inTrace[sp.GetName()], sp)
				}
			}
			names := make([]string, 0, len(inTrace))
			for n := range inTrace {
				names = append(names, n)
			}
			parentOf := func(name string) []string {
				var out []string
				for _, sp := range inTrace[name] {
					out = append(out, hex.EncodeToString(sp.GetParentSpanId()))
				}
				return out
			}
			// The requests continue the caller's spans.
			require.Equal(t, []string{createSpan}, parentOf("POST /api/v1/partner/transactions"), "spans in the trace: %v", names)
			require.Equal(t, []string{simulateSpan}, parentOf("POST /api/v1/partner/sandbox/simulate"), "spans in the trace: %v", names)
			// Their statements, the jobs' inserts and work, and the deliveries.
			require.NotEmpty(t, inTrace["INSERT transactions"], "spans in the trace: %v", names)
			require.NotEmpty(t, inTrace["UPDATE transactions"], "spans in the trace: %v", names)
			require.NotEmpty(t, inTrace["river.insert_many"], "spans in the trace: %v", names)
			require.NotEmpty(t, inTrace["river.work/deliver_webhook_event"], "spans in the trace: %v", names)
			var webhookSpans []string
			for _, sp := range inTrace["webhook POST"] {
				webhookSpans = append(webhookSpans, hex.EncodeToString(sp.GetSpanId()))
			}
			require.Contains(t, webhookSpans, parts[2], "the receiver's traceparent names the delivery's span")

			// The delivery job's statements run under its work span (the job's
			// context reaches the store).
			byID := map[string]*tracepb.Span{}
			for _, sps := range inTrace {
				for _, sp := range sps {
					byID[hex.EncodeToString(sp.GetSpanId())] = sp
				}
			}
			underWork := func(sp *tracepb.Span) bool {
				for p := byID[hex.EncodeToString(sp.GetParentSpanId())]; p != nil; p = byID[hex.EncodeToString(p.GetParentSpanId())] {
					if p.GetName() == "river.work/deliver_webhook_event" {
						return true
					}
				}
				return false
			}
			var jobSQL []string
			for name, sps := range inTrace {
				op, _, _ := strings.Cut(name, " ")
				if op != "SELECT" && op != "UPDATE" && op != "INSERT" && op != "DELETE" && op != "WITH" {
					continue
				}
				for _, sp := range sps {
					if underWork(sp) {
						jobSQL = append(jobSQL, name)
					}
				}
			}
			require.NotEmpty(t, jobSQL, "statements under the delivery's work span; spans in the trace: %v", names)

			// Log lines of the requests and of the delivery carry the trace id.
			require.Contains(t, logs.String(), "trace_id="+callerTrace)
			for _, line := range strings.Split(logs.String(), "\n") {
				if strings.Contains(line, "msg=\"webhook attempt\"") && strings.Contains(line, "deposit.detected") {
					require.Contains(t, line, "trace_id="+callerTrace)
				}
			}
		})
	}
}
