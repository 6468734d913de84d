package ratelimit

import (
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"partnerd/internal/kit/apperr"
)

// The response fields of draft-ietf-httpapi-ratelimit-headers. Clients that know
// them can pace themselves before ever being refused.
const (
	// HeaderRateLimitPolicy announces the budget: `"<class>";q=<rate>;w=<seconds>`.
	HeaderRateLimitPolicy = "RateLimit-Policy"
	// HeaderRateLimit reports the state of the budget after this request:
	// `"<class>";r=<remaining>;t=<seconds until full>`.
	HeaderRateLimit = "RateLimit"
)

// RateLimitedMessage is the message of the rate_limited error; the Retry-After
// header says when to come back.
const RateLimitedMessage = "Too many requests; retry later."

// failureLogEvery is the least time between two logs of limiter failures, so an
// outage of Redis yields a line a minute rather than one per request.
const failureLogEvery = time.Minute

// Middleware limits requests per key and route class with l.
//
// classify returns the class of a request, or "" for routes that are never limited
// (health checks, metrics); a class with no entry in limits is not limited either.
// keyOf returns the key to count against, or "" to skip (an unauthenticated
// request, which authentication rejects anyway); pass a hash of the API key, never
// the key itself, so that no credential reaches the limiter's store. The middleware
// must therefore run after authentication.
//
// Every limited response, allowed or not, carries the RateLimit-Policy and
// RateLimit fields. A request over budget is answered with an *apperr.Error of code
// RateLimited whose RetryAfterSeconds (at least 1) becomes the Retry-After header;
// the handler is not called.
//
// When the limiter fails (Redis down, say) the request is let through without
// RateLimit fields: an outage of the limiter must not become an outage of the API.
// The failure is logged to log at most once a minute, with how many were not
// logged. It panics if a limit in limits is invalid, which is a wiring mistake.
func Middleware(l Limiter, limits map[Class]Limit, classify func(echo.Context) Class, keyOf func(echo.Context) string, log *slog.Logger) echo.MiddlewareFunc {
	own := make(map[Class]Limit, len(limits))
	for class, limit := range limits {
		if err := limit.Validate(); err != nil {
			panic(fmt.Sprintf("ratelimit: limit for class %q: %v", class, err))
		}
		own[class] = limit
	}
	if log == nil {
		log = slog.Default()
	}
	failures := &throttledLog{log: log, every: failureLogEvery, now: time.Now}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			class := classify(c)
			if class == "" {
				return next(c)
			}
			limit, ok := own[class]
			if !ok {
				return next(c)
			}
			key := keyOf(c)
			if key == "" {
				return next(c)
			}
			ctx := c.Request().Context()
			res, err := l.Allow(ctx, key, class, limit)
			if err != nil {
				// A client that went away cancels the check; that is not an outage.
				if ctx.Err() == nil {
					failures.record(class, err)
				}
				return next(c)
			}
			h := c.Response().Header()
			h.Set(HeaderRateLimitPolicy, policyField(class, limit))
			h.Set(HeaderRateLimit, stateField(class, res))
			if !res.Allowed {
				return &apperr.Error{
					Code:              apperr.RateLimited,
					Message:           RateLimitedMessage,
					RetryAfterSeconds: max(1, ceilSeconds(res.RetryAfter)),
				}
			}
			return next(c)
		}
	}
}

// policyField is the RateLimit-Policy value for class under l: Rate per Period,
// or, when the burst is larger, the burst per the time a bucket takes to refill
// from empty (Burst/Rate periods). The average rate is the same, and the remaining
// count in the RateLimit field never exceeds the quota announced beside it. The
// window is in whole seconds, rounded up, since the field has no finer unit.
func policyField(class Class, l Limit) string {
	quota, window := l.Rate, l.Period
	if l.Burst > l.Rate {
		quota, window = l.Burst, time.Duration(float64(l.Period)*float64(l.Burst)/float64(l.Rate))
	}
	return fmt.Sprintf("%s;q=%d;w=%d", sfString(class), quota, max(1, ceilSeconds(window)))
}

// stateField is the RateLimit value for class after res.
func stateField(class Class, res Result) string {
	return fmt.Sprintf("%s;r=%d;t=%d", sfString(class), res.Remaining, ceilSeconds(res.ResetAfter))
}

// sfString quotes class as a structured-field string (RFC 9651), which escapes
// only the quote and the backslash; Go's %q escapes more and is not the same syntax.
func sfString(class Class) string {
	return `"` + sfEscaper.Replace(string(class)) + `"`
}

var sfEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`)

// ceilSeconds rounds d up to whole seconds: rounding down would tell a client to
// come back before it may.
func ceilSeconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int(math.Ceil(d.Seconds()))
}

// throttledLog logs limiter failures at most once per every.
type throttledLog struct {
	log   *slog.Logger
	every time.Duration
	now   func() time.Time

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

func (t *throttledLog) record(class Class, err error) {
	t.mu.Lock()
	now := t.now()
	if !t.last.IsZero() && now.Sub(t.last) < t.every {
		t.suppressed++
		t.mu.Unlock()
		return
	}
	t.last = now
	suppressed := t.suppressed
	t.suppressed = 0
	t.mu.Unlock()
	t.log.Error("rate limiter failed; letting requests through",
		"class", string(class), "error", err.Error(), "suppressed", suppressed)
}
