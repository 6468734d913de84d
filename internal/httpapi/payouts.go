package httpapi

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"partnerd/gen/api"
	"partnerd/internal/backoffice/batches"
	"partnerd/internal/backoffice/payouts"
	"partnerd/internal/httpkit"
	"partnerd/internal/kit/csvexport"
	"partnerd/internal/pricing/money"
)

// ListPayouts returns a page of the payouts that paid the partner (GET /payouts).
func (s *Server) ListPayouts(ctx context.Context, req api.ListPayoutsRequestObject) (api.ListPayoutsResponseObject, error) {
	p, err := partnerFrom(ctx)
	if err != nil {
		return nil, err
	}
	limit, after := httpkit.PageParams(req.Params.Limit, req.Params.Cursor)
	page, err := s.payouts.List(ctx, p.ID, req.Params.From, req.Params.To, limit, after)
	if err != nil {
		return nil, err
	}
	items := make([]api.Payout, len(page.Items))
	for i, b := range page.Items {
		items[i] = payoutOut(b)
	}
	return api.ListPayouts200JSONResponse{Success: true, Data: api.PayoutPage{
		Data: items, HasMore: page.HasMore, Limit: page.Limit, NextCursor: page.NextCursor,
	}}, nil
}

// GetPayout returns one payout of the partner with its transactions (GET /payouts/{id}).
func (s *Server) GetPayout(ctx context.Context, req api.GetPayoutRequestObject) (api.GetPayoutResponseObject, error) {
	p, err := partnerFrom(ctx)
	if err != nil {
		return nil, err
	}
	d, err := s.payouts.Get(ctx, p.ID, req.Id)
	if err != nil {
		return nil, err
	}
	out := payoutOut(d.Batch)
	txs := make([]api.PayoutTransaction, len(d.Transactions))
	for i, t := range d.Transactions {
		txs[i] = api.PayoutTransaction{TransactionId: t.ID, MerchantReference: t.MerchantReference, Network: t.Network,
			CryptoCurrency: t.Token, CryptoAmount: money.FormatTokens(t.CryptoAmount), Amount: money.FormatFiat(t.FiatAmount)}
	}
	return api.GetPayout200JSONResponse{Success: true, Data: api.PayoutDetail{
		Id: out.Id, Reference: out.Reference, Amount: out.Amount, TransactionCount: out.TransactionCount,
		CreatedAt: out.CreatedAt, Transactions: txs,
	}}, nil
}

// GetBalance returns what the partner is owed and was paid (GET /balance).
func (s *Server) GetBalance(ctx context.Context, _ api.GetBalanceRequestObject) (api.GetBalanceResponseObject, error) {
	p, err := partnerFrom(ctx)
	if err != nil {
		return nil, err
	}
	b, err := s.payouts.Balance(ctx, p.ID, time.Now())
	if err != nil {
		return nil, err
	}
	line := func(l payouts.Line) api.BalanceLine {
		return api.BalanceLine{Amount: money.FormatFiat(l.Amount), TransactionCount: l.Transactions}
	}
	return api.GetBalance200JSONResponse{Success: true, Data: api.Balance{Currency: api.NGN,
		Owed: line(b.Owed), InPayout: line(b.InPayout), PaidOut: line(b.PaidOut), PayoutCount: b.Payouts,
		PeriodStart: b.PeriodStart, PeriodEnd: b.PeriodEnd, AsOf: b.AsOf}}, nil
}

func payoutOut(b *batches.Batch) api.Payout {
	return api.Payout{Id: b.ID, Reference: b.Reference, Amount: money.FormatFiat(b.FiatAmount),
		TransactionCount: b.Size(), CreatedAt: b.CreatedAt}
}

// ExportTransactions streams the partner's transactions of a period as CSV
// (GET /exports/transactions).
func (s *Server) ExportTransactions(ctx context.Context, req api.ExportTransactionsRequestObject) (api.ExportTransactionsResponseObject, error) {
	p, err := partnerFrom(ctx)
	if err != nil {
		return nil, err
	}
	from, to := csvexport.Window(req.Params.From, req.Params.To, time.Now())
	body, err := s.stream(ctx, func(w io.Writer) error { return s.lister.WriteCSV(ctx, w, p.ID, from, to) })
	if err != nil {
		return nil, err
	}
	return api.ExportTransactions200TextcsvResponse{Body: body,
		Headers: api.ExportTransactions200ResponseHeaders{ContentDisposition: csvexport.Disposition("transactions", from, to)}}, nil
}

// ExportPayouts streams the partner's payouts of a period as CSV, one row per
// transaction paid (GET /exports/payouts).
func (s *Server) ExportPayouts(ctx context.Context, req api.ExportPayoutsRequestObject) (api.ExportPayoutsResponseObject, error) {
	p, err := partnerFrom(ctx)
	if err != nil {
		return nil, err
	}
	from, to := csvexport.Window(req.Params.From, req.Params.To, time.Now())
	body, err := s.stream(ctx, func(w io.Writer) error { return s.payouts.WriteCSV(ctx, w, p.ID, from, to) })
	if err != nil {
		return nil, err
	}
	return api.ExportPayouts200TextcsvResponse{Body: body,
		Headers: api.ExportPayouts200ResponseHeaders{ContentDisposition: csvexport.Disposition("payouts", from, to)}}, nil
}

// stream runs write in its own goroutine into a pipe the response copies from,
// so an export of any size is sent as it is read. It returns once write has
// produced its first bytes: a failure before them (the database out of reach at
// the first query) is returned, so the answer is the error body, not a 200. An
// error after the first bytes cannot change the status any more: it ends the
// body early (the client sees a cut transfer, never a short file that looks
// whole) and is logged.
func (s *Server) stream(ctx context.Context, write func(io.Writer) error) (io.ReadCloser, error) {
	r, w := io.Pipe()
	first := &firstWrite{w: w, began: make(chan error, 1)}
	started := time.Now()
	go func() {
		err := write(first)
		first.signal(err)
		if err != nil {
			if ctx.Err() == nil {
				s.log.ErrorContext(ctx, "export failed", "error", err, "after", time.Since(started).String())
			}
			err = fmt.Errorf("%w: %w", httpkit.ErrStreamBroken, err)
		}
		w.CloseWithError(err)
	}()
	if err := <-first.began; err != nil {
		_ = r.Close()
		return nil, err
	}
	return r, nil
}

// firstWrite tells, once, whether its writer began (nil) or failed first.
type firstWrite struct {
	w     io.Writer
	once  sync.Once
	began chan error
}

func (f *firstWrite) signal(err error) { f.once.Do(func() { f.began <- err }) }

func (f *firstWrite) Write(p []byte) (int, error) {
	f.signal(nil)
	return f.w.Write(p)
}
