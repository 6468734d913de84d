// Package rates supplies the NGN-per-token exchange rates used to price
// quotes.
//
// Callers depend on the Source interface so that the rate provider can be
// chosen by configuration: Static for staging and tests, HTTPFeed for a
// remote JSON feed, and WithMaxAge to refuse rates that are too old to quote
// against. Rates are always decimals parsed exactly from their textual form;
// they never pass through float64.
package rates

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shopspring/decimal"
)

// Rate is a source rate (NGN per one token) and when the source
// published or fetched it.
//
// AsOf is what staleness checks (see WithMaxAge) measure against, so a
// Source must set it to the time the value was actually obtained, not the
// time Rate was called, unless the value is by definition always current
// (as with Static).
type Rate struct {
	// Value is the number of NGN for one whole token. It is always positive
	// when returned without error.
	Value decimal.Decimal
	// AsOf is when Value was obtained from its origin.
	AsOf time.Time
}

// Source gives the current rate for a lower-case token symbol such as
// "usdt".
//
// Implementations must be safe for concurrent use. Every failure to produce
// a usable rate (unknown token, no data yet, stale data, ...) returns an
// error that wraps ErrUnavailable, so callers can map all of them to a single
// "cannot quote right now" response with errors.Is.
type Source interface {
	Rate(ctx context.Context, token string) (Rate, error)
}

// ErrUnavailable is wrapped by every error a Source returns when it cannot
// give a usable rate. Test for it with errors.Is; the wrapping error carries
// the specific reason.
var ErrUnavailable = errors.New("rates unavailable")

// maxExponent bounds the decimal exponent accepted for a rate. Real NGN
// rates are nowhere near this; the bound only stops input such as "1e999999999"
// from producing a value whose string form would be enormous.
const maxExponent = 100

// parseRate parses s exactly as a decimal and requires it to be a positive,
// reasonably scaled number.
func parseRate(s string) (decimal.Decimal, error) {
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Decimal{}, fmt.Errorf("invalid decimal %q", s)
	}
	if e := d.Exponent(); e > maxExponent || e < -maxExponent {
		return decimal.Decimal{}, fmt.Errorf("decimal %q is out of range", s)
	}
	if d.Sign() <= 0 {
		return decimal.Decimal{}, fmt.Errorf("rate %q must be positive", s)
	}
	return d, nil
}
