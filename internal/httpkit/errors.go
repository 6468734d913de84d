package httpkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"

	"partnerd/gen/api"
	"partnerd/internal/idempotency"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/tracing"
)

// statusByCode is the one mapping from error code to HTTP status. The spec's error
// table says the same; a code missing here is a 500.
var statusByCode = map[apperr.Code]int{
	apperr.InvalidRequest:               http.StatusBadRequest,
	apperr.IdempotencyKeyMissing:        http.StatusBadRequest,
	apperr.InvalidCursor:                http.StatusBadRequest,
	apperr.Unauthorized:                 http.StatusUnauthorized,
	apperr.NotFound:                     http.StatusNotFound,
	apperr.MethodNotAllowed:             http.StatusMethodNotAllowed,
	apperr.DuplicateMerchantReference:   http.StatusConflict,
	apperr.InvalidStateTransition:       http.StatusConflict,
	apperr.IdempotencyRequestInProgress: http.StatusConflict,
	apperr.QuoteAlreadyUsed:             http.StatusConflict,
	apperr.PayloadTooLarge:              http.StatusRequestEntityTooLarge,
	apperr.UnsupportedMediaType:         http.StatusUnsupportedMediaType,
	apperr.IdempotencyKeyReused:         http.StatusUnprocessableEntity,
	apperr.QuoteExpired:                 http.StatusUnprocessableEntity,
	apperr.QuoteMismatch:                http.StatusUnprocessableEntity,
	apperr.UnsupportedPair:              http.StatusUnprocessableEntity,
	apperr.AmountOutOfRange:             http.StatusUnprocessableEntity,
	apperr.WebhookURLNotAllowed:         http.StatusUnprocessableEntity,
	apperr.RateLimited:                  http.StatusTooManyRequests,
	apperr.Internal:                     http.StatusInternalServerError,
	apperr.RatesUnavailable:             http.StatusServiceUnavailable,
	apperr.ServiceUnavailable:           http.StatusServiceUnavailable,
	apperr.Forbidden:                    http.StatusForbidden,
	apperr.ApprovalClosed:               http.StatusConflict,
}

// unavailableRetryAfter is the Retry-After, in seconds, of a 503
// service_unavailable: long enough for a database failover or restart.
const unavailableRetryAfter = 5

// StatusOf returns the HTTP status for code.
func StatusOf(code apperr.Code) int {
	if s, ok := statusByCode[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// ErrStreamBroken wraps the failure of a streamed body (a CSV export) after
// its first bytes were sent: the error handler aborts the connection instead of
// ending the body as if it were complete.
var ErrStreamBroken = errors.New("streamed body broken")

// internalMessage is all a partner learns of an unexpected failure; the cause is
// logged with the request id.
const internalMessage = "Internal error."

// ErrorHandler is Echo's HTTPErrorHandler: every failure, whether a handler's
// *apperr.Error, a validation failure or Echo's own 404/405/413, leaves here as the
// spec's Error body. unavailable (nil for none) tells a failure of the database
// being out of reach, which is answered 503 service_unavailable.
func ErrorHandler(log *slog.Logger, unavailable func(error) bool) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			if errors.Is(err, ErrStreamBroken) {
				// The status and the first bytes are gone: cut the connection, so the
				// client sees a broken transfer rather than a short body that looks whole.
				panic(http.ErrAbortHandler)
			}
			return
		}
		// Logged with the request's context, so the lines carry its trace id.
		ctx := c.Request().Context()
		if stored, ok := idempotency.ReplayOf(err); ok {
			// Not a failure: the use case found its key's stored answer.
			if werr := writeReplay(c, stored); werr != nil {
				log.ErrorContext(ctx, "write replayed response", "request_id", c.Response().Header().Get(echo.HeaderXRequestID), "error", werr.Error())
			}
			return
		}
		e := toAppError(err, unavailable)
		status := StatusOf(e.Code)
		reqID := c.Response().Header().Get(echo.HeaderXRequestID)
		switch {
		case clientGone(c):
			// Not a failure of ours: the client abandoned the request (logged as 499).
			log.InfoContext(ctx, "client closed request", "request_id", reqID, "route", c.Path(), "error", err.Error())
		case e.Code == apperr.ServiceUnavailable:
			log.WarnContext(ctx, "database unavailable", "request_id", reqID, "route", c.Path(), "error", err.Error())
		case status >= 500 && status != http.StatusServiceUnavailable:
			log.ErrorContext(ctx, "request failed", "request_id", reqID, "method", c.Request().Method,
				"route", c.Path(), "error", err.Error())
		}
		if e.RetryAfterSeconds > 0 {
			c.Response().Header().Set("Retry-After", strconv.Itoa(e.RetryAfterSeconds))
		}
		if status == http.StatusMethodNotAllowed {
			c.Response().Header().Set(echo.HeaderAllow, allowOf(c))
		}
		var werr error
		if c.Request().Method == http.MethodHead {
			werr = c.NoContent(status)
		} else {
			werr = c.JSONBlob(status, errorBody(e, reqID, tracing.TraceID(ctx)))
		}
		if werr != nil {
			log.ErrorContext(ctx, "write error response", "request_id", reqID, "error", werr.Error())
		}
	}
}

// errorBody is the spec's Error body of e for request reqID in trace traceID
// ("" for none: the field is left out), as JSON: the one rendering of an error,
// written by the error handler and stored with a key (ErrorAnswer), so a
// replayed error is byte for byte the first one.
func errorBody(e *apperr.Error, reqID, traceID string) []byte {
	details := make([]api.ErrorDetail, 0, len(e.Details))
	for _, d := range e.Details {
		details = append(details, api.ErrorDetail{Field: d.Field, Message: d.Message})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf) // as echo's c.JSON writes it (a newline after the value)
	if err := enc.Encode(api.Error{
		Success: false,
		Message: e.Message,
		Error:   api.ErrorInfo{Code: api.ErrorCode(e.Code), Details: details, RequestId: reqID, TraceId: traceOf(traceID)},
	}); err != nil {
		// Strings, a bool and a slice of strings: encoding cannot fail.
		panic(err)
	}
	return buf.Bytes()
}

// traceOf is the error body's trace_id: absent when the request is in no trace.
func traceOf(id string) *string {
	if id == "" {
		return nil
	}
	return &id
}

// toAppError classifies any error into an *apperr.Error safe to show.
func toAppError(err error, unavailable func(error) bool) *apperr.Error {
	if e, ok := apperr.As(err); ok {
		return e
	}
	if unavailable != nil && unavailable(err) {
		return &apperr.Error{Code: apperr.ServiceUnavailable, Message: "The service is temporarily unavailable; retry shortly.",
			RetryAfterSeconds: unavailableRetryAfter}
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		if he.Internal != nil {
			if e, ok := apperr.As(he.Internal); ok {
				return e
			}
		}
		switch he.Code {
		case http.StatusNotFound:
			return apperr.New(apperr.NotFound, "No such route.")
		case http.StatusMethodNotAllowed:
			return apperr.New(apperr.MethodNotAllowed, "This method is not allowed on this path.")
		case http.StatusRequestEntityTooLarge:
			return apperr.New(apperr.PayloadTooLarge, "The request body is too large (64 KiB at most).")
		case http.StatusUnsupportedMediaType:
			return apperr.New(apperr.UnsupportedMediaType, "Request bodies must be application/json.")
		case http.StatusUnauthorized:
			return apperr.New(apperr.Unauthorized, "A valid X-API-KEY header is required.")
		case http.StatusBadRequest:
			// The generated binder's messages name the parameter, then Go's parse
			// error: keep the name as the detail's field, and say less about Go.
			e := apperr.New(apperr.InvalidRequest, "The request is invalid.")
			if msg, ok := he.Message.(string); ok {
				if rest, ok := strings.CutPrefix(msg, "Invalid format for parameter "); ok {
					name, cause, _ := strings.Cut(rest, ": ")
					e.Details = []apperr.Detail{{Field: name, Message: binderProblem(cause)}}
				}
			}
			return e
		}
	}
	return apperr.New(apperr.Internal, internalMessage)
}

// validationError turns the request validator's findings into one *apperr.Error
// with a detail per problem. A missing Idempotency-Key gets its own code.
func validationError(err error) *apperr.Error {
	var details []apperr.Detail
	code := apperr.InvalidRequest
	var walk func(error)
	walk = func(err error) {
		// Type switches, not errors.As: a RequestError wraps a MultiError of schema
		// errors, and unwrapping it first would lose the parameter it names.
		if me, ok := err.(openapi3.MultiError); ok {
			for _, e := range me {
				walk(e)
			}
			return
		}
		if re, ok := err.(*openapi3filter.RequestError); ok {
			if re.Parameter != nil {
				if re.Parameter.Name == "Idempotency-Key" && errors.Is(re.Err, openapi3filter.ErrInvalidRequired) {
					code = apperr.IdempotencyKeyMissing
				}
				details = append(details, apperr.Detail{Field: re.Parameter.Name, Message: paramProblem(re)})
				return
			}
			if re.Err == nil {
				details = append(details, apperr.Detail{Field: "body", Message: re.Reason})
				return
			}
			if walkSchema(re.Err, &details) {
				return
			}
			var pe *openapi3filter.ParseError
			if errors.As(re.Err, &pe) {
				details = append(details, apperr.Detail{Field: "body", Message: "not valid JSON"})
				return
			}
			msg := re.Reason
			if msg == "" {
				msg = firstLine(re.Err.Error())
			}
			details = append(details, apperr.Detail{Field: "body", Message: msg})
			return
		}
		if walkSchema(err, &details) {
			return
		}
		details = append(details, apperr.Detail{Field: "request", Message: firstLine(err.Error())})
	}
	walk(err)
	msg := "The request is invalid."
	if code == apperr.IdempotencyKeyMissing {
		msg = "The Idempotency-Key header is required for this operation."
	}
	return &apperr.Error{Code: code, Message: msg, Details: details}
}

// walkSchema appends a detail per schema violation in err and reports whether it found any.
func walkSchema(err error, details *[]apperr.Detail) bool {
	var me openapi3.MultiError
	if errors.As(err, &me) {
		found := false
		for _, e := range me {
			found = walkSchema(e, details) || found
		}
		return found
	}
	var se *openapi3.SchemaError
	if errors.As(err, &se) {
		ptr := "/" + strings.Join(se.JSONPointer(), "/")
		reason := se.Reason
		if se.SchemaField == "format" && se.Schema != nil {
			reason = "must be a valid " + se.Schema.Format
		}
		if se.SchemaField == "pattern" && se.Schema != nil {
			// The contract says in words what each pattern wants (x-pattern-message);
			// a raw regular expression helps nobody.
			reason = "has an invalid format"
			if m, ok := se.Schema.Extensions["x-pattern-message"].(string); ok {
				reason = m
			}
		}
		if q, ok := strings.CutPrefix(reason, "property "); ok && se.SchemaField == "properties" && strings.HasSuffix(q, " is unsupported") {
			// An unknown property (additionalProperties: false): name the property
			// itself, not the object holding it.
			if name, err := strconv.Unquote(strings.TrimSuffix(q, " is unsupported")); err == nil {
				ptr = strings.TrimSuffix(ptr, "/") + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(name)
				reason = "is not a known property (check its spelling)"
			}
		}
		*details = append(*details, apperr.Detail{Field: ptr, Message: reason})
		return true
	}
	return false
}

func paramProblem(re *openapi3filter.RequestError) string {
	if errors.Is(re.Err, openapi3filter.ErrInvalidRequired) {
		return "is required"
	}
	var details []apperr.Detail
	if walkSchema(re.Err, &details) {
		return details[0].Message
	}
	if re.Err != nil {
		return firstLine(re.Err.Error())
	}
	return re.Reason
}

// binderProblem turns the generated binder's parse error into a short reason.
func binderProblem(cause string) string {
	switch {
	case strings.Contains(cause, "time"):
		return "must be an RFC 3339 date-time that exists, e.g. 2026-11-01T00:00:00Z"
	case strings.Contains(cause, "strconv"), strings.Contains(cause, "integer"):
		return "must be an integer"
	case strings.Contains(cause, "bool"):
		return "must be true or false"
	}
	return "has an invalid value"
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
