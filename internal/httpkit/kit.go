// Package httpkit is the transport both APIs share (the partner API, package
// httpapi, and the operator API, package operatorapi), so both answer alike: the
// error body and the one error-code-to-status mapping, request ids and the access
// log, the JSON body rule, the request checks every operation gets from its
// contract (string rule, unknown query parameters, trailing data), validation
// against the contract, the idempotency layer that names a request for its use
// case (a keyed request runs under idempotency.Keyed, any other under
// uow.Plain), paging
// parameters and the listener that keeps net/http's own 400 in the error body.
// Authentication, routes and handlers are each API's own.
package httpkit

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
)

// validator validates requests Echo routed to op against the contract and turns
// findings into the partner API's invalid_request or idempotency_key_missing
// errors. The operation is the one Echo matched (its path parameters Echo's,
// unescaped once): routing a second time could pick another path, as
// /transactions/{id}/cancel for GET /transactions/reference/cancel. Parameters
// and headers go through kin-openapi's openapi3filter as they come; the body is
// the value CheckRequest decoded once, validated in place (validateBody) rather
// than decoded again. Every finding of both is reported together.
// Authentication is the caller's.
func validator(op *operation) echo.MiddlewareFunc {
	opts := &openapi3filter.Options{
		AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
		MultiError:         true,
		ExcludeRequestBody: true,
	}
	route := op.route
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			pathParams := make(map[string]string, len(c.ParamNames()))
			for i, name := range c.ParamNames() {
				v := c.ParamValues()[i]
				if u, err := url.PathUnescape(v); err == nil {
					v = u
				}
				pathParams[name] = v
			}
			input := &openapi3filter.RequestValidationInput{Request: req, PathParams: pathParams, Route: route, Options: opts}
			var found openapi3.MultiError
			if err := openapi3filter.ValidateRequest(req.Context(), input); err != nil {
				if !errors.As(err, &found) {
					found = openapi3.MultiError{err}
				}
			}
			if rb := route.Operation.RequestBody; rb != nil && rb.Value != nil {
				if err := validateBody(c, input, rb.Value); err != nil {
					found = append(found, err)
				}
			}
			if len(found) > 0 {
				return validationError(found)
			}
			return next(c)
		}
	}
}

// Deadline bounds a request's work by RequestDeadline.
func Deadline() echo.MiddlewareFunc { return deadline(RequestDeadline) }

// InternalMessage is all a caller learns of an unexpected failure.
var InternalMessage = internalMessage

// OperationMiddlewares returns the route middleware of every operation spec
// declares (keyed by operation id, for the generated RegisterHandlersWithOptions):
// first (the API's own deadline, authentication, rate limit…), then the shared
// request checks (string rule, unknown query parameters, trailing data), validation
// against spec and, on every operation that declares an Idempotency-Key, the
// idempotency layer with keys owned by ownerOf. A new operation gets all of them
// from its spec alone; a state-changing one that declares no Idempotency-Key is an
// error, so the service does not start with a retry that would be unsafe.
func OperationMiddlewares(spec *openapi3.T, first []echo.MiddlewareFunc,
	ownerOf func(context.Context) (uuid.UUID, error)) (map[string][]echo.MiddlewareFunc, error) {
	ct := IndexContract(spec)
	if err := ct.RequireIdempotency(); err != nil {
		return nil, err
	}
	checks := append(append([]echo.MiddlewareFunc{}, first...), CheckRequest(ct))
	out := map[string][]echo.MiddlewareFunc{}
	for _, op := range ct.operations() {
		mw := append(append([]echo.MiddlewareFunc{}, checks...), validator(op))
		if op.idempotency != nil {
			mw = append(mw, idempotent(op, ownerOf))
		}
		out[op.id] = mw
	}
	return out, nil
}

// RequireIdempotency refuses a contract with a state-changing operation that
// takes no Idempotency-Key.
func (ct Contract) RequireIdempotency() error {
	for _, op := range ct.operations() {
		if op.changesState() && op.idempotency == nil {
			return fmt.Errorf("operation %s changes state but declares no Idempotency-Key header", op.id)
		}
	}
	return nil
}

// PageParams reads the optional limit and cursor of a list request (0 and "" when
// absent; the list applies its default page size).
func PageParams(limit *int, cur *string) (int, string) {
	l, c := 0, ""
	if limit != nil {
		l = *limit
	}
	if cur != nil {
		c = *cur
	}
	return l, c
}
