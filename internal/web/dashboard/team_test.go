package dashboard_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"partnerd/internal/partnerusers"
	"partnerd/internal/testsupport/testdb"
)

// The team page's forms: an invitation of a bad address or role is refused on the
// page; a role change applies at once to the user's session (their navigation)
// and is in the activity; the last admin cannot demote themselves; a form
// without the session's CSRF token changes nothing.
func TestTeamForms(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			env := startSite(t, db, nil)
			partner := env.PartnerID(t, env.NewPartner(t))
			ada := newUser(t, env, partner, partnerusers.Admin)
			dev := newUser(t, env, partner, partnerusers.Developer)
			base := env.Root + "/dashboard"
			admin, other := newAgent(t, base), newAgent(t, base)
			for who, a := range map[string]*agent{ada.Email: admin, dev.Email: other} {
				status, _, _ := a.signIn(who, testPassword)
				require.Equal(t, http.StatusSeeOther, status)
			}
			_, page, _ := admin.get("/team")
			csrf := csrfOf(t, page)

			status, page, _ := admin.post("/team", url.Values{"csrf": {csrf}, "email": {"not an address"}, "role": {"finance"}})
			require.Equal(t, http.StatusBadRequest, status)
			require.Contains(t, html.UnescapeString(page), "The email is not an address.")
			status, page, _ = admin.post("/team", url.Values{"csrf": {csrf}, "email": {"new@example.com"}, "role": {"root"}})
			require.Equal(t, http.StatusBadRequest, status)
			require.Contains(t, page, "The role is not one of")
			status, _, _ = admin.post("/team", url.Values{"email": {"new@example.com"}, "role": {"finance"}})
			require.Equal(t, http.StatusForbidden, status, "no CSRF token")
			list, err := env.App.PartnerUsers().List(t.Context(), partner)
			require.NoError(t, err)
			require.Len(t, list, 2, "nothing invited")

			_, page, _ = other.get("/transactions")
			require.Contains(t, page, `id="nav-webhooks"`, "a developer's navigation")
			status, _, loc := admin.post("/team/"+dev.ID.String()+"/role", url.Values{"csrf": {csrf}, "role": {"finance"}})
			require.Equal(t, http.StatusSeeOther, status, "post/redirect/get")
			require.Equal(t, "/dashboard/team?changed="+dev.ID.String(), loc)
			_, page, _ = admin.get("/team?changed=" + dev.ID.String())
			require.Contains(t, page, "<bdi>"+dev.Email+"</bdi> is now <bdi>finance</bdi>.", "the address in its own isolate")
			_, page, _ = other.get("/transactions")
			require.NotContains(t, page, `id="nav-webhooks"`, "the new role applies at once")
			require.Contains(t, page, `id="nav-payouts"`)

			status, page, _ = admin.post("/team/"+ada.ID.String()+"/role", url.Values{"csrf": {csrf}, "role": {"developer"}})
			require.Equal(t, http.StatusConflict, status)
			require.Contains(t, page, "last active admin")

			_, page, _ = admin.get("/activity")
			require.Contains(t, page, "partner user role changed")
			require.Contains(t, page, dev.Email)
		})
	}
}

// Two admins demoting and disabling each other in many parallel requests leave
// the partner one active admin: each change counts the admins under the team's
// lock, so the later one sees the earlier and is refused.
func TestConcurrentDemotionsKeepOneAdmin(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			env := startSite(t, db, nil)
			partner := env.PartnerID(t, env.NewPartner(t))
			admins := []*partnerusers.User{newUser(t, env, partner, partnerusers.Admin), newUser(t, env, partner, partnerusers.Admin)}
			base := env.Root + "/dashboard"
			agents, tokens := make([]*agent, 2), make([]string, 2)
			for i, u := range admins {
				agents[i] = newAgent(t, base)
				status, _, _ := agents[i].signIn(u.Email, testPassword)
				require.Equal(t, http.StatusSeeOther, status)
				_, page, _ := agents[i].get("/team")
				tokens[i] = csrfOf(t, page)
			}
			const n = 16
			var wg sync.WaitGroup
			statuses := make([]int, n)
			start := make(chan struct{})
			for i := range n {
				wg.Go(func() {
					<-start
					me, them := i%2, 1-i%2
					path, form := "/team/"+admins[them].ID.String()+"/role", url.Values{"csrf": {tokens[me]}, "role": {"developer"}}
					if i%4 >= 2 {
						path, form = "/team/"+admins[them].ID.String()+"/disable", url.Values{"csrf": {tokens[me]}}
					}
					req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(form.Encode()))
					if err != nil {
						return
					}
					req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
					if res, err := agents[me].c.Do(req); err == nil {
						statuses[i] = res.StatusCode
						_ = res.Body.Close()
					}
				})
			}
			close(start)
			wg.Wait()
			list, err := env.App.PartnerUsers().List(t.Context(), partner)
			require.NoError(t, err)
			active, winner := 0, -1
			for _, u := range list {
				if u.Role == partnerusers.Admin && u.Status == partnerusers.Active {
					active++
					for i, a := range admins {
						if a.ID == u.ID {
							winner = i
						}
					}
				}
			}
			require.Equal(t, 1, active, "one active admin is left (answers %v)", statuses)
			require.NotEqual(t, -1, winner, "the admin left is one of the two")
			// The first change to commit wins; every change the other admin asked for is
			// refused (409 when it would leave no admin, 403 or 401 once they are no
			// longer an admin or no longer active).
			carried := 0
			for i, st := range statuses {
				if i%2 == winner {
					// A change the winner asked for after the first one may find nothing
					// left to change (409) or carry it out (a redirect).
					require.Contains(t, []int{http.StatusSeeOther, http.StatusConflict}, st, "the winner's changes (%v)", statuses)
					if st == http.StatusSeeOther {
						carried++
					}
				} else {
					require.Contains(t, []int{http.StatusConflict, http.StatusForbidden, http.StatusUnauthorized}, st, "the other admin's changes are refused (%v)", statuses)
				}
			}
			require.Positive(t, carried, "the winner's first change was carried out (%v)", statuses)
		})
	}
}
