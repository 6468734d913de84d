// Package metrics holds the service's Prometheus metrics: HTTP traffic, the
// transaction lifecycle, webhook delivery and the job queue.
//
// Every collector lives on a registry owned by a Metrics value, never on
// prometheus.DefaultRegisterer: registering the same name twice on one registry
// fails, so a global registry would make it impossible to build two app instances
// in one process (as tests do) and would let any imported library add series to
// our /metrics behind our back.
package metrics

import (
	"context"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo-contrib/echoprometheus"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every metric name, so the service's series are easy to find
// and cannot collide with those of other programs scraped by the same Prometheus.
const Namespace = "partnerd"

// UnmatchedRoute is the route label of requests that matched no route. Labelling
// them by their raw path would let any client create unbounded series by
// requesting random URLs.
const UnmatchedRoute = "unmatched"

// Webhook attempt outcomes, the values callers are expected to pass to
// WebhookAttempt. They are defined here so that dashboards and alerts can rely
// on a small, fixed set of label values.
const (
	// OutcomeSuccess is a 2xx answer from the partner's endpoint.
	OutcomeSuccess = "success"
	// OutcomeHTTPError is a non-2xx answer: the attempt will be retried.
	OutcomeHTTPError = "http_error"
	// OutcomeTimeout is an attempt cut off by the delivery timeout.
	OutcomeTimeout = "timeout"
	// OutcomeNetworkError is a failure to connect or to read an answer.
	OutcomeNetworkError = "network_error"
)

// Buckets for webhook attempts, in seconds: an attempt is cut off after the
// delivery timeout (15 s), so finer buckets below it say more than the default
// ones, whose top (10 s) would hide slow endpoints.
var attemptBuckets = []float64{.025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15, 20}

// Buckets for delivery lag, in seconds: a first-try delivery takes well under a
// second, while the retry schedule spreads a stubborn one over more than a day.
var lagBuckets = []float64{
	.1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 1800, 3600,
	2 * 3600, 6 * 3600, 12 * 3600, 24 * 3600, 48 * 3600,
}

// Metrics owns a registry and the service's collectors on it. Its methods are
// safe for concurrent use; a nil *Metrics is not valid, build one with New.
type Metrics struct {
	reg *prometheus.Registry

	http echo.MiddlewareFunc

	transactionsCreated *prometheus.CounterVec
	transitions         *prometheus.CounterVec
	webhookAttempts     *prometheus.CounterVec
	webhookDuration     *prometheus.HistogramVec
	deliveryLag         prometheus.Histogram
	queueDepth          *funcGauge
	screenings          *prometheus.CounterVec

	chainOnce sync.Once
	chain     *Chain
}

// New returns the service's metrics on a fresh registry, which also carries the
// Go runtime and process collectors so one scrape shows memory, goroutines and
// file descriptors next to the service's own series.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m := &Metrics{reg: reg}

	m.transactionsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace,
		Name:      "transactions_created_total",
		Help:      "Transactions created, by token and network.",
	}, []string{"token", "network"})
	m.transitions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace,
		Name:      "transitions_total",
		Help:      "Transaction status transitions, by the status entered.",
	}, []string{"status"})
	m.webhookAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace,
		Name:      "webhook_attempts_total",
		Help:      "Webhook delivery attempts, by outcome.",
	}, []string{"outcome"})
	m.webhookDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace,
		Name:      "webhook_attempt_duration_seconds",
		Help:      "Duration of one webhook delivery attempt, by outcome.",
		Buckets:   attemptBuckets,
	}, []string{"outcome"})
	m.deliveryLag = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace,
		Name:      "webhook_delivery_lag_seconds",
		Help:      "Time from an event's creation to its successful delivery, retries included.",
		Buckets:   lagBuckets,
	})
	m.queueDepth = &funcGauge{desc: prometheus.NewDesc(
		prometheus.BuildFQName(Namespace, "", "job_queue_depth"),
		"Jobs waiting to run, computed at scrape time; absent when it could not be read.",
		nil, nil,
	)}
	m.screenings = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace,
		Name:      "screenings_total",
		Help:      "Screenings of deposit senders and refund destinations, by network and verdict (clear, hit, unknown: a screener could not answer).",
	}, []string{"network", "verdict"})
	reg.MustRegister(m.transactionsCreated, m.transitions, m.webhookAttempts,
		m.webhookDuration, m.deliveryLag, m.queueDepth, m.screenings)

	mw, err := echoprometheus.MiddlewareConfig{
		Namespace:  Namespace,
		Subsystem:  "http",
		Registerer: reg,
		// The default "url" label is c.Path() (the route template, e.g.
		// /v1/transactions/:id) except on 404s, where it is the raw path; "host"
		// is the client's Host header. Both would let clients mint series at will.
		LabelFuncs: map[string]echoprometheus.LabelValueFunc{
			"url": func(c echo.Context, _ error) string { return routeLabel(c) },
			// An empty value is the same as no label to Prometheus.
			"host": func(echo.Context, error) string { return "" },
		},
	}.ToMiddleware()
	if err != nil {
		// Only possible on a name clash within our own fresh registry.
		panic(err)
	}
	m.http = mw
	return m
}

// Registry is the registry behind Handler, for registering collectors owned by
// other packages (a database pool's stats, say) so they appear on the same
// scrape, and for tests that gather directly.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// HTTPMiddleware records every request in partnerd_http_requests_total,
// partnerd_http_request_duration_seconds and the request/response size
// histograms, labelled by status code, method and route template (label "url").
// Put it outside the handlers whose errors it should see. The status is the one
// the response records, so a request whose client went away is counted as 499
// (httpapi's access log sets it), not as the server error its cancelled work may
// have produced. It returns the same
// middleware on every call: the collectors are registered once, in New.
func (m *Metrics) HTTPMiddleware() echo.MiddlewareFunc { return m.http }

// Handler serves this registry in the Prometheus exposition format, for GET
// /metrics. A collector that fails is logged in the answer's error count rather
// than failing the whole scrape, so one broken source does not blind monitoring.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		Registry:      m.reg, // adds promhttp_metric_handler_errors_total
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// TransactionCreated counts a new transaction, so the creation rate can be
// watched per token and network (a network that suddenly gets none is down).
func (m *Metrics) TransactionCreated(token, network string) {
	m.transactionsCreated.WithLabelValues(token, network).Inc()
}

// Transition counts a transaction entering status to: the flow between statuses
// shows where transactions pile up or fail.
func (m *Metrics) Transition(to string) {
	m.transitions.WithLabelValues(to).Inc()
}

// WebhookAttempt records one delivery attempt and how long it took. outcome
// should be one of the Outcome constants, to keep the label's values few.
func (m *Metrics) WebhookAttempt(outcome string, d time.Duration) {
	m.webhookAttempts.WithLabelValues(outcome).Inc()
	m.webhookDuration.WithLabelValues(outcome).Observe(d.Seconds())
}

// DeliveryLag records, on successful delivery, how long after its creation the
// partner received an event: the figure partners actually feel, retries and
// queueing included.
func (m *Metrics) DeliveryLag(d time.Duration) {
	m.deliveryLag.Observe(d.Seconds())
}

// QueueDepth sets how partnerd_job_queue_depth is read: f is called on every
// scrape (so the value is never stale and nothing has to poll) with a context
// that ends after ScrapeTimeout (a database that hangs cannot hold the scrape,
// and partnerd_database_up then reads 0 in the same answer), and an error from
// it leaves the gauge out of that scrape rather than reporting a false number. A
// later call replaces f; until the first, the gauge is absent.
func (m *Metrics) QueueDepth(f func(ctx context.Context) (float64, error)) {
	m.queueDepth.set(f)
}

// Screened counts one screening's verdict (screening.Observer).
func (m *Metrics) Screened(network, verdict string) {
	m.screenings.WithLabelValues(network, verdict).Inc()
}

// routeLabel is the route template of the request, or UnmatchedRoute. Echo
// leaves c.Path() empty when no route matched, and sets it to a catch-all
// template ("/*") for some misses, which is bounded and so kept.
func routeLabel(c echo.Context) string {
	if p := c.Path(); p != "" {
		return p
	}
	return UnmatchedRoute
}

// funcGauge is a gauge whose value comes from a function at collection time and
// which emits nothing when the function fails. prometheus.GaugeFunc cannot skip a
// sample, and NaN would break sums and comparisons in alert rules.
type funcGauge struct {
	desc *prometheus.Desc
	mu   sync.RWMutex
	f    func(ctx context.Context) (float64, error)
}

func (g *funcGauge) set(f func(ctx context.Context) (float64, error)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.f = f
}

// Describe implements prometheus.Collector.
func (g *funcGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

// Collect implements prometheus.Collector.
func (g *funcGauge) Collect(ch chan<- prometheus.Metric) {
	g.mu.RLock()
	f := g.f
	g.mu.RUnlock()
	if f == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ScrapeTimeout)
	defer cancel()
	v, err := f(ctx)
	if err != nil || math.IsNaN(v) {
		return
	}
	ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v)
}
