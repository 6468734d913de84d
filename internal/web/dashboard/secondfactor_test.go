package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"partnerd/internal/httpapi"
	"partnerd/internal/partnerusers"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/web/dashboard"
	"partnerd/internal/web/webkit"
)

// countingState is the dashboard's state store, counting the attempts it grants
// of keys starting with prefix: every code check is preceded by its grant, so
// the grants bound the checks whatever the timing.
type countingState struct {
	webkit.State
	prefix  string
	granted atomic.Int32
}

func (s *countingState) ReserveAttempt(ctx context.Context, key string, decide func(w webkit.AttemptWindow) (webkit.AttemptWindow, bool)) (webkit.AttemptWindow, bool, error) {
	w, ok, err := s.State.ReserveAttempt(ctx, key, decide)
	if ok && err == nil && strings.HasPrefix(key, s.prefix) {
		s.granted.Add(1)
	}
	return w, ok, err
}

// userCodeLimit is the dashboard's limit of failed second-factor codes per user
// (accountLimit in session.go).
const userCodeLimit = 5

// 200 parallel wrong TOTP codes against one user, after its right password:
// at most the limit's worth are checked (counted where the limiter grants them,
// and in the attempts table, not by timing); every other one is refused before
// any check (by the limit, or at the sign-in gate when too many come at once).
// Wrong codes sent one by one afterwards reach the limit exactly, and then even
// the right code is refused until the window ends.
func TestParallelCodesNeverPassTheLimit(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			env := startSite(t, db, nil)
			partnerID := env.PartnerID(t, env.NewPartner(t))
			u := newUser(t, env, partnerID, partnerusers.Admin)
			enrolment, err := env.App.PartnerUsers().EnrollTOTP(ctx, partnerID, u.ID)
			require.NoError(t, err)
			code, err := totp.GenerateCode(enrolment.Secret, time.Now())
			require.NoError(t, err)
			_, err = env.App.PartnerUsers().ConfirmTOTP(ctx, partnerID, u.ID, code)
			require.NoError(t, err)

			userKey := "dashboard:user:" + u.ID.String()
			state := &countingState{State: env.Store, prefix: userKey}
			d, err := dashboard.New(dashboard.Deps{Users: env.App.PartnerUsers(), Partners: env.App.Partners(), Audit: env.App.Audit(),
				API: env.App.Handler, PartnerBase: httpapi.BasePath, Networks: []string{"bep20"}, State: state,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			require.NoError(t, err)
			srv := httptest.NewServer(d.Handler())
			t.Cleanup(srv.Close)

			a := newAgent(t, srv.URL+dashboard.BasePath)
			status, _, loc := a.signIn(u.Email, testPassword)
			require.Equal(t, http.StatusSeeOther, status)
			require.Equal(t, "/dashboard/signin/code", loc)
			_, page, _ := a.get("/signin/code")
			csrf := csrfOf(t, page)

			// 200 codes none of which is right within several steps of now.
			valid := map[string]bool{}
			for d := -4; d <= 4; d++ {
				c, err := totp.GenerateCode(enrolment.Secret, time.Now().Add(time.Duration(d)*30*time.Second))
				require.NoError(t, err)
				valid[c] = true
			}
			var wrong []string
			for i := 0; len(wrong) < 200; i++ {
				if c := fmt.Sprintf("%06d", 100000+i*4099%900000); !valid[c] {
					wrong = append(wrong, c)
				}
			}

			var checked, refused atomic.Int32
			var wg sync.WaitGroup
			for _, c := range wrong {
				wg.Add(1)
				go func() {
					defer wg.Done()
					switch status, _, _ := a.post("/signin/code", url.Values{"csrf": {csrf}, "code": {c}}); status {
					case http.StatusUnauthorized:
						checked.Add(1)
					case http.StatusTooManyRequests, http.StatusServiceUnavailable:
						refused.Add(1)
					default:
						assert.Fail(t, "unexpected status", "%d", status)
					}
				}()
			}
			wg.Wait()
			require.LessOrEqual(t, state.granted.Load(), int32(userCodeLimit), "codes that reached the check")
			require.Equal(t, int32(200), checked.Load()+refused.Load())
			// One by one, wrong codes are checked until the limit is reached.
			for i := 0; ; i++ {
				require.Less(t, i, userCodeLimit+1, "the limit stops sequential codes")
				status, _, _ := a.post("/signin/code", url.Values{"csrf": {csrf}, "code": {wrong[i]}})
				if status == http.StatusTooManyRequests {
					break
				}
				require.Equal(t, http.StatusUnauthorized, status)
				checked.Add(1)
			}
			// Exactly the limit: never more reach the check, and the limit is
			// what stopped the others (not some other failure).
			require.Equal(t, int32(userCodeLimit), state.granted.Load(), "codes that reached the check")
			require.Equal(t, state.granted.Load(), checked.Load(), "every code granted was checked and refused")
			var counted int
			require.NoError(t, env.Store.SQL().QueryRowContext(ctx, "SELECT attempts FROM web_attempts WHERE attempt_key = $1", userKey).Scan(&counted))
			require.Equal(t, int(checked.Load()), counted, "the attempts table holds the checks")

			right, err := totp.GenerateCode(enrolment.Secret, time.Now().Add(30*time.Second))
			require.NoError(t, err)
			status, _, _ = a.post("/signin/code", url.Values{"csrf": {csrf}, "code": {right}})
			require.Equal(t, http.StatusTooManyRequests, status, "the limit holds for the right code too")
			require.Equal(t, int32(userCodeLimit), state.granted.Load())
		})
	}
}

// Someone who has a user's password and floods its second factor exhausts the
// user's budget of codes for every browser but the user's own: the browser that
// signed in before (its device cookie) passes its password and code all the
// same.
func TestCodeFloodLeavesTheOwnersBrowserIn(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			env := startSite(t, db, nil)
			base := env.Root + dashboard.BasePath
			partnerID := env.PartnerID(t, env.NewPartner(t))
			u := newUser(t, env, partnerID, partnerusers.Admin)
			enrolment, err := env.App.PartnerUsers().EnrollTOTP(ctx, partnerID, u.ID)
			require.NoError(t, err)
			code := func(step int) string {
				c, err := totp.GenerateCode(enrolment.Secret, time.Now().Add(time.Duration(step)*30*time.Second))
				require.NoError(t, err)
				return c
			}
			_, err = env.App.PartnerUsers().ConfirmTOTP(ctx, partnerID, u.ID, code(-1))
			require.NoError(t, err)
			signInWith := func(a *agent, c string) int {
				status, _, loc := a.signIn(u.Email, testPassword)
				require.Equal(t, http.StatusSeeOther, status)
				require.Equal(t, "/dashboard/signin/code", loc)
				_, page, _ := a.get("/signin/code")
				status, _, _ = a.post("/signin/code", url.Values{"csrf": {csrfOf(t, page)}, "code": {c}})
				return status
			}

			own := newAgent(t, base)
			require.Equal(t, http.StatusSeeOther, signInWith(own, code(0)))
			signedOut(t, own.c, base)

			thief := newAgent(t, base)
			status, _, _ := thief.signIn(u.Email, testPassword)
			require.Equal(t, http.StatusSeeOther, status)
			_, page, _ := thief.get("/signin/code")
			csrf := csrfOf(t, page)
			for i := range userCodeLimit {
				status, _, _ := thief.post("/signin/code", url.Values{"csrf": {csrf}, "code": {fmt.Sprintf("%06d", (i*7919+13)%1000000)}})
				require.Equal(t, http.StatusUnauthorized, status)
			}
			status, _, _ = thief.post("/signin/code", url.Values{"csrf": {csrf}, "code": {code(1)}})
			require.Equal(t, http.StatusTooManyRequests, status, "the user's budget is spent for strangers")

			require.Equal(t, http.StatusSeeOther, signInWith(own, code(1)), "the owner's browser has its own budget")
		})
	}
}
