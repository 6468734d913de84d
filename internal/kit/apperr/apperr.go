// Package apperr defines the service's errors: one type carrying a stable machine
// code that partners program against. Domain packages return these; the HTTP layer
// maps each Code to a status in exactly one table (httpapi.statusByCode), so a code
// means the same thing on every endpoint.
package apperr

import (
	"errors"
	"fmt"
)

// Code is a stable machine-readable error code. The values are part of the public
// contract (the ErrorCode enum in openapi/partner.yaml); never rename one.
type Code string

// The error codes. Each is documented, with its HTTP status, in the spec's error table.
const (
	InvalidRequest               Code = "invalid_request"
	IdempotencyKeyMissing        Code = "idempotency_key_missing"
	InvalidCursor                Code = "invalid_cursor"
	Unauthorized                 Code = "unauthorized"
	NotFound                     Code = "not_found"
	MethodNotAllowed             Code = "method_not_allowed"
	DuplicateMerchantReference   Code = "duplicate_merchant_reference"
	InvalidStateTransition       Code = "invalid_state_transition"
	IdempotencyRequestInProgress Code = "idempotency_request_in_progress"
	QuoteAlreadyUsed             Code = "quote_already_used"
	PayloadTooLarge              Code = "payload_too_large"
	UnsupportedMediaType         Code = "unsupported_media_type"
	IdempotencyKeyReused         Code = "idempotency_key_reused"
	QuoteExpired                 Code = "quote_expired"
	QuoteMismatch                Code = "quote_mismatch"
	UnsupportedPair              Code = "unsupported_pair"
	AmountOutOfRange             Code = "amount_out_of_range"
	WebhookURLNotAllowed         Code = "webhook_url_not_allowed"
	RateLimited                  Code = "rate_limited"
	Internal                     Code = "internal_error"
	RatesUnavailable             Code = "rates_unavailable"
	ServiceUnavailable           Code = "service_unavailable"
	// Forbidden and ApprovalClosed are the operator API's own: an operator without
	// the role an operation needs (or acting on their own proposal or roles), and a
	// proposal no longer pending.
	Forbidden      Code = "forbidden"
	ApprovalClosed Code = "approval_closed"
)

// Detail names one offending field (a JSON pointer such as "/fiat_amount", or a
// parameter or header name) and what is wrong with it.
type Detail struct {
	Field   string
	Message string
}

// Error is a failure a partner can act on: a Code, a human Message safe to show,
// and optional per-field Details. Anything that is not an *Error is treated as
// internal and never shown to the partner.
type Error struct {
	Code    Code
	Message string
	Details []Detail
	// RetryAfterSeconds, when positive, is sent as the Retry-After header.
	RetryAfterSeconds int
}

// Error implements error.
func (e *Error) Error() string {
	if len(e.Details) == 0 {
		return fmt.Sprintf("%s: %s", e.Code, e.Message)
	}
	return fmt.Sprintf("%s: %s (%s: %s)", e.Code, e.Message, e.Details[0].Field, e.Details[0].Message)
}

// New returns an *Error with the code and message.
func New(code Code, message string) *Error {
	return &Error{Code: code, Message: message}
}

// Field returns an *Error whose single detail names the field at fault.
func Field(code Code, message, field, problem string) *Error {
	return &Error{Code: code, Message: message, Details: []Detail{{Field: field, Message: problem}}}
}

// CodeOf returns the code of err, or Internal when err is not (and does not wrap) an *Error.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// As returns the *Error inside err, if any.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
