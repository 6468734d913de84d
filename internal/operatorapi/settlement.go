package operatorapi

import (
	"context"

	"partnerd/gen/operatorapi"
	"partnerd/internal/kit/apperr"
)

// ListBanks lists the transfer provider's banks (GET /banks).
func (s *Server) ListBanks(ctx context.Context, req operatorapi.ListBanksRequestObject) (operatorapi.ListBanksResponseObject, error) {
	return nil, apperr.New(apperr.ServiceUnavailable, "No transfer provider is configured.")
}

// GetSettlementAccount returns a partner's settlement account (GET
// /partners/{id}/settlement-account).
func (s *Server) GetSettlementAccount(ctx context.Context, req operatorapi.GetSettlementAccountRequestObject) (operatorapi.GetSettlementAccountResponseObject, error) {
	return nil, apperr.New(apperr.ServiceUnavailable, "No transfer provider is configured.")
}

// PutSettlementAccount sets a partner's settlement account after name enquiry
// (PUT /partners/{id}/settlement-account).
func (s *Server) PutSettlementAccount(ctx context.Context, req operatorapi.PutSettlementAccountRequestObject) (operatorapi.PutSettlementAccountResponseObject, error) {
	return nil, apperr.New(apperr.ServiceUnavailable, "No transfer provider is configured.")
}
