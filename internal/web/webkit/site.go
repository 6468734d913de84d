package webkit

import (
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"partnerd/internal/kit/secrets"
)

// kitPages are the layout and the pages every site shows alike (message,
// notfound, forbidden).
//
//go:embed web
var kitPages embed.FS

// SiteConfig is what makes a site of the kit: its place, its pages, what its
// header shows of a session, and where its state lives.
type SiteConfig[T any] struct {
	// Base is the site's base path ("/console"); Name the site's name in page
	// titles and ways back ("console"), also the prefix of its cookies
	// (Name_session, Name_form).
	Base, Name string
	// SignIn is the path of the sign-in page, where a page asked for without a
	// session is sent.
	SignIn string
	// Pages holds the site's templates: header.html (defines "header", the top
	// bar's contents), page_NAME.html (each defines "content") and part_*.html
	// (pieces several pages share, each page may use any). A page of the kit's
	// (message, notfound, forbidden) is used where the site has none.
	Pages fs.FS
	// Funcs are the site's own template functions, beside the kit's (Funcs).
	Funcs template.FuncMap
	// Frame adds what the header shows of ss (nil when no one is signed in) to a
	// page's data: who is signed in, the sign-out form's CSRF token.
	Frame func(ss *Session[T], data map[string]any)
	// Idle and Absolute are the sessions' lifetimes.
	Idle, Absolute time.Duration
	// Secure marks the cookies Secure (production).
	Secure bool
	// Secrets seal the device cookies (nil: no browser is trusted, every
	// sign-in shares its account's budget).
	Secrets *secrets.Keyring
	State   State
	Logger  *slog.Logger
	Now     func() time.Time
}

// Site is one server-rendered site (the console, the dashboard) built of the
// kit: the layout and the stylesheet, rendering, the error pages (403, 404,
// 503, a refused API call), the guard of signed-in pages with their CSRF check,
// the sessions, the sign-in limiter and the pre-session form token. A site adds
// only its pages and its header, so each rule of a page's safety and of what
// people read is written here once.
type Site[T any] struct {
	cfg      SiteConfig[T]
	Sessions *Sessions[T]
	Limiter  *Limiter
	// Devices are the browsers that signed in before (their own budget of
	// sign-ins), Gate admits the sign-in work fairly.
	Devices Devices
	Gate    *Gate
	// FormToken guards the forms sent before there is a session (sign-in).
	FormToken FormToken
	pages     map[string]*template.Template
	// forms records the values shown once (Seal, Open).
	forms *Forms
}

// Handler is a page or form of a signed-in person.
type Handler[T any] func(w http.ResponseWriter, r *http.Request, ss *Session[T])

// NewSite parses cfg's pages in the kit's layout and returns the site.
func NewSite[T any](cfg SiteConfig[T]) (*Site[T], error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Site[T]{cfg: cfg,
		Sessions: NewSessions[T](SessionConfig{Cookie: cfg.Name + "_session", Path: cfg.Base, Secure: cfg.Secure,
			Idle: cfg.Idle, Absolute: cfg.Absolute, Now: cfg.Now}, cfg.State),
		Limiter:   NewLimiter(cfg.State, cfg.Now),
		Devices:   Devices{Cookie: cfg.Name + "_device", Path: cfg.Base, Secure: cfg.Secure, Keys: cfg.Secrets, Now: cfg.Now},
		Gate:      NewGate(GateSlots, GateQueue, GatePerSource, GateWait),
		FormToken: FormToken{Cookie: cfg.Name + "_form", Path: cfg.Base, Secure: cfg.Secure},
		forms:     NewForms(cfg.State, cfg.Now)}
	return s, s.parse()
}

// parse builds each page: the kit's layout, the site's header and the page.
func (s *Site[T]) parse() error {
	funcs := Funcs()
	for k, v := range s.cfg.Funcs {
		funcs[k] = v
	}
	layout, err := fs.ReadFile(kitPages, "web/layout.html")
	if err != nil {
		return err
	}
	header, err := fs.ReadFile(s.cfg.Pages, "header.html")
	if err != nil {
		return err
	}
	shared := [][]byte{layout, header}
	parts, err := fs.Glob(s.cfg.Pages, "part_*.html")
	if err != nil {
		return err
	}
	for _, n := range parts {
		b, err := fs.ReadFile(s.cfg.Pages, n)
		if err != nil {
			return err
		}
		shared = append(shared, b)
	}
	bodies := map[string][]byte{}
	for _, src := range []fs.FS{mustSub(kitPages, "web"), s.cfg.Pages} {
		names, err := fs.Glob(src, "page_*.html")
		if err != nil {
			return err
		}
		for _, n := range names {
			if bodies[n], err = fs.ReadFile(src, n); err != nil {
				return err
			}
		}
	}
	s.pages = map[string]*template.Template{}
	for n, body := range bodies {
		t := template.New("layout").Funcs(funcs)
		for _, part := range append(shared[:len(shared):len(shared)], body) {
			if _, err := t.Parse(string(part)); err != nil {
				return fmt.Errorf("%s: %w", n, err)
			}
		}
		s.pages[strings.TrimSuffix(strings.TrimPrefix(n, "page_"), ".html")] = t
	}
	return nil
}

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err)
	}
	return sub
}

// Base is the site's base path.
func (s *Site[T]) Base() string { return s.cfg.Base }

// Logger is the site's logger.
func (s *Site[T]) Logger() *slog.Logger { return s.cfg.Logger }

// Handler serves mux's pages and the stylesheet under the kit's security
// headers, refusing forms from another origin.
func (s *Site[T]) Handler(mux *http.ServeMux) http.Handler {
	mux.HandleFunc("GET "+s.cfg.Base+"/static/kit.css", Stylesheet)
	return Headers(SameOrigin(mux), s.cfg.Base+"/static/")
}

// Render writes page in the layout with data, what the header shows of ss, the
// site's base path and name.
func (s *Site[T]) Render(w http.ResponseWriter, status int, page string, ss *Session[T], data map[string]any) {
	if data == nil {
		data = map[string]any{}
	}
	if s.cfg.Frame != nil {
		s.cfg.Frame(ss, data)
	}
	data["Base"], data["Site"] = s.cfg.Base, s.cfg.Name
	t := s.pages[page]
	if t == nil {
		s.cfg.Logger.Error(s.cfg.Name+" render: no such page", "page", page)
		http.Error(w, "Internal error.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := t.ExecuteTemplate(w, "layout", data); err != nil {
		s.cfg.Logger.Error(s.cfg.Name+" render", "page", page, "error", err.Error())
	}
}

// Message shows a titled message (a refusal, a failure: the problem's style)
// with status.
func (s *Site[T]) Message(w http.ResponseWriter, status int, ss *Session[T], title string, msg any) {
	s.Render(w, status, "message", ss, map[string]any{"Title": title, "Message": msg})
}

// NotFound is the 404 page: what does not exist and what belongs to another
// partner look the same.
func (s *Site[T]) NotFound(w http.ResponseWriter, ss *Session[T]) {
	s.Render(w, http.StatusNotFound, "notfound", ss, map[string]any{"Title": "Not found"})
}

// Forbidden is the 403 page: the person's role does not open this page; nothing
// was changed.
func (s *Site[T]) Forbidden(w http.ResponseWriter, ss *Session[T]) {
	s.Render(w, http.StatusForbidden, "forbidden", ss, map[string]any{"Title": "Not for your role"})
}

// Unavailable answers a failure of the site itself (the database out of
// reach): 503 with Retry-After, the error logged, not shown.
func (s *Site[T]) Unavailable(w http.ResponseWriter, err error) {
	s.cfg.Logger.Error(s.cfg.Name, "error", err.Error())
	w.Header().Set("Retry-After", "5")
	s.Message(w, http.StatusServiceUnavailable, nil, "Unavailable", "The "+s.cfg.Name+" cannot do this now; try again in a moment.")
}

// Failed shows an in-process API call's failure: its 404 is the 404 page
// (another partner's id included), any other answer the API's words with the
// status (a call that did not answer at all: 502).
func (s *Site[T]) Failed(w http.ResponseWriter, ss *Session[T], status int, body []byte) {
	if status == http.StatusNotFound {
		s.NotFound(w, ss)
		return
	}
	if status < 400 {
		status = http.StatusBadGateway
	}
	s.Message(w, status, ss, "Not done", APIError(status, body))
}

// PathID is the request path's {id} as a uuid; when it is not one, the answer
// is the 404 page and ok is false.
func (s *Site[T]) PathID(w http.ResponseWriter, r *http.Request, ss *Session[T]) (id uuid.UUID, ok bool) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		s.NotFound(w, ss)
		return uuid.Nil, false
	}
	return id, true
}

// Guard wraps h: a session is required (a page asked for without one → the
// sign-in page; a form → 401) and, on POST, its CSRF token (else 403, nothing
// done).
func (s *Site[T]) Guard(h Handler[T]) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ss := s.Sessions.Get(r)
		if ss == nil {
			s.SignInFirst(w, r)
			return
		}
		if r.Method == http.MethodPost && !ss.ValidCSRF(r) {
			s.Message(w, http.StatusForbidden, ss, "Refused", "This form was not sent from a "+s.cfg.Name+
				" page of your session (missing or wrong CSRF token). Nothing was changed; reload the page and try again.")
			return
		}
		h(w, r, ss)
	}
}

// SignInFirst sends a request without a (live) session to the sign-in page, or
// refuses a form.
func (s *Site[T]) SignInFirst(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "Sign in first.", http.StatusUnauthorized)
		return
	}
	http.Redirect(w, r, s.cfg.SignIn, http.StatusSeeOther)
}

// SignOut ends the session and opens the sign-in page.
func (s *Site[T]) SignOut(w http.ResponseWriter, r *http.Request, ss *Session[T]) {
	if err := s.Sessions.End(r.Context(), w, ss.ID); err != nil {
		s.Unavailable(w, err)
		return
	}
	http.Redirect(w, r, s.cfg.SignIn, http.StatusSeeOther)
}
