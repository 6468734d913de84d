package httpapi

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"partnerd/gen/api"
	"partnerd/internal/backoffice/revenue"
	"partnerd/internal/httpkit"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/lifecycle"
	"partnerd/internal/pricing/money"
	"partnerd/internal/sandbox"
)

// CancelTransaction cancels an awaiting_deposit transaction (POST
// /transactions/{id}/cancel).
func (s *Server) CancelTransaction(ctx context.Context, req api.CancelTransactionRequestObject) (api.CancelTransactionResponseObject, error) {
	p, err := partnerFrom(ctx)
	if err != nil {
		return nil, err
	}
	answer := func(t *lifecycle.Transaction) api.CancelTransactionResponseObject {
		msg := "Transaction cancelled."
		return api.CancelTransaction200JSONResponse{Body: api.TransactionResponse{Success: true, Message: &msg, Data: transactionOut(t)}}
	}
	key := httpkit.KeyedBy[lifecycle.Tx](ctx, s.keys, answer, api.CancelTransactionResponseObject.VisitCancelTransactionResponse)
	t, err := s.lifecycle.Cancel(ctx, key, p.ID, req.Id)
	if err != nil {
		return nil, err
	}
	return answer(t), nil
}

// GetTransactionStatusHistory returns every status change, oldest first.
func (s *Server) GetTransactionStatusHistory(ctx context.Context, req api.GetTransactionStatusHistoryRequestObject) (api.GetTransactionStatusHistoryResponseObject, error) {
	p, err := partnerFrom(ctx)
	if err != nil {
		return nil, err
	}
	t, err := s.transactions.Get(ctx, p.ID, req.Id)
	if err != nil {
		return nil, err
	}
	hist, err := s.history.History(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	entries := make([]api.StatusHistoryEntry, len(hist))
	for i, h := range hist {
		e := api.StatusHistoryEntry{ChangedAt: h.ChangedAt, ToStatus: api.TransactionStatus(h.To), Reason: h.Reason}
		if h.From != "" {
			from := api.TransactionStatus(h.From)
			e.FromStatus = &from
		}
		if h.Metadata != nil {
			m := h.Metadata
			e.Metadata = &m
		}
		entries[i] = e
	}
	return api.GetTransactionStatusHistory200JSONResponse{Success: true, Data: api.StatusHistory{
		Id: t.ID, Status: api.TransactionStatus(t.Status), History: entries,
	}}, nil
}

// SimulateSandboxEvent drives a lifecycle event through the same services as real
// processing (POST /sandbox/simulate; never served in production).
func (s *Server) SimulateSandboxEvent(ctx context.Context, req api.SimulateSandboxEventRequestObject) (api.SimulateSandboxEventResponseObject, error) {
	p, err := partnerFrom(ctx)
	if err != nil {
		return nil, err
	}
	answer := func(t *lifecycle.Transaction) api.SimulateSandboxEventResponseObject {
		return api.SimulateSandboxEvent200JSONResponse{TransactionDetailOKJSONResponse: detailResponse(t)}
	}
	key := httpkit.KeyedBy[lifecycle.Tx](ctx, s.keys, answer, api.SimulateSandboxEventResponseObject.VisitSimulateSandboxEventResponse)
	b := req.Body
	ev := sandbox.Event{
		Type: lifecycle.EventType(b.Event), TransactionID: b.TransactionId, DepositID: b.DepositId, Hash: b.BlockchainHash,
		Sender: b.Sender,
	}
	if b.Amount != nil {
		amount, err := money.ParseTokens(*b.Amount)
		if err != nil || !amount.IsPositive() {
			return nil, apperr.Field(apperr.InvalidRequest, "The simulated amount must be a positive token amount.", "/amount", "must be a decimal greater than 0 with at most 6 decimal places")
		}
		ev.Amount = &amount
	}
	t, err := s.simulator.Simulate(ctx, key, actorOf(ctx, p), p.ID, ev)
	if err != nil {
		return nil, err
	}
	return answer(t), nil
}

// ListRevenue returns a page of the revenue ledger (GET /revenue).
func (s *Server) ListRevenue(ctx context.Context, req api.ListRevenueRequestObject) (api.ListRevenueResponseObject, error) {
	p, err := partnerFrom(ctx)
	if err != nil {
		return nil, err
	}
	q := req.Params
	limit, after := httpkit.PageParams(q.Limit, q.Cursor)
	page, err := s.ledger.List(ctx, p.ID, revenue.Filter{From: q.From, To: q.To, Token: q.CryptoCurrency, Network: q.Network},
		limit, after, q.IncludeSummary != nil && *q.IncludeSummary)
	if err != nil {
		return nil, err
	}
	rows := make([]api.RevenueRow, len(page.Rows))
	for i, r := range page.Rows {
		rows[i] = api.RevenueRow{
			TransactionId: r.TransactionID, MerchantReference: r.MerchantReference, MerchantId: r.MerchantID,
			TerminalId: r.TerminalID, Network: r.Network, CryptoCurrency: r.Token,
			CryptoAmount: money.FormatTokens(r.CryptoAmount), Amount: money.FormatFiat(r.FiatAmount),
			PlatformFee: money.FormatFiat(r.PlatformFee), Share: money.FormatFiat(r.Share), Ts: r.TS,
		}
	}
	out := api.RevenuePage{Data: rows, HasMore: page.HasMore, Limit: page.Limit, NextCursor: page.NextCursor}
	if sm := page.Summary; sm != nil {
		out.Summary = &api.RevenueSummary{From: sm.From, To: sm.To, TotalPartnerShare: money.FormatFiat(sm.TotalPartnerShare), TransactionCount: int(sm.Count)}
	}
	return api.ListRevenue200JSONResponse{Success: true, Data: out}, nil
}

// hideInProduction makes the simulator route answer exactly like an unknown route.
func hideInProduction(production bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if production {
				return echo.NewHTTPError(http.StatusNotFound)
			}
			return next(c)
		}
	}
}
