// Package ratelimit limits how fast each API key may call the partner API, with a
// separate budget per route class (reads and writes), so a partner polling a list
// endpoint cannot starve its own payment creation, and one partner cannot starve
// the others.
//
// Budgets are GCRA / token buckets: Rate requests per Period, with bursts of up to
// Burst requests. Two implementations of Limiter exist: Memory, for a single
// instance, and Redis, whose budget is shared by every instance that talks to the
// same Redis. Middleware applies a Limiter to Echo routes, advertises the budget in
// the IETF RateLimit and RateLimit-Policy fields, answers rate_limited (429) with
// Retry-After when a budget is spent, and fails open when the limiter itself fails.
package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Class is a route class with its own budget. Each class is counted separately for
// the same key, so spending one class's budget leaves the others untouched.
type Class string

// The route classes. Writes are the expensive, state-changing operations and are
// usually given a smaller budget than reads.
const (
	// Reads are safe requests (GET, HEAD).
	Reads Class = "reads"
	// Writes are requests that change state (POST, PUT, PATCH, DELETE).
	Writes Class = "writes"
)

// Limit is a GCRA / token-bucket budget: Rate requests per Period on average, with
// bursts of up to Burst requests. A full bucket holds Burst tokens; each request
// takes one and a token comes back every Period/Rate. It is a plain value so a
// configuration can be parsed once (ParseLimit) and passed to any Limiter.
type Limit struct {
	// Rate is how many requests are allowed per Period in the long run.
	Rate int
	// Burst is how many requests may arrive at once after a quiet spell.
	Burst int
	// Period is the window Rate is measured over.
	Period time.Duration
}

// Validate reports whether l can be enforced: Rate, Burst and Period must all be
// positive. Limiters reject invalid limits instead of silently allowing or denying
// everything.
func (l Limit) Validate() error {
	switch {
	case l.Rate <= 0:
		return fmt.Errorf("ratelimit: rate must be positive, got %d", l.Rate)
	case l.Burst <= 0:
		return fmt.Errorf("ratelimit: burst must be positive, got %d", l.Burst)
	case l.Period <= 0:
		return fmt.Errorf("ratelimit: period must be positive, got %s", l.Period)
	}
	return nil
}

// String formats l in the syntax ParseLimit reads, so a configured limit can be
// logged and read back unchanged.
func (l Limit) String() string {
	s := strconv.Itoa(l.Rate) + "/" + l.Period.String()
	if l.Burst != l.Rate {
		s += ",burst=" + strconv.Itoa(l.Burst)
	}
	return s
}

// Result is the outcome of one check, with what a client needs to pace itself.
type Result struct {
	// Allowed reports whether the request may proceed; a denied request consumed
	// nothing.
	Allowed bool
	// Limit is the budget the request was checked against.
	Limit Limit
	// Remaining is how many more requests would be allowed right now.
	Remaining int
	// RetryAfter is how long to wait before the next request can be allowed; zero
	// when Allowed.
	RetryAfter time.Duration
	// ResetAfter is how long until the bucket is full again, i.e. until Remaining
	// would be Burst if no more requests came.
	ResetAfter time.Duration
}

// Limiter checks and spends one request of a budget. key identifies the caller (a
// hash of its API key, never the key itself, since a shared store such as Redis
// would otherwise hold live credentials); class selects which of the caller's
// budgets is spent. An error means the limiter could not decide; the caller chooses
// whether to fail open or closed.
type Limiter interface {
	// Allow spends one request of key's budget for class under l, or reports that
	// none is left and when to retry.
	Allow(ctx context.Context, key string, class Class, l Limit) (Result, error)
}

// ParseLimit reads a limit from configuration. The syntax is
//
//	<rate>/<period>[,burst=<burst>]
//
// where rate and burst are positive integers and period is a positive Go duration
// ("1s", "1m", "500ms", "1h30m") or a bare unit ("s", "m", "h"), meaning one of
// it. Burst defaults to rate. Spaces around the parts are ignored. Examples:
//
//	100/1s             100 requests a second, bursts of 100
//	100/1m,burst=200   100 requests a minute, bursts of 200
//	5/s,burst=1        5 requests a second, evenly spaced
//
// It exists so operators can tune budgets per environment without a rebuild, and so
// a mistyped value stops the process at start instead of disabling a limit.
func ParseLimit(s string) (Limit, error) {
	fail := func(format string, args ...any) (Limit, error) {
		return Limit{}, fmt.Errorf("ratelimit: parse limit %q: %s", s, fmt.Sprintf(format, args...))
	}
	parts := strings.Split(s, ",")
	ratePart, periodPart, ok := strings.Cut(parts[0], "/")
	if !ok {
		return fail("want <rate>/<period>[,burst=<n>]")
	}
	var l Limit
	var err error
	if l.Rate, err = strconv.Atoi(strings.TrimSpace(ratePart)); err != nil {
		return fail("rate %q is not an integer", strings.TrimSpace(ratePart))
	}
	periodPart = strings.TrimSpace(periodPart)
	if periodPart != "" && (periodPart[0] < '0' || periodPart[0] > '9') && periodPart[0] != '.' {
		periodPart = "1" + periodPart
	}
	if l.Period, err = time.ParseDuration(periodPart); err != nil {
		return fail("period %q is not a duration such as 1s or 1m", strings.TrimSpace(periodPart))
	}
	l.Burst = l.Rate
	burstSet := false
	for _, opt := range parts[1:] {
		name, value, ok := strings.Cut(opt, "=")
		name = strings.TrimSpace(name)
		if !ok || name != "burst" {
			return fail("unknown option %q (only burst=<n>)", strings.TrimSpace(opt))
		}
		if burstSet {
			return fail("burst given twice")
		}
		burstSet = true
		if l.Burst, err = strconv.Atoi(strings.TrimSpace(value)); err != nil {
			return fail("burst %q is not an integer", strings.TrimSpace(value))
		}
	}
	if err := l.Validate(); err != nil {
		return fail("%s", strings.TrimPrefix(err.Error(), "ratelimit: "))
	}
	return l, nil
}
