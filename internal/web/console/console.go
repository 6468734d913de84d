// Package console is the operators' web console at /console: server-rendered
// pages (html/template), its own stylesheet, no script and no external asset,
// under a strict Content-Security-Policy. An operator signs in with their key;
// the browser then holds only a session cookie (HttpOnly, SameSite=Strict, Secure
// in production) that ends after IdleTimeout idle or AbsoluteTimeout in all, and
// every form carries the session's CSRF token (the sign-in form a token of its
// own, webkit.FormToken), and forms from another origin are refused
// (webkit.SameOrigin). Failed sign-ins are rate-limited
// per client address.
//
// The console is a client of the operator API, not a second implementation:
// every read and action is a call of the generated operator client, served in
// process by the same handler (validation, idempotency, audit and rate limits
// included) with the signed-in operator's key. An action's Idempotency-Key is made
// when its confirmation page is shown, so a double submit replays.
package console

import (
	"context"
	"embed"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	oc "partnerd/gen/operatorclient"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/secrets"
	"partnerd/internal/operatorapi"
	"partnerd/internal/partners"
	"partnerd/internal/web/webkit"
)

// BasePath is where the console is served.
const BasePath = "/console"

//go:embed web
var web embed.FS

// CSP is the console's Content-Security-Policy (webkit.CSP, shared by the sites).
const CSP = webkit.CSP

// Deps are what the console needs.
type Deps struct {
	// Operators authenticates the sign-in key.
	Operators *operators.Service
	// API serves the operator API in process (the service's own handler, set
	// once it is built).
	API func() http.Handler
	// OperatorBase is the operator API's base path.
	OperatorBase string
	// State keeps the sessions and sign-in attempts (the database: every
	// instance sees the same).
	State webkit.State
	// Secure marks the session cookie Secure (production).
	Secure bool
	// Secrets seal the device cookies (SECRETS_KEYS).
	Secrets *secrets.Keyring
	Logger  *slog.Logger
	Now     func() time.Time
}

// Console serves the pages.
type Console struct {
	d    Deps
	site *webkit.Site[signedIn]
}

// Register mounts the console on e.
func Register(e *echo.Echo, d Deps) error {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	c := &Console{d: d}
	pages, _ := fs.Sub(web, "web")
	site, err := webkit.NewSite(webkit.SiteConfig[signedIn]{Base: BasePath, Name: "console", SignIn: BasePath + "/login",
		Pages: pages, Funcs: c.funcs(), Frame: frame, Idle: IdleTimeout, Absolute: AbsoluteTimeout, Secure: d.Secure,
		Secrets: d.Secrets, State: d.State, Logger: d.Logger, Now: d.Now})
	if err != nil {
		return err
	}
	c.site = site
	h := c.routes()
	e.Any(BasePath, echo.WrapHandler(h))
	e.Any(BasePath+"/*", echo.WrapHandler(h))
	return nil
}

// client is the operator API as the session's operator.
func (c *Console) client(ss *session) *oc.ClientWithResponses {
	cl, _ := oc.NewClientWithResponses("http://in-process"+c.d.OperatorBase,
		oc.WithHTTPClient(webkit.Client(c.d.API, func(r *http.Request) *http.Request {
			return r.WithContext(operatorapi.WithKeyHash(r.Context(), ss.Data.KeyHash))
		})))
	return cl
}

func (c *Console) routes() http.Handler {
	mux := http.NewServeMux()
	b := BasePath
	mux.HandleFunc("GET "+b+"/login", c.loginPage)
	mux.HandleFunc("POST "+b+"/login", c.login)
	mux.HandleFunc("POST "+b+"/logout", c.auth(c.site.SignOut))
	mux.HandleFunc("GET "+b, c.auth(c.overview))
	mux.HandleFunc("GET "+b+"/{$}", c.auth(c.overview))
	mux.HandleFunc("GET "+b+"/transactions", c.auth(c.list))
	mux.HandleFunc("GET "+b+"/transactions/{id}", c.auth(c.transaction))
	mux.HandleFunc("POST "+b+"/transactions/{id}/action", c.auth(c.action))
	mux.HandleFunc("GET "+b+"/payouts/new", c.auth(c.payoutForm))
	mux.HandleFunc("POST "+b+"/payouts", c.auth(c.payout))
	mux.HandleFunc("GET "+b+"/payouts", c.auth(c.payouts))
	mux.HandleFunc("GET "+b+"/fills/new", c.auth(c.fillForm))
	mux.HandleFunc("POST "+b+"/fills", c.auth(c.fill))
	mux.HandleFunc("GET "+b+"/deposits", c.auth(c.deposits))
	mux.HandleFunc("GET "+b+"/refund-tasks", c.auth(c.refundTasks))
	mux.HandleFunc("POST "+b+"/refund-tasks/{id}/resolve", c.auth(c.resolve))
	mux.HandleFunc("GET "+b+"/screening", c.auth(c.screeningQueue))
	mux.HandleFunc("POST "+b+"/screening/{id}/review", c.auth(c.review))
	mux.HandleFunc("GET "+b+"/screening/blocked.csv", c.auth(c.blockedReport))
	mux.HandleFunc("GET "+b+"/partners", c.auth(c.partners))
	mux.HandleFunc("POST "+b+"/partners", c.auth(c.createPartner))
	mux.HandleFunc("GET "+b+"/partners/{id}", c.auth(c.partner))
	mux.HandleFunc("POST "+b+"/partners/{id}/keys/{kid}/{op}", c.auth(c.keyAction))
	mux.HandleFunc("POST "+b+"/partners/{id}/users", c.auth(c.inviteUser))
	mux.HandleFunc("POST "+b+"/partners/{id}/webhook-endpoint/resend", c.auth(c.resendBacklog))
	mux.HandleFunc("POST "+b+"/partners/{id}/settlement-account", c.auth(c.setSettlementAccount))
	mux.HandleFunc("GET "+b+"/approvals", c.auth(c.approvals))
	mux.HandleFunc("POST "+b+"/approvals/{id}/{op}", c.auth(c.decide))
	mux.HandleFunc("GET "+b+"/audit", c.auth(c.audit))
	mux.HandleFunc("GET "+b+"/transactions.csv", c.auth(c.transactionsCSV))
	mux.HandleFunc("GET "+b+"/refund-tasks.csv", c.auth(c.refundTasksCSV))
	mux.HandleFunc("GET "+b+"/deposits.csv", c.auth(c.depositsCSV))
	mux.HandleFunc("GET "+b+"/audit.csv", c.auth(c.auditCSV))
	mux.HandleFunc("GET "+b+"/payouts.csv", c.auth(c.batchesCSV(oc.BatchKindPayout)))
	mux.HandleFunc("GET "+b+"/fills.csv", c.auth(c.batchesCSV(oc.BatchKindFill)))
	mux.HandleFunc("GET "+b+"/operators", c.auth(c.operators))
	mux.HandleFunc("GET "+b+"/operators/{id}", c.auth(c.operatorPage))
	mux.HandleFunc("POST "+b+"/operators/{id}/keys/add", c.auth(c.operatorKeyAction))
	mux.HandleFunc("POST "+b+"/operators/{id}/keys/{kid}/{op}", c.auth(c.operatorKeyAction))
	return c.site.Handler(mux)
}

// auth requires a session (else the sign-in page) and, on POST, its CSRF token
// (else 403, nothing done).
func (c *Console) auth(h webkit.Handler[signedIn]) http.HandlerFunc { return c.site.Guard(h) }

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	if c.site.Sessions.Get(r) != nil {
		http.Redirect(w, r, BasePath, http.StatusSeeOther)
		return
	}
	c.site.Render(w, http.StatusOK, "login", nil, map[string]any{"FormCSRF": c.site.FormToken.Issue(w, r)})
}

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	addr := webkit.ClientAddr(r)
	if !c.site.FormToken.Valid(r) {
		c.d.Logger.Info("console sign-in without its form's token refused", "client", addr)
		c.site.Render(w, http.StatusForbidden, "login", nil, map[string]any{"FormCSRF": c.site.FormToken.Issue(w, r),
			"Error": "This form was not sent from this console's sign-in page. Nothing was done; try again here."})
		return
	}
	token := c.site.FormToken.Issue(w, r)
	key := r.PostFormValue("key")
	keys, sources := c.attempt(r, key)
	leave, err := c.site.Gate.Enter(r.Context(), sources...)
	if err != nil {
		w.Header().Set("Retry-After", "1")
		c.site.Render(w, http.StatusServiceUnavailable, "login", nil, map[string]any{"FormCSRF": token, "Error": "Too many sign-ins at once; try again in a moment."})
		return
	}
	defer leave()
	res, wait, err := c.site.Limiter.Reserve(r.Context(), keys...)
	if err != nil {
		c.site.Unavailable(w, err)
		return
	}
	if res == nil {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())))
		c.site.Render(w, http.StatusTooManyRequests, "login", nil, map[string]any{"FormCSRF": token, "Error": "Too many failed sign-ins; wait a few minutes and try again."})
		return
	}
	o, err := c.d.Operators.Authenticate(r.Context(), key)
	if apperr.CodeOf(err) == apperr.Unauthorized {
		c.d.Logger.Info("console sign-in refused", "client", addr)
		c.site.Render(w, http.StatusUnauthorized, "login", nil, map[string]any{"FormCSRF": token, "Error": "That operator key is not recognised."})
		return
	}
	res.Release(context.WithoutCancel(r.Context()))
	if err != nil {
		c.site.Unavailable(w, err)
		return
	}
	if _, err := c.site.Sessions.Create(r.Context(), w, "operator:"+o.ID.String(),
		signedIn{OperatorID: o.ID, Name: o.Name, KeyHash: partners.HashKey(key)}); err != nil {
		c.site.Unavailable(w, err)
		return
	}
	c.site.Devices.Trust(w, deviceAccount(key))
	c.d.Logger.Info("console sign-in", "operator_id", o.ID.String())
	http.Redirect(w, r, BasePath, http.StatusSeeOther)
}
