// Package httpapi is the partner API's HTTP layer. It implements the strict server
// interface generated from openapi/partner.yaml, mapping generated types to domain
// calls and back exactly once, and owns what is the partner API's own: partner
// authentication, its routes and its security headers. The transport it shares
// with the operator API (error body and status table, request checks, validation,
// the idempotency layer) is package httpkit. It holds no SQL and no business rules.
package httpapi

import (
	"context"
	"log/slog"

	"github.com/google/uuid"

	"partnerd/gen/api"
	"partnerd/internal/backoffice/payouts"
	"partnerd/internal/backoffice/revenue"
	"partnerd/internal/deposits"
	"partnerd/internal/httpkit"
	"partnerd/internal/idempotency"
	"partnerd/internal/lifecycle"
	"partnerd/internal/partners"
	"partnerd/internal/pricing/money"
	"partnerd/internal/pricing/quotes"
	"partnerd/internal/sandbox"
	"partnerd/internal/transactions"
	"partnerd/internal/webhook"
)

// Server implements the generated StrictServerInterface.
type Server struct {
	partners     *partners.Service
	quotes       *quotes.Service
	transactions *transactions.Service
	lister       *transactions.Lister
	decisions    *transactions.Decisions
	lifecycle    *lifecycle.Engine
	ledger       *revenue.Ledger
	payouts      *payouts.Service
	history      HistoryReader
	endpoints    *webhook.Endpoints
	events       *webhook.Log
	simulator    *sandbox.Simulator
	rescans      *deposits.Rescanner
	// keys keeps the partners' idempotency keys: a keyed request's use case
	// stores its answer among them (httpkit.KeyedBy).
	keys *idempotency.Service
	log  *slog.Logger
}

// HistoryReader reads status histories.
type HistoryReader interface {
	History(ctx context.Context, transactionID uuid.UUID) ([]lifecycle.HistoryEntry, error)
}

var _ api.StrictServerInterface = (*Server)(nil)

// CreateQuote prices an amount and stores the quote (POST /quotes).
func (s *Server) CreateQuote(ctx context.Context, req api.CreateQuoteRequestObject) (api.CreateQuoteResponseObject, error) {
	p, err := partnerFrom(ctx)
	if err != nil {
		return nil, err
	}
	answer := func(q *quotes.Quote) api.CreateQuoteResponseObject {
		return api.CreateQuote201JSONResponse{Success: true, Data: quoteOut(q)}
	}
	key := httpkit.KeyedBy[quotes.Tx](ctx, s.keys, answer, api.CreateQuoteResponseObject.VisitCreateQuoteResponse)
	q, err := s.quotes.Create(ctx, key, p.ID, quotes.Request{
		Token:        req.Body.CryptoCurrency,
		Network:      req.Body.Network,
		CryptoAmount: req.Body.CryptoAmount,
		FiatAmount:   req.Body.FiatAmount,
	})
	if err != nil {
		return nil, err
	}
	return answer(q), nil
}

func quoteOut(q *quotes.Quote) api.Quote {
	fiat := money.FormatFiat(q.FiatAmount)
	return api.Quote{
		QuoteId:        q.ID,
		CryptoCurrency: q.Token,
		Network:        q.Network,
		BaseRate:       money.FormatRate(q.BaseRate),
		AdjustedRate:   money.FormatRate(q.AdjustedRate),
		Amount:         fiat,
		CryptoAmount:   money.FormatTokens(q.CryptoAmount),
		FiatAmount:     fiat,
		CreatedAt:      q.CreatedAt,
		ExpiresAt:      q.ExpiresAt,
	}
}
