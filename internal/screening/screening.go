// Package screening asks whether an address is sanctioned before any money it sent
// is sold, paid out or sent back. A Screener is one source of that answer (an
// imported address list, an on-chain sanctions oracle, an HTTP screening service);
// Combined asks several, and a hit from any is a hit. What a screener cannot
// answer is an error: the caller records the result as unknown and holds the money
// (fail closed), it never takes silence for clear.
package screening

import (
	"context"
	"errors"
	"strings"
	"time"
)

// Verdict is the answer about one address.
type Verdict string

// The verdicts.
const (
	// Clear: no screener names the address.
	Clear Verdict = "clear"
	// Hit: at least one screener names it.
	Hit Verdict = "hit"
	// Unknown: a screener could not answer (the money waits).
	Unknown Verdict = "unknown"
)

// Finding is the evidence of one screener's answer, kept with the result for the
// review and the regulator: which screener, against what (a list and its version,
// an oracle at a block, a service), and what it said.
type Finding struct {
	// Screener is the screener's kind: "list", "oracle" or "api".
	Screener string `json:"screener"`
	// Source names what was asked: a list's source, an oracle's network and
	// contract, a service's host.
	Source string `json:"source"`
	// Version pins the answer: the list's published date and import, the oracle's
	// block number (on a node that calls only at its head, the least block the
	// answer is for), the service's answer time.
	Version string `json:"version,omitempty"`
	// Hit is whether this screener names the address.
	Hit bool `json:"hit"`
	// Category, Name, Description and URL are the identification a hit carries
	// (the list's entry, the service's identification), when there is one.
	Category    string `json:"category,omitempty"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	URL         string `json:"url,omitempty"`
	// Error is why a screener could not answer (the result is then unknown).
	Error string `json:"error,omitempty"`
}

// Result is the answer of one screening of an address: the verdict and every
// screener's finding.
type Result struct {
	Verdict   Verdict   `json:"verdict"`
	Findings  []Finding `json:"findings"`
	CheckedAt time.Time `json:"checked_at"`
}

// Screener is one source of sanctions answers. Screen returns a finding (Hit true
// or false) for address on network (the address in the network's own form: 0x…
// on EVM networks, base58 T… on Tron), or an error when it cannot answer; it
// never returns a clear finding it did not get.
type Screener interface {
	// Kind is "list", "oracle" or "api".
	Kind() string
	// Covers reports whether the screener can answer for network (an oracle
	// answers for its own network only).
	Covers(network string) bool
	Screen(ctx context.Context, network, address string) (Finding, error)
}

// Combined asks every screener that covers the network: a hit from any is a hit;
// otherwise any that could not answer makes the result unknown.
type Combined []Screener

// Screen screens address on network with every screener and returns the result
// with each finding (an error becomes a finding with Error set).
func (c Combined) Screen(ctx context.Context, network, address string, now time.Time) Result {
	r := Result{Verdict: Clear, CheckedAt: now.UTC(), Findings: []Finding{}}
	unknown := false
	for _, s := range c {
		if !s.Covers(network) {
			continue
		}
		f, err := s.Screen(ctx, network, address)
		if err != nil {
			f = Finding{Screener: s.Kind(), Source: f.Source, Error: err.Error()}
			unknown = true
		}
		if f.Screener == "" {
			f.Screener = s.Kind()
		}
		r.Findings = append(r.Findings, f)
		if f.Hit {
			r.Verdict = Hit
		}
	}
	if r.Verdict != Hit && unknown {
		r.Verdict = Unknown
	}
	return r
}

// Kinds are the screeners SCREENING may name.
var Kinds = []string{"list", "oracle", "api"}

// ParseSetting reads SCREENING: "off", or a comma list of Kinds. Errors name the
// setting.
func ParseSetting(v string) (kinds []string, off bool, err error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, false, errors.New("SCREENING is not set")
	}
	if v == "off" {
		return nil, true, nil
	}
	seen := map[string]bool{}
	for _, k := range strings.Split(v, ",") {
		k = strings.TrimSpace(k)
		switch k {
		case "list", "oracle", "api":
		case "off":
			return nil, false, errors.New("SCREENING: off cannot be combined with a screener")
		default:
			return nil, false, errors.New("SCREENING: unknown screener " + k + " (list, oracle, api or off)")
		}
		if !seen[k] {
			seen[k] = true
			kinds = append(kinds, k)
		}
	}
	return kinds, false, nil
}
