package dashboard

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"partnerd/internal/backoffice/settlement"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/partnerusers"
	"partnerd/internal/web/webkit"
)

func (d *Dashboard) accountRoutes(mux *http.ServeMux) {
	b := BasePath
	mux.HandleFunc("GET "+b+"/invite/{token}", d.invitePage)
	mux.HandleFunc("POST "+b+"/invite/{token}", d.accept)
	mux.HandleFunc("GET "+b+"/account", d.allow(d.account))
	mux.HandleFunc("POST "+b+"/account/password", d.allow(d.changePassword))
	mux.HandleFunc("GET "+b+"/enroll", d.guard(d.enrollPage, true))
	mux.HandleFunc("POST "+b+"/enroll", d.guard(d.confirmEnrollment, true))
}

// invitePage asks the invited person for a password.
func (d *Dashboard) invitePage(w http.ResponseWriter, r *http.Request) {
	_, u, err := d.d.Users.Invitation(r.Context(), r.PathValue("token"))
	if d.invitationRefused(w, err) {
		return
	}
	d.site.Render(w, http.StatusOK, "invite", nil, map[string]any{"Title": "Set your password", "Email": u.Email,
		"Min": partnerusers.MinPasswordLength, "FormCSRF": d.site.FormToken.Issue(w, r)})
}

// invitationRefused renders an unknown (404), used or expired (410) invitation,
// or a failure, and reports whether it did.
func (d *Dashboard) invitationRefused(w http.ResponseWriter, err error) bool {
	switch codeOf(err) {
	case "":
		return false
	case apperr.NotFound:
		d.site.Message(w, http.StatusNotFound, nil, "Invitation not found", "This invitation link is not valid; ask whoever invited you for a new one.")
	case apperr.InvalidStateTransition:
		d.site.Message(w, http.StatusGone, nil, "Invitation no longer valid", problemOf(err))
	default:
		d.site.Unavailable(w, err)
	}
	return true
}

// accept sets the invited person's password (the rules' problems shown on the
// form) and sends them to sign in with it.
func (d *Dashboard) accept(w http.ResponseWriter, r *http.Request) {
	token := r.PathValue("token")
	_, u, err := d.d.Users.Invitation(r.Context(), token)
	if d.invitationRefused(w, err) {
		return
	}
	data := map[string]any{"Title": "Set your password", "Email": u.Email, "Min": partnerusers.MinPasswordLength}
	if d.formRefused(w, r, "invite", data) {
		return
	}
	data["FormCSRF"] = d.site.FormToken.Issue(w, r)
	password := r.PostFormValue("password")
	if password != r.PostFormValue("confirm") {
		data["Error"] = "The two passwords differ."
		d.site.Render(w, http.StatusBadRequest, "invite", nil, data)
		return
	}
	u, err = d.d.Users.Accept(background(r.Context()), token, password)
	if codeOf(err) == apperr.InvalidRequest {
		data["Error"] = problemOf(err)
		d.site.Render(w, http.StatusBadRequest, "invite", nil, data)
		return
	}
	if d.invitationRefused(w, err) {
		return
	}
	d.d.Logger.Info("dashboard invitation accepted", "partner_id", u.PartnerID.String(), "user_id", u.ID.String())
	d.site.Render(w, http.StatusOK, "signin", nil, map[string]any{"Title": "Sign in", "Email": u.Email,
		"Notice": "Your password is set. Sign in with it.", "FormCSRF": d.site.FormToken.Issue(w, r)})
}

// problemOf is an apperr's message with its fields' hints.
func problemOf(err error) string {
	if e, ok := apperr.As(err); ok {
		msg := e.Message
		for _, f := range e.Details {
			if f.Message != "" && !strings.Contains(msg, f.Message) {
				msg += " (" + f.Message + ")"
			}
		}
		return msg
	}
	return err.Error()
}

// account shows the user's account: their second factor and the password form.
func (d *Dashboard) account(w http.ResponseWriter, r *http.Request, ss *session) {
	d.showAccount(w, r, ss, http.StatusOK, nil)
}

func (d *Dashboard) showAccount(w http.ResponseWriter, r *http.Request, ss *session, status int, extra map[string]any) {
	u, err := d.d.Users.Get(r.Context(), ss.Data.PartnerID, ss.Data.UserID)
	if err != nil {
		d.site.Unavailable(w, err)
		return
	}
	data := map[string]any{"Title": "Your account", "Me": u, "Min": partnerusers.MinPasswordLength, "Required": d.d.Production}
	if u.TOTPEnabled() {
		left, err := d.d.Users.RecoveryCodesLeft(r.Context(), ss.Data.PartnerID, ss.Data.UserID)
		if err != nil {
			d.site.Unavailable(w, err)
			return
		}
		data["CodesLeft"] = left
	}
	if d.d.Settlement != nil {
		a, err := d.d.Settlement.Get(r.Context(), ss.Data.PartnerID)
		switch {
		case err == nil:
			data["Settlement"] = settlementView{BankName: a.BankName, AccountNumber: maskAccount(a.AccountNumber), AccountName: a.AccountName}
		case codeOf(err) != apperr.NotFound:
			d.site.Unavailable(w, err)
			return
		}
	}
	for k, v := range extra {
		data[k] = v
	}
	d.site.Render(w, status, "account", ss, data)
}

// changePassword replaces the password and ends every session of the user; this
// browser goes on in a new session under the new epoch. Wrong current passwords
// count as failed sign-ins.
func (d *Dashboard) changePassword(w http.ResponseWriter, r *http.Request, ss *session) {
	password := r.PostFormValue("password")
	if password != r.PostFormValue("confirm") {
		d.showAccount(w, r, ss, http.StatusBadRequest, map[string]any{"Error": "The two new passwords differ."})
		return
	}
	res := d.reserveMine(w, r, ss, "Too many wrong passwords; wait a few minutes and try again.", func(status int, problem string) {
		d.showAccount(w, r, ss, status, map[string]any{"Error": problem})
	})
	if res == nil {
		return
	}
	u, err := d.d.Users.ChangePassword(background(r.Context()), ss.Data.PartnerID, ss.Data.UserID, r.PostFormValue("current"), password)
	if codeOf(err) != apperr.Unauthorized {
		res.Release(background(r.Context()))
	}
	switch codeOf(err) {
	case "":
	case apperr.ServiceUnavailable:
		w.Header().Set("Retry-After", "1")
		d.showAccount(w, r, ss, http.StatusServiceUnavailable, map[string]any{"Error": problemOf(err)})
		return
	case apperr.Unauthorized:
		d.showAccount(w, r, ss, http.StatusUnauthorized, map[string]any{"Error": "The current password is wrong."})
		return
	case apperr.InvalidRequest:
		d.showAccount(w, r, ss, http.StatusBadRequest, map[string]any{"Error": problemOf(err)})
		return
	default:
		d.site.Unavailable(w, err)
		return
	}
	ended, err := d.site.Sessions.EndAll(background(r.Context()), subject(u.ID))
	if err != nil {
		d.site.Unavailable(w, err)
		return
	}
	v := ss.Data
	v.Epoch = u.SessionEpoch
	next, err := d.site.Sessions.Create(background(r.Context()), w, subject(u.ID), v)
	if err != nil {
		d.site.Unavailable(w, err)
		return
	}
	d.d.Logger.Info("dashboard password changed", "partner_id", u.PartnerID.String(), "user_id", u.ID.String(), "sessions_ended", ended)
	d.showAccount(w, r, next, http.StatusOK, map[string]any{"Notice": "Your password is changed; every other session of yours has ended."})
}

// enrollPage sets up the second factor: the secret being set up (the same on
// every reload until enrolment ends: an app may have scanned it already), else a
// new one, shown as a QR code of its otpauth:// URL, drawn by the page itself
// (no script, no external asset), as text grouped in fours to type by hand, and
// as the URL.
func (d *Dashboard) enrollPage(w http.ResponseWriter, r *http.Request, ss *session) {
	e, err := d.d.Users.PendingTOTP(r.Context(), ss.Data.PartnerID, ss.Data.UserID)
	if codeOf(err) == apperr.InvalidStateTransition {
		e, err = d.d.Users.EnrollTOTP(background(r.Context()), ss.Data.PartnerID, ss.Data.UserID)
	}
	if codeOf(err) == apperr.InvalidStateTransition {
		http.Redirect(w, r, BasePath+"/account", http.StatusSeeOther)
		return
	}
	if err != nil {
		d.site.Unavailable(w, err)
		return
	}
	d.renderEnroll(w, ss, http.StatusOK, e, "")
}

// renderEnroll shows the enrolment page of e with status (and problem, after a
// wrong first code).
func (d *Dashboard) renderEnroll(w http.ResponseWriter, ss *session, status int, e *partnerusers.Enrollment, problem string) {
	qr, err := webkit.QRCode(e.URL, "QR code of the second factor's link, for an authenticator app")
	if err != nil {
		d.site.Unavailable(w, err)
		return
	}
	data := map[string]any{"Title": "Second factor", "E": e, "QR": qr, "Secret": webkit.Grouped(e.Secret), "Required": d.d.Production}
	if problem != "" {
		data["Error"] = problem
	}
	d.site.Render(w, status, "enroll", ss, data)
}

// confirmEnrollment turns the second factor on with a first code and shows the
// recovery codes, once.
func (d *Dashboard) confirmEnrollment(w http.ResponseWriter, r *http.Request, ss *session) {
	again := func(status int, problem string) {
		e, err := d.d.Users.PendingTOTP(r.Context(), ss.Data.PartnerID, ss.Data.UserID)
		if err != nil {
			http.Redirect(w, r, BasePath+"/enroll", http.StatusSeeOther)
			return
		}
		d.renderEnroll(w, ss, status, e, problem)
	}
	res := d.reserveMine(w, r, ss, "Too many wrong codes; wait a few minutes and try again.", again)
	if res == nil {
		return
	}
	codes, err := d.d.Users.ConfirmTOTP(background(r.Context()), ss.Data.PartnerID, ss.Data.UserID, strings.TrimSpace(r.PostFormValue("code")))
	if codeOf(err) != apperr.Unauthorized {
		res.Release(background(r.Context()))
	}
	switch codeOf(err) {
	case "":
	case apperr.Unauthorized:
		again(http.StatusUnauthorized, "The code is wrong; type the one your app shows now.")
		return
	case apperr.InvalidStateTransition:
		http.Redirect(w, r, BasePath+"/enroll", http.StatusSeeOther)
		return
	default:
		d.site.Unavailable(w, err)
		return
	}
	d.d.Logger.Info("dashboard second factor on", "partner_id", ss.Data.PartnerID.String(), "user_id", ss.Data.UserID.String())
	d.site.Render(w, http.StatusOK, "recovery", ss, map[string]any{"Title": "Recovery codes", "Codes": codes})
}

// reserveMine takes one attempt of the signed-in user's (from their address,
// and their own) before a password or code of theirs is checked; refused, it
// answers 429 with Retry-After through refuse with problem (or the 503 page)
// and returns nil. The caller releases the reservation when the check passes.
func (d *Dashboard) reserveMine(w http.ResponseWriter, r *http.Request, ss *session, problem string,
	refuse func(status int, problem string)) *webkit.Reservation {
	res, wait, err := d.site.Limiter.Reserve(r.Context(), d.addressKey(r), userKey(ss.Data.UserID))
	if err != nil {
		d.site.Unavailable(w, err)
		return nil
	}
	if res == nil {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())))
		refuse(http.StatusTooManyRequests, problem)
	}
	return res
}

// codeOf is err's apperr code, "" for no error.
func codeOf(err error) apperr.Code {
	if err == nil {
		return ""
	}
	return apperr.CodeOf(err)
}

// Settlement reads a partner's settlement account (settlement.Service).
type Settlement interface {
	// Get returns partner's account, or apperr NotFound.
	Get(ctx context.Context, partner uuid.UUID) (*settlement.Account, error)
}

// settlementView is the settlement account as the partner sees it: read-only,
// the account number masked but for its last four digits.
type settlementView struct {
	BankName, AccountNumber, AccountName string
}

// maskAccount hides all but the last four digits of an account number.
func maskAccount(n string) string {
	if len(n) <= 4 {
		return n
	}
	return strings.Repeat("•", len(n)-4) + n[len(n)-4:]
}
