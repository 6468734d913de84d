package httpapi

import (
	"context"

	"partnerd/gen/api"
	"partnerd/internal/kit/apperr"
)

// AcceptTransaction takes an expired transaction's short payment at a fresh rate
// (POST /transactions/{id}/accept).
func (s *Server) AcceptTransaction(ctx context.Context, req api.AcceptTransactionRequestObject) (api.AcceptTransactionResponseObject, error) {
	return nil, apperr.New(apperr.InvalidStateTransition, "Not available yet.")
}

// RefundTransaction asks for an expired transaction's short payment back (POST
// /transactions/{id}/refund).
func (s *Server) RefundTransaction(ctx context.Context, req api.RefundTransactionRequestObject) (api.RefundTransactionResponseObject, error) {
	return nil, apperr.New(apperr.InvalidStateTransition, "Not available yet.")
}
