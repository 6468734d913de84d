package httpapi

import (
	"context"

	"partnerd/gen/api"
	"partnerd/internal/httpkit"
	"partnerd/internal/lifecycle"
	"partnerd/internal/pricing/money"
	"partnerd/internal/transactions"
)

// CreateTransaction creates a transaction in quote or direct mode (POST /transactions).
func (s *Server) CreateTransaction(ctx context.Context, req api.CreateTransactionRequestObject) (api.CreateTransactionResponseObject, error) {
	p, err := partnerFrom(ctx)
	if err != nil {
		return nil, err
	}
	answer := func(t *lifecycle.Transaction) api.CreateTransactionResponseObject {
		return api.CreateTransaction201JSONResponse{Body: api.TransactionResponse{Success: true, Data: transactionOut(t)}}
	}
	key := httpkit.KeyedBy[transactions.Tx](ctx, s.keys, answer, api.CreateTransactionResponseObject.VisitCreateTransactionResponse)
	b := req.Body
	t, err := s.transactions.Create(ctx, key, p.ID, transactions.CreateRequest{
		MerchantReference: b.MerchantReference,
		Token:             b.CryptoCurrency,
		Network:           b.Network,
		QuoteID:           b.QuoteId,
		FiatAmount:        b.FiatAmount,
		MerchantID:        b.MerchantId,
		TerminalID:        b.TerminalId,
		SellerPhone:       b.SellerPhone,
		RefundAddress:     b.RefundAddress,
	})
	if err != nil {
		return nil, err
	}
	return answer(t), nil
}

// GetTransaction returns the detailed snapshot (GET /transactions/{id}).
func (s *Server) GetTransaction(ctx context.Context, req api.GetTransactionRequestObject) (api.GetTransactionResponseObject, error) {
	p, err := partnerFrom(ctx)
	if err != nil {
		return nil, err
	}
	t, err := s.transactions.Get(ctx, p.ID, req.Id)
	if err != nil {
		return nil, err
	}
	return api.GetTransaction200JSONResponse{TransactionDetailOKJSONResponse: detailResponse(t)}, nil
}

// GetTransactionByReference returns the detailed snapshot by merchant reference in
// any letter case (GET /transactions/reference/{merchant_reference}).
func (s *Server) GetTransactionByReference(ctx context.Context, req api.GetTransactionByReferenceRequestObject) (api.GetTransactionByReferenceResponseObject, error) {
	p, err := partnerFrom(ctx)
	if err != nil {
		return nil, err
	}
	t, err := s.transactions.GetByReference(ctx, p.ID, req.MerchantReference)
	if err != nil {
		return nil, err
	}
	return api.GetTransactionByReference200JSONResponse{TransactionDetailOKJSONResponse: detailResponse(t)}, nil
}

// ListTransactions returns one keyset page (GET /transactions).
func (s *Server) ListTransactions(ctx context.Context, req api.ListTransactionsRequestObject) (api.ListTransactionsResponseObject, error) {
	p, err := partnerFrom(ctx)
	if err != nil {
		return nil, err
	}
	q := req.Params
	f := transactions.Filter{MerchantID: q.MerchantId, TerminalID: q.TerminalId, Reference: q.MerchantReference,
		DepositAddress: q.DepositAddress, TxHash: q.TxHash, Network: q.Network, From: q.From, To: q.To}
	if q.Status != nil {
		for _, st := range *q.Status {
			f.Statuses = append(f.Statuses, lifecycle.Status(st))
		}
	}
	limit, after := httpkit.PageParams(q.Limit, q.Cursor)
	page, err := s.lister.List(ctx, p.ID, f, limit, after)
	if err != nil {
		return nil, err
	}
	items := make([]api.TransactionListItem, len(page.Items))
	for i, t := range page.Items {
		items[i] = api.TransactionListItem{
			Id: t.ID, Status: api.TransactionStatus(t.Status), MerchantReference: t.MerchantReference,
			MerchantId: t.MerchantID, TerminalId: t.TerminalID, Network: t.Network, CryptoCurrency: t.Token,
			CryptoAmount: money.FormatTokens(t.CryptoAmount), Amount: money.FormatFiat(t.FiatAmount),
			CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, ExpiresAt: t.ExpiresAt, ActionRequired: lifecycle.ActionRequired(t),
		}
	}
	return api.ListTransactions200JSONResponse{Success: true, Data: api.TransactionPage{
		Data: items, HasMore: page.HasMore, Limit: page.Limit, NextCursor: page.NextCursor,
	}}, nil
}

// transactionOut maps a transaction to the create/cancel snapshot.
func transactionOut(t *lifecycle.Transaction) api.Transaction {
	s := t.Snapshot()
	return api.Transaction{
		Id: s.ID, Status: api.TransactionStatus(s.Status), MerchantReference: s.MerchantReference,
		MerchantId: s.MerchantID, TerminalId: s.TerminalID, Network: s.Network, CryptoCurrency: s.CryptoCurrency,
		CryptoAmount: s.CryptoAmount, Amount: s.Amount, Rate: s.Rate, DepositAddress: s.DepositAddress, ExpiresAt: s.ExpiresAt,
		RefundAddress: s.RefundAddress, ActionRequired: s.ActionRequired, AllowedActions: actionsOut(s.AllowedActions),
	}
}

// actionsOut maps the partner's allowed actions (never null).
func actionsOut(in []lifecycle.PartnerAction) []api.PartnerAction {
	out := make([]api.PartnerAction, len(in))
	for i, a := range in {
		out[i] = api.PartnerAction(a)
	}
	return out
}

// detailOut maps a transaction to the detailed snapshot.
func detailOut(t *lifecycle.Transaction) api.TransactionDetail {
	s := t.Snapshot()
	d := api.TransactionDetail{
		Id: s.ID, Status: api.TransactionStatus(s.Status), MerchantReference: s.MerchantReference,
		MerchantId: s.MerchantID, TerminalId: s.TerminalID, Network: s.Network, CryptoCurrency: s.CryptoCurrency,
		CryptoAmount: s.CryptoAmount, Amount: s.Amount, Rate: s.Rate, DepositAddress: s.DepositAddress, ExpiresAt: s.ExpiresAt,
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
		DepositId: s.DepositID, DepositStatus: s.DepositStatus, Confirmations: s.Confirmations,
		RequiredConfirmations: s.RequiredConfirmations, AwaitingFinality: &s.AwaitingFinality, UnderReview: &s.UnderReview, ReceivedAt: s.ReceivedAt, ConfirmedAt: s.ConfirmedAt,
		DepositAmount: s.DepositAmount, DepositTxHash: s.DepositTxHash, Deposits: transfersOut(s.Deposits),
		RefundAddress: s.RefundAddress, ActionRequired: &s.ActionRequired, RefundRequestedAt: s.RefundRequestedAt,
	}
	allowed := actionsOut(s.AllowedActions)
	d.AllowedActions = &allowed
	return d
}

// transfersOut maps the counted transfers (never null: empty without a deposit).
func transfersOut(in []lifecycle.SnapshotTransfer) []api.DepositTransfer {
	out := make([]api.DepositTransfer, len(in))
	for i, tr := range in {
		out[i] = api.DepositTransfer{
			Id: tr.ID, TxHash: tr.TxHash, LogIndex: tr.LogIndex, Amount: tr.Amount, Block: tr.Block,
			Confirmations: tr.Confirmations, RequiredConfirmations: tr.RequiredConfirmations,
			ReceivedAt: tr.ReceivedAt, ConfirmedAt: tr.ConfirmedAt,
		}
	}
	return out
}

func detailResponse(t *lifecycle.Transaction) api.TransactionDetailOKJSONResponse {
	return api.TransactionDetailOKJSONResponse{Success: true, Data: detailOut(t)}
}
