package operatorapi

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"partnerd/gen/operatorapi"
	"partnerd/internal/apikeys"
	"partnerd/internal/audit"
	"partnerd/internal/backoffice"
	"partnerd/internal/backoffice/actions"
	"partnerd/internal/backoffice/approvals"
	"partnerd/internal/backoffice/batches"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/backoffice/refunds"
	"partnerd/internal/backoffice/settlement"
	"partnerd/internal/httpkit"
	"partnerd/internal/idempotency"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/uow"
	"partnerd/internal/lifecycle"
	"partnerd/internal/partners"
	"partnerd/internal/partnerusers"
	"partnerd/internal/pricing/money"
)

// Server implements the generated StrictServerInterface.
type Server struct {
	// actions are the state-changing use cases; the handlers translate to them.
	actions   *actions.Service
	stages    *backoffice.StageLister
	fills     Fills
	unmatched *refunds.Service
	// backoffice, audit and batches serve the back-office reads, the audit log and
	// the batches.
	backoffice *backoffice.Service
	audit      *audit.Log
	batches    *batches.Service
	partners   *partners.Service
	operators  *operators.Service
	keys       *apikeys.Service
	// partnerUsers are the partners' dashboard users and their invitations.
	partnerUsers *partnerusers.Service
	// linkBase is Deps.LinkBase.
	linkBase  func() string
	screening Screening
	// idem keeps the operators' idempotency keys: a keyed request's use case
	// stores its answer among them (httpkit.KeyedBy).
	idem *idempotency.Service
	// approvals are the proposals of four eyes; serve is this API's own router,
	// through which an approved proposal's request runs as its approver.
	approvals *approvals.Service
	// settlement lists banks and keeps partners' settlement accounts.
	settlement *settlement.Service
	serve      func(http.ResponseWriter, *http.Request)
	// access is each operation's access rule, read from the contract.
	access map[string]access
	now    func() time.Time
}

var _ operatorapi.StrictServerInterface = (*Server)(nil)

// ListStage returns a page of one stage across partners (GET /transactions).
func (s *Server) ListStage(ctx context.Context, req operatorapi.ListStageRequestObject) (operatorapi.ListStageResponseObject, error) {
	q := req.Params
	limit, after := httpkit.PageParams(q.Limit, q.Cursor)
	f := backoffice.StageFilter{PartnerID: q.PartnerId, Network: q.Network, From: q.From, To: q.To, Search: q.Q,
		Oldest: q.Order != nil && *q.Order == operatorapi.Oldest}
	if q.Stage != nil {
		f.Stage = backoffice.Stage(*q.Stage)
	}
	page, err := s.stages.List(ctx, f, limit, after)
	if err != nil {
		return nil, err
	}
	items, err := s.out(ctx, page.Items...)
	if err != nil {
		return nil, err
	}
	return operatorapi.ListStage200JSONResponse{Success: true, Data: operatorapi.OperatorTransactionPage{
		Data: items, HasMore: page.HasMore, Limit: page.Limit, NextCursor: page.NextCursor,
	}}, nil
}

// GetOperatorTransaction returns any partner's transaction with its case file.
func (s *Server) GetOperatorTransaction(ctx context.Context, req operatorapi.GetOperatorTransactionRequestObject) (operatorapi.GetOperatorTransactionResponseObject, error) {
	c, err := s.backoffice.Case(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	out, err := s.caseOut(ctx, c)
	if err != nil {
		return nil, err
	}
	return operatorapi.GetOperatorTransaction200JSONResponse{Success: true, Data: out}, nil
}

// FillOrder records the executed sale (POST /transactions/{id}/fill).
func (s *Server) FillOrder(ctx context.Context, req operatorapi.FillOrderRequestObject) (operatorapi.FillOrderResponseObject, error) {
	o, err := operatorFrom(ctx)
	if err != nil {
		return nil, err
	}
	// The contract's patterns admit decimals only; their rules (greater than zero)
	// are the lifecycle's (lifecycle.CheckRate, CheckFiat).
	rate, err := decimal.NewFromString(req.Body.Rate)
	if err != nil {
		return nil, apperr.Field(apperr.InvalidRequest, "The rate is not a decimal.", "/rate", "must be a decimal")
	}
	fiat, err := decimal.NewFromString(req.Body.FiatAmount)
	if err != nil {
		return nil, apperr.Field(apperr.InvalidRequest, "The NGN amount is not a decimal.", "/fiat_amount", "must be a decimal")
	}
	key, answer := actionAnswerOf(ctx, s.idem, "Order filled.", func(ok operatorapi.OperatorActionOKJSONResponse) operatorapi.FillOrderResponseObject {
		return operatorapi.FillOrder200JSONResponse{OperatorActionOKJSONResponse: ok}
	}, operatorapi.FillOrderResponseObject.VisitFillOrderResponse)
	t, err := s.actions.Fill(ctx, key, actorOf(ctx, o), req.Id, rate, fiat, req.Body.Reference)
	if err != nil {
		return nil, err
	}
	return answer(t), nil
}

// SettleOrder is POST /transactions/{id}/…: operator action Settle.
func (s *Server) SettleOrder(ctx context.Context, req operatorapi.SettleOrderRequestObject) (operatorapi.SettleOrderResponseObject, error) {
	o, err := operatorFrom(ctx)
	if err != nil {
		return nil, err
	}
	key, answer := actionAnswerOf(ctx, s.idem, "Order settled; the transaction is completed.", func(ok operatorapi.OperatorActionOKJSONResponse) operatorapi.SettleOrderResponseObject {
		return operatorapi.SettleOrder200JSONResponse{OperatorActionOKJSONResponse: ok}
	}, operatorapi.SettleOrderResponseObject.VisitSettleOrderResponse)
	t, err := s.actions.Settle(ctx, key, actorOf(ctx, o), req.Id, req.Body.Reference)
	if err != nil {
		return nil, err
	}
	return answer(t), nil
}

// SettlePayout is POST /transactions/{id}/…: operator action PayOut.
func (s *Server) SettlePayout(ctx context.Context, req operatorapi.SettlePayoutRequestObject) (operatorapi.SettlePayoutResponseObject, error) {
	o, err := operatorFrom(ctx)
	if err != nil {
		return nil, err
	}
	key, answer := actionAnswerOf(ctx, s.idem, "Payout settled.", func(ok operatorapi.OperatorActionOKJSONResponse) operatorapi.SettlePayoutResponseObject {
		return operatorapi.SettlePayout200JSONResponse{OperatorActionOKJSONResponse: ok}
	}, operatorapi.SettlePayoutResponseObject.VisitSettlePayoutResponse)
	t, err := s.actions.PayOut(ctx, key, actorOf(ctx, o), req.Id, req.Body.Reference)
	if err != nil {
		return nil, err
	}
	return answer(t), nil
}

// FailTransaction is POST /transactions/{id}/…: operator action Fail.
func (s *Server) FailTransaction(ctx context.Context, req operatorapi.FailTransactionRequestObject) (operatorapi.FailTransactionResponseObject, error) {
	o, err := operatorFrom(ctx)
	if err != nil {
		return nil, err
	}
	key, answer := actionAnswerOf(ctx, s.idem, "Transaction failed.", func(ok operatorapi.OperatorActionOKJSONResponse) operatorapi.FailTransactionResponseObject {
		return operatorapi.FailTransaction200JSONResponse{OperatorActionOKJSONResponse: ok}
	}, operatorapi.FailTransactionResponseObject.VisitFailTransactionResponse)
	t, err := s.actions.Fail(ctx, key, actorOf(ctx, o), req.Id, req.Body.Reason)
	if err != nil {
		return nil, err
	}
	return answer(t), nil
}

// RefundTransaction is POST /transactions/{id}/…: operator action Refund.
func (s *Server) RefundTransaction(ctx context.Context, req operatorapi.RefundTransactionRequestObject) (operatorapi.RefundTransactionResponseObject, error) {
	o, err := operatorFrom(ctx)
	if err != nil {
		return nil, err
	}
	key, answer := actionAnswerOf(ctx, s.idem, "Deposit refunded.", func(ok operatorapi.OperatorActionOKJSONResponse) operatorapi.RefundTransactionResponseObject {
		return operatorapi.RefundTransaction200JSONResponse{OperatorActionOKJSONResponse: ok}
	}, operatorapi.RefundTransactionResponseObject.VisitRefundTransactionResponse)
	t, err := s.actions.Refund(ctx, key, actorOf(ctx, o), req.Id, req.Body.TxHash)
	if err != nil {
		return nil, err
	}
	return answer(t), nil
}

// ListUnmatchedDeposits pages through unmatched deposits (GET /deposits/unmatched).
func (s *Server) ListUnmatchedDeposits(ctx context.Context, req operatorapi.ListUnmatchedDepositsRequestObject) (operatorapi.ListUnmatchedDepositsResponseObject, error) {
	q := req.Params
	status := lifecycle.TaskOpen
	if q.Status != nil {
		status = lifecycle.TaskStatus(*q.Status)
	}
	limit, after := httpkit.PageParams(q.Limit, q.Cursor)
	page, err := s.unmatched.List(ctx, status, limit, after)
	if err != nil {
		return nil, err
	}
	items := make([]operatorapi.UnmatchedDeposit, len(page.Items))
	for i, d := range page.Items {
		items[i] = depositOut(d)
	}
	return operatorapi.ListUnmatchedDeposits200JSONResponse{Success: true, Data: operatorapi.UnmatchedDepositPage{
		Data: items, HasMore: page.HasMore, Limit: page.Limit, NextCursor: page.NextCursor,
	}}, nil
}

// ResolveUnmatchedDeposit closes an open unmatched deposit (POST /deposits/{id}/resolve).
func (s *Server) ResolveUnmatchedDeposit(ctx context.Context, req operatorapi.ResolveUnmatchedDepositRequestObject) (operatorapi.ResolveUnmatchedDepositResponseObject, error) {
	o, err := operatorFrom(ctx)
	if err != nil {
		return nil, err
	}
	answer := func(d *lifecycle.RefundTask) operatorapi.ResolveUnmatchedDepositResponseObject {
		msg := "Deposit resolved."
		return operatorapi.ResolveUnmatchedDeposit200JSONResponse{Body: operatorapi.UnmatchedDepositResponse{
			Success: true, Message: &msg, Data: depositOut(d),
		}}
	}
	key := httpkit.KeyedBy[actions.Tx](ctx, s.idem, answer, operatorapi.ResolveUnmatchedDepositResponseObject.VisitResolveUnmatchedDepositResponse)
	b := req.Body
	d, err := s.actions.ResolveDeposit(ctx, key, actorOf(ctx, o), req.Id, actions.Resolution{Action: lifecycle.TaskStatus(b.Action), TxHash: b.TxHash, Note: b.Note})
	if err != nil {
		return nil, err
	}
	return answer(d), nil
}

// actionAnswerOf is how an action on a transaction answers: the transaction as the
// operator sees it (with its fill and its partner's name, which the action read in
// its unit of work) and msg, wrapped by as in the operation's response written by
// visit. It returns the request the action runs under and the answer the handler
// gives: the same pure rendering, so a retry gets exactly this answer.
func actionAnswerOf[R any](ctx context.Context, idem *idempotency.Service, msg string, as func(operatorapi.OperatorActionOKJSONResponse) R,
	visit func(R, http.ResponseWriter) error) (uow.Runner[*actions.Acted, actions.Tx], func(*actions.Acted) R) {
	answer := func(a *actions.Acted) R {
		return as(operatorapi.OperatorActionOKJSONResponse{Body: operatorapi.OperatorTransactionResponse{
			Success: true, Message: &msg, Data: operatorOut(a.Transaction, a.Fill, a.PartnerName),
		}})
	}
	return httpkit.KeyedBy[actions.Tx](ctx, idem, answer, visit), answer
}

// out maps transactions to the operator's view, with their fills.
func (s *Server) out(ctx context.Context, ts ...*lifecycle.Transaction) ([]operatorapi.OperatorTransaction, error) {
	ids := make([]uuid.UUID, len(ts))
	for i, t := range ts {
		ids[i] = t.ID
	}
	fills, err := s.fills.FillsOf(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]operatorapi.OperatorTransaction, len(ts))
	names := map[uuid.UUID]string{}
	for i, t := range ts {
		name, ok := names[t.PartnerID]
		if !ok {
			p, err := s.partners.Get(ctx, t.PartnerID)
			if err != nil {
				return nil, err
			}
			name, names[t.PartnerID] = p.Name, p.Name
		}
		out[i] = operatorOut(t, fills[t.ID], name)
	}
	return out, nil
}

// operatorOut is t as the operator sees it, with its fill (nil for none) and its
// partner's name.
func operatorOut(t *lifecycle.Transaction, f *lifecycle.Fill, partnerName string) operatorapi.OperatorTransaction {
	out := transactionOut(t)
	out.PartnerName = partnerName
	if f != nil {
		out.Fill = &operatorapi.OrderFill{Rate: money.FormatRate(f.Rate), FiatAmount: money.FormatFiat(f.FiatAmount),
			Reference: f.Reference, OperatorId: f.OperatorID, FilledAt: f.FilledAt}
	}
	return out
}

func transactionOut(t *lifecycle.Transaction) operatorapi.OperatorTransaction {
	out := operatorapi.OperatorTransaction{
		Id: t.ID, PartnerId: t.PartnerID, Status: operatorapi.TransactionStatus(t.Status),
		MerchantReference: t.MerchantReference, Network: t.Network, CryptoCurrency: t.Token,
		CryptoAmount: money.FormatTokens(t.CryptoAmount), Amount: money.FormatFiat(t.FiatAmount), Rate: money.FormatRate(t.Rate),
		DepositAddress: t.DepositAddress, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, ExpiresAt: t.ExpiresAt,
		PayoutSettledAt: t.PayoutSettledAt,
	}
	if d := t.Deposit; d != nil {
		id, status, hash, amount, conf, req := d.ID, d.Status, d.Hash, money.FormatTokens(d.Amount), d.Confirmations, d.RequiredConfirmations
		out.DepositId, out.DepositStatus, out.DepositHash, out.DepositAmount = &id, &status, &hash, &amount
		out.Confirmations, out.RequiredConfirmations, out.ConfirmedAt = &conf, &req, d.ConfirmedAt
	}
	return out
}

func depositOut(d *lifecycle.RefundTask) operatorapi.UnmatchedDeposit {
	return operatorapi.UnmatchedDeposit{
		Id: d.ID, Network: d.Network, TxHash: d.TxHash, LogIndex: d.LogIndex, ToAddress: d.ToAddress,
		Amount: money.FormatTokens(d.Amount), RawAmount: d.RawAmount, BlockNumber: d.BlockNumber,
		TransactionId: d.TransactionID, Status: operatorapi.UnmatchedDepositStatus(d.Status),
		ResolutionTxHash: d.ResolutionTxHash, ResolutionNote: d.ResolutionNote, ResolvedBy: d.ResolvedBy,
		ResolvedAt: d.ResolvedAt, CreatedAt: d.CreatedAt,
	}
}
