// Package operatorapi is the operator API's HTTP layer: the strict server generated
// from openapi/operator.yaml, mounted under BasePath beside the partner API on the
// same Echo instance. It shares the partner API's error body (Echo's error handler),
// validation and body rules (package httpkit), and keeps its own keys (operators)
// and idempotency keys. Its handlers translate: the state-changing use cases, with
// their audit rows and log lines, are package actions. It holds no SQL and no
// business rules.
package operatorapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"partnerd/gen/operatorapi"
	"partnerd/internal/apikeys"
	"partnerd/internal/audit"
	"partnerd/internal/backoffice"
	"partnerd/internal/backoffice/actions"
	"partnerd/internal/backoffice/approvals"
	"partnerd/internal/backoffice/batches"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/backoffice/refunds"
	"partnerd/internal/backoffice/settlement"
	"partnerd/internal/httpkit"
	"partnerd/internal/idempotency"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/lifecycle"
	"partnerd/internal/partners"
	"partnerd/internal/partnerusers"
	"partnerd/internal/ratelimit"
)

// BasePath is where the operator API is mounted; the spec's servers end in it.
const BasePath = "/api/v1/operator"

// Deps are the services the operator API calls.
type Deps struct {
	Operators *operators.Service
	Stages    *backoffice.StageLister
	// Fills reads the operators' executed sales.
	Fills     Fills
	Unmatched *refunds.Service
	// Backoffice, Audit and Batches serve the overview and case files, the audit
	// log, and batch payouts and fills.
	Backoffice *backoffice.Service
	Audit      *audit.Log
	Batches    *batches.Service
	// Partners and Keys manage the accounts and their API keys (Operators above).
	Partners *partners.Service
	Keys     *apikeys.Service
	// PartnerUsers invites and lists the people of a partner who sign in to the
	// dashboard.
	PartnerUsers *partnerusers.Service
	// Actions are the operators' state-changing use cases; the handlers translate
	// to them.
	Actions *actions.Service
	// Screening reads the review queue, the lists and the blocked report.
	Screening Screening
	// Approvals holds the actions that need a second operator (four eyes).
	Approvals *approvals.Service
	// Settlement lists the provider's banks and keeps partners' settlement accounts.
	Settlement *settlement.Service
	// Idempotency works on the operators' own key table.
	Idempotency *idempotency.Service
	// Limiter and Limits rate-limit operator requests per operator key, with the
	// partner API's classes and budgets (nil Limiter: none).
	Limiter ratelimit.Limiter
	Limits  map[ratelimit.Class]ratelimit.Limit
	Logger  *slog.Logger
	// LinkBase is what the links handed to people start with (PUBLIC_URL, else
	// the listening address: app.LinkBase); an invitation's invite_link is its
	// path on it.
	LinkBase func() string
}

// Fills reads executed sales.
type Fills interface {
	FillsOf(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]*lifecycle.Fill, error)
}

// Register mounts the operator API on e. Every operation the spec declares gets,
// in order: a deadline, no-store caching, the JSON body rule, operator
// authentication, the rate limit, then the partner API's request checks (string
// rule, query parameters, trailing data), validation against operator.yaml and,
// where the spec declares an Idempotency-Key, the idempotency layer
// (httpkit.OperationMiddlewares). A new operation gets them from its spec alone.
// They are route middleware, so an unknown path or method under BasePath gets
// Echo's own 404/405 (in the shared error body) before any key check.
func Register(e *echo.Echo, d Deps) error {
	spec, err := Spec()
	if err != nil {
		return err
	}
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	common := []echo.MiddlewareFunc{httpkit.Deadline(), noStore, httpkit.RequireJSON(), authenticate(d.Operators)}
	if d.Limiter != nil {
		common = append(common, ratelimit.Middleware(d.Limiter, d.Limits, func(c echo.Context) ratelimit.Class {
			if c.Request().Method == http.MethodGet {
				return ratelimit.Reads
			}
			return ratelimit.Writes
		}, func(c echo.Context) string {
			// The operator key's hash, prefixed so it never shares a partner key's budget.
			if o, err := operatorFrom(c.Request().Context()); err == nil {
				return "op:" + o.KeyHash
			}
			return ""
		}, log))
	}
	mw, err := httpkit.OperationMiddlewares(spec, common, operatorIDOf)
	if err != nil {
		return err
	}
	// Each operation's role is checked right after authentication (before the
	// request is), and an action four eyes holds is proposed once it is known good.
	acc, err := accessOf(spec)
	if err != nil {
		return err
	}
	for id, list := range mw {
		a, ok := acc[id]
		if !ok {
			return fmt.Errorf("operation %s: no access rule", id)
		}
		out := append(append(append([]echo.MiddlewareFunc{}, list[:len(common)]...), authorize(a)), list[len(common):]...)
		if a.approval != "" {
			out = append(out, propose(a, d.Approvals))
		}
		mw[id] = out
	}
	srv := &Server{actions: d.Actions, stages: d.Stages, fills: d.Fills, unmatched: d.Unmatched,
		backoffice: d.Backoffice, audit: d.Audit, batches: d.Batches, approvals: d.Approvals, serve: e.ServeHTTP, access: acc,
		partners: d.Partners, operators: d.Operators, keys: d.Keys, partnerUsers: d.PartnerUsers, screening: d.Screening, idem: d.Idempotency, settlement: d.Settlement, now: time.Now, linkBase: d.LinkBase}
	operatorapi.RegisterHandlersWithOptions(e, operatorapi.NewStrictHandler(srv, nil), operatorapi.RegisterHandlersOptions{
		BaseURL: BasePath, OperationMiddlewares: mw,
	})
	return nil
}

// Spec returns the embedded operator contract with BasePath on every path and no
// servers, for routing requests as the server receives them (tests validate
// responses with it too).
func Spec() (*openapi3.T, error) { return spec() }

// spec parses the embedded contract once per process: the document is only read
// after that (routing, validation), so every server built in the process (a test
// run builds hundreds) shares it.
var spec = sync.OnceValues(func() (*openapi3.T, error) {
	s, err := operatorapi.GetSwagger()
	if err != nil {
		return nil, fmt.Errorf("load embedded operator spec: %w", err)
	}
	return httpkit.Rebase(s, BasePath), nil
})

type operatorKey struct{}

// operatorFrom returns the authenticated operator (every route authenticates first).
func operatorFrom(ctx context.Context) (*operators.Operator, error) {
	o, ok := ctx.Value(operatorKey{}).(*operators.Operator)
	if !ok {
		return nil, apperr.New(apperr.Internal, httpkit.InternalMessage)
	}
	return o, nil
}

type keyHashKey struct{}

// WithKeyHash returns ctx carrying the hash of an operator key (partners.HashKey):
// requests served with it are authenticated by that key, as if it were sent in
// X-API-KEY. It is how the console calls this API in process: its sessions, kept
// in the database, hold the key's hash, never the key. A context value of an
// unexported key: no header, cookie or body of a network request can carry it.
func WithKeyHash(ctx context.Context, hash string) context.Context {
	return context.WithValue(ctx, keyHashKey{}, hash)
}

// authenticate resolves X-API-KEY (or an in-process key hash, WithKeyHash) to an
// operator; anything else (a partner key included) is 401.
func authenticate(svc *operators.Service) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			key := c.Request().Header.Get("X-API-KEY")
			var o *operators.Operator
			var err error
			if run := approvedRunFrom(c.Request().Context()); run != nil {
				o = run.approver
			} else if hash, ok := c.Request().Context().Value(keyHashKey{}).(string); ok {
				o, err = svc.AuthenticateKeyHash(c.Request().Context(), hash)
			} else if key == "" {
				return operators.ErrUnauthorized
			} else {
				o, err = svc.Authenticate(c.Request().Context(), key)
			}
			if err != nil {
				return err
			}
			c.SetRequest(c.Request().WithContext(context.WithValue(c.Request().Context(), operatorKey{}, o)))
			httpkit.SetLogIdentity(c, "operator_id", o.ID.String())
			return next(c)
		}
	}
}

// noStore marks operator answers uncacheable and inert, like the partner API's.
func noStore(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Cache-Control", "no-store")
		h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
		return next(c)
	}
}

// operatorIDOf returns the authenticated operator's id: operator keys are scoped to it.
func operatorIDOf(ctx context.Context) (uuid.UUID, error) {
	o, err := operatorFrom(ctx)
	if err != nil {
		return uuid.Nil, err
	}
	return o.ID, nil
}
