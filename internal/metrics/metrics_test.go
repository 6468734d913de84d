package metrics_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"partnerd/internal/metrics"
)

// scrape fetches the handler's answer as a Prometheus server would and parses it.
func scrape(t *testing.T, m *metrics.Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.True(t, strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain"), rec.Header().Get("Content-Type"))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	require.NoError(t, err)
	return fams
}

// series finds the one series of family name whose labels include want.
// Labels with empty values count as absent, as they do in Prometheus.
func series(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	fam, ok := fams[name]
	require.True(t, ok, "no family %s", name)
	var found []*dto.Metric
	for _, s := range fam.GetMetric() {
		got := map[string]string{}
		for _, l := range s.GetLabel() {
			if l.GetValue() != "" {
				got[l.GetName()] = l.GetValue()
			}
		}
		match := true
		for k, v := range want {
			if got[k] != v {
				match = false
				break
			}
		}
		if match {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "series %s%v among %v", name, want, fam.GetMetric())
	return found[0]
}

func labelNames(s *dto.Metric) []string {
	var names []string
	for _, l := range s.GetLabel() {
		if l.GetValue() != "" {
			names = append(names, l.GetName())
		}
	}
	return names
}

func TestTransactionCreated(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	m.TransactionCreated("usdt", "bep20")
	m.TransactionCreated("usdt", "bep20")
	m.TransactionCreated("usdt", "trc20")

	fams := scrape(t, m)
	const name = "partnerd_transactions_created_total"
	require.Equal(t, dto.MetricType_COUNTER, fams[name].GetType())
	require.InDelta(t, 2, series(t, fams, name, map[string]string{"token": "usdt", "network": "bep20"}).GetCounter().GetValue(), 0)
	require.InDelta(t, 1, series(t, fams, name, map[string]string{"token": "usdt", "network": "trc20"}).GetCounter().GetValue(), 0)
	require.Len(t, fams[name].GetMetric(), 2)
}

func TestTransition(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	m.Transition("deposit_detected")
	m.Transition("completed")
	m.Transition("completed")

	fams := scrape(t, m)
	const name = "partnerd_transitions_total"
	s := series(t, fams, name, map[string]string{"status": "completed"})
	require.InDelta(t, 2, s.GetCounter().GetValue(), 0)
	require.Equal(t, []string{"status"}, labelNames(s))
	require.InDelta(t, 1, series(t, fams, name, map[string]string{"status": "deposit_detected"}).GetCounter().GetValue(), 0)
}

func TestWebhookAttempt(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	m.WebhookAttempt(metrics.OutcomeSuccess, 120*time.Millisecond)
	m.WebhookAttempt(metrics.OutcomeSuccess, 80*time.Millisecond)
	m.WebhookAttempt(metrics.OutcomeTimeout, 15*time.Second)

	fams := scrape(t, m)
	require.InDelta(t, 2, series(t, fams, "partnerd_webhook_attempts_total", map[string]string{"outcome": "success"}).GetCounter().GetValue(), 0)
	require.InDelta(t, 1, series(t, fams, "partnerd_webhook_attempts_total", map[string]string{"outcome": "timeout"}).GetCounter().GetValue(), 0)

	const name = "partnerd_webhook_attempt_duration_seconds"
	require.Equal(t, dto.MetricType_HISTOGRAM, fams[name].GetType())
	h := series(t, fams, name, map[string]string{"outcome": "success"}).GetHistogram()
	require.Equal(t, uint64(2), h.GetSampleCount())
	require.InDelta(t, 0.2, h.GetSampleSum(), 1e-9)
	h = series(t, fams, name, map[string]string{"outcome": "timeout"}).GetHistogram()
	require.Equal(t, uint64(1), h.GetSampleCount())
	require.InDelta(t, 15, h.GetSampleSum(), 1e-9)
	// The 15 s timeout sits on a bucket boundary, so a timed-out attempt is
	// distinguishable from a merely slow one.
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() == 10 {
			require.Zero(t, b.GetCumulativeCount())
		}
		if b.GetUpperBound() == 15 {
			require.Equal(t, uint64(1), b.GetCumulativeCount())
		}
	}
}

func TestDeliveryLag(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	m.DeliveryLag(300 * time.Millisecond)
	m.DeliveryLag(5*time.Hour + 5*time.Minute)

	fams := scrape(t, m)
	const name = "partnerd_webhook_delivery_lag_seconds"
	require.Equal(t, dto.MetricType_HISTOGRAM, fams[name].GetType())
	h := series(t, fams, name, nil).GetHistogram()
	require.Equal(t, uint64(2), h.GetSampleCount())
	require.InDelta(t, 0.3+5*3600+300, h.GetSampleSum(), 1e-6)
	// Buckets reach past the retry schedule (over a day).
	var top float64
	for _, b := range h.GetBucket() {
		top = math.Max(top, b.GetUpperBound())
	}
	require.GreaterOrEqual(t, top, 24*3600.0)
}

func TestQueueDepth(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	const name = "partnerd_job_queue_depth"

	// Absent until a source is set.
	_, ok := scrape(t, m)[name]
	require.False(t, ok)

	var depth atomic.Int64
	var calls atomic.Int64
	var fail atomic.Bool
	m.QueueDepth(func(ctx context.Context) (float64, error) {
		calls.Add(1)
		if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > metrics.ScrapeTimeout {
			return 0, errors.New("read without the scrape's deadline")
		}
		if fail.Load() {
			return 0, errors.New("database down")
		}
		return float64(depth.Load()), nil
	})

	depth.Store(7)
	fams := scrape(t, m)
	require.Equal(t, dto.MetricType_GAUGE, fams[name].GetType())
	require.InDelta(t, 7, series(t, fams, name, nil).GetGauge().GetValue(), 0)

	// Computed on each scrape, not cached.
	depth.Store(3)
	require.InDelta(t, 3, series(t, scrape(t, m), name, nil).GetGauge().GetValue(), 0)
	require.Equal(t, int64(2), calls.Load())

	// An error leaves the gauge out; the rest of the scrape still works.
	fail.Store(true)
	m.Transition("completed")
	fams = scrape(t, m)
	_, ok = fams[name]
	require.False(t, ok)
	require.Contains(t, fams, "partnerd_transitions_total")

	// A read that hangs ends with the scrape's deadline: the gauge is left out,
	// the scrape answers.
	m.QueueDepth(func(ctx context.Context) (float64, error) {
		<-ctx.Done()
		return 0, ctx.Err()
	})
	_, ok = scrape(t, m)[name]
	require.False(t, ok)

	// A new source replaces the old one.
	m.QueueDepth(func(context.Context) (float64, error) { return 42, nil })
	require.InDelta(t, 42, series(t, scrape(t, m), name, nil).GetGauge().GetValue(), 0)
}

func TestHTTPMiddlewareLabelsByRouteTemplate(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	e := echo.New()
	e.Use(m.HTTPMiddleware())
	e.GET("/v1/transactions/:id", func(c echo.Context) error { return c.String(http.StatusOK, c.Param("id")) })
	e.GET("/v1/boom", func(echo.Context) error { return echo.NewHTTPError(http.StatusConflict, "no") })

	for _, target := range []string{"/v1/transactions/a1", "/v1/transactions/b2", "/v1/boom", "/nope/" + strings.Repeat("x", 10), "/nope/y"} {
		req := httptest.NewRequest(http.MethodGet, target, nil)
		req.Host = "attacker-chosen.example"
		e.ServeHTTP(httptest.NewRecorder(), req)
	}

	fams := scrape(t, m)
	const name = "partnerd_http_requests_total"
	s := series(t, fams, name, map[string]string{"url": "/v1/transactions/:id", "method": "GET", "code": "200"})
	require.InDelta(t, 2, s.GetCounter().GetValue(), 0)
	require.ElementsMatch(t, []string{"code", "method", "url"}, labelNames(s), "no host label")

	require.InDelta(t, 1, series(t, fams, name, map[string]string{"url": "/v1/boom", "code": "409"}).GetCounter().GetValue(), 0)
	// Unmatched paths share one series.
	require.InDelta(t, 2, series(t, fams, name, map[string]string{"url": metrics.UnmatchedRoute, "code": "404"}).GetCounter().GetValue(), 0)
	require.Len(t, fams[name].GetMetric(), 3)

	for _, fam := range fams {
		for _, s := range fam.GetMetric() {
			for _, l := range s.GetLabel() {
				require.NotContains(t, l.GetValue(), "a1", "raw path leaked into %s", fam.GetName())
				require.NotContains(t, l.GetValue(), "attacker", "host leaked into %s", fam.GetName())
			}
		}
	}

	d := series(t, fams, "partnerd_http_request_duration_seconds", map[string]string{"url": "/v1/transactions/:id"})
	require.Equal(t, uint64(2), d.GetHistogram().GetSampleCount())
	require.Contains(t, fams, "partnerd_http_response_size_bytes")
	require.Contains(t, fams, "partnerd_http_request_size_bytes")

	// The same middleware every time, so it can be asked for more than once.
	require.NotPanics(t, func() { m.HTTPMiddleware() })
}

func TestInstancesAreIndependent(t *testing.T) {
	t.Parallel()
	a, b := metrics.New(), metrics.New()
	require.NotSame(t, a.Registry(), b.Registry())
	a.Transition("completed")

	_, ok := scrape(t, b)["partnerd_transitions_total"]
	require.False(t, ok, "a's series showed up on b")
	require.Contains(t, scrape(t, a), "partnerd_transitions_total")
}

func TestRuntimeCollectorsAndRegistry(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	fams := scrape(t, m)
	require.Contains(t, fams, "go_goroutines")

	// Collectors registered by other packages appear on the same scrape.
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "partnerd_extra_total", Help: "test"})
	require.NoError(t, m.Registry().Register(c))
	require.Contains(t, scrape(t, m), "partnerd_extra_total")
}
