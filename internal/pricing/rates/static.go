package rates

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// Static is a Source backed by a fixed table of rates. It is the staging
// default: quotes work without any external dependency, and the rate is
// whatever the operator configured.
//
// Because the table is by definition the current rate, every Rate result is
// stamped with the clock's current time and never goes stale.
type Static struct {
	table map[string]decimal.Decimal
	now   func() time.Time
}

var _ Source = (*Static)(nil)

// NewStatic returns a Static serving table (token -> NGN per token). Token
// keys are lower-cased and trimmed; the table is copied, so later changes
// by the caller have no effect. now supplies AsOf for every result; nil
// means time.Now.
//
// Build table with ParseStaticTable to have it validated; entries that are
// not positive are reported as unavailable rather than served.
func NewStatic(table map[string]decimal.Decimal, now func() time.Time) *Static {
	if now == nil {
		now = time.Now
	}
	t := make(map[string]decimal.Decimal, len(table))
	for k, v := range table {
		t[normalizeToken(k)] = v
	}
	return &Static{table: t, now: now}
}

// Rate returns the configured rate for token with AsOf set to now. An
// unknown token, or a configured value that is not positive, yields an error
// wrapping ErrUnavailable.
func (s *Static) Rate(_ context.Context, token string) (Rate, error) {
	tok := normalizeToken(token)
	v, ok := s.table[tok]
	if !ok {
		return Rate{}, fmt.Errorf("%w: no static rate configured for token %q", ErrUnavailable, tok)
	}
	if v.Sign() <= 0 {
		return Rate{}, fmt.Errorf("%w: static rate for token %q is not positive (%s)", ErrUnavailable, tok, v)
	}
	return Rate{Value: v, AsOf: s.now()}, nil
}

// ParseStaticTable parses a static rate table from configuration, for
// example "usdt=1550.00,usdc=1549.5".
//
// Entries are separated by commas and have the form token=value. Tokens are
// trimmed and lower-cased; values are trimmed and parsed exactly with
// decimal.NewFromString and must be positive. An empty table, an empty
// entry, a missing token or value, an invalid or non-positive value, and a
// token listed twice (case-insensitively) are all errors.
func ParseStaticTable(s string) (map[string]decimal.Decimal, error) {
	pairs, err := parsePairs(s, "static rate table")
	if err != nil {
		return nil, err
	}
	out := make(map[string]decimal.Decimal, len(pairs))
	for _, p := range pairs {
		v, err := parseRate(p.value)
		if err != nil {
			return nil, fmt.Errorf("rates: static rate table: token %q: %v", p.key, err)
		}
		out[p.key] = v
	}
	return out, nil
}

type pair struct{ key, value string }

// parsePairs splits "k=v,k=v" into trimmed pairs with lower-cased, unique,
// non-empty keys and non-empty values. what names the setting in errors.
func parsePairs(s, what string) ([]pair, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("rates: %s is empty", what)
	}
	entries := strings.Split(s, ",")
	pairs := make([]pair, 0, len(entries))
	seen := make(map[string]bool, len(entries))
	for i, entry := range entries {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return nil, fmt.Errorf("rates: %s: entry %d is empty", what, i+1)
		}
		k, v, ok := strings.Cut(entry, "=")
		if !ok {
			return nil, fmt.Errorf("rates: %s: entry %q is not of the form token=value", what, entry)
		}
		k = normalizeToken(k)
		v = strings.TrimSpace(v)
		if k == "" {
			return nil, fmt.Errorf("rates: %s: entry %q has an empty token", what, entry)
		}
		if v == "" {
			return nil, fmt.Errorf("rates: %s: entry %q has an empty value", what, entry)
		}
		if seen[k] {
			return nil, fmt.Errorf("rates: %s: token %q is listed more than once", what, k)
		}
		seen[k] = true
		pairs = append(pairs, pair{key: k, value: v})
	}
	return pairs, nil
}

func normalizeToken(s string) string {
	return strings.ToLower(strings.TrimSpace(s))
}
