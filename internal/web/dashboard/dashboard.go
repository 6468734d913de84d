// Package dashboard is the partners' web dashboard at /dashboard: the people of a
// partner (partnerusers) sign in with an email, a password and, once enrolled (in
// production always), a TOTP code, and see and run their integration in server-
// rendered pages under the sites' strict Content-Security-Policy (internal/web/webkit:
// no script, no external asset). The browser holds only a session cookie
// (HttpOnly, SameSite=Strict, Secure in production, idle and absolute expiry);
// every form carries the session's CSRF token; every request checks that the
// user is still active under the session's epoch, so a disabled user or a
// changed password ends the sessions at once.
//
// The dashboard is a client of the partner API, not a second implementation:
// reads and partner-level actions are calls of the generated partner client,
// served in process by the service's own handler as the signed-in user's partner
// (httpapi.Principal), with a fresh Idempotency-Key per form. Team changes,
// which the partner API does not offer on purpose, call partnerusers directly
// and are audited naming the user.
package dashboard

import (
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	pc "partnerd/gen/client"
	"partnerd/internal/audit"
	"partnerd/internal/backoffice/actions"
	"partnerd/internal/httpapi"
	"partnerd/internal/kit/secrets"
	"partnerd/internal/partners"
	"partnerd/internal/partnerusers"
	"partnerd/internal/web/webkit"
)

// BasePath is where the dashboard is served.
const BasePath = "/dashboard"

//go:embed web
var web embed.FS

// Deps are what the dashboard needs.
type Deps struct {
	// Users signs people in and runs the team's changes.
	Users *partnerusers.Service
	// Partners names the partners (the partner chooser, the layout).
	Partners *partners.Service
	// Audit records and lists the team's actions (actor partner_user).
	Audit *audit.Log
	// Keys runs the API key actions (the operators' rules, audited naming the user).
	Keys *actions.Service
	// API serves the partner API in process (the service's own handler, set once
	// it is built).
	API func() http.Handler
	// PartnerBase is the partner API's base path.
	PartnerBase string
	// Networks are the chains served (the transactions' network filter).
	Networks []string
	// State keeps the sessions, sign-in attempts and sent key forms (the
	// database: every instance sees the same).
	State webkit.State
	// Production requires the second factor, marks the cookie Secure and hides
	// the sandbox simulator.
	Production bool
	// LinkBase is what the links handed on start with (an invitation's), the
	// service's public address (PUBLIC_URL): a request's Host is where the admin
	// reached the dashboard, not necessarily where the invited person can. Nil, or
	// an empty answer, uses the request's scheme and host.
	LinkBase func() string
	// Settlement reads the partner's settlement account (shown, masked, on the
	// account page); nil shows none.
	Settlement Settlement
	// Secrets seal the device cookies (SECRETS_KEYS).
	Secrets *secrets.Keyring
	Logger  *slog.Logger
	Now     func() time.Time
}

// Dashboard serves the pages.
type Dashboard struct {
	d Deps
	// site is the kit's site: pages, sessions, the sign-in limiter and the
	// token of the forms sent before a session (sign-in, an invitation's
	// password).
	site *webkit.Site[visitor]
	// pending are sign-ins between the password and the second factor (or the
	// choice of partner): a short-lived cookie of its own, never a session.
	pending *webkit.Sessions[pendingSignIn]
	forms   *webkit.Forms
}

// Register mounts the dashboard on e.
func Register(e *echo.Echo, d Deps) error {
	dash, err := New(d)
	if err != nil {
		return err
	}
	h := dash.Handler()
	e.Any(BasePath, echo.WrapHandler(h))
	e.Any(BasePath+"/*", echo.WrapHandler(h))
	return nil
}

// New returns the dashboard (Register mounts it).
func New(d Deps) (*Dashboard, error) {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	dash := &Dashboard{d: d,
		pending: webkit.NewSessions[pendingSignIn](webkit.SessionConfig{Cookie: pendingCookieName, Path: BasePath, Secure: d.Production,
			Idle: PendingTimeout, Absolute: PendingTimeout, Now: d.Now}, d.State),
		forms: webkit.NewForms(d.State, d.Now)}
	pages, _ := fs.Sub(web, "web")
	site, err := webkit.NewSite(webkit.SiteConfig[visitor]{Base: BasePath, Name: "dashboard", SignIn: BasePath + "/signin",
		Pages: pages, Funcs: template.FuncMap{"str": func(s any) string { return fmt.Sprint(s) }}, Frame: dash.frame,
		Idle: IdleTimeout, Absolute: AbsoluteTimeout, Secure: d.Production, Secrets: d.Secrets, State: d.State, Logger: d.Logger, Now: d.Now})
	if err != nil {
		return nil, err
	}
	dash.site = site
	return dash, nil
}

// Handler serves the dashboard's pages (under BasePath).
func (d *Dashboard) Handler() http.Handler { return d.routes() }

// client is the partner API in process as ss's partner and user.
func (d *Dashboard) client(ss *session) *pc.ClientWithResponses {
	p := httpapi.Principal{PartnerID: ss.Data.PartnerID, UserID: ss.Data.UserID}
	cl, _ := pc.NewClientWithResponses("http://in-process"+d.d.PartnerBase,
		pc.WithHTTPClient(webkit.Client(d.d.API, func(r *http.Request) *http.Request {
			return r.WithContext(httpapi.WithPrincipal(r.Context(), p))
		})))
	return cl
}

// formKey is a fresh Idempotency-Key for a form: made when the form is shown and
// sent back with it, so a double submit replays instead of acting twice.
func formKey() string { return uuid.NewString() }

// idempotencyKey is the form's key as sent, or a fresh one when it is missing or
// not a key (the API would refuse it).
func idempotencyKey(r *http.Request) string {
	if k := r.PostFormValue("idempotency_key"); k != "" && len(k) <= 255 {
		return k
	}
	return formKey()
}

// background is ctx without its cancellation, for writes that must finish once
// begun (the client of a page may go away).
func background(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }
