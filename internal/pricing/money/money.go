// Package money holds the service's one set of rounding rules for NGN and token
// amounts. Every amount that reaches the wire or the database is produced here, so a
// rule changes in one place; openapi/partner.yaml states the same rules for partners.
//
// Amounts are shopspring/decimal values throughout: no float ever touches an amount.
package money

import (
	"fmt"

	"github.com/shopspring/decimal"
)

// Scales of the three kinds of number on the wire.
const (
	// FiatScale is the number of decimals of an NGN amount (kobo).
	FiatScale = 2
	// TokenScale is the number of decimals of a token amount.
	TokenScale = 6
	// RateScale is the number of decimals of a rate (NGN per token).
	RateScale = 2
)

var one = decimal.NewFromInt(1)

// BaseRate rounds a rate source's value half-up to RateScale (rule 1).
func BaseRate(source decimal.Decimal) decimal.Decimal {
	return source.Round(RateScale)
}

// AdjustedRate applies the spread (a fraction such as 0.005 for 0.5 %) against the
// partner and rounds down to RateScale, so the partner never gets more NGN per
// token than the spread allows (rule 2).
func AdjustedRate(base, spread decimal.Decimal) decimal.Decimal {
	return base.Mul(one.Sub(spread)).RoundFloor(RateScale)
}

// FiatFromTokens prices a token amount at rate, rounding down to kobo (rule 3):
// rounding never pays out more than the tokens are worth.
func FiatFromTokens(tokens, rate decimal.Decimal) decimal.Decimal {
	return tokens.Mul(rate).RoundFloor(FiatScale)
}

// Proceeds is one transaction's share of a sale at rate, rounded half away from
// zero to kobo, as the operator contract states for POST /fills: a batch fill
// sells many deposits at one rate, and each transaction is credited its own
// tokens at that rate, to the nearest kobo.
func Proceeds(tokens, rate decimal.Decimal) decimal.Decimal {
	return tokens.Mul(rate).Round(FiatScale)
}

// TokensFromFiat returns the token amount needed for fiat at rate, rounding up to
// TokenScale (rule 4): the deposit always covers the fiat amount. rate must be positive.
func TokensFromFiat(fiat, rate decimal.Decimal) decimal.Decimal {
	// DivRound rounds half-up at the given precision; divide with ample precision
	// first and then round up, so the result is the true ceiling.
	q := fiat.DivRound(rate, TokenScale+12)
	return q.RoundCeil(TokenScale)
}

// Fee returns amount × rate rounded half-even to FiatScale (rule 6), used for the
// platform fee and the partner's share.
func Fee(amount, rate decimal.Decimal) decimal.Decimal {
	return amount.Mul(rate).RoundBank(FiatScale)
}

// ParseFiat parses a partner-sent NGN amount. It refuses more than FiatScale
// decimals rather than rounding silently (rule 5), and negative values.
func ParseFiat(s string) (decimal.Decimal, error) {
	return parseScaled(s, FiatScale)
}

// ParseTokens parses a partner-sent token amount, refusing more than TokenScale decimals.
func ParseTokens(s string) (decimal.Decimal, error) {
	return parseScaled(s, TokenScale)
}

func parseScaled(s string, scale int32) (decimal.Decimal, error) {
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Decimal{}, fmt.Errorf("not a decimal number")
	}
	if d.IsNegative() {
		return decimal.Decimal{}, fmt.Errorf("must not be negative")
	}
	if -d.Exponent() > scale && !d.Equal(d.Truncate(scale)) {
		return decimal.Decimal{}, fmt.Errorf("at most %d decimal places", scale)
	}
	return d, nil
}

// FormatFiat renders an NGN amount with exactly FiatScale decimals.
func FormatFiat(d decimal.Decimal) string { return d.StringFixed(FiatScale) }

// FormatTokens renders a token amount with exactly TokenScale decimals.
func FormatTokens(d decimal.Decimal) string { return d.StringFixed(TokenScale) }

// FormatRate renders a rate with exactly RateScale decimals.
func FormatRate(d decimal.Decimal) string { return d.StringFixed(RateScale) }
