package operatorapi

import (
	"context"

	"partnerd/gen/operatorapi"
	"partnerd/internal/backoffice/actions"
	"partnerd/internal/backoffice/refunds"
	"partnerd/internal/httpkit"
	"partnerd/internal/lifecycle"
	"partnerd/internal/pricing/money"
)

// AcceptShortPayment lets an expired, short-paid transaction proceed on what was
// received (POST /transactions/{id}/accept).
func (s *Server) AcceptShortPayment(ctx context.Context, req operatorapi.AcceptShortPaymentRequestObject) (operatorapi.AcceptShortPaymentResponseObject, error) {
	o, err := operatorFrom(ctx)
	if err != nil {
		return nil, err
	}
	key, answer := actionAnswerOf(ctx, s.idem, "Short payment accepted.", func(ok operatorapi.OperatorActionOKJSONResponse) operatorapi.AcceptShortPaymentResponseObject {
		return operatorapi.AcceptShortPayment200JSONResponse{OperatorActionOKJSONResponse: ok}
	}, operatorapi.AcceptShortPaymentResponseObject.VisitAcceptShortPaymentResponse)
	t, err := s.actions.Accept(ctx, key, actorOf(ctx, o), req.Id, req.Body.Reason)
	if err != nil {
		return nil, err
	}
	return answer(t), nil
}

// ListRefundTasks pages through the refund tasks (GET /refund-tasks).
func (s *Server) ListRefundTasks(ctx context.Context, req operatorapi.ListRefundTasksRequestObject) (operatorapi.ListRefundTasksResponseObject, error) {
	q := req.Params
	f := refunds.Filter{Open: q.Status == nil || *q.Status == operatorapi.ListRefundTasksParamsStatusOpen,
		PartnerID: q.PartnerId, Network: q.Network}
	if q.Kind != nil {
		k := lifecycle.TaskKind(*q.Kind)
		f.Kind = &k
	}
	limit, after := httpkit.PageParams(q.Limit, q.Cursor)
	page, err := s.unmatched.Tasks(ctx, f, limit, after)
	if err != nil {
		return nil, err
	}
	items := make([]operatorapi.RefundTask, len(page.Items))
	for i, d := range page.Items {
		items[i] = taskOut(d)
	}
	return operatorapi.ListRefundTasks200JSONResponse{Success: true, Data: operatorapi.RefundTaskPage{
		Data: items, HasMore: page.HasMore, Limit: page.Limit, NextCursor: page.NextCursor,
	}}, nil
}

// ResolveRefundTask closes an open refund task of any kind (POST /refund-tasks/{id}/resolve).
func (s *Server) ResolveRefundTask(ctx context.Context, req operatorapi.ResolveRefundTaskRequestObject) (operatorapi.ResolveRefundTaskResponseObject, error) {
	o, err := operatorFrom(ctx)
	if err != nil {
		return nil, err
	}
	answer := func(d *lifecycle.RefundTask) operatorapi.ResolveRefundTaskResponseObject {
		msg := "Refund task resolved."
		return operatorapi.ResolveRefundTask200JSONResponse{Body: operatorapi.RefundTaskResponse{
			Success: true, Message: &msg, Data: taskOut(d),
		}}
	}
	key := httpkit.KeyedBy[actions.Tx](ctx, s.idem, answer, operatorapi.ResolveRefundTaskResponseObject.VisitResolveRefundTaskResponse)
	b := req.Body
	d, err := s.actions.ResolveTask(ctx, key, actorOf(ctx, o), req.Id, actions.Resolution{Action: lifecycle.TaskStatus(b.Action), TxHash: b.TxHash, Note: b.Note})
	if err != nil {
		return nil, err
	}
	return answer(d), nil
}

func taskOut(d *lifecycle.RefundTask) operatorapi.RefundTask {
	return operatorapi.RefundTask{
		Id: d.ID, Kind: operatorapi.RefundTaskKind(d.Kind), Network: d.Network, Amount: money.FormatTokens(d.Amount),
		FromAddress: d.FromAddress, RefundTo: d.RefundTo, ToAddress: d.ToAddress, TxHash: d.TxHash, LogIndex: d.LogIndex,
		TransactionId: d.TransactionID, PartnerId: d.PartnerID, Status: operatorapi.UnmatchedDepositStatus(d.Status),
		ResolutionTxHash: d.ResolutionTxHash, ResolutionNote: d.ResolutionNote, ResolvedBy: d.ResolvedBy,
		ResolvedAt: d.ResolvedAt, CreatedAt: d.CreatedAt,
	}
}
