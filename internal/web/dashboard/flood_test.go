package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"partnerd/internal/partnerusers"
	"partnerd/internal/testsupport/testdb"
)

// A flood of 200 parallel sign-ins from one address, through the proxy in front
// of two instances, takes at most webkit.GatePerSource places at each
// instance's sign-in gate (its rules are tested in webkit): the rest are refused
// at once (503, nothing checked, the database not touched) or by the address's
// budget, so another user's sign-in from elsewhere during the flood finds a
// place (a sign-in that finds none within webkit.GateWait, 2 s, is refused, so
// an answer that signs in was admitted within it) and signs in. On PostgreSQL
// the connections open meanwhile, sampled while the flood runs, stay below the
// server's limit. Nothing is timed: the time the other user waited is logged.
func TestSignInFloodLeavesOthersIn(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			a, _, root := twoInstances(t, db, map[string]string{"TRUSTED_PROXIES": "127.0.0.1"})
			base := root + "/dashboard"
			partnerID := a.PartnerID(t, a.NewPartner(t))
			other := newUser(t, a, partnerID, partnerusers.Admin)

			// Each flooding client holds its sign-in page's token first, so the
			// 200 forms are sent at once.
			type signer struct {
				c    *http.Client
				csrf string
			}
			flood := make([]signer, 200)
			for i := range flood {
				c := fromAddress(t, "127.0.0.2")
				res, err := c.Get(base + "/signin")
				require.NoError(t, err)
				_, page, _ := readAnswer(t, res)
				flood[i] = signer{c: c, csrf: csrfOf(t, page)}
			}

			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			var peak, limit atomic.Int64
			sampled := make(chan struct{})
			if db.Name == "postgres" {
				var max int64
				require.NoError(t, a.Store.SQL().QueryRowContext(ctx, "SELECT setting::bigint FROM pg_settings WHERE name = 'max_connections'").Scan(&max))
				limit.Store(max)
				go func() {
					defer close(sampled)
					for ctx.Err() == nil {
						var n int64
						if err := a.Store.SQL().QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'").Scan(&n); err == nil && n > peak.Load() {
							peak.Store(n)
						}
					}
				}()
			} else {
				close(sampled)
			}

			var refused, checked atomic.Int32
			var wg sync.WaitGroup
			release := make(chan struct{})
			for i, s := range flood {
				form := url.Values{"csrf": {s.csrf}, "email": {fmt.Sprintf("nobody-%d@example.com", i)}, "password": {"a-guess-" + fmt.Sprint(i)}}.Encode()
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-release
					req, err := http.NewRequest(http.MethodPost, base+"/signin", strings.NewReader(form))
					if !assert.NoError(t, err) {
						return
					}
					req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
					res, err := s.c.Do(req)
					if !assert.NoError(t, err) {
						return
					}
					_ = res.Body.Close()
					switch res.StatusCode {
					case http.StatusUnauthorized:
						checked.Add(1)
					case http.StatusServiceUnavailable, http.StatusTooManyRequests:
						refused.Add(1)
					default:
						assert.Fail(t, "unexpected status", "%d", res.StatusCode)
					}
				}()
			}
			user := fromAddress(t, "127.0.0.3")
			res, err := user.Get(base + "/signin")
			require.NoError(t, err)
			_, page, _ := readAnswer(t, res)
			form := url.Values{"csrf": {csrfOf(t, page)}, "email": {other.Email}, "password": {testPassword}}.Encode()

			close(release)
			started := time.Now()
			req, err := http.NewRequest(http.MethodPost, base+"/signin", strings.NewReader(form))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			res, err = user.Do(req)
			require.NoError(t, err)
			_ = res.Body.Close()
			waited := time.Since(started)
			wg.Wait()
			stop()
			<-sampled

			t.Logf("the other user answered %d after %s; flood: %d checked, %d refused; peak connections %d of %d",
				res.StatusCode, waited.Round(time.Millisecond), checked.Load(), refused.Load(), peak.Load(), limit.Load())
			require.Equal(t, http.StatusSeeOther, res.StatusCode, "the other user signs in during the flood")
			require.Equal(t, int32(len(flood)), checked.Load()+refused.Load())
			require.Positive(t, refused.Load(), "the flood is refused beyond its share")
			require.LessOrEqual(t, checked.Load(), int32(20), "no more of the flood checked than its address's budget")
			if limit.Load() > 0 {
				require.Positive(t, peak.Load(), "connections were sampled")
				require.Less(t, peak.Load(), limit.Load(), "the database's connections stay below its limit")
			}
		})
	}
}
