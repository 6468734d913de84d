package dashboard_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"
	"github.com/stretchr/testify/require"

	"partnerd/internal/audit/actor"
	"partnerd/internal/httpapi"
	"partnerd/internal/kit/uow"
	"partnerd/internal/partnerusers"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/web/dashboard"
)

// looseJar keeps every cookie it is given and sends them all back, Secure ones
// included (the test server speaks plain HTTP; net/http/cookiejar would keep a
// Secure cookie off it).
type looseJar struct {
	mu      sync.Mutex
	cookies map[string]*http.Cookie
	secure  map[string]bool
}

func (j *looseJar) SetCookies(_ *url.URL, cs []*http.Cookie) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, c := range cs {
		j.secure[c.Name] = c.Secure
		if c.MaxAge < 0 {
			delete(j.cookies, c.Name)
			continue
		}
		j.cookies[c.Name] = &http.Cookie{Name: c.Name, Value: c.Value}
	}
}

func (j *looseJar) Cookies(*url.URL) []*http.Cookie {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []*http.Cookie
	for _, c := range j.cookies {
		out = append(out, c)
	}
	return out
}

// productionDashboard serves a dashboard configured as production's (second
// factor required, Secure cookies, no simulator) over env's services, and
// returns its base address.
func productionDashboard(t *testing.T, env *apitest.Env) string {
	t.Helper()
	d, err := dashboard.New(dashboard.Deps{Users: env.App.PartnerUsers(), Partners: env.App.Partners(), Audit: env.App.Audit(),
		API: env.App.Handler, PartnerBase: httpapi.BasePath, Networks: []string{"bep20"}, Production: true, State: env.Store})
	require.NoError(t, err)
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	return srv.URL + dashboard.BasePath
}

// In production a user without a second factor is sent to enrol before any
// page, and no form but the enrolment's is taken; once enrolled, the pages open;
// the session cookie is Secure; the sandbox simulator is absent.
func TestProductionRequiresSecondFactor(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			env := startSite(t, db, nil)
			key := env.NewPartner(t)
			partner := env.PartnerID(t, key)
			tx := create(t, env.Client(t, key), "PROD-1", "1000.00")
			u := newUser(t, env, partner, partnerusers.Admin)
			jar := &looseJar{cookies: map[string]*http.Cookie{}, secure: map[string]bool{}}
			a := newAgent(t, productionDashboard(t, env))
			a.c.Jar = jar

			status, _, loc := a.signIn(u.Email, testPassword)
			require.Equal(t, http.StatusSeeOther, status)
			require.Equal(t, "/dashboard", loc)
			require.True(t, jar.secure["dashboard_session"], "Secure in production")
			for _, path := range []string{"", "/transactions", "/team", "/account", "/transactions/" + tx.Id.String()} {
				status, _, loc = a.get(path)
				require.Equal(t, http.StatusSeeOther, status, path)
				require.Equal(t, "/dashboard/enroll", loc, path)
			}
			_, page, _ := a.get("/enroll")
			csrf := csrfOf(t, page)
			status, _, _ = a.post("/team", url.Values{"csrf": {csrf}, "email": {"eve@example.com"}, "role": {"admin"}})
			require.Equal(t, http.StatusForbidden, status, "no form before the second factor")
			team, err := env.App.PartnerUsers().List(t.Context(), partner)
			require.NoError(t, err)
			require.Len(t, team, 1)

			m := secretField.FindStringSubmatch(page)
			require.NotNil(t, m)
			code, err := totp.GenerateCode(strings.ReplaceAll(m[1], " ", ""), time.Now())
			require.NoError(t, err)
			status, page, _ = a.post("/enroll", url.Values{"csrf": {csrf}, "code": {code}})
			require.Equal(t, http.StatusOK, status)
			require.Equal(t, partnerusers.RecoveryCodes, strings.Count(page, "<li><code>"))
			codes := recoveryField.FindAllStringSubmatch(page, -1)
			require.Len(t, codes, partnerusers.RecoveryCodes)

			// A recovery code signs in once, in place of the app's code.
			for i, want := range []int{http.StatusSeeOther, http.StatusUnauthorized} {
				b := newAgent(t, a.base)
				b.c.Jar = &looseJar{cookies: map[string]*http.Cookie{}, secure: map[string]bool{}}
				status, _, loc = b.signIn(u.Email, testPassword)
				require.Equal(t, "/dashboard/signin/code", loc, i)
				_, codePage, _ := b.get("/signin/code")
				status, _, _ = b.post("/signin/code", url.Values{"csrf": {csrfOf(t, codePage)}, "code": {strings.ToUpper(codes[0][1])}})
				require.Equal(t, want, status, "use %d of one recovery code", i+1)
			}

			status, page, _ = a.get("/transactions/" + tx.Id.String())
			require.Equal(t, http.StatusOK, status)
			require.Contains(t, page, "PROD-1")
			require.NotContains(t, page, "simulate", "no simulator in production")
			status, _, _ = a.post("/transactions/"+tx.Id.String()+"/simulate", url.Values{"csrf": {csrf}, "event": {"deposit.detected"}})
			require.Equal(t, http.StatusNotFound, status)
		})
	}
}

// A person whose address is on two partners' teams with the same password
// chooses which dashboard to open; a choice not offered is refused.
func TestSeveralPartnersChoose(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			env := startSite(t, db, nil)
			pa, pb := env.PartnerID(t, env.NewPartner(t)), env.PartnerID(t, env.NewPartner(t))
			ua := newUser(t, env, pa, partnerusers.Finance)
			inv, err := env.App.PartnerUsers().Invite(t.Context(), uow.Plain[*partnerusers.NewInvitation, partnerusers.Tx](), pb, strings.ToUpper(ua.Email), partnerusers.Developer,
				actor.CLI)
			require.NoError(t, err)
			ub, err := env.App.PartnerUsers().Accept(t.Context(), inv.Token, testPassword)
			require.NoError(t, err)

			base := env.Root + dashboard.BasePath
			a := newAgent(t, base)
			status, page, _ := a.signIn(ua.Email, testPassword)
			require.Equal(t, http.StatusOK, status)
			require.Contains(t, page, "Choose a partner")
			require.Contains(t, page, ua.ID.String())
			require.Contains(t, page, ub.ID.String())
			status, _, loc := a.post("/signin/partner", url.Values{"csrf": {csrfOf(t, page)}, "user": {newUser(t, env, pa, partnerusers.Admin).ID.String()}})
			require.Equal(t, http.StatusSeeOther, status, "not a choice offered")
			require.Equal(t, "/dashboard/signin", loc)

			status, page, _ = a.signIn(ua.Email, testPassword)
			require.Equal(t, http.StatusOK, status)
			status, _, loc = a.post("/signin/partner", url.Values{"user": {ub.ID.String()}})
			require.Equal(t, http.StatusSeeOther, status, "without the pending sign-in's token")
			require.Equal(t, "/dashboard/signin", loc)
			status, page, _ = a.signIn(ua.Email, testPassword)
			require.Equal(t, http.StatusOK, status)
			status, _, loc = a.post("/signin/partner", url.Values{"csrf": {csrfOf(t, page)}, "user": {ub.ID.String()}})
			require.Equal(t, http.StatusSeeOther, status)
			require.Equal(t, "/dashboard", loc)
			status, page, _ = a.get("/account")
			require.Equal(t, http.StatusOK, status)
			require.Contains(t, page, "developer", "signed in as partner B's user")
		})
	}
}
