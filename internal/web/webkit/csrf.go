package webkit

import (
	"crypto/subtle"
	"net/http"
)

// SameOrigin refuses every form (any method but GET, HEAD and OPTIONS) that a
// browser sent from another origin: another site, or another port or scheme of
// this host, which SameSite counts as the same site and so sends it the session
// cookie. The browser says where a request comes from (Sec-Fetch-Site, else
// Origin against Host: net/http's CrossOriginProtection); a request naming
// neither is not a browser's and meets the CSRF tokens alone. Refused: 403,
// nothing done.
func SameOrigin(next http.Handler) http.Handler {
	p := http.NewCrossOriginProtection()
	p.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte("Refused: this form was sent from another site. Nothing was done.\n"))
	}))
	return p.Handler(next)
}

// FormToken is the CSRF token of the forms sent before there is a session (the
// sign-in forms, an invitation's password): without it another site could sign
// a visitor in as someone else (login CSRF). The token is random, kept in a
// cookie of its own (HttpOnly, SameSite=Strict, the site's path only) and
// repeated in the form; a form whose token is not the cookie's is refused. No
// other page can read the form, so none can send a matching pair; a page on
// another port of this host could set the cookie, which is why SameOrigin
// guards the same forms. Nothing is stored: any instance checks any form.
type FormToken struct {
	// Cookie is the cookie's name, Path the site's base path; Secure marks it
	// Secure (production).
	Cookie, Path string
	Secure       bool
}

// tokenLen is the length of a RandomToken.
const tokenLen = 43

// Issue returns the token to put in a form shown by the answer to r: the one the
// browser holds already (so two open sign-in pages both work), else a new one
// set on w.
func (f FormToken) Issue(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(f.Cookie); err == nil && len(c.Value) == tokenLen {
		return c.Value
	}
	token := RandomToken()
	http.SetCookie(w, &http.Cookie{Name: f.Cookie, Value: token, Path: f.Path, HttpOnly: true, Secure: f.Secure,
		SameSite: http.SameSiteStrictMode})
	return token
}

// Valid reports whether r's form field csrf is the token of r's cookie.
func (f FormToken) Valid(r *http.Request) bool {
	c, err := r.Cookie(f.Cookie)
	if err != nil || len(c.Value) != tokenLen {
		return false
	}
	got := r.PostFormValue("csrf")
	return subtle.ConstantTimeCompare([]byte(got), []byte(c.Value)) == 1
}
