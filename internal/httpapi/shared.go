package httpapi

import (
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"
	echomw "github.com/oapi-codegen/echo-middleware"
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
