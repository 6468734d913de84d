package dashboard

import (
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"partnerd/internal/apikeys"
	"partnerd/internal/web/webkit"
)

// keyRoutes mounts the API key pages (list, create, roll, revoke): roles
// keyRoles. Keys are not in the partner API on purpose (a leaked server key must
// not mint keys): the pages call the key actions directly, with the operators'
// rules, audited naming the user.
func (d *Dashboard) keyRoutes(mux *http.ServeMux) {
	b := BasePath
	mux.HandleFunc("GET "+b+"/keys", d.allow(d.keys, keyRoles...))
	mux.HandleFunc("POST "+b+"/keys", d.allow(d.createKey, keyRoles...))
	mux.HandleFunc("POST "+b+"/keys/{id}/roll", d.allow(d.rollKey, keyRoles...))
	mux.HandleFunc("POST "+b+"/keys/{id}/revoke", d.allow(d.revokeKey, keyRoles...))
}

// overlaps are the roll overlaps offered (a custom one may be typed).
var overlaps = []struct{ Value, Name string }{
	{"1h", "1 hour"}, {"24h", "24 hours"}, {"72h", "3 days"}, {"168h", "7 days"}, {"0s", "none: the old key stops now"},
}

// keyView is a key as the page lists it.
type keyView struct {
	*apikeys.Key
	Status string
	// FormKey is this key's roll form's own key (each form acts once).
	FormKey string
}

func (d *Dashboard) keys(w http.ResponseWriter, r *http.Request, ss *session) {
	d.showKeys(w, r, ss, http.StatusOK, nil)
}

// showKeys renders the keys page with extra data (an outcome, a secret shown once).
func (d *Dashboard) showKeys(w http.ResponseWriter, r *http.Request, ss *session, status int, extra map[string]any) {
	ks, err := d.d.Keys.PartnerKeys(r.Context(), ss.Data.PartnerID)
	if err != nil {
		d.site.Unavailable(w, err)
		return
	}
	now := d.d.Now()
	views := make([]keyView, len(ks))
	data := map[string]any{"Title": "API keys", "Section": "keys", "Keys": views, "Overlaps": overlaps,
		"DefaultOverlap": "24h", "FormKey": formKey()}
	for i, k := range ks {
		views[i] = keyView{Key: k, Status: k.Status(now), FormKey: formKey()}
		// The notice of a key just revoked: the page its form redirects to names it.
		if k.ID.String() == r.URL.Query().Get("revoked") && k.RevokedAt != nil {
			data["Notice"] = "Key " + k.Prefix + "… is revoked: it stops working now."
		}
	}
	d.site.Opened(r, ss, data)
	for k, v := range extra {
		data[k] = v
	}
	d.site.Render(w, status, "keys", ss, data)
}

// keyRefused shows a refused key action on the keys page (refused); it
// reports whether err was one.
func (d *Dashboard) keyRefused(w http.ResponseWriter, r *http.Request, ss *session, err error) bool {
	return d.refused(w, ss, err, func(status int, extra map[string]any) { d.showKeys(w, r, ss, status, extra) })
}

// once reports whether the form's key is seen for the first time: a form sent
// twice (a double click, a reload of the answer) creates or rolls one key, and
// the second sending shows the list instead of a second secret.
func (d *Dashboard) once(w http.ResponseWriter, r *http.Request, ss *session) bool {
	key := r.PostFormValue("idempotency_key")
	if len(key) > webkit.MaxFormKey {
		d.showKeys(w, r, ss, http.StatusBadRequest, map[string]any{"Error": "This form was not sent from the keys page. Nothing was done."})
		return false
	}
	first, err := d.forms.First(r.Context(), ss.Data.PartnerID.String(), key)
	if err != nil {
		d.site.Unavailable(w, err)
		return false
	}
	if first {
		return true
	}
	d.showKeys(w, r, ss, http.StatusConflict, map[string]any{
		"Error": "This form was already sent; its key was shown then, and only then. Nothing else was done."})
	return false
}

func (d *Dashboard) createKey(w http.ResponseWriter, r *http.Request, ss *session) {
	if !d.once(w, r, ss) {
		return
	}
	k, err := d.d.Keys.IssuePartnerKey(background(r.Context()), me(ss), ss.Data.PartnerID)
	if d.keyRefused(w, r, ss, err) {
		return
	}
	d.site.ShowOnce(w, r, ss, "/keys", map[string]string{"Secret": k.Secret, "SecretPrefix": k.Key.Prefix,
		"Notice": "Key " + k.Key.Prefix + "… created."})
}

// keyOf is the path's key id (uuid.Nil, which no key has, when it is not one).
func keyOf(r *http.Request) uuid.UUID {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		return uuid.Nil
	}
	return id
}

func (d *Dashboard) rollKey(w http.ResponseWriter, r *http.Request, ss *session) {
	overlap, err := time.ParseDuration(strings.TrimSpace(r.PostFormValue("overlap")))
	if err != nil {
		d.showKeys(w, r, ss, http.StatusBadRequest, map[string]any{"Error": "The overlap is not a duration (such as 24h, 90m or 0s)."})
		return
	}
	if !d.once(w, r, ss) {
		return
	}
	k, err := d.d.Keys.RollPartnerKey(background(r.Context()), me(ss), ss.Data.PartnerID, keyOf(r), overlap)
	if d.keyRefused(w, r, ss, err) {
		return
	}
	d.site.ShowOnce(w, r, ss, "/keys", map[string]string{"Secret": k.Secret, "SecretPrefix": k.Key.Prefix,
		"Notice": "Key rolled: the new key " + k.Key.Prefix + "… is shown below once; the old key works until its expiry."})
}

func (d *Dashboard) revokeKey(w http.ResponseWriter, r *http.Request, ss *session) {
	k, err := d.d.Keys.RevokePartnerKey(background(r.Context()), me(ss), ss.Data.PartnerID, keyOf(r))
	if d.keyRefused(w, r, ss, err) {
		return
	}
	http.Redirect(w, r, BasePath+"/keys?revoked="+k.ID.String(), http.StatusSeeOther)
}
