package dashboard

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	pc "partnerd/gen/client"
	"partnerd/internal/web/webkit"
)

func (d *Dashboard) transactionRoutes(mux *http.ServeMux) {
	b := BasePath
	mux.HandleFunc("GET "+b+"/transactions", d.allow(d.transactions, transactionRoles...))
	mux.HandleFunc("GET "+b+"/transactions/{id}", d.allow(d.transaction, transactionRoles...))
	mux.HandleFunc("POST "+b+"/transactions/{id}/simulate", d.allow(d.simulate, sandboxRoles...))
}

// statuses are the transaction statuses the list filters by.
var statuses = []pc.TransactionStatus{pc.TransactionStatusAwaitingDeposit, pc.TransactionStatusDepositConfirming,
	pc.TransactionStatusOrderFilled, pc.TransactionStatusCompleted, pc.TransactionStatusExpired, pc.TransactionStatusFailed,
	pc.TransactionStatusRefunded, pc.TransactionStatusCancelled}

// dayLayout is how the date filters are typed (an <input type="date">).
const dayLayout = "2006-01-02"

// listFilter is the transactions list's query as typed.
type listFilter struct {
	Status, Network, From, To, Q string
}

func filterOf(q url.Values) listFilter {
	return listFilter{Status: q.Get("status"), Network: q.Get("network"), From: q.Get("from"), To: q.Get("to"),
		Q: strings.TrimSpace(q.Get("q"))}
}

// values is f as a query (empty fields left out).
func (f listFilter) values() url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"status": f.Status, "network": f.Network, "from": f.From, "to": f.To, "q": f.Q} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v
}

// params turns f into the partner API's list parameters, or a problem in words.
// The dates are whole UTC days, both inclusive.
func (f listFilter) params() (*pc.ListTransactionsParams, string) {
	limit := 50
	p := &pc.ListTransactionsParams{Limit: &limit}
	if f.Status != "" {
		p.Status = &[]pc.TransactionStatus{pc.TransactionStatus(f.Status)}
	}
	if f.Network != "" {
		n := f.Network
		p.Network = &n
	}
	if f.From != "" {
		t, err := time.Parse(dayLayout, f.From)
		if err != nil {
			return nil, "The from date is not a date (YYYY-MM-DD)."
		}
		p.From = &t
	}
	if f.To != "" {
		t, err := time.Parse(dayLayout, f.To)
		if err != nil {
			return nil, "The to date is not a date (YYYY-MM-DD)."
		}
		end := t.Add(24*time.Hour - time.Nanosecond)
		p.To = &end
	}
	if f.Q != "" {
		searchBy(p, f.Q)
	}
	return p, ""
}

// The shapes a search is told apart by: a chain transaction hash (bep20's 0x and
// 64 hex digits, or trc20's 64 hex digits), a deposit address (bep20's 0x and 40
// hex digits, trc20's T and 33 base58 characters); anything else is a merchant
// reference.
var (
	hashShape    = regexp.MustCompile(`^(0x)?[0-9a-fA-F]{64}$`)
	addressShape = regexp.MustCompile(`^(0x[0-9a-fA-F]{40}|T[1-9A-HJ-NP-Za-km-z]{33})$`)
)

// searchKind names what a search term is taken for.
func searchKind(q string) string {
	switch {
	case hashShape.MatchString(q):
		return "tx_hash"
	case addressShape.MatchString(q):
		return "deposit_address"
	}
	return "merchant_reference"
}

func (d *Dashboard) transactions(w http.ResponseWriter, r *http.Request, ss *session) {
	f := filterOf(r.URL.Query())
	data := map[string]any{"Title": "Transactions", "Section": "transactions", "F": f, "Statuses": statuses, "Networks": d.d.Networks}
	p, problem := f.params()
	if problem != "" {
		data["Error"] = problem
		d.site.Render(w, http.StatusBadRequest, "transactions", ss, data)
		return
	}
	if c := r.URL.Query().Get("cursor"); c != "" {
		p.Cursor = &c
	}
	res, err := d.client(ss).ListTransactionsWithResponse(r.Context(), p)
	if err != nil || res.JSON200 == nil {
		d.listRefused(w, ss, "transactions", data, res, err)
		return
	}
	items, next := res.JSON200.Data.Data, res.JSON200.Data.NextCursor
	if next != nil {
		v := f.values()
		v.Set("cursor", *next)
		data["Next"] = BasePath + "/transactions?" + v.Encode()
	}
	if f.Q != "" {
		data["SearchKind"] = webkit.Words(searchKind(f.Q))
	}
	data["Items"] = items
	d.site.Render(w, http.StatusOK, "transactions", ss, data)
}

func (d *Dashboard) transaction(w http.ResponseWriter, r *http.Request, ss *session) {
	id, ok := d.site.PathID(w, r, ss)
	if !ok {
		return
	}
	d.showTransaction(w, r, ss, id, http.StatusOK, nil)
}

// showTransaction renders transaction id with its deposits, status history, the
// webhook events it emitted and (in the sandbox) the simulator's actions, with
// extra data (a simulation's outcome).
func (d *Dashboard) showTransaction(w http.ResponseWriter, r *http.Request, ss *session, id uuid.UUID, status int, extra map[string]any) {
	ctx, cl := r.Context(), d.client(ss)
	tx, err := cl.GetTransactionWithResponse(ctx, id)
	if err != nil || tx.JSON200 == nil {
		d.site.Failed(w, ss, webkit.StatusOf(tx, err), webkit.BodyOf(tx))
		return
	}
	hist, err := cl.GetTransactionStatusHistoryWithResponse(ctx, id)
	if err != nil || hist.JSON200 == nil {
		d.site.Failed(w, ss, webkit.StatusOf(hist, err), webkit.BodyOf(hist))
		return
	}
	limit := 100
	events, err := cl.ListWebhookEventsWithResponse(ctx, &pc.ListWebhookEventsParams{TransactionId: &id, Limit: &limit})
	if err != nil || events.JSON200 == nil {
		d.site.Failed(w, ss, webkit.StatusOf(events, err), webkit.BodyOf(events))
		return
	}
	data := map[string]any{"Title": "Transaction " + webkit.IsolateText(tx.JSON200.Data.MerchantReference), "Section": "transactions",
		"T": tx.JSON200.Data, "History": hist.JSON200.Data.History, "Events": events.JSON200.Data.Data,
		"EventsMore": events.JSON200.Data.HasMore}
	if !d.d.Production && permits(ss.Data.Role, sandboxRoles) {
		data["Simulations"] = simulations
		data["FormKey"] = formKey()
	}
	for k, v := range extra {
		data[k] = v
	}
	d.site.Render(w, status, "transaction", ss, data)
}

// simulations are the sandbox simulator's events, offered on a transaction's page.
var simulations = []pc.SimulateRequestEvent{pc.SimulateRequestEventDepositDetected, pc.SimulateRequestEventDepositConfirmed,
	pc.SimulateRequestEventTransactionCompleted, pc.SimulateRequestEventPayoutSettled, pc.SimulateRequestEventTransactionFailed,
	pc.SimulateRequestEventTransactionRefunded, pc.SimulateRequestEventTransactionExpired}

// simulate runs one of the sandbox simulator's events on the transaction,
// through the partner API (which refuses what the transaction's state does not
// allow, and is absent in production).
func (d *Dashboard) simulate(w http.ResponseWriter, r *http.Request, ss *session) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil || d.d.Production {
		d.site.NotFound(w, ss)
		return
	}
	body := pc.SimulateRequest{Event: pc.SimulateRequestEvent(r.PostFormValue("event")), TransactionId: id}
	if a := strings.TrimSpace(r.PostFormValue("amount")); a != "" {
		body.Amount = &a
	}
	key := idempotencyKey(r)
	res, err := d.client(ss).SimulateSandboxEventWithResponse(background(r.Context()),
		&pc.SimulateSandboxEventParams{IdempotencyKey: &key}, body)
	status := webkit.StatusOf(res, err)
	if status == http.StatusNotFound {
		d.site.NotFound(w, ss)
		return
	}
	if status != http.StatusOK {
		d.showTransaction(w, r, ss, id, status, map[string]any{"SimError": webkit.APIError(status, webkit.BodyOf(res))})
		return
	}
	d.d.Logger.Info("dashboard sandbox simulation", "partner_id", ss.Data.PartnerID.String(), "user_id", ss.Data.UserID.String(),
		"transaction_id", id.String(), "event", string(body.Event))
	http.Redirect(w, r, BasePath+"/transactions/"+id.String()+"?simulated="+url.QueryEscape(string(body.Event)), http.StatusSeeOther)
}

// searchBy narrows p to the search term q, by what q looks like: a chain hash,
// a deposit address, else a merchant reference.
func searchBy(p *pc.ListTransactionsParams, q string) {
	switch searchKind(q) {
	case "tx_hash":
		p.TxHash = &q
	case "deposit_address":
		p.DepositAddress = &q
	default:
		p.MerchantReference = &q
	}
}
