// Package webkit is what the service's server-rendered sites share (the
// operators' console, the partners' dashboard): the security headers and the
// Content-Security-Policy (no script, no frame, no external asset), one
// stylesheet, sessions behind an HttpOnly, SameSite=Strict cookie with idle and
// absolute expiry and a CSRF token per session, the sign-in limiter (attempts
// reserved before the check) and the record of sent forms. All that state lives
// in the database (State), so any instance serves any request. A Site is one
// site built of the kit (layout, rendering, error pages, the guard, the failure
// page of an in-process API call, values shown once after a redirect); each
// site adds only its pages over the same use cases. What people read is
// written here once too: states and reasons in words (words.go), amounts
// grouped and exact (amounts.go), text people typed each in its own direction
// isolate and text from outside with its controls made visible (isolate.go).
package webkit

import (
	"crypto/rand"
	"embed"
	"encoding/base64"
	"net/http"
	"strings"

	"partnerd/internal/httpkit"
)

// CSP allows this origin's stylesheet and images and nothing else: no script, no
// frame, forms only to this origin.
const CSP = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

//go:embed static
var static embed.FS

// Stylesheet serves the sites' one stylesheet (cacheable for five minutes).
func Stylesheet(w http.ResponseWriter, _ *http.Request) {
	b, _ := static.ReadFile("static/kit.css")
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "max-age=300")
	_, _ = w.Write(b)
}

// Headers sets the security headers on every answer of next: the CSP, no
// sniffing, no referrer, no framing, and no caching except for paths under
// staticPrefix (the stylesheet).
func Headers(next http.Handler, staticPrefix string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		if !strings.HasPrefix(r.URL.Path, staticPrefix) {
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}

// ClientAddr is the request's client address without the port (the key of the
// sign-in limiter per address): the peer, or the client a trusted proxy names
// (TRUSTED_PROXIES, httpkit.Proxies), as the server resolved it.
func ClientAddr(r *http.Request) string { return httpkit.ClientAddrOf(r) }

// RandomToken is 32 random bytes, base64url: session ids, CSRF tokens.
func RandomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// State is where a site keeps what a person's next request depends on
// (sessions, attempt counts, sent forms): the database (store.Store), never one
// process's memory, so any instance behind a load balancer serves any request.
type State interface {
	SessionStore
	AttemptStore
	FormStore
}
