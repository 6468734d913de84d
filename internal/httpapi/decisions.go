package httpapi

import (
	"context"

	"partnerd/gen/api"
	"partnerd/internal/httpkit"
	"partnerd/internal/lifecycle"
	"partnerd/internal/transactions"
)

// AcceptTransaction takes an expired transaction's short payment at a fresh rate
// (POST /transactions/{id}/accept).
func (s *Server) AcceptTransaction(ctx context.Context, req api.AcceptTransactionRequestObject) (api.AcceptTransactionResponseObject, error) {
	p, err := partnerFrom(ctx)
	if err != nil {
		return nil, err
	}
	answer := func(t *lifecycle.Transaction) api.AcceptTransactionResponseObject {
		return api.AcceptTransaction200JSONResponse{TransactionDetailOKJSONResponse: detailResponse(t)}
	}
	key := httpkit.KeyedBy[transactions.DecisionTx](ctx, s.keys, answer, api.AcceptTransactionResponseObject.VisitAcceptTransactionResponse)
	t, err := s.decisions.Accept(ctx, key, p.ID, req.Id)
	if err != nil {
		return nil, err
	}
	return answer(t), nil
}

// RefundTransaction asks for an expired transaction's short payment back (POST
// /transactions/{id}/refund).
func (s *Server) RefundTransaction(ctx context.Context, req api.RefundTransactionRequestObject) (api.RefundTransactionResponseObject, error) {
	p, err := partnerFrom(ctx)
	if err != nil {
		return nil, err
	}
	answer := func(t *lifecycle.Transaction) api.RefundTransactionResponseObject {
		return api.RefundTransaction200JSONResponse{TransactionDetailOKJSONResponse: detailResponse(t)}
	}
	key := httpkit.KeyedBy[transactions.DecisionTx](ctx, s.keys, answer, api.RefundTransactionResponseObject.VisitRefundTransactionResponse)
	var address *string
	if req.Body != nil {
		address = req.Body.Address
	}
	t, err := s.decisions.Refund(ctx, key, p.ID, req.Id, address)
	if err != nil {
		return nil, err
	}
	return answer(t), nil
}
