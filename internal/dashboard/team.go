package dashboard

import (
	"net/http"
)

func (d *Dashboard) teamRoutes(mux *http.ServeMux) {
	b := BasePath
	mux.HandleFunc("GET "+b+"/team", d.allow(d.team, teamRoles...))
}

// team lists the partner's users.
func (d *Dashboard) team(w http.ResponseWriter, r *http.Request, ss *session) {
	d.showTeam(w, r, ss, http.StatusOK, nil)
}

// showTeam renders the team page with extra data (an outcome, a link shown once).
func (d *Dashboard) showTeam(w http.ResponseWriter, r *http.Request, ss *session, status int, extra map[string]any) {
	users, err := d.d.Users.List(r.Context(), ss.Data.PartnerID)
	if err != nil {
		d.unavailable(w, err)
		return
	}
	data := map[string]any{"Title": "Team", "Section": "team", "Users": users, "Roles": roleNames(), "Me": ss.Data.UserID}
	for k, v := range extra {
		data[k] = v
	}
	d.render(w, status, "team", ss, data)
}

// roleNames are the roles as the forms offer them.
func roleNames() []string { return []string{"admin", "developer", "finance"} }
