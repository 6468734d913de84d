package dashboard

import (
	"net/http"
	"net/url"

	"github.com/google/uuid"

	"partnerd/internal/audit"
	"partnerd/internal/kit/apperr"
)

// activity pages through every audited action of the partner's users (actor
// partner_user), newest first.
func (d *Dashboard) activity(w http.ResponseWriter, r *http.Request, ss *session) {
	partner := ss.Data.PartnerID
	page, err := d.d.Audit.List(r.Context(), audit.Filter{UsersOf: &partner}, 50, r.URL.Query().Get("cursor"))
	if apperr.CodeOf(err) == apperr.InvalidCursor {
		d.site.Message(w, http.StatusBadRequest, ss, "Not shown", "This page's cursor is not valid; start from the newest actions.")
		return
	}
	if err != nil {
		d.site.Unavailable(w, err)
		return
	}
	users, err := d.d.Users.List(r.Context(), partner)
	if err != nil {
		d.site.Unavailable(w, err)
		return
	}
	emails := map[uuid.UUID]string{}
	for _, u := range users {
		emails[u.ID] = u.Email
	}
	type row struct {
		*audit.Entry
		Subject string
	}
	rows := make([]row, len(page.Items))
	for i, e := range page.Items {
		rows[i] = row{Entry: e}
		if e.SubjectID != nil {
			rows[i].Subject = emails[*e.SubjectID]
		}
	}
	data := map[string]any{"Title": "Activity", "Section": "activity", "Items": rows}
	if page.NextCursor != nil {
		data["Next"] = BasePath + "/activity?" + url.Values{"cursor": {*page.NextCursor}}.Encode()
	}
	d.site.Render(w, http.StatusOK, "activity", ss, data)
}
