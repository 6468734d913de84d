package dashboard

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"time"

	pc "partnerd/gen/client"
	"partnerd/internal/httpapi"
	"partnerd/internal/web/webkit"
)

// payoutRoutes mounts the payouts, statements and exports pages: roles
// payoutRoles. Reads are partner API calls in process (GET /payouts,
// GET /payouts/{id}, GET /revenue); an export streams the API's own CSV answer
// (GET /exports/transactions, GET /exports/payouts) to the browser.
func (d *Dashboard) payoutRoutes(mux *http.ServeMux) {
	b := BasePath
	mux.HandleFunc("GET "+b+"/payouts", d.allow(d.payouts, payoutRoles...))
	mux.HandleFunc("GET "+b+"/payouts/{id}", d.allow(d.payout, payoutRoles...))
	mux.HandleFunc("GET "+b+"/payouts/statements", d.allow(d.statements, payoutRoles...))
	mux.HandleFunc("GET "+b+"/payouts/exports/{kind}", d.allow(d.export, payoutRoles...))
}

// period is a page's from and to days as typed (YYYY-MM-DD, whole UTC days,
// both inclusive); empty is the current month so far.
type period struct{ From, To string }

func periodOf(q url.Values, now time.Time) period {
	p := period{From: q.Get("from"), To: q.Get("to")}
	if p.From == "" && p.To == "" {
		now = now.UTC()
		p.From = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC).Format(dayLayout)
		p.To = now.Format(dayLayout)
	}
	return p
}

// bounds are p's first and last instants, or a problem in words.
func (p period) bounds() (from, to *time.Time, problem string) {
	if p.From != "" {
		t, err := time.Parse(dayLayout, p.From)
		if err != nil {
			return nil, nil, "The from date is not a date (YYYY-MM-DD)."
		}
		from = &t
	}
	if p.To != "" {
		t, err := time.Parse(dayLayout, p.To)
		if err != nil {
			return nil, nil, "The to date is not a date (YYYY-MM-DD)."
		}
		end := t.Add(24*time.Hour - time.Nanosecond)
		to = &end
	}
	if from != nil && to != nil && to.Before(*from) {
		return nil, nil, "The period ends before it starts."
	}
	return from, to, ""
}

// values is p as a query.
func (p period) values() url.Values {
	v := url.Values{}
	if p.From != "" {
		v.Set("from", p.From)
	}
	if p.To != "" {
		v.Set("to", p.To)
	}
	return v
}

// periodPage begins a page of a period (payouts, statements): its data (the
// period as typed, and the links to the other page of the same period) and its
// bounds; a period that is not one is the page with the problem (400) and ok
// false.
func (d *Dashboard) periodPage(w http.ResponseWriter, r *http.Request, ss *session, page, title string) (
	data map[string]any, from, to *time.Time, ok bool) {
	per := periodOf(r.URL.Query(), d.d.Now())
	data = map[string]any{"Title": title, "Section": "payouts", "P": per,
		"PayoutsLink": periodLink("/payouts", per, ""), "StatementsLink": periodLink("/payouts/statements", per, ""),
		"Action": r.URL.Path}
	from, to, problem := per.bounds()
	if problem != "" {
		data["Error"] = problem
		d.site.Render(w, http.StatusBadRequest, page, ss, data)
		return nil, nil, nil, false
	}
	return data, from, to, true
}

// periodLink is the address of the page at path (under BasePath) for per, at
// cursor when there is one: a query built as a query, never pasted into one.
func periodLink(path string, per period, cursor string) string {
	v := per.values()
	if cursor != "" {
		v.Set("cursor", cursor)
	}
	return BasePath + path + "?" + v.Encode()
}

// payouts lists the batches that paid the partner in the period, with the
// period's CSV exports.
func (d *Dashboard) payouts(w http.ResponseWriter, r *http.Request, ss *session) {
	data, from, to, ok := d.periodPage(w, r, ss, "payouts", "Payouts")
	if !ok {
		return
	}
	limit := 50
	p := &pc.ListPayoutsParams{From: from, To: to, Limit: &limit}
	if c := r.URL.Query().Get("cursor"); c != "" {
		p.Cursor = &c
	}
	res, err := d.client(ss).ListPayoutsWithResponse(r.Context(), p)
	if err != nil || res.JSON200 == nil {
		d.listRefused(w, ss, "payouts", data, res, err)
		return
	}
	data["Payouts"] = res.JSON200.Data.Data
	if next := res.JSON200.Data.NextCursor; next != nil {
		data["Next"] = periodLink("/payouts", data["P"].(period), *next)
	}
	d.site.Render(w, http.StatusOK, "payouts", ss, data)
}

// payout shows one batch with the transactions it paid.
func (d *Dashboard) payout(w http.ResponseWriter, r *http.Request, ss *session) {
	id, ok := d.site.PathID(w, r, ss)
	if !ok {
		return
	}
	res, err := d.client(ss).GetPayoutWithResponse(r.Context(), id)
	if err != nil || res.JSON200 == nil {
		d.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
		return
	}
	d.site.Render(w, http.StatusOK, "payout", ss, map[string]any{"Title": "Payout " + webkit.IsolateText(res.JSON200.Data.Reference), "Section": "payouts",
		"B": res.JSON200.Data})
}

// statements is the revenue share of the period: its totals and the completed
// transactions it comes from.
func (d *Dashboard) statements(w http.ResponseWriter, r *http.Request, ss *session) {
	data, from, to, ok := d.periodPage(w, r, ss, "statements", "Statements")
	if !ok {
		return
	}
	limit, summary := 100, true
	p := &pc.ListRevenueParams{From: from, To: to, Limit: &limit, IncludeSummary: &summary}
	if c := r.URL.Query().Get("cursor"); c != "" {
		p.Cursor = &c
	}
	res, err := d.client(ss).ListRevenueWithResponse(r.Context(), p)
	if err != nil || res.JSON200 == nil {
		d.listRefused(w, ss, "statements", data, res, err)
		return
	}
	data["Rows"] = res.JSON200.Data.Data
	data["Summary"] = res.JSON200.Data.Summary
	if next := res.JSON200.Data.NextCursor; next != nil {
		data["Next"] = periodLink("/payouts/statements", data["P"].(period), *next)
	}
	d.site.Render(w, http.StatusOK, "statements", ss, data)
}

// exportPaths are the partner API's exports by the page's name for them.
var exportPaths = map[string]string{"transactions": "/exports/transactions", "payouts": "/exports/payouts"}

// export streams the partner API's CSV export of the period to the browser as
// the API answers it (its file name in Content-Disposition), row by row as it
// is read: the request is served in process as the user's partner, so the file
// holds that partner's records only. A refusal is shown as a page.
func (d *Dashboard) export(w http.ResponseWriter, r *http.Request, ss *session) {
	path, ok := exportPaths[r.PathValue("kind")]
	if !ok {
		d.site.NotFound(w, ss)
		return
	}
	per := period{From: r.URL.Query().Get("from"), To: r.URL.Query().Get("to")}
	from, to, problem := per.bounds()
	if problem != "" {
		d.site.Message(w, http.StatusBadRequest, ss, "No export", problem)
		return
	}
	q := url.Values{}
	if from != nil {
		q.Set("from", from.Format(time.RFC3339Nano))
	}
	if to != nil {
		q.Set("to", to.Format(time.RFC3339Nano))
	}
	req, err := http.NewRequestWithContext(httpapi.WithPrincipal(r.Context(),
		httpapi.Principal{PartnerID: ss.Data.PartnerID, UserID: ss.Data.UserID}),
		http.MethodGet, d.d.PartnerBase+path+"?"+q.Encode(), nil)
	if err != nil {
		d.site.Unavailable(w, err)
		return
	}
	req.RemoteAddr, req.RequestURI = "127.0.0.1:0", req.URL.RequestURI()
	out := &passThrough{w: w, header: http.Header{}}
	d.d.API().ServeHTTP(out, req)
	if out.status == 0 {
		out.WriteHeader(http.StatusOK)
	}
	if out.status != http.StatusOK {
		d.site.Failed(w, ss, out.status, out.held.Bytes())
		return
	}
	d.d.Logger.Info("dashboard export", "partner_id", ss.Data.PartnerID.String(), "user_id", ss.Data.UserID.String(),
		"export", r.PathValue("kind"), "from", per.From, "to", per.To)
}

// passThrough streams a 200 answer of the partner API to the browser with its
// file headers only (the dashboard's own security headers stay), and holds any
// other answer for the dashboard to show as a page.
type passThrough struct {
	w      http.ResponseWriter
	header http.Header
	status int
	held   bytes.Buffer
}

func (p *passThrough) Header() http.Header { return p.header }

func (p *passThrough) WriteHeader(status int) {
	if p.status != 0 {
		return
	}
	p.status = status
	if status != http.StatusOK {
		return
	}
	for _, h := range []string{"Content-Type", "Content-Disposition"} {
		if v := p.header.Get(h); v != "" {
			p.w.Header().Set(h, v)
		}
	}
	p.w.Header().Set("Cache-Control", "no-store")
	p.w.WriteHeader(status)
}

func (p *passThrough) Write(b []byte) (int, error) {
	if p.status == 0 {
		p.WriteHeader(http.StatusOK)
	}
	if p.status != http.StatusOK {
		return p.held.Write(b)
	}
	return p.w.Write(b)
}

// Flush sends what was written so far (a long export reaches the browser as
// it is read).
func (p *passThrough) Flush() {
	if f, ok := p.w.(http.Flusher); ok && p.status == http.StatusOK {
		f.Flush()
	}
}

var _ io.Writer = (*passThrough)(nil)
