package conformance

import (
	"net/http"
	"strconv"
	"time"
)

// patient resends a request answered 429 once its Retry-After has passed (at
// most a few times, and only for waits up to maxWait), so a shared sandbox's
// rate limit slows the check down instead of failing it. It wraps the checking
// transport: each 429 is checked against the contract too. Every change the
// check sends carries an Idempotency-Key, and a 429 changed nothing, so resending
// is safe.
type patient struct {
	next    http.RoundTripper
	tries   int
	maxWait time.Duration
}

func (p *patient) RoundTrip(req *http.Request) (*http.Response, error) {
	for try := 1; ; try++ {
		resp, err := p.next.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusTooManyRequests || try >= p.tries {
			return resp, err
		}
		secs, perr := strconv.Atoi(resp.Header.Get("Retry-After"))
		wait := time.Duration(secs) * time.Second
		if perr != nil || wait > p.maxWait {
			return resp, nil
		}
		_ = resp.Body.Close()
		select {
		case <-req.Context().Done():
			return nil, req.Context().Err()
		case <-time.After(wait):
		}
		req = req.Clone(req.Context())
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			req.Body = body
		}
	}
}
