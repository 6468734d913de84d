package httpapi

import (
	"context"
	"fmt"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	echomw "github.com/oapi-codegen/echo-middleware"

	"partnerd/internal/idempotency"
)

// The transport pieces the operator API (package operatorapi) shares with the
// partner API, so both answer malformed requests, bodies and timeouts alike. They
// are route middleware there: they run only for its operations.

// RouteValidator validates requests against spec (paths carrying their base path)
// and turns findings into the partner API's invalid_request or
// idempotency_key_missing errors. Authentication is the caller's.
func RouteValidator(spec *openapi3.T) echo.MiddlewareFunc {
	return echomw.OapiRequestValidatorWithOptions(spec, &echomw.Options{
		Options: openapi3filter.Options{
			AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
			MultiError:         true,
		},
		MultiErrorHandler: func(me openapi3.MultiError) *echo.HTTPError { return wrapValidation(me) },
		ErrorHandler: func(c echo.Context, he *echo.HTTPError) error {
			if he.Internal != nil && he.Code == 400 {
				return validationError(he.Internal)
			}
			return he
		},
	})
}

// RequireJSON answers 415 unsupported_media_type for a body that is not JSON.
func RequireJSON() echo.MiddlewareFunc {
	return requireJSON(func(echo.Context) bool { return false })
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
func OperationMiddlewares(spec *openapi3.T, first []echo.MiddlewareFunc, svc *idempotency.Service,
	ownerOf func(context.Context) (uuid.UUID, error)) (map[string][]echo.MiddlewareFunc, error) {
	ct := indexContract(spec)
	if err := ct.requireIdempotency(); err != nil {
		return nil, err
	}
	never := func(echo.Context) bool { return false }
	checks := append(append([]echo.MiddlewareFunc{}, first...), checkRequest(ct, never), RouteValidator(spec))
	out := map[string][]echo.MiddlewareFunc{}
	for _, op := range ct.operations() {
		mw := append([]echo.MiddlewareFunc{}, checks...)
		if op.idempotency != nil {
			mw = append(mw, idempotent(op, svc, ownerOf))
		}
		out[op.id] = mw
	}
	return out, nil
}

// requireIdempotency refuses a contract with a state-changing operation that
// takes no Idempotency-Key.
func (ct contract) requireIdempotency() error {
	for _, op := range ct.operations() {
		if op.changesState() && op.idempotency == nil {
			return fmt.Errorf("operation %s changes state but declares no Idempotency-Key header", op.id)
		}
	}
	return nil
}
