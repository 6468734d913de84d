package dashboard

import (
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"

	"partnerd/internal/audit/actor"
	"partnerd/internal/kit/uow"
	"partnerd/internal/partnerusers"
	"partnerd/internal/web/webkit"
)

func (d *Dashboard) teamRoutes(mux *http.ServeMux) {
	b := BasePath
	mux.HandleFunc("GET "+b+"/team", d.allow(d.team, teamRoles...))
	mux.HandleFunc("POST "+b+"/team", d.allow(d.invite, teamRoles...))
	mux.HandleFunc("POST "+b+"/team/{id}/role", d.allow(d.changeRole, teamRoles...))
	mux.HandleFunc("POST "+b+"/team/{id}/disable", d.allow(d.disable, teamRoles...))
	mux.HandleFunc("GET "+b+"/activity", d.allow(d.activity, activityRoles...))
}

// team lists the partner's users.
func (d *Dashboard) team(w http.ResponseWriter, r *http.Request, ss *session) {
	d.showTeam(w, r, ss, http.StatusOK, nil)
}

// showTeam renders the team page with extra data (an outcome, a link shown once).
func (d *Dashboard) showTeam(w http.ResponseWriter, r *http.Request, ss *session, status int, extra map[string]any) {
	users, err := d.d.Users.List(r.Context(), ss.Data.PartnerID)
	if err != nil {
		d.site.Unavailable(w, err)
		return
	}
	data := map[string]any{"Title": "Team", "Section": "team", "Users": users, "Roles": partnerusers.Roles, "Me": ss.Data.UserID,
		"Notice": teamNotice(r.URL.Query(), users)}
	d.site.Opened(r, ss, data)
	for k, v := range extra {
		data[k] = v
	}
	d.site.Render(w, status, "team", ss, data)
}

// me is the signed-in user as the use cases take who acts (the audit and the
// team's rules name them).
func me(ss *session) actor.Actor { return actor.OfPartnerUser(ss.Data.UserID, ss.Data.Email) }

// teamRefused shows a refused team change on the team page (refused); it
// reports whether err was one.
func (d *Dashboard) teamRefused(w http.ResponseWriter, r *http.Request, ss *session, err error) bool {
	return d.refused(w, ss, err, func(status int, extra map[string]any) { d.showTeam(w, r, ss, status, extra) })
}

// invite invites an address to the team with a role and shows the link once.
func (d *Dashboard) invite(w http.ResponseWriter, r *http.Request, ss *session) {
	email := strings.TrimSpace(r.PostFormValue("email"))
	inv, err := d.d.Users.Invite(background(r.Context()), uow.Plain[*partnerusers.NewInvitation, partnerusers.Tx](), ss.Data.PartnerID, email, partnerusers.Role(r.PostFormValue("role")), me(ss))
	if d.teamRefused(w, r, ss, err) {
		return
	}
	d.d.Logger.Info("dashboard team invitation", "partner_id", ss.Data.PartnerID.String(), "user_id", ss.Data.UserID.String(),
		"invited_user_id", inv.User.ID.String())
	d.site.ShowOnce(w, r, ss, "/team", map[string]string{"Invited": inv.User.Email, "Link": d.origin(r) + inv.Path(),
		"Expires": inv.Invitation.ExpiresAt.UTC().Format("2006-01-02 15:04:05 UTC")})
}

// origin is what a link to hand on starts with: the service's public address
// (Deps.LinkBase), or else the scheme and host the browser reached the dashboard
// at (HTTPS in production, behind its proxy).
func (d *Dashboard) origin(r *http.Request) string {
	if d.d.LinkBase != nil {
		if base := d.d.LinkBase(); base != "" {
			return base
		}
	}
	scheme := "http"
	if r.TLS != nil || d.d.Production {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// teamMember is the user of the path's id, as a uuid (uuid.Nil when it is not one).
func teamMember(r *http.Request) uuid.UUID {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		return uuid.Nil
	}
	return id
}

func (d *Dashboard) changeRole(w http.ResponseWriter, r *http.Request, ss *session) {
	u, err := d.d.Users.ChangeRoleBy(background(r.Context()), ss.Data.PartnerID, teamMember(r),
		partnerusers.Role(r.PostFormValue("role")), me(ss))
	if d.teamRefused(w, r, ss, err) {
		return
	}
	http.Redirect(w, r, BasePath+"/team?changed="+u.ID.String(), http.StatusSeeOther)
}

// teamNotice is the notice of a team change just made (the team page its form
// redirects to names the user changed or disabled), read from users as they
// are now; none when the query names none of them.
func teamNotice(q url.Values, users []*partnerusers.User) template.HTML {
	for _, u := range users {
		switch u.ID.String() {
		case q.Get("changed"):
			return webkit.Sentence("%s is now %s.", u.Email, string(u.Role))
		case q.Get("disabled"):
			return webkit.Sentence("%s is disabled; their sessions have ended.", u.Email)
		}
	}
	return ""
}

// disable stops a user signing in; their sessions end at once.
func (d *Dashboard) disable(w http.ResponseWriter, r *http.Request, ss *session) {
	u, err := d.d.Users.DisableBy(background(r.Context()), ss.Data.PartnerID, teamMember(r), me(ss))
	if d.teamRefused(w, r, ss, err) {
		return
	}
	ended, err := d.site.Sessions.EndAll(background(r.Context()), subject(u.ID))
	if err != nil {
		d.site.Unavailable(w, err)
		return
	}
	d.d.Logger.Info("dashboard user disabled", "partner_id", ss.Data.PartnerID.String(), "user_id", ss.Data.UserID.String(),
		"disabled_user_id", u.ID.String(), "sessions_ended", ended)
	if u.ID == ss.Data.UserID {
		http.Redirect(w, r, BasePath+"/signin", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, BasePath+"/team?disabled="+u.ID.String(), http.StatusSeeOther)
}
