package operatorapi

import (
	"context"

	"partnerd/gen/operatorapi"
	"partnerd/internal/backoffice/settlement"
	"partnerd/internal/httpkit"
)

// ListBanks lists the transfer provider's banks (GET /banks).
func (s *Server) ListBanks(ctx context.Context, _ operatorapi.ListBanksRequestObject) (operatorapi.ListBanksResponseObject, error) {
	banks, err := s.settlement.Banks(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]operatorapi.Bank, len(banks))
	for i, b := range banks {
		out[i] = operatorapi.Bank{Code: b.Code, Name: b.Name}
	}
	return operatorapi.ListBanks200JSONResponse{Success: true, Data: out}, nil
}

// GetSettlementAccount returns a partner's settlement account (GET
// /partners/{id}/settlement-account).
func (s *Server) GetSettlementAccount(ctx context.Context, req operatorapi.GetSettlementAccountRequestObject) (operatorapi.GetSettlementAccountResponseObject, error) {
	a, err := s.settlement.Get(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	return operatorapi.GetSettlementAccount200JSONResponse{Success: true, Data: settlementOut(a)}, nil
}

// PutSettlementAccount sets a partner's settlement account after name enquiry
// (PUT /partners/{id}/settlement-account).
func (s *Server) PutSettlementAccount(ctx context.Context, req operatorapi.PutSettlementAccountRequestObject) (operatorapi.PutSettlementAccountResponseObject, error) {
	o, err := operatorFrom(ctx)
	if err != nil {
		return nil, err
	}
	answer := func(a *settlement.Account) operatorapi.PutSettlementAccountResponseObject {
		return operatorapi.PutSettlementAccount200JSONResponse{Body: operatorapi.SettlementAccountResponse{Success: true, Data: settlementOut(a)}}
	}
	key := httpkit.KeyedBy[settlement.Tx](ctx, s.idem, answer, operatorapi.PutSettlementAccountResponseObject.VisitPutSettlementAccountResponse)
	r := settlement.Request{BankCode: req.Body.BankCode, AccountNumber: req.Body.AccountNumber,
		ConfirmName: req.Body.ConfirmName != nil && *req.Body.ConfirmName}
	a, err := s.settlement.Set(ctx, key, actorOf(ctx, o), req.Id, r)
	if err != nil {
		return nil, err
	}
	return answer(a), nil
}

func settlementOut(a *settlement.Account) operatorapi.SettlementAccount {
	return operatorapi.SettlementAccount{PartnerId: a.PartnerID, PartnerName: a.PartnerName, BankCode: a.BankCode, BankName: a.BankName,
		AccountNumber: a.AccountNumber, AccountName: a.AccountName, NameMatches: a.NameMatches, VerifiedAt: a.VerifiedAt,
		SetBy: a.SetBy, UpdatedAt: a.UpdatedAt}
}
