package console

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	oc "partnerd/gen/operatorclient"
	"partnerd/internal/kit/csvexport"
	"partnerd/internal/web/webkit"
)

// Every console list downloads as CSV under the service's CSV rules
// (internal/kit/csvexport: RFC 4180, UTF-8, a header row, exact decimal strings, UTC
// times, free text neutralised for spreadsheets): the same filter as the page,
// every page of it (the export follows the operator API's cursor to the end,
// writing each page as it arrives). The columns are listed in internal/contract/docs/guide/operators.md.

// csvOut writes one CSV download.
type csvOut struct {
	w   http.ResponseWriter
	csv *csvexport.Writer
}

// csvStart answers with a CSV attachment named name and writes its header.
func csvStart(w http.ResponseWriter, name string, header ...string) *csvOut {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	w.WriteHeader(http.StatusOK)
	out, _ := csvexport.New(w, header...)
	return &csvOut{w: w, csv: out}
}

// row writes one row of cells (built with text, amount, when and id).
func (o *csvOut) row(cells ...string) {
	cs := make([]csvexport.Cell, len(cells))
	for i, c := range cells {
		cs[i] = csvexport.Cell(c)
	}
	_ = o.csv.Row(cs...)
}

// flush sends what is written so far (after each page).
func (o *csvOut) flush() {
	_ = o.csv.Flush()
	if f, ok := o.w.(http.Flusher); ok {
		f.Flush()
	}
}

// text is a free-text cell (csvexport.Text).
func text(s string) string { return string(csvexport.Text(s)) }

// textp is text of an optional string ("" for nil).
func textp(s *string) string { return string(csvexport.OptText(s)) }

// amount is an exact decimal string, as the API gave it (csvexport.Amount).
func amount(s string) string { return string(csvexport.Amount(s)) }

// when is t in UTC, RFC 3339 ("" for nil).
func when(t *time.Time) string { return string(csvexport.OptTime(t)) }

// id is an optional id ("" for nil).
func id(u *uuid.UUID) string {
	if u == nil {
		return ""
	}
	return u.String()
}

// exportPages calls fetch with each page's cursor (nil first) until it reports no next
// one; fetch writes its rows to *out, starting the download on the first page. A
// failure before anything is written is answered as the page's error; a later one
// ends the download early (logged).
func (c *Console) exportPages(w http.ResponseWriter, ss *session, out **csvOut, fetch func(cursor *string) (next *string, status int, body []byte, ok bool)) {
	var cur *string
	for {
		next, status, body, ok := fetch(cur)
		if !ok {
			if *out == nil {
				c.site.Failed(w, ss, status, body)
				return
			}
			c.d.Logger.Error("console CSV export cut short", "status", status)
			(*out).flush()
			return
		}
		(*out).flush()
		if next == nil {
			return
		}
		cur = next
	}
}

// transactionsCSV is the transactions list (stage and search) as CSV.
func (c *Console) transactionsCSV(w http.ResponseWriter, r *http.Request, ss *session) {
	q := r.URL.Query()
	p := oc.ListStageParams{Order: ptr(oc.Oldest), Limit: ptr(100)}
	if s := q.Get("stage"); s != "" {
		p.Stage = ptr(oc.Stage(s))
	}
	if s := strings.TrimSpace(q.Get("q")); s != "" {
		p.Q = &s
	}
	var out *csvOut
	start := func() *csvOut {
		out = csvStart(w, "transactions.csv", "created_at", "id", "merchant_reference", "partner_id", "partner_name", "status",
			"network", "deposit_address", "crypto_amount", "fiat_amount", "rate", "updated_at")
		return out
	}
	c.exportPages(w, ss, &out, func(cur *string) (*string, int, []byte, bool) {
		p.Cursor = cur
		res, err := c.client(ss).ListStageWithResponse(r.Context(), &p)
		if err != nil || res.JSON200 == nil {
			return nil, webkit.StatusOf(res, err), webkit.BodyOf(res), false
		}
		if out == nil {
			start()
		}
		for _, t := range res.JSON200.Data.Data {
			out.row(when(&t.CreatedAt), t.Id.String(), text(t.MerchantReference), t.PartnerId.String(), text(t.PartnerName),
				string(t.Status), t.Network, t.DepositAddress, amount(t.CryptoAmount), amount(t.Amount), amount(t.Rate), when(&t.UpdatedAt))
		}
		return res.JSON200.Data.NextCursor, 0, nil, true
	})
}

// refundTasksCSV is the refund tasks list (kind, status, partner, network) as CSV.
func (c *Console) refundTasksCSV(w http.ResponseWriter, r *http.Request, ss *session) {
	f := refundFilterOf(r.URL.Query())
	p, err := f.params()
	if err != nil {
		c.site.Message(w, http.StatusBadRequest, ss, "Not found", "No such partner.")
		return
	}
	names := c.partnerNames(r, ss)
	var out *csvOut
	start := func() *csvOut {
		out = csvStart(w, "refund-tasks.csv", "created_at", "id", "kind", "status", "network", "amount", "from_address", "to_address",
			"tx_hash", "log_index", "transaction_id", "partner_id", "partner_name", "resolution_tx_hash", "resolution_note", "resolved_at")
		return out
	}
	c.exportPages(w, ss, &out, func(cur *string) (*string, int, []byte, bool) {
		p.Cursor = cur
		res, err := c.client(ss).ListRefundTasksWithResponse(r.Context(), p)
		if err != nil || res.JSON200 == nil {
			return nil, webkit.StatusOf(res, err), webkit.BodyOf(res), false
		}
		if out == nil {
			start()
		}
		for _, t := range res.JSON200.Data.Data {
			out.row(when(&t.CreatedAt), t.Id.String(), string(t.Kind), string(t.Status), t.Network, amount(t.Amount), text(t.FromAddress),
				text(t.ToAddress), text(t.TxHash), strconv.Itoa(t.LogIndex), id(t.TransactionId), id(t.PartnerId), text(names[id(t.PartnerId)]),
				textp(t.ResolutionTxHash), textp(t.ResolutionNote), when(t.ResolvedAt))
		}
		return res.JSON200.Data.NextCursor, 0, nil, true
	})
}

// partnerNames maps partner ids to names ("" when the list cannot be read).
func (c *Console) partnerNames(r *http.Request, ss *session) map[string]string {
	names := map[string]string{}
	if res, err := c.client(ss).ListPartnersWithResponse(r.Context()); err == nil && res.JSON200 != nil {
		for _, p := range res.JSON200.Data {
			names[p.Id.String()] = p.Name
		}
	}
	return names
}

// depositsCSV is the open unmatched deposits list as CSV.
func (c *Console) depositsCSV(w http.ResponseWriter, r *http.Request, ss *session) {
	p := oc.ListUnmatchedDepositsParams{Limit: ptr(100)}
	var out *csvOut
	start := func() *csvOut {
		out = csvStart(w, "unmatched-deposits.csv", "created_at", "id", "network", "tx_hash", "log_index", "to_address",
			"amount", "status")
		return out
	}
	c.exportPages(w, ss, &out, func(cur *string) (*string, int, []byte, bool) {
		p.Cursor = cur
		res, err := c.client(ss).ListUnmatchedDepositsWithResponse(r.Context(), &p)
		if err != nil || res.JSON200 == nil {
			return nil, webkit.StatusOf(res, err), webkit.BodyOf(res), false
		}
		if out == nil {
			start()
		}
		for _, d := range res.JSON200.Data.Data {
			out.row(when(&d.CreatedAt), d.Id.String(), d.Network, text(d.TxHash), strconv.Itoa(d.LogIndex),
				text(d.ToAddress), amount(d.Amount), string(d.Status))
		}
		return res.JSON200.Data.NextCursor, 0, nil, true
	})
}

// auditCSV is the audit log as CSV.
func (c *Console) auditCSV(w http.ResponseWriter, r *http.Request, ss *session) {
	p := oc.ListAuditParams{Limit: ptr(100)}
	var out *csvOut
	start := func() *csvOut {
		out = csvStart(w, "audit.csv", "created_at", "id", "operator_id", "operator_name", "action", "partner_id", "partner_name",
			"transaction_id", "refund_task_id", "batch_id", "subject_id", "subject_name", "reference")
		return out
	}
	c.exportPages(w, ss, &out, func(cur *string) (*string, int, []byte, bool) {
		p.Cursor = cur
		res, err := c.client(ss).ListAuditWithResponse(r.Context(), &p)
		if err != nil || res.JSON200 == nil {
			return nil, webkit.StatusOf(res, err), webkit.BodyOf(res), false
		}
		if out == nil {
			start()
		}
		for _, e := range res.JSON200.Data.Data {
			out.row(when(&e.CreatedAt), e.Id.String(), e.OperatorId.String(), text(e.OperatorName), string(e.Action), id(e.PartnerId),
				textp(e.PartnerName), id(e.TransactionId), id(e.UnmatchedDepositId), id(e.BatchId), id(e.SubjectId), textp(e.SubjectName),
				textp(e.Reference))
		}
		return res.JSON200.Data.NextCursor, 0, nil, true
	})
}

// batchesCSV is the batch payouts or fills as CSV.
func (c *Console) batchesCSV(kind oc.BatchKind) webkit.Handler[signedIn] {
	return func(w http.ResponseWriter, r *http.Request, ss *session) {
		names := c.partnerNames(r, ss)
		var out *csvOut
		start := func() *csvOut {
			out = csvStart(w, fmt.Sprintf("%ss.csv", kind), "created_at", "id", "kind", "partner_id", "partner_name", "reference", "rate",
				"crypto_amount", "fiat_amount", "transactions", "transaction_ids", "operator_id")
			return out
		}
		c.exportPages(w, ss, &out, func(cur *string) (*string, int, []byte, bool) {
			var page *oc.BatchPage
			var status int
			var body []byte
			if kind == oc.BatchKindPayout {
				res, err := c.client(ss).ListPayoutsWithResponse(r.Context(), &oc.ListPayoutsParams{Limit: ptr(100), Cursor: cur})
				if err == nil && res.JSON200 != nil {
					page = &res.JSON200.Data
				}
				status, body = webkit.StatusOf(res, err), webkit.BodyOf(res)
			} else {
				res, err := c.client(ss).ListFillsWithResponse(r.Context(), &oc.ListFillsParams{Limit: ptr(100), Cursor: cur})
				if err == nil && res.JSON200 != nil {
					page = &res.JSON200.Data
				}
				status, body = webkit.StatusOf(res, err), webkit.BodyOf(res)
			}
			if page == nil {
				return nil, status, body, false
			}
			if out == nil {
				start()
			}
			for _, b := range page.Data {
				ids := make([]string, len(b.TransactionIds))
				for i, t := range b.TransactionIds {
					ids[i] = t.String()
				}
				rate := ""
				if b.Rate != nil {
					rate = amount(*b.Rate)
				}
				out.row(when(&b.CreatedAt), b.Id.String(), string(b.Kind), id(b.PartnerId), text(names[id(b.PartnerId)]), text(b.Reference),
					rate, amount(b.CryptoAmount), amount(b.FiatAmount), strconv.Itoa(len(ids)), strings.Join(ids, " "), b.OperatorId.String())
			}
			return page.NextCursor, 0, nil, true
		})
	}
}
