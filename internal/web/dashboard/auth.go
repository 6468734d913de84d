package dashboard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"partnerd/internal/kit/apperr"
	"partnerd/internal/partnerusers"
	"partnerd/internal/web/webkit"
)

// handler is a page or form handler of a signed-in user.
type handler = webkit.Handler[visitor]

// allow wraps h: a session is required (GET → the sign-in page; else 401), on
// POST its CSRF token (else 403, nothing done), the user still active under the
// session's epoch (else the session ends: a disabled user, a changed password),
// in production a second factor on (else the enrolment page first), and the
// user's role one of roles (else the 403 page, nothing done). No roles: every
// role.
func (d *Dashboard) allow(h handler, roles ...partnerusers.Role) http.HandlerFunc {
	return d.guard(h, false, roles...)
}

// guard is allow; enrolling lets a user without a second factor through (the
// enrolment pages themselves).
func (d *Dashboard) guard(h handler, enrolling bool, roles ...partnerusers.Role) http.HandlerFunc {
	return d.site.Guard(func(w http.ResponseWriter, r *http.Request, ss *session) {
		u, err := d.d.Users.Get(r.Context(), ss.Data.PartnerID, ss.Data.UserID)
		if err != nil && apperr.CodeOf(err) != apperr.NotFound {
			d.d.Logger.Error("dashboard: read the signed-in user", "error", err.Error())
			d.site.Message(w, http.StatusServiceUnavailable, nil, "Unavailable", "The dashboard cannot reach its database; try again in a moment.")
			return
		}
		if err != nil || u.Status != partnerusers.Active || u.SessionEpoch != ss.Data.Epoch {
			_ = d.site.Sessions.End(r.Context(), w, ss.ID)
			d.d.Logger.Info("dashboard session ended", "user_id", ss.Data.UserID.String(), "reason", "user disabled or password changed")
			d.site.SignInFirst(w, r)
			return
		}
		// A copy with the role and address as they are now (Seen, which other
		// requests of the session write, is left out).
		cur := session{ID: ss.ID, CSRF: ss.CSRF, Data: ss.Data, Created: ss.Created}
		cur.Data.Role, cur.Data.Email = u.Role, u.Email
		if d.d.Production && !u.TOTPEnabled() && !enrolling {
			if r.Method != http.MethodGet {
				d.site.Message(w, http.StatusForbidden, &cur, "Second factor first", "Set up your second factor before anything else. Nothing was changed.")
				return
			}
			http.Redirect(w, r, BasePath+"/enroll", http.StatusSeeOther)
			return
		}
		if !permits(u.Role, roles) {
			d.site.Forbidden(w, &cur)
			return
		}
		h(w, r, &cur)
	})
}

func (d *Dashboard) signInPage(w http.ResponseWriter, r *http.Request) {
	if d.site.Sessions.Get(r) != nil {
		http.Redirect(w, r, BasePath, http.StatusSeeOther)
		return
	}
	d.site.Render(w, http.StatusOK, "signin", nil, map[string]any{"Title": "Sign in", "FormCSRF": d.site.FormToken.Issue(w, r)})
}

// formRefused answers a sign-in form without the token of the sign-in page it
// came from (another site's form: login CSRF), with page again and a fresh
// token, and reports whether it did. Nothing is checked or counted.
func (d *Dashboard) formRefused(w http.ResponseWriter, r *http.Request, page string, data map[string]any) bool {
	if d.site.FormToken.Valid(r) {
		return false
	}
	d.d.Logger.Info("dashboard form without its token refused", "client", d.addr(r), "path", r.URL.Path)
	data["FormCSRF"] = d.site.FormToken.Issue(w, r)
	data["Error"] = "This form was not sent from this dashboard's page. Nothing was done; try again here."
	d.site.Render(w, http.StatusForbidden, page, nil, data)
	return true
}

// reserve takes one attempt of each key before a password or code is checked,
// or renders page refused (429 with Retry-After, or 503 when the database is out
// of reach) and returns nil. The caller releases the reservation when the check
// succeeds: only failures count.
func (d *Dashboard) reserve(w http.ResponseWriter, r *http.Request, page string, ss *session, data map[string]any, keys ...webkit.Key) *webkit.Reservation {
	res, wait, err := d.site.Limiter.Reserve(r.Context(), keys...)
	if err != nil {
		d.site.Unavailable(w, err)
		return nil
	}
	if res == nil {
		d.d.Logger.Info("dashboard attempt refused by its limit", "client", d.addr(r))
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())))
		data["Error"] = "Too many failed attempts; wait a few minutes and try again."
		d.site.Render(w, http.StatusTooManyRequests, page, ss, data)
	}
	return res
}

// busy answers a check refused for want of a hash slot (partnerusers.ErrBusy).
func (d *Dashboard) busy(w http.ResponseWriter, r *http.Request, page string, ss *session, data map[string]any) {
	w.Header().Set("Retry-After", "1")
	data["Error"] = "Too many sign-ins at once; try again in a moment."
	d.site.Render(w, http.StatusServiceUnavailable, page, ss, data)
}

// addressKey limits the attempts from one client address.
func (d *Dashboard) addressKey(r *http.Request) webkit.Key {
	return webkit.Key{Name: "dashboard:address:" + d.addr(r), Limit: addressLimit}
}

// accountKey limits the sign-ins to the account of an address typed, from every
// browser but the account's own devices.
func accountKey(email string) webkit.Key {
	return webkit.Key{Name: "dashboard:account:" + accountName(email), Limit: accountLimit}
}

// userKey limits a user's second-factor codes and current passwords.
func userKey(id uuid.UUID) webkit.Key {
	return webkit.Key{Name: "dashboard:user:" + id.String(), Limit: accountLimit}
}

// deviceAccount names an account in device cookies: the address typed.
func deviceAccount(email string) string { return "email:" + accountName(email) }

// accountName is the account an address typed names, as limits and cookies
// record it: the address as accounts are looked up (partnerusers.EmailKey), or
// its SHA-256 when it is not text an address could be (invalid UTF-8, too long).
func accountName(email string) string {
	k := partnerusers.EmailKey(email)
	if !utf8.ValidString(k) || len(k) > 254 {
		sum := sha256.Sum256([]byte(k))
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	return k
}

// attempt is where a sign-in attempt to the account of email comes from: its
// limiter keys and its sources at the gate. From a device of the account, its
// own budget alone; else its address's and the account's (or, with user set,
// the user's: the second factor).
func (d *Dashboard) attempt(r *http.Request, email string, user uuid.UUID) ([]webkit.Key, []string) {
	addr := "address:" + d.addr(r)
	if dev := d.site.Devices.Of(r, deviceAccount(email)); dev != "" {
		return []webkit.Key{{Name: "dashboard:device:" + dev, Limit: deviceLimit}}, []string{addr, "device:" + dev}
	}
	if user != uuid.Nil {
		return []webkit.Key{d.addressKey(r), userKey(user)}, []string{addr, "user:" + user.String()}
	}
	return []webkit.Key{d.addressKey(r), accountKey(email)}, []string{addr, "account:" + accountName(email)}
}

// enter takes the attempt's place at the sign-in gate (webkit.Gate), or answers
// page busy and returns nil.
func (d *Dashboard) enter(w http.ResponseWriter, r *http.Request, page string, data map[string]any, sources []string) func() {
	release, err := d.site.Gate.Enter(r.Context(), sources...)
	if err != nil {
		d.d.Logger.Info("dashboard attempt refused at the sign-in gate", "client", d.addr(r))
		d.busy(w, r, page, nil, data)
		return nil
	}
	return release
}

// addr is the request's client address (through the trusted proxies).
func (d *Dashboard) addr(r *http.Request) string { return webkit.ClientAddr(r) }

// subject names a user's sessions (EndAll ends them all).
func subject(id uuid.UUID) string { return "user:" + id.String() }

func (d *Dashboard) signIn(w http.ResponseWriter, r *http.Request) {
	addr := d.addr(r)
	email := strings.TrimSpace(r.PostFormValue("email"))
	data := map[string]any{"Title": "Sign in", "Email": email}
	if d.formRefused(w, r, "signin", data) {
		return
	}
	data["FormCSRF"] = d.site.FormToken.Issue(w, r)
	keys, sources := d.attempt(r, email, uuid.Nil)
	leave := d.enter(w, r, "signin", data, sources)
	if leave == nil {
		return
	}
	res := d.reserve(w, r, "signin", nil, data, keys...)
	if res == nil {
		leave()
		return
	}
	users, err := d.d.Users.Authenticate(r.Context(), email, r.PostFormValue("password"))
	leave()
	if apperr.CodeOf(err) == apperr.Unauthorized {
		d.d.Logger.Info("dashboard sign-in refused", "client", addr)
		data["Error"] = "The email or password is wrong."
		d.site.Render(w, http.StatusUnauthorized, "signin", nil, data)
		return
	}
	res.Release(background(r.Context()))
	if errors.Is(err, partnerusers.ErrBusy) {
		d.busy(w, r, "signin", nil, data)
		return
	}
	if err != nil {
		d.site.Unavailable(w, err)
		return
	}
	if len(users) > 1 {
		ids := make([]uuid.UUID, len(users))
		for i, u := range users {
			ids[i] = u.ID
		}
		p, err := d.pending.Create(r.Context(), w, "pending", pendingSignIn{Candidates: ids, Email: email})
		if err != nil {
			d.site.Unavailable(w, err)
			return
		}
		d.choosePage(w, r.Context(), p.CSRF, users)
		return
	}
	d.passwordRight(w, r, users[0])
}

// choosePage asks which partner's dashboard to open; its form carries the
// pending sign-in's CSRF token.
func (d *Dashboard) choosePage(w http.ResponseWriter, ctx context.Context, csrf string, users []*partnerusers.User) {
	type choice struct {
		UserID  uuid.UUID
		Partner string
		Role    string
	}
	var choices []choice
	for _, u := range users {
		name := u.PartnerID.String()
		if p, err := d.d.Partners.Get(ctx, u.PartnerID); err == nil {
			name = p.Name
		}
		choices = append(choices, choice{UserID: u.ID, Partner: name, Role: string(u.Role)})
	}
	d.site.Render(w, http.StatusOK, "choose", nil, map[string]any{"Title": "Choose a partner", "Choices": choices, "PendingCSRF": csrf})
}

// choose takes the partner chosen after a right password.
func (d *Dashboard) choose(w http.ResponseWriter, r *http.Request) {
	p := d.pending.Get(r)
	id, err := uuid.Parse(r.PostFormValue("user"))
	if p == nil || !p.ValidCSRF(r) || err != nil || !slices.Contains(p.Data.Candidates, id) {
		http.Redirect(w, r, BasePath+"/signin", http.StatusSeeOther)
		return
	}
	_ = d.pending.End(r.Context(), w, p.ID)
	u, err := d.d.Users.UserByID(r.Context(), id)
	if err != nil || u.Status != partnerusers.Active {
		http.Redirect(w, r, BasePath+"/signin", http.StatusSeeOther)
		return
	}
	d.passwordRight(w, r, u)
}

// passwordRight goes on with a user whose password was right: to the second
// factor when it is on, else straight in.
func (d *Dashboard) passwordRight(w http.ResponseWriter, r *http.Request, u *partnerusers.User) {
	if u.TOTPEnabled() {
		if _, err := d.pending.Create(r.Context(), w, "pending", pendingSignIn{UserID: u.ID, PartnerID: u.PartnerID, Email: u.Email}); err != nil {
			d.site.Unavailable(w, err)
			return
		}
		http.Redirect(w, r, BasePath+"/signin/code", http.StatusSeeOther)
		return
	}
	d.start(w, r, u)
}

// start begins u's session and opens the dashboard.
func (d *Dashboard) start(w http.ResponseWriter, r *http.Request, u *partnerusers.User) {
	name := ""
	if p, err := d.d.Partners.Get(r.Context(), u.PartnerID); err == nil {
		name = p.Name
	}
	if _, err := d.site.Sessions.Create(r.Context(), w, subject(u.ID),
		visitor{UserID: u.ID, PartnerID: u.PartnerID, Email: u.Email, Role: u.Role, Epoch: u.SessionEpoch, PartnerName: name}); err != nil {
		d.site.Unavailable(w, err)
		return
	}
	d.site.Devices.Trust(w, deviceAccount(u.Email))
	d.d.Logger.Info("dashboard sign-in", "partner_id", u.PartnerID.String(), "user_id", u.ID.String())
	http.Redirect(w, r, BasePath, http.StatusSeeOther)
}

func (d *Dashboard) codePage(w http.ResponseWriter, r *http.Request) {
	p := d.pending.Get(r)
	if p == nil || p.Data.UserID == uuid.Nil {
		http.Redirect(w, r, BasePath+"/signin", http.StatusSeeOther)
		return
	}
	d.site.Render(w, http.StatusOK, "code", nil, map[string]any{"Title": "Second factor", "PendingCSRF": p.CSRF})
}

// code checks the second factor: a code of the authenticator app, or one of the
// recovery codes (which then stops working).
func (d *Dashboard) code(w http.ResponseWriter, r *http.Request) {
	p := d.pending.Get(r)
	if p == nil || p.Data.UserID == uuid.Nil || !p.ValidCSRF(r) {
		http.Redirect(w, r, BasePath+"/signin", http.StatusSeeOther)
		return
	}
	addr := d.addr(r)
	data := map[string]any{"Title": "Second factor", "PendingCSRF": p.CSRF}
	keys, sources := d.attempt(r, p.Data.Email, p.Data.UserID)
	leave := d.enter(w, r, "code", data, sources)
	if leave == nil {
		return
	}
	defer leave()
	res := d.reserve(w, r, "code", nil, data, keys...)
	if res == nil {
		return
	}
	u, err := d.d.Users.UserByID(r.Context(), p.Data.UserID)
	if err != nil && apperr.CodeOf(err) != apperr.NotFound {
		res.Release(background(r.Context()))
		d.site.Unavailable(w, err)
		return
	}
	code := strings.TrimSpace(r.PostFormValue("code"))
	if err == nil {
		if len(code) == 6 && strings.Trim(code, "0123456789") == "" {
			err = d.d.Users.VerifyTOTP(r.Context(), u, code)
		} else {
			err = d.d.Users.UseRecoveryCode(r.Context(), u, code)
		}
	}
	if err != nil {
		if c := apperr.CodeOf(err); c != apperr.Unauthorized && c != apperr.NotFound {
			res.Release(background(r.Context()))
			d.site.Unavailable(w, err)
			return
		}
		d.d.Logger.Info("dashboard second factor refused", "client", addr, "user_id", p.Data.UserID.String())
		data["Error"] = "The code is wrong or was already used."
		d.site.Render(w, http.StatusUnauthorized, "code", nil, data)
		return
	}
	res.Release(background(r.Context()))
	_ = d.pending.End(r.Context(), w, p.ID)
	d.start(w, r, u)
}
