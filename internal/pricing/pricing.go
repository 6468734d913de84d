// Package pricing turns a rate source's NGN-per-token rate into executable prices for
// the supported token/network pairs. Quotes and direct-mode transactions both price
// through Pricer, so they follow the same rules (package money) and the same limits.
package pricing

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/shopspring/decimal"

	"partnerd/internal/kit/apperr"
	"partnerd/internal/pricing/money"
	"partnerd/internal/pricing/rates"
)

// Pair is a supported token/network pair with its per-transaction NGN limits.
type Pair struct {
	Token   string
	Network string
	// MinFiat and MaxFiat bound the NGN amount of one quote or transaction, inclusive.
	MinFiat decimal.Decimal
	MaxFiat decimal.Decimal
}

// Key returns "token/network".
func (p Pair) Key() string { return p.Token + "/" + p.Network }

// ParsePairs parses "usdt:bep20:1000:50000000,usdt:trc20:1000:50000000"
// (token:network:min_fiat:max_fiat, comma-separated).
func ParsePairs(s string) ([]Pair, error) {
	var out []Pair
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		f := strings.Split(item, ":")
		if len(f) != 4 {
			return nil, fmt.Errorf("pair %q: want token:network:min_fiat:max_fiat", item)
		}
		p := Pair{Token: strings.ToLower(strings.TrimSpace(f[0])), Network: strings.ToLower(strings.TrimSpace(f[1]))}
		var err error
		if p.MinFiat, err = decimal.NewFromString(f[2]); err != nil {
			return nil, fmt.Errorf("pair %q: min_fiat: %w", item, err)
		}
		if p.MaxFiat, err = decimal.NewFromString(f[3]); err != nil {
			return nil, fmt.Errorf("pair %q: max_fiat: %w", item, err)
		}
		if p.Token == "" || p.Network == "" || p.MinFiat.IsNegative() || p.MaxFiat.LessThan(p.MinFiat) {
			return nil, fmt.Errorf("pair %q: need a token, a network and 0 <= min <= max", item)
		}
		if seen[p.Key()] {
			return nil, fmt.Errorf("pair %q listed twice", p.Key())
		}
		seen[p.Key()] = true
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, errors.New("no pairs configured")
	}
	return out, nil
}

// Price is an executable price of one amount.
type Price struct {
	Token        string
	Network      string
	BaseRate     decimal.Decimal
	AdjustedRate decimal.Decimal
	CryptoAmount decimal.Decimal
	FiatAmount   decimal.Decimal
}

// Amount is what is being priced: exactly one of Crypto and Fiat is set.
type Amount struct {
	Crypto *decimal.Decimal
	Fiat   *decimal.Decimal
}

// Pricer prices amounts for the configured pairs.
type Pricer struct {
	source rates.Source
	pairs  map[string]Pair
	spread decimal.Decimal
}

// NewPricer returns a Pricer. spread is the fraction taken from the base rate
// (0.005 = 0.5 %); source should already enforce staleness (rates.WithMaxAge).
func NewPricer(source rates.Source, pairs []Pair, spread decimal.Decimal) *Pricer {
	m := make(map[string]Pair, len(pairs))
	for _, p := range pairs {
		m[p.Key()] = p
	}
	return &Pricer{source: source, pairs: m, spread: spread}
}

// Pair returns the configured pair, or apperr UnsupportedPair.
func (p *Pricer) Pair(token, network string) (Pair, error) {
	pair, ok := p.pairs[token+"/"+network]
	if !ok {
		keys := make([]string, 0, len(p.pairs))
		for k := range p.pairs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return Pair{}, apperr.Field(apperr.UnsupportedPair,
			fmt.Sprintf("%s on %s is not supported.", token, network),
			"/network", "supported pairs: "+strings.Join(keys, ", "))
	}
	return pair, nil
}

// Price prices amt for token on network at the current adjusted rate. Errors:
// UnsupportedPair, RatesUnavailable (source down or stale), AmountOutOfRange (the
// NGN amount outside the pair's limits; fieldPrefix names the field in details).
func (p *Pricer) Price(ctx context.Context, token, network string, amt Amount) (Price, error) {
	pair, err := p.Pair(token, network)
	if err != nil {
		return Price{}, err
	}
	r, err := p.source.Rate(ctx, token)
	if err != nil {
		if errors.Is(err, rates.ErrUnavailable) {
			return Price{}, apperr.New(apperr.RatesUnavailable, "Rates are temporarily unavailable; retry shortly.")
		}
		return Price{}, err
	}
	base := money.BaseRate(r.Value)
	adjusted := money.AdjustedRate(base, p.spread)
	if !adjusted.IsPositive() {
		return Price{}, apperr.New(apperr.RatesUnavailable, "Rates are temporarily unavailable; retry shortly.")
	}
	out := Price{Token: token, Network: network, BaseRate: base, AdjustedRate: adjusted}
	field := "/fiat_amount"
	switch {
	case amt.Fiat != nil && amt.Crypto == nil:
		out.FiatAmount = amt.Fiat.Round(money.FiatScale)
		out.CryptoAmount = money.TokensFromFiat(out.FiatAmount, adjusted)
	case amt.Crypto != nil && amt.Fiat == nil:
		field = "/crypto_amount"
		out.CryptoAmount = amt.Crypto.Round(money.TokenScale)
		out.FiatAmount = money.FiatFromTokens(out.CryptoAmount, adjusted)
	default:
		return Price{}, apperr.New(apperr.InvalidRequest, "Send exactly one of crypto_amount and fiat_amount.")
	}
	if out.FiatAmount.LessThan(pair.MinFiat) || out.FiatAmount.GreaterThan(pair.MaxFiat) || !out.CryptoAmount.IsPositive() {
		return Price{}, apperr.Field(apperr.AmountOutOfRange,
			fmt.Sprintf("The amount is outside the allowed range for %s on %s.", token, network),
			field, fmt.Sprintf("the NGN amount must be between %s and %s", money.FormatFiat(pair.MinFiat), money.FormatFiat(pair.MaxFiat)))
	}
	return out, nil
}
