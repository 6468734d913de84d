package rates

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shopspring/decimal"
)

// defaultFeedTimeout bounds a single feed request when the caller does not
// supply its own http.Client, so a hung feed cannot stall Run forever.
const defaultFeedTimeout = 10 * time.Second

// maxFeedBody caps how much of a feed response is read. Rate documents are
// small; the cap protects the service from a misbehaving endpoint.
const maxFeedBody = 1 << 20

// HTTPFeedConfig configures an HTTPFeed.
type HTTPFeedConfig struct {
	// URL is the http(s) address of the JSON rate document. It is fetched
	// with GET. Its query string and credentials are kept out of errors and
	// logs, since feeds often carry API keys there.
	URL string
	// Fields maps each served token to the dot-separated path of its rate in
	// the JSON document, for example "usdt" -> "data.usdt_ngn". Only JSON
	// objects are traversed. The value found there may be a JSON string
	// ("1550.25") or a JSON number (1550.25); either is parsed exactly.
	// Tokens are trimmed and lower-cased. See ParseFields.
	Fields map[string]string
	// Interval is the time between refreshes in Run. It must be positive.
	Interval time.Duration
	// Client performs the requests. nil means a client with a 10s timeout.
	Client *http.Client
	// Now is the clock used to stamp fetched rates. nil means time.Now.
	Now func() time.Time
	// Logger receives refresh failures from Run. nil means slog.Default().
	Logger *slog.Logger
}

// HTTPFeed is a Source that polls a JSON document over HTTP and serves the
// last good value for each configured token.
//
// Rate never performs I/O: it answers from memory, so quoting latency does
// not depend on the feed. Refresh (or Run, which calls it periodically)
// updates the values. A failed refresh never discards a previous good value;
// instead the value ages, and wrapping the feed with WithMaxAge turns a feed
// that has been failing for too long into ErrUnavailable.
//
// An HTTPFeed is safe for concurrent use.
type HTTPFeed struct {
	url      string
	safeURL  string // url without query, fragment or credentials, for errors and logs
	fields   map[string]string
	tokens   []string // sorted keys of fields, for deterministic error messages
	interval time.Duration
	client   *http.Client
	now      func() time.Time
	logger   *slog.Logger

	mu      sync.RWMutex
	rates   map[string]Rate
	lastErr error
}

var _ Source = (*HTTPFeed)(nil)

// NewHTTPFeed validates cfg and returns a feed that has not fetched anything
// yet: until the first successful Refresh, Rate reports ErrUnavailable.
// Errors name the offending setting so misconfiguration fails at startup.
func NewHTTPFeed(cfg HTTPFeedConfig) (*HTTPFeed, error) {
	if strings.TrimSpace(cfg.URL) == "" {
		return nil, errors.New("rates: http feed: URL is empty")
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, errors.New("rates: http feed: URL is not valid")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("rates: http feed: URL must be an absolute http or https URL, got scheme %q host %q", u.Scheme, u.Host)
	}
	if len(cfg.Fields) == 0 {
		return nil, errors.New("rates: http feed: no fields configured")
	}
	fields := make(map[string]string, len(cfg.Fields))
	for tok, path := range cfg.Fields {
		t := normalizeToken(tok)
		if t == "" {
			return nil, errors.New("rates: http feed: fields contain an empty token")
		}
		if _, dup := fields[t]; dup {
			return nil, fmt.Errorf("rates: http feed: token %q is configured more than once", t)
		}
		p := strings.TrimSpace(path)
		if err := validatePath(p); err != nil {
			return nil, fmt.Errorf("rates: http feed: token %q: %v", t, err)
		}
		fields[t] = p
	}
	if cfg.Interval <= 0 {
		return nil, fmt.Errorf("rates: http feed: interval must be positive, got %s", cfg.Interval)
	}

	client := cfg.Client
	if client == nil {
		client = &http.Client{Timeout: defaultFeedTimeout}
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	safe := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return &HTTPFeed{
		url:      cfg.URL,
		safeURL:  safe.String(),
		fields:   fields,
		tokens:   slices.Sorted(maps.Keys(fields)),
		interval: cfg.Interval,
		client:   client,
		now:      now,
		logger:   logger,
		rates:    make(map[string]Rate, len(fields)),
	}, nil
}

// ParseFields parses the token-to-path mapping for HTTPFeedConfig.Fields
// from configuration, for example "usdt=data.usdt_ngn,usdc=data.usdc_ngn".
//
// Tokens are trimmed and lower-cased; paths are trimmed and must consist of
// non-empty dot-separated segments. An empty mapping, an empty entry, a
// missing token or path, a malformed path, and a token listed twice are all
// errors.
func ParseFields(s string) (map[string]string, error) {
	pairs, err := parsePairs(s, "feed fields")
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(pairs))
	for _, p := range pairs {
		if err := validatePath(p.value); err != nil {
			return nil, fmt.Errorf("rates: feed fields: token %q: %v", p.key, err)
		}
		out[p.key] = p.value
	}
	return out, nil
}

func validatePath(p string) error {
	if p == "" {
		return errors.New("path is empty")
	}
	for _, seg := range strings.Split(p, ".") {
		if seg == "" {
			return fmt.Errorf("path %q has an empty segment", p)
		}
	}
	return nil
}

// Rate returns the last good value fetched for token, with AsOf set to the
// time of the fetch that produced it. It wraps ErrUnavailable if token is
// not configured or no refresh has yet produced a value for it. It does no
// I/O and ignores ctx.
func (f *HTTPFeed) Rate(_ context.Context, token string) (Rate, error) {
	tok := normalizeToken(token)
	if _, ok := f.fields[tok]; !ok {
		return Rate{}, fmt.Errorf("%w: token %q is not configured for the http feed", ErrUnavailable, tok)
	}
	f.mu.RLock()
	r, ok := f.rates[tok]
	lastErr := f.lastErr
	f.mu.RUnlock()
	if !ok {
		if lastErr != nil {
			return Rate{}, fmt.Errorf("%w: no rate for token %q fetched yet (last refresh error: %v)", ErrUnavailable, tok, lastErr)
		}
		return Rate{}, fmt.Errorf("%w: no rate for token %q fetched yet", ErrUnavailable, tok)
	}
	return r, nil
}

// Refresh fetches the document once and stores the rate for every
// configured token whose field is present and holds a positive number.
//
// A non-2xx status, an unreadable or malformed body, or a transport error
// fails the whole refresh and changes nothing. Otherwise tokens are updated
// independently: a missing, non-numeric or non-positive field is reported in
// the returned error and that token keeps its previous good value, while the
// other tokens are updated. Updated rates get AsOf = Now() taken just before
// the request was sent, so their age is never understated.
func (f *HTTPFeed) Refresh(ctx context.Context) error {
	err := f.refresh(ctx)
	f.mu.Lock()
	f.lastErr = err
	f.mu.Unlock()
	return err
}

func (f *HTTPFeed) refresh(ctx context.Context) error {
	fetchedAt := f.now()
	doc, err := f.fetch(ctx)
	if err != nil {
		return err
	}

	got := make(map[string]decimal.Decimal, len(f.fields))
	var errs []error
	for _, tok := range f.tokens {
		path := f.fields[tok]
		v, err := extractRate(doc, path)
		if err != nil {
			errs = append(errs, fmt.Errorf("token %q (path %q): %v", tok, path, err))
			continue
		}
		got[tok] = v
	}

	f.mu.Lock()
	for tok, v := range got {
		// A slow refresh racing a newer one must not overwrite the newer value.
		if cur, ok := f.rates[tok]; ok && cur.AsOf.After(fetchedAt) {
			continue
		}
		f.rates[tok] = Rate{Value: v, AsOf: fetchedAt}
	}
	f.mu.Unlock()

	if len(errs) > 0 {
		return fmt.Errorf("rates: http feed %s: %w", f.safeURL, errors.Join(errs...))
	}
	return nil
}

// fetch GETs the document and decodes it with numbers kept as json.Number.
func (f *HTTPFeed) fetch(ctx context.Context) (any, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url, nil)
	if err != nil {
		return nil, fmt.Errorf("rates: http feed %s: building request: %w", f.safeURL, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		// *url.Error repeats the full URL, query string included; keep only
		// the underlying cause so API keys do not end up in logs.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("rates: http feed %s: request failed: %w", f.safeURL, err)
	}
	defer func() {
		// Drain a little so the connection can be reused, then close.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		_ = resp.Body.Close()
	}()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("rates: http feed %s: unexpected status %s", f.safeURL, resp.Status)
	}

	dec := json.NewDecoder(io.LimitReader(resp.Body, maxFeedBody))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("rates: http feed %s: malformed JSON (or larger than %d bytes): %w", f.safeURL, maxFeedBody, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("rates: http feed %s: malformed JSON: unexpected data after the document", f.safeURL)
	}
	return doc, nil
}

// extractRate walks the dot path through nested objects and parses the value
// found there, which may be a JSON number or a JSON string.
func extractRate(doc any, path string) (decimal.Decimal, error) {
	cur := doc
	walked := ""
	for _, seg := range strings.Split(path, ".") {
		obj, ok := cur.(map[string]any)
		if !ok {
			if walked == "" {
				return decimal.Decimal{}, errors.New("document is not a JSON object")
			}
			return decimal.Decimal{}, fmt.Errorf("%q is not a JSON object", walked)
		}
		if walked == "" {
			walked = seg
		} else {
			walked += "." + seg
		}
		cur, ok = obj[seg]
		if !ok {
			return decimal.Decimal{}, fmt.Errorf("%q is missing", walked)
		}
	}

	var s string
	switch v := cur.(type) {
	case json.Number:
		s = v.String()
	case string:
		s = v
	case nil:
		return decimal.Decimal{}, errors.New("value is null, want a number or string")
	case bool:
		return decimal.Decimal{}, errors.New("value is a boolean, want a number or string")
	case map[string]any:
		return decimal.Decimal{}, errors.New("value is an object, want a number or string")
	default:
		return decimal.Decimal{}, errors.New("value is an array, want a number or string")
	}
	return parseRate(s)
}

// Run refreshes immediately and then every Interval until ctx is done, so a
// service can start it in its own goroutine at startup. Failures are logged
// and do not stop the loop; the previous good values stay in place. Run
// returns once ctx is done (after any refresh in progress, which is itself
// cancelled by ctx).
func (f *HTTPFeed) Run(ctx context.Context) {
	ticker := time.NewTicker(f.interval)
	defer ticker.Stop()

	failing := false
	for {
		err := f.Refresh(ctx)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil:
			f.logger.WarnContext(ctx, "rates: http feed refresh failed",
				slog.String("url", f.safeURL), slog.Any("error", err))
			failing = true
		case failing:
			f.logger.InfoContext(ctx, "rates: http feed refresh recovered", slog.String("url", f.safeURL))
			failing = false
		}

		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}
