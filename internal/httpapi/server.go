// Package httpapi is the partner API's HTTP layer. It implements the strict server
// interface generated from openapi/partner.yaml, mapping generated types to domain
// calls and back exactly once, and owns the transport concerns: authentication,
// request validation, request ids and the error-code → status table. It holds no SQL
// and no business rules.
package httpapi

import (
	"context"
	"log/slog"

	"github.com/google/uuid"

	"partnerd/gen/api"
	"partnerd/internal/apperr"
	"partnerd/internal/money"
	"partnerd/internal/partners"
	"partnerd/internal/quotes"
	"partnerd/internal/transactions"
)

// Server implements the generated StrictServerInterface.
type Server struct {
	partners     *partners.Service
	quotes       *quotes.Service
	transactions *transactions.Service
	lister       *transactions.Lister
	lifecycle    *transactions.Lifecycle
	ledger       *transactions.Ledger
	history      HistoryReader
	log          *slog.Logger
}

// HistoryReader reads status histories.
type HistoryReader interface {
	History(ctx context.Context, transactionID uuid.UUID) ([]transactions.HistoryEntry, error)
}

var _ api.StrictServerInterface = (*Server)(nil)

// notImplemented is the answer of operations declared in the contract whose
// capability has not shipped yet; the spec declares 501 on exactly those.
var notImplemented = apperr.New(apperr.NotImplemented, "This operation is not available yet.")

// CreateQuote prices an amount and stores the quote (POST /quotes).
func (s *Server) CreateQuote(ctx context.Context, req api.CreateQuoteRequestObject) (api.CreateQuoteResponseObject, error) {
	p, err := partnerFrom(ctx)
	if err != nil {
		return nil, err
	}
	q, err := s.quotes.Create(ctx, p.ID, quotes.Request{
		Token:        req.Body.CryptoCurrency,
		Network:      req.Body.Network,
		CryptoAmount: req.Body.CryptoAmount,
		FiatAmount:   req.Body.FiatAmount,
	})
	if err != nil {
		return nil, err
	}
	return api.CreateQuote201JSONResponse{Success: true, Data: quoteOut(q)}, nil
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

// GetWebhookEndpoint is not available yet.
func (s *Server) GetWebhookEndpoint(context.Context, api.GetWebhookEndpointRequestObject) (api.GetWebhookEndpointResponseObject, error) {
	return nil, notImplemented
}

// PutWebhookEndpoint is not available yet.
func (s *Server) PutWebhookEndpoint(context.Context, api.PutWebhookEndpointRequestObject) (api.PutWebhookEndpointResponseObject, error) {
	return nil, notImplemented
}

// RotateWebhookSecret is not available yet.
func (s *Server) RotateWebhookSecret(context.Context, api.RotateWebhookSecretRequestObject) (api.RotateWebhookSecretResponseObject, error) {
	return nil, notImplemented
}

// ListWebhookEvents is not available yet.
func (s *Server) ListWebhookEvents(context.Context, api.ListWebhookEventsRequestObject) (api.ListWebhookEventsResponseObject, error) {
	return nil, notImplemented
}

// GetWebhookEvent is not available yet.
func (s *Server) GetWebhookEvent(context.Context, api.GetWebhookEventRequestObject) (api.GetWebhookEventResponseObject, error) {
	return nil, notImplemented
}

// ReplayWebhookEvent is not available yet.
func (s *Server) ReplayWebhookEvent(context.Context, api.ReplayWebhookEventRequestObject) (api.ReplayWebhookEventResponseObject, error) {
	return nil, notImplemented
}
