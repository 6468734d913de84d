package dashboard

import (
	"net/http"

	"partnerd/internal/kit/apperr"

	"partnerd/internal/web/webkit"
)

func (d *Dashboard) routes() http.Handler {
	mux := http.NewServeMux()
	b := BasePath
	mux.HandleFunc("GET "+b+"/signin", d.signInPage)
	mux.HandleFunc("POST "+b+"/signin", d.signIn)
	mux.HandleFunc("POST "+b+"/signin/partner", d.choose)
	mux.HandleFunc("GET "+b+"/signin/code", d.codePage)
	mux.HandleFunc("POST "+b+"/signin/code", d.code)
	mux.HandleFunc("POST "+b+"/signout", d.guard(d.site.SignOut, true))
	mux.HandleFunc("GET "+b, d.allow(d.home))
	mux.HandleFunc("GET "+b+"/{$}", d.allow(d.home))
	d.transactionRoutes(mux)
	d.teamRoutes(mux)
	d.accountRoutes(mux)
	d.webhookRoutes(mux)
	d.keyRoutes(mux)
	d.payoutRoutes(mux)
	// A section's other paths: its roles first (the 403 page), then the 404 page;
	// the sections' own routes above are more specific and win.
	for _, s := range sections {
		missing := d.allow(func(w http.ResponseWriter, _ *http.Request, ss *session) { d.site.NotFound(w, ss) }, s.roles...)
		mux.HandleFunc(b+s.path, missing)
		mux.HandleFunc(b+s.path+"/", missing)
	}
	// Anything else under the base: the 404 page, in the layout when signed in.
	mux.HandleFunc(b+"/", func(w http.ResponseWriter, r *http.Request) { d.site.NotFound(w, d.site.Sessions.Get(r)) })
	return d.site.Handler(mux)
}

// listRefused answers a list call of page that failed: a 400 (a filter the API
// refused) is page again with the API's words, anything else the failure page.
func (d *Dashboard) listRefused(w http.ResponseWriter, ss *session, page string, data map[string]any, res webkit.Answer, err error) {
	status := webkit.StatusOf(res, err)
	if status != http.StatusBadRequest {
		d.site.Failed(w, ss, status, webkit.BodyOf(res))
		return
	}
	data["Error"] = webkit.APIError(status, webkit.BodyOf(res))
	d.site.Render(w, status, page, ss, data)
}

// refused shows a refused team or key change (err, a use case's) on its page
// through show, nothing changed: a request the rules refuse is 400, a change
// the state refuses 409; another's (or no) record is the 404 page; any other
// error the failure page. It reports whether err was one.
func (d *Dashboard) refused(w http.ResponseWriter, ss *session, err error, show func(status int, extra map[string]any)) bool {
	switch codeOf(err) {
	case "":
		return false
	case apperr.NotFound:
		d.site.NotFound(w, ss)
	case apperr.InvalidRequest:
		show(http.StatusBadRequest, map[string]any{"Error": problemOf(err)})
	case apperr.InvalidStateTransition:
		show(http.StatusConflict, map[string]any{"Error": problemOf(err)})
	case apperr.Unauthorized:
		d.site.Forbidden(w, ss)
	default:
		d.site.Unavailable(w, err)
	}
	return true
}

// home opens the transactions, which every role reads.
func (d *Dashboard) home(w http.ResponseWriter, r *http.Request, _ *session) {
	http.Redirect(w, r, BasePath+"/transactions", http.StatusSeeOther)
}
