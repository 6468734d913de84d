package screening

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// APIOptions configure an API. Zero values take the defaults.
type APIOptions struct {
	// Timeout bounds each attempt, the answer's body included (default 5s): a
	// service that hangs is asked again rather than waited for.
	Timeout time.Duration
	// Attempts is how many times a request is sent in all, the first included
	// (default 3): timeouts, transport errors, 5xx and 429 answers are tried again.
	Attempts int
	// Backoff is the wait before the second attempt after a timeout, a transport
	// error or a 5xx, doubled for each later one (default 250ms).
	Backoff time.Duration
	// Requests per Per is the client's own rate limit, kept below the service's so
	// the service never has to refuse (default 5,000 per 5 minutes, Chainalysis'
	// documented limit for its public sanctions API).
	Requests int
	Per      time.Duration
	// MaxRetryAfter is the longest 429 Retry-After waited (default 30s); a longer
	// one fails the screening at once (the money waits, a later screening asks again).
	MaxRetryAfter time.Duration
	// HTTP is the transport (default: a client of its own).
	HTTP *http.Client
}

// maxAnswer caps the body read of an answer: an identification list is small.
const maxAnswer = 1 << 20

// API screens addresses with an HTTP screening service shaped like Chainalysis'
// public sanctions API: GET {base}/{address} with the key in X-API-Key, answering
// {"identifications": [...]}: an empty list is clear, any identification a hit.
// It covers every network (the service knows addresses, not networks). The key
// is never put in an error or a finding: findings name the service's host only.
type API struct {
	base  *url.URL
	host  string
	key   string
	opts  APIOptions
	http  *http.Client
	limit *rate.Limiter

	mu sync.Mutex
	// until: the service asked (429 Retry-After) for no request before it.
	until time.Time
}

// NewAPI returns the service at base (e.g. https://public.chainalysis.com/api/v1/address)
// asked with key. Errors name base's host only.
func NewAPI(base, key string, opts APIOptions) (*API, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("the screening API's URL is not an http(s) URL")
	}
	if key == "" {
		return nil, fmt.Errorf("no API key for the screening API at %s", u.Host)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.Attempts <= 0 {
		opts.Attempts = 3
	}
	if opts.Backoff <= 0 {
		opts.Backoff = 250 * time.Millisecond
	}
	if opts.Requests <= 0 || opts.Per <= 0 {
		opts.Requests, opts.Per = 5000, 5*time.Minute
	}
	if opts.MaxRetryAfter <= 0 {
		opts.MaxRetryAfter = 30 * time.Second
	}
	h := opts.HTTP
	if h == nil {
		h = &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 8, IdleConnTimeout: 90 * time.Second}}
	}
	return &API{base: u, host: u.Host, key: key, opts: opts, http: h, limit: limiter(opts.Requests, opts.Per)}, nil
}

// limiter allows at most requests in any window of per: a burst of a hundredth
// of them, and a rate that refills the rest over the window (burst + rate × per
// = requests), so a burst at a window's start cannot double the window's count.
func limiter(requests int, per time.Duration) *rate.Limiter {
	burst := max(1, requests/100)
	refill := max(1, requests-burst)
	return rate.NewLimiter(rate.Limit(float64(refill)/per.Seconds()), burst)
}

// Kind is "api".
func (a *API) Kind() string { return "api" }

// Covers is true for every network: the service is asked about any address.
func (a *API) Covers(string) bool { return true }

// Source names the service in findings: its host only (never the key or a path
// that could carry one).
func (a *API) Source() string { return a.host }

// identification is one entry of the service's answer.
type identification struct {
	Category    string `json:"category"`
	Name        string `json:"name"`
	Description string `json:"description"`
	URL         string `json:"url"`
}

// answer is the service's answer; Identifications is nil when the answer has none
// (then it is no answer at all, not a clear).
type answer struct {
	Identifications *[]identification `json:"identifications"`
}

// Screen asks the service about address. A hit carries the first identification
// (category "sanctions" when it names none: the service lists sanctions); Version
// is when the service answered (RFC 3339). A refusal, a malformed answer,
// or no answer within the attempts is an error, never a clear.
func (a *API) Screen(ctx context.Context, network, address string) (Finding, error) {
	f := Finding{Screener: a.Kind(), Source: a.Source()}
	if strings.TrimSpace(address) == "" {
		return f, errors.New("no address to screen")
	}
	u := *a.base
	u.Path = strings.TrimSuffix(a.base.Path, "/") + "/" + address
	u.RawPath = strings.TrimSuffix(a.base.EscapedPath(), "/") + "/" + url.PathEscape(address)
	target := u.String()

	var last error
	backoff := a.opts.Backoff
	for attempt := 1; attempt <= a.opts.Attempts; attempt++ {
		if err := a.wait(ctx); err != nil {
			return f, err
		}
		ans, at, limited, err := a.ask(ctx, target)
		if err == nil {
			return a.finding(f, ans, at), nil
		}
		if ctx.Err() != nil {
			return f, fmt.Errorf("%s: %w", a.host, ctx.Err())
		}
		var fatal *fatalError
		if errors.As(err, &fatal) {
			return f, err
		}
		last = err
		if attempt == a.opts.Attempts {
			break
		}
		if limited {
			// The wait the service asked for is recorded for every request: the
			// next attempt's a.wait honours it.
			continue
		}
		if err := sleep(ctx, backoff); err != nil {
			return f, fmt.Errorf("%s: %w (after %v)", a.host, err, last)
		}
		backoff *= 2
	}
	return f, fmt.Errorf("%w (%d attempts)", last, a.opts.Attempts)
}

// fatalError is an answer that asking again cannot change (a refused key, a bad
// request, a Retry-After past the cap).
type fatalError struct{ msg string }

func (e *fatalError) Error() string { return e.msg }

// wait holds a request until the service's Retry-After is over and the client's
// own rate limit allows it; an error when that is past ctx's deadline.
func (a *API) wait(ctx context.Context) error {
	a.mu.Lock()
	until := a.until
	a.mu.Unlock()
	if d := time.Until(until); d > 0 {
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
			return fmt.Errorf("%s asked to wait %s, past the screening's deadline", a.host, d.Round(time.Millisecond))
		}
		if err := sleep(ctx, d); err != nil {
			return fmt.Errorf("%s: %w", a.host, err)
		}
	}
	if err := a.limit.Wait(ctx); err != nil {
		return fmt.Errorf("%s: the client's own rate limit (%d per %s): %w", a.host, a.opts.Requests, a.opts.Per, err)
	}
	return nil
}

// ask sends one request. limited reports a 429, whose wait (Retry-After, or the
// backoff when it names none) is recorded in a.until.
func (a *API) ask(ctx context.Context, target string) (ans answer, at time.Time, limited bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, a.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return ans, at, false, &fatalError{msg: a.host + ": the request cannot be built"}
	}
	req.Header.Set("X-API-Key", a.key)
	req.Header.Set("Accept", "application/json")
	res, err := a.http.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return ans, at, false, fmt.Errorf("%s: no answer within %s", a.host, a.opts.Timeout)
		}
		return ans, at, false, fmt.Errorf("%s: %s", a.host, a.redact(transportText(err)))
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxAnswer+1))
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return ans, at, false, fmt.Errorf("%s: no complete answer within %s", a.host, a.opts.Timeout)
		}
		return ans, at, false, fmt.Errorf("%s: reading the answer: %s", a.host, a.redact(transportText(err)))
	}
	at = time.Now()
	switch s := res.StatusCode; {
	case s == http.StatusOK:
		if len(body) > maxAnswer {
			return ans, at, false, &fatalError{msg: fmt.Sprintf("%s: the answer is larger than %d bytes", a.host, maxAnswer)}
		}
		if err := json.Unmarshal(body, &ans); err != nil || ans.Identifications == nil {
			return ans, at, false, &fatalError{msg: fmt.Sprintf("%s: not a screening answer: %s", a.host, a.snippet(body))}
		}
		return ans, at, false, nil
	case s == http.StatusTooManyRequests:
		d, named := retryAfter(res.Header.Get("Retry-After"), at)
		if d > a.opts.MaxRetryAfter {
			return ans, at, false, &fatalError{msg: fmt.Sprintf("%s: rate-limited (HTTP 429), asked to wait %s, more than %s", a.host, d.Round(time.Second), a.opts.MaxRetryAfter)}
		}
		if !named {
			d = a.opts.Backoff
		}
		a.mu.Lock()
		if u := at.Add(d); u.After(a.until) {
			a.until = u
		}
		a.mu.Unlock()
		return ans, at, true, fmt.Errorf("%s: rate-limited (HTTP 429)", a.host)
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		return ans, at, false, &fatalError{msg: fmt.Sprintf("%s refused the API key (HTTP %d)", a.host, s)}
	case s >= 500:
		return ans, at, false, fmt.Errorf("%s: HTTP %d: %s", a.host, s, a.snippet(body))
	default:
		return ans, at, false, &fatalError{msg: fmt.Sprintf("%s: HTTP %d: %s", a.host, s, a.snippet(body))}
	}
}

// finding is the finding of an answer received at at.
func (a *API) finding(f Finding, ans answer, at time.Time) Finding {
	f.Version = at.UTC().Format(time.RFC3339)
	if ids := *ans.Identifications; len(ids) > 0 {
		f.Hit = true
		id := ids[0]
		f.Category, f.Name, f.Description, f.URL = id.Category, id.Name, id.Description, id.URL
		if f.Category == "" {
			f.Category = "sanctions"
		}
	}
	return f
}

// retryAfter reads a Retry-After header: seconds or an HTTP date; named is false
// when there is none (or none readable).
func retryAfter(v string, now time.Time) (d time.Duration, named bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		if n > int64(24*time.Hour/time.Second) {
			return 24 * time.Hour, true
		}
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now)), true
	}
	return 0, false
}

// transportText is a transport error without the request's method and URL (the
// caller names the host).
func transportText(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// snippet is the start of a body for an error text, without the key.
func (a *API) snippet(body []byte) string {
	s := a.redact(strings.Join(strings.Fields(string(body)), " "))
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "…"
	}
	if s == "" {
		s = "(empty)"
	}
	return s
}

// redact removes the key from a text: services echo requests in their errors.
func (a *API) redact(s string) string {
	return strings.ReplaceAll(s, a.key, "…")
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
