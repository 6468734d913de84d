package webkit

import (
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
