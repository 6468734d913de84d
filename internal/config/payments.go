package config

import (
	"errors"
	"strings"

	"github.com/shopspring/decimal"

	"partnerd/internal/lifecycle"
	"partnerd/internal/pricing/money"
)

// loadPayments reads the payment rules (lifecycle.Payments):
//
//   - UNDERPAYMENT_TOLERANCE: a total short by no more than this counts as paid in
//     full; a percentage of the expected amount ("0.5%") or a token amount ("1.00").
//     Default 0.
//   - MIN_DEPOSIT: a smaller transfer is dust and never counts. Default 1.00.
//   - LATE_PAYMENT_WINDOW: how long after its deadline an expired transaction still
//     takes transfers. Default 1h.
func loadPayments(get func(key, def string) string, bad func(string, error)) lifecycle.Payments {
	p := lifecycle.DefaultPayments
	if tol, err := ParseTolerance(get("UNDERPAYMENT_TOLERANCE", "0")); err != nil {
		bad("UNDERPAYMENT_TOLERANCE", err)
	} else {
		p.Tolerance = tol
	}
	if v, err := tokenAmount(get("MIN_DEPOSIT", p.MinDeposit.String())); err != nil {
		bad("MIN_DEPOSIT", err)
	} else {
		p.MinDeposit = v
	}
	p.LateWindow = duration(get("LATE_PAYMENT_WINDOW", p.LateWindow.String()), "LATE_PAYMENT_WINDOW", bad)
	if p.LateWindow < 0 {
		bad("LATE_PAYMENT_WINDOW", errors.New("must not be negative"))
	}
	return p
}

// ParseTolerance reads an underpayment tolerance: "0.5%" (of the expected amount,
// below 100 %) or a token amount such as "1.00" (at most 6 decimal places).
func ParseTolerance(s string) (lifecycle.Tolerance, error) {
	if pct, ok := strings.CutSuffix(s, "%"); ok {
		v, err := decimal.NewFromString(strings.TrimSpace(pct))
		if err != nil || v.IsNegative() || v.GreaterThanOrEqual(decimal.NewFromInt(100)) {
			return lifecycle.Tolerance{}, errors.New("a percentage must be a decimal from 0 to below 100, like 0.5%")
		}
		return lifecycle.Tolerance{Value: v, Percent: true}, nil
	}
	v, err := tokenAmount(s)
	if err != nil {
		return lifecycle.Tolerance{}, errors.New("must be a percentage like 0.5% or a token amount like 1.00")
	}
	return lifecycle.Tolerance{Value: v}, nil
}

// tokenAmount reads a non-negative token amount of at most 6 decimal places.
func tokenAmount(s string) (decimal.Decimal, error) {
	v, err := decimal.NewFromString(s)
	if err != nil || v.IsNegative() || !v.Equal(v.RoundDown(money.TokenScale)) {
		return decimal.Decimal{}, errors.New("must be a non-negative token amount with at most 6 decimal places, like 1.00")
	}
	return v, nil
}
