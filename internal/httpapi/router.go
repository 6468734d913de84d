package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"go.opentelemetry.io/otel/trace"

	"partnerd/gen/api"
	"partnerd/internal/backoffice/payouts"
	"partnerd/internal/backoffice/revenue"
	"partnerd/internal/deposits"
	"partnerd/internal/httpkit"
	"partnerd/internal/idempotency"
	"partnerd/internal/lifecycle"
	"partnerd/internal/metrics"
	"partnerd/internal/partners"
	"partnerd/internal/pricing/quotes"
	"partnerd/internal/ratelimit"
	"partnerd/internal/sandbox"
	"partnerd/internal/transactions"
	"partnerd/internal/webhook"
)

// Deps are the services the HTTP layer calls.
type Deps struct {
	Partners     *partners.Service
	Quotes       *quotes.Service
	Transactions *transactions.Service
	Lister       *transactions.Lister
	// Decisions are the partner's accept and refund of a short payment.
	Decisions   *transactions.Decisions
	Lifecycle   *lifecycle.Engine
	Ledger      *revenue.Ledger
	Payouts     *payouts.Service
	History     HistoryReader
	Endpoints   *webhook.Endpoints
	Events      *webhook.Log
	Idempotency *idempotency.Service
	// Rescans reads chain transactions again for partners (POST
	// /deposits/rescan); nil: no chain is read here (503).
	Rescans *deposits.Rescanner
	// Production hides the sandbox simulator.
	Production bool
	// Proxies are the trusted proxies (TRUSTED_PROXIES): the client address is
	// read through them only (httpkit.Proxies.ClientIP), on the APIs and the sites.
	Proxies httpkit.Proxies
	// ProxyHeader is the one forwarding header they write (TRUSTED_PROXY_HEADER:
	// httpkit.HeaderXForwardedFor, the default, or httpkit.HeaderForwarded).
	ProxyHeader string
	// Metrics records HTTP metrics and serves /metrics; nil for none.
	Metrics *metrics.Metrics
	// Limiter and Limits rate-limit partner requests per API key.
	Limiter ratelimit.Limiter
	Limits  map[ratelimit.Class]ratelimit.Limit
	Logger  *slog.Logger
	// Tracing gives each API request (partner and operator) a server span,
	// continuing the caller's traceparent; nil for OpenTelemetry's no-op provider.
	Tracing trace.TracerProvider
	// Ready reports whether the service can take traffic (database up, migrated).
	Ready func(*http.Request) error
	// Degraded lists what works only in part (a network whose deposit watcher is
	// off, with why): /readyz still answers 200, traffic is fine, but says
	// "degraded" with the reasons so a newcomer and a probe both see it (a
	// network's watcher off, transactions waiting on a screener that cannot answer).
	Degraded func(context.Context) []string
	// Unavailable reports whether an error means the database is out of reach
	// (store.Unavailable, where the database's errors are known): such a failure is
	// a 503 service_unavailable with Retry-After, not a 500. nil classifies none.
	Unavailable func(error) bool
}

// New returns the HTTP handler: the partner API under BasePath plus /healthz and
// /readyz. Middleware order, outermost first: recover, trace, request id, access log, body
// limit; then, on partner routes: JSON content type, authentication, rate limit,
// the request checks (CheckRequest: string rule, query parameters, trailing
// data), validation against the contract, and the strict
// handler.
func New(d Deps) (*echo.Echo, error) {
	spec, err := Spec()
	if err != nil {
		return nil, err
	}
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = httpkit.ErrorHandler(log, d.Unavailable)
	// The forwarding header is believed only through the trusted proxies (none
	// by default: the peer is the client), and only the one they write.
	header := d.ProxyHeader
	if header == "" {
		header = httpkit.HeaderXForwardedFor
	}
	e.IPExtractor = d.Proxies.IPExtractor(header)
	e.Pre(httpkit.RouteOnEscapedPath, httpkit.HeadAsGet)

	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{DisablePrintStack: true,
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			log.ErrorContext(c.Request().Context(), "panic", "request_id", c.Response().Header().Get(echo.HeaderXRequestID), "error", err.Error(), "stack", string(stack))
			return err
		}}))
	// The span is opened before the request id and the access log, so both the
	// log line and an error body carry its trace id.
	e.Use(httpkit.Trace(d.Tracing))
	e.Use(httpkit.RequestID())
	e.Use(httpkit.ClientAddress)
	if d.Metrics != nil {
		e.Use(d.Metrics.HTTPMiddleware())
		e.GET("/metrics", echo.WrapHandler(d.Metrics.Handler()))
	}
	e.Use(securityHeaders(d.Production))
	e.Use(httpkit.AccessLog(log))
	e.Use(httpkit.RefuseOptions)
	e.Use(middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{
		Limit: fmt.Sprintf("%dB", httpkit.MaxBodyBytes), Skipper: httpkit.BodyIgnored,
	}))

	e.GET("/healthz", func(c echo.Context) error { return c.JSON(http.StatusOK, map[string]string{"status": "ok"}) })
	e.GET("/readyz", func(c echo.Context) error {
		if d.Ready != nil {
			if err := d.Ready(c.Request()); err != nil {
				log.WarnContext(c.Request().Context(), "not ready", "error", err.Error())
				return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "unavailable"})
			}
		}
		if d.Degraded != nil {
			if reasons := d.Degraded(c.Request().Context()); len(reasons) > 0 {
				return c.JSON(http.StatusOK, map[string]any{"status": "degraded", "reasons": reasons})
			}
		}
		return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
	})

	srv := &Server{partners: d.Partners, quotes: d.Quotes, transactions: d.Transactions, lister: d.Lister, decisions: d.Decisions,
		lifecycle: d.Lifecycle, ledger: d.Ledger, payouts: d.Payouts, history: d.History, endpoints: d.Endpoints, events: d.Events, keys: d.Idempotency, log: log, rescans: d.Rescans,
		simulator: sandbox.New(d.Lifecycle)}
	// The partner API's checks are route middleware of each operation, built from
	// the contract the same way as the operator API's (httpkit.OperationMiddlewares):
	// an unknown path or method under BasePath gets Echo's own 404/405 (in the
	// shared error body) before any key check.
	common := []echo.MiddlewareFunc{httpkit.Deadline(), httpkit.RequireJSON(), authenticate(d.Partners)}
	if d.Limiter != nil {
		common = append(common, ratelimit.Middleware(d.Limiter, d.Limits, func(c echo.Context) ratelimit.Class {
			if c.Request().Method == http.MethodGet {
				return ratelimit.Reads
			}
			return ratelimit.Writes
		}, func(c echo.Context) string {
			// The partner's key hash: a budget per API key, never the key itself.
			if p, err := partnerFrom(c.Request().Context()); err == nil {
				return p.KeyHash
			}
			return ""
		}, log))
	}
	opMW, err := httpkit.OperationMiddlewares(spec, common, partnerIDOf)
	if err != nil {
		return nil, err
	}
	if d.Limiter != nil {
		// The rescan budget per partner, after the key's own budget.
		opMW["rescanDeposit"] = append(opMW["rescanDeposit"], rescanLimit(d.Limiter, log))
	}
	// In production the simulator route must look absent: its 404 comes before any
	// key or body check.
	opMW["simulateSandboxEvent"] = append([]echo.MiddlewareFunc{hideInProduction(d.Production)}, opMW["simulateSandboxEvent"]...)
	api.RegisterHandlersWithOptions(e, api.NewStrictHandler(srv, nil), api.RegisterHandlersOptions{
		BaseURL: BasePath, OperationMiddlewares: opMW,
	})
	return e, nil
}
