package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	echomw "github.com/oapi-codegen/echo-middleware"

	"partnerd/gen/api"
	"partnerd/internal/idempotency"
	"partnerd/internal/lifecycle"
	"partnerd/internal/metrics"
	"partnerd/internal/partners"
	"partnerd/internal/quotes"
	"partnerd/internal/ratelimit"
	"partnerd/internal/revenue"
	"partnerd/internal/sandbox"
	"partnerd/internal/transactions"
	"partnerd/internal/webhook"
)

// MaxBodyBytes caps request bodies (413 payload_too_large above it).
const MaxBodyBytes = 64 << 10

// Deps are the services the HTTP layer calls.
type Deps struct {
	Partners     *partners.Service
	Quotes       *quotes.Service
	Transactions *transactions.Service
	Lister       *transactions.Lister
	Lifecycle    *lifecycle.Engine
	Ledger       *revenue.Ledger
	History      HistoryReader
	Endpoints    *webhook.Endpoints
	Events       *webhook.Log
	Idempotency  *idempotency.Service
	// Production hides the sandbox simulator.
	Production bool
	// Metrics records HTTP metrics and serves /metrics; nil for none.
	Metrics *metrics.Metrics
	// Limiter and Limits rate-limit partner requests per API key.
	Limiter ratelimit.Limiter
	Limits  map[ratelimit.Class]ratelimit.Limit
	Logger  *slog.Logger
	// Ready reports whether the service can take traffic (database up, migrated).
	Ready func(*http.Request) error
	// Unavailable reports whether an error means the database is out of reach
	// (store.Unavailable, where the database's errors are known): such a failure is
	// a 503 service_unavailable with Retry-After, not a 500. nil classifies none.
	Unavailable func(error) bool
}

// New returns the HTTP handler: the partner API under BasePath plus /healthz and
// /readyz. Middleware order, outermost first: recover, request id, access log, body
// limit; then, on partner routes: JSON content type, authentication, rate limit,
// the request checks (checkRequest: string rule, query parameters, trailing
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
	e.HTTPErrorHandler = errorHandler(log, d.Unavailable)
	// Never trust X-Forwarded-For unless a proxy setup says so.
	e.IPExtractor = echo.ExtractIPDirect()
	e.Pre(routeOnEscapedPath)

	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{DisablePrintStack: true,
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			log.Error("panic", "request_id", c.Response().Header().Get(echo.HeaderXRequestID), "error", err.Error(), "stack", string(stack))
			return err
		}}))
	e.Use(requestID())
	if d.Metrics != nil {
		e.Use(d.Metrics.HTTPMiddleware())
		e.GET("/metrics", echo.WrapHandler(d.Metrics.Handler()))
	}
	e.Use(securityHeaders(d.Production))
	e.Use(accessLog(log))
	e.Use(refuseOptions)
	e.Use(middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{
		Limit: fmt.Sprintf("%dB", MaxBodyBytes), Skipper: bodyIgnored,
	}))

	e.GET("/healthz", func(c echo.Context) error { return c.JSON(http.StatusOK, map[string]string{"status": "ok"}) })
	e.GET("/readyz", func(c echo.Context) error {
		if d.Ready != nil {
			if err := d.Ready(c.Request()); err != nil {
				log.Warn("not ready", "error", err.Error())
				return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "unavailable"})
			}
		}
		return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
	})

	srv := &Server{partners: d.Partners, quotes: d.Quotes, transactions: d.Transactions, lister: d.Lister,
		lifecycle: d.Lifecycle, ledger: d.Ledger, history: d.History, endpoints: d.Endpoints, events: d.Events, log: log,
		simulator: sandbox.New(d.Lifecycle, d.Transactions)}
	// Partner checks run as global middleware with a skipper rather than as group
	// middleware: a group with middleware catches every unknown path under it, which
	// would turn a wrong method (405) into a 404.
	validatorWith := func(skip func(echo.Context) bool) echo.MiddlewareFunc {
		return echomw.OapiRequestValidatorWithOptions(spec, &echomw.Options{
			Options: openapi3filter.Options{
				// Authentication is ours (authenticate), not the validator's.
				AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
				MultiError:         true,
			},
			Skipper:           skip,
			MultiErrorHandler: func(me openapi3.MultiError) *echo.HTTPError { return wrapValidation(me) },
			ErrorHandler: func(c echo.Context, he *echo.HTTPError) error {
				if he.Code == http.StatusBadRequest {
					if he.Internal != nil {
						return validationError(he.Internal)
					}
				}
				return he
			},
		})
	}

	skip := skipPartnerChecks
	if d.Production {
		// In production the simulator route must look absent: no key or body checks
		// before its 404.
		skip = func(c echo.Context) bool { return c.Path() == simulatorPath || skipPartnerChecks(c) }
	}
	mws := []echo.MiddlewareFunc{deadline(RequestDeadline), requireJSON(skip), authenticate(d.Partners, skip)}
	if d.Limiter != nil {
		mws = append(mws, ratelimit.Middleware(d.Limiter, d.Limits, func(c echo.Context) ratelimit.Class {
			if skip(c) {
				return ""
			}
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
	ct := indexContract(spec)
	if err := ct.requireIdempotency(); err != nil {
		return nil, err
	}
	e.Use(append(mws, checkRequest(ct, skip), validatorWith(skip))...)
	opMW := map[string][]echo.MiddlewareFunc{"simulateSandboxEvent": {hideInProduction(d.Production)}}
	for _, op := range ct.operations() {
		if op.idempotency != nil {
			opMW[op.id] = append(opMW[op.id], idempotent(op, d.Idempotency, partnerIDOf))
		}
	}
	api.RegisterHandlersWithOptions(e, api.NewStrictHandler(srv, []api.StrictMiddlewareFunc{func(f api.StrictHandlerFunc, op string) api.StrictHandlerFunc {
		return MustRun(f, op)
	}}), api.RegisterHandlersOptions{
		BaseURL: BasePath, OperationMiddlewares: opMW,
	})
	return e, nil
}

// refuseOptions answers OPTIONS with 405 in the error body. The API serves no
// browsers (no CORS), and Echo's own answer, a bodiless 204, is not in the contract.
func refuseOptions(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().Method == http.MethodOptions {
			return echo.ErrMethodNotAllowed
		}
		return next(c)
	}
}

// bodyIgnored reports whether the request's body, if any, is never read: GET and
// HEAD operations take none, so neither its size nor its type can fail them.
func bodyIgnored(c echo.Context) bool {
	m := c.Request().Method
	return m == http.MethodGet || m == http.MethodHead
}

func wrapValidation(me error) *echo.HTTPError {
	return &echo.HTTPError{Code: http.StatusBadRequest, Message: "invalid request", Internal: me}
}

// accessLog writes one structured line per request.
// logIdentityKey holds, in the echo context, the attribute naming who made the
// request, for the access log (see SetLogIdentity).
const logIdentityKey = "partnerd.log_identity"

// SetLogIdentity names who made the request (e.g. "operator_id", id) on its access
// log line; an API whose authentication is not the partner's sets it.
func SetLogIdentity(c echo.Context, name, id string) { c.Set(logIdentityKey, [2]string{name, id}) }

// StatusClientClosedRequest is the status logged and counted for a request whose
// client went away before its answer (nginx's convention): such a request is
// neither a server error nor anything the client saw.
const StatusClientClosedRequest = 499

// clientContextKey holds, in the echo context, the request's context as the
// server created it: it is cancelled only when the client goes away (deadlines
// of our own are set on contexts derived from it).
const clientContextKey = "partnerd.client_context"

// clientGone reports whether the client of c's request went away (closed the
// connection, or cancelled an HTTP/2 stream) before the request was answered.
func clientGone(c echo.Context) bool {
	ctx, ok := c.Get(clientContextKey).(context.Context)
	return ok && errors.Is(ctx.Err(), context.Canceled)
}

func accessLog(log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			c.Set(clientContextKey, c.Request().Context())
			err := next(c)
			if err != nil {
				c.Error(err)
			}
			if clientGone(c) {
				// Whatever was written went nowhere; the metrics middleware (outside
				// this one) reads the status from here too.
				c.Response().Status = StatusClientClosedRequest
			}
			attrs := []any{
				"request_id", c.Response().Header().Get(echo.HeaderXRequestID),
				"method", c.Request().Method,
				"route", c.Path(),
				"status", c.Response().Status,
				"latency_ms", time.Since(start).Milliseconds(),
			}
			if p, perr := partnerFrom(c.Request().Context()); perr == nil {
				attrs = append(attrs, "partner_id", p.ID.String())
			}
			if who, ok := c.Get(logIdentityKey).([2]string); ok {
				attrs = append(attrs, who[0], who[1])
			}
			log.Info("request", attrs...)
			return nil
		}
	}
}

// routeOnEscapedPath makes Echo route on the path as it was sent (percent-escapes
// kept), whatever it contains, so a path parameter is unescaped exactly once, by
// the generated binder. Echo routes on URL.RawPath, which net/url leaves empty
// when the escaping is the default one: then parameters would arrive unescaped
// and a reference holding "%41" (sent as "%2541") would be read as "A".
func routeOnEscapedPath(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		u := c.Request().URL
		u.RawPath = u.EscapedPath()
		return next(c)
	}
}
