package webkit

import (
	"fmt"
	"strings"

	"github.com/shopspring/decimal"
)

// Amount is a decimal amount (a string, as the APIs send money, or a
// decimal.Decimal) with its whole part grouped in thousands: "1234567.50" reads
// "1,234,567.50". The digits are the API's, to the last decimal: nothing goes
// through a float. Anything that is not a decimal is shown as it came.
func Amount(v any) string {
	var s string
	switch a := v.(type) {
	case decimal.Decimal:
		s = a.String()
	default:
		s = text(v)
	}
	s = strings.TrimSpace(s)
	if _, err := decimal.NewFromString(s); err != nil || strings.ContainsAny(s, "eE") {
		return s
	}
	sign := ""
	if s != "" && (s[0] == '-' || s[0] == '+') {
		sign, s = s[:1], s[1:]
		if sign == "+" {
			sign = ""
		}
	}
	whole, frac, dot := strings.Cut(s, ".")
	var b strings.Builder
	for i, c := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if dot {
		return sign + b.String() + "." + frac
	}
	return sign + b.String()
}

// ParseAmount reads an amount typed as the pages show amounts (Amount): its
// whole part grouped in thousands by commas or not at all ("154,225.00",
// "154225.00"), spaces around it, and one of currencies' codes before or after
// it, in any case ("154,225.00 NGN"). It returns the amount as the APIs take it
// ("154225.00": the digits as typed, ungrouped, never through a float), or an
// error that says in words what is wrong (misplaced commas, a sign, letters), to
// show beside the form.
func ParseAmount(typed string, currencies ...string) (string, error) {
	s := strings.TrimSpace(typed)
	for _, c := range currencies {
		if len(s) >= len(c) && strings.EqualFold(s[len(s)-len(c):], c) {
			s = strings.TrimSpace(s[:len(s)-len(c)])
		} else if len(s) >= len(c) && strings.EqualFold(s[:len(c)], c) {
			s = strings.TrimSpace(s[len(c):])
		}
	}
	if s == "" {
		return "", fmt.Errorf("no amount was typed")
	}
	whole, frac, dot := strings.Cut(s, ".")
	digits := func(p string) bool { return p != "" && strings.Trim(p, "0123456789") == "" }
	if dot && !digits(frac) {
		return "", fmt.Errorf("%q is not an amount: after the decimal point only digits", typed)
	}
	if strings.Contains(whole, ",") {
		groups := strings.Split(whole, ",")
		if len(groups[0]) > 3 || !digits(groups[0]) {
			return "", fmt.Errorf("%q is not an amount: commas group the digits in threes (1,549.10)", typed)
		}
		for _, g := range groups[1:] {
			if len(g) != 3 || !digits(g) {
				return "", fmt.Errorf("%q is not an amount: commas group the digits in threes (1,549.10)", typed)
			}
		}
		whole = strings.Join(groups, "")
	}
	if !digits(whole) {
		return "", fmt.Errorf("%q is not an amount: digits, commas between thousands and a decimal point only", typed)
	}
	if dot {
		return whole + "." + frac, nil
	}
	return whole, nil
}
