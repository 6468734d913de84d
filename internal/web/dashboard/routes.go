package dashboard

import (
	"net/http"

	"partnerd/internal/web/webkit"
)

func (d *Dashboard) routes() http.Handler {
	mux := http.NewServeMux()
	b := BasePath
	mux.HandleFunc("GET "+b+"/static/dashboard.css", webkit.Stylesheet)
	mux.HandleFunc("GET "+b+"/signin", d.signInPage)
	mux.HandleFunc("POST "+b+"/signin", d.signIn)
	mux.HandleFunc("POST "+b+"/signin/partner", d.choose)
	mux.HandleFunc("GET "+b+"/signin/code", d.codePage)
	mux.HandleFunc("POST "+b+"/signin/code", d.code)
	mux.HandleFunc("POST "+b+"/signout", d.guard(d.signOut, true))
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
		missing := d.allow(func(w http.ResponseWriter, _ *http.Request, ss *session) { d.notFound(w, ss) }, s.roles...)
		mux.HandleFunc(b+s.path, missing)
		mux.HandleFunc(b+s.path+"/", missing)
	}
	// Anything else under the base: the 404 page, in the layout when signed in.
	mux.HandleFunc(b+"/", func(w http.ResponseWriter, r *http.Request) { d.notFound(w, d.sessions.Get(r)) })
	return webkit.Headers(webkit.SameOrigin(mux), BasePath+"/static/")
}

// home opens the transactions, which every role reads.
func (d *Dashboard) home(w http.ResponseWriter, r *http.Request, _ *session) {
	http.Redirect(w, r, BasePath+"/transactions", http.StatusSeeOther)
}
