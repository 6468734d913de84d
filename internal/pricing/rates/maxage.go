package rates

import (
	"context"
	"fmt"
	"time"
)

// WithMaxAge returns a Source that serves src's rates only while they are
// fresh: when now()-AsOf exceeds maxAge it returns an error wrapping
// ErrUnavailable that says the rate is stale and how old it is, instead of
// quoting against an outdated price (for example when an HTTPFeed has been
// failing to refresh). Errors from src are returned unchanged.
//
// A rate exactly maxAge old is still served. now nil means time.Now.
// maxAge must be positive; WithMaxAge panics otherwise, since a
// non-positive limit would reject every rate and is a configuration bug.
func WithMaxAge(src Source, maxAge time.Duration, now func() time.Time) Source {
	if src == nil {
		panic("rates: WithMaxAge: nil source")
	}
	if maxAge <= 0 {
		panic(fmt.Sprintf("rates: WithMaxAge: max age must be positive, got %s", maxAge))
	}
	if now == nil {
		now = time.Now
	}
	return &maxAgeSource{src: src, maxAge: maxAge, now: now}
}

type maxAgeSource struct {
	src    Source
	maxAge time.Duration
	now    func() time.Time
}

func (m *maxAgeSource) Rate(ctx context.Context, token string) (Rate, error) {
	r, err := m.src.Rate(ctx, token)
	if err != nil {
		return Rate{}, err
	}
	if age := m.now().Sub(r.AsOf); age > m.maxAge {
		return Rate{}, fmt.Errorf("%w: rate for token %q is stale: %s old (as of %s), max age %s",
			ErrUnavailable, normalizeToken(token), age,
			r.AsOf.UTC().Format(time.RFC3339), m.maxAge)
	}
	return r, nil
}
