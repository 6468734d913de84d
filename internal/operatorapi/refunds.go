package operatorapi

import (
	"context"

	"github.com/google/uuid"

	"partnerd/gen/operatorapi"
	"partnerd/internal/apperr"
	"partnerd/internal/httpkit"
	"partnerd/internal/idempotency"
	"partnerd/internal/lifecycle"
	"partnerd/internal/money"
	"partnerd/internal/unmatched"
)

// AcceptShortPayment lets an expired, short-paid transaction proceed on what was
// received (POST /transactions/{id}/accept).
func (s *Server) AcceptShortPayment(ctx context.Context, req operatorapi.AcceptShortPaymentRequestObject) (operatorapi.AcceptShortPaymentResponseObject, error) {
	return command(ctx, s, func(ctx context.Context) (operatorapi.AcceptShortPaymentResponseObject, error) {
		t, err := s.act(ctx, "accept", req.Id, req.Body.Reason, func(by lifecycle.Actor) (*lifecycle.Transaction, error) {
			return s.lifecycle.Accept(ctx, req.Id, by, req.Body.Reason)
		})
		if err != nil {
			return nil, err
		}
		ok, err := s.actionOK(ctx, t, "Short payment accepted.")
		if err != nil {
			return nil, err
		}
		return operatorapi.AcceptShortPayment200JSONResponse{OperatorActionOKJSONResponse: ok}, nil
	})
}

// ListRefundTasks pages through the refund tasks (GET /refund-tasks).
func (s *Server) ListRefundTasks(ctx context.Context, req operatorapi.ListRefundTasksRequestObject) (operatorapi.ListRefundTasksResponseObject, error) {
	q := req.Params
	f := unmatched.Filter{Open: q.Status == nil || *q.Status == operatorapi.ListRefundTasksParamsStatusOpen,
		PartnerID: q.PartnerId, Network: q.Network}
	if q.Kind != nil {
		k := unmatched.Kind(*q.Kind)
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
	return command(ctx, s, func(ctx context.Context) (operatorapi.ResolveRefundTaskResponseObject, error) {
		o, err := operatorFrom(ctx)
		if err != nil {
			return nil, err
		}
		b := req.Body
		d, err := s.resolveTask(ctx, req.Id, o.ID, b)
		if err != nil {
			return nil, err
		}
		ref := ""
		if b.TxHash != nil {
			ref = *b.TxHash
		}
		idempotency.OnCommit(ctx, func() {
			s.log.Info("operator action", "operator_id", o.ID.String(), "action", "resolve_"+string(b.Action),
				"refund_task_id", d.ID.String(), "kind", string(d.Kind), "reference", ref)
		})
		msg := "Refund task resolved."
		return operatorapi.ResolveRefundTask200JSONResponse{Body: operatorapi.RefundTaskResponse{
			Success: true, Message: &msg, Data: taskOut(d),
		}}, nil
	})
}

// resolveTask closes task id. A short task of a transaction is the transaction's
// money: refunded goes through the lifecycle (an expired transaction is refunded in
// the same unit of work, so the returned money cannot be counted or accepted
// later); credited is refused (an expired short payment is credited by accepting
// the transaction). Other kinds close on their own.
func (s *Server) resolveTask(ctx context.Context, id, operatorID uuid.UUID, b *operatorapi.ResolveRefundTaskJSONRequestBody) (*unmatched.Deposit, error) {
	d, err := s.unmatched.Task(ctx, id)
	if err != nil {
		return nil, err
	}
	if d.Kind != unmatched.Short || d.TransactionID == nil || d.Status != unmatched.Open {
		return s.unmatched.Resolve(ctx, id, operatorID, unmatched.Status(b.Action), b.TxHash, b.Note)
	}
	switch {
	case b.Action == operatorapi.ResolveRequestActionCredited:
		return nil, apperr.New(apperr.InvalidStateTransition,
			"A short payment is not credited through its refund task; accept the transaction (POST /transactions/{id}/accept) or refund it.")
	case b.TxHash == nil:
		return nil, apperr.Field(apperr.InvalidRequest, "A refund needs the refund's chain transaction.", "/tx_hash", "is required when action is refunded")
	}
	if _, err := s.lifecycle.RefundShort(ctx, *d.TransactionID, lifecycle.Actor{OperatorID: operatorID}, *b.TxHash); err != nil {
		return nil, err
	}
	return s.unmatched.Task(ctx, id)
}

func taskOut(d *unmatched.Deposit) operatorapi.RefundTask {
	return operatorapi.RefundTask{
		Id: d.ID, Kind: operatorapi.RefundTaskKind(d.Kind), Network: d.Network, Amount: money.FormatTokens(d.Amount),
		FromAddress: d.FromAddress, ToAddress: d.ToAddress, TxHash: d.TxHash, LogIndex: d.LogIndex,
		TransactionId: d.TransactionID, PartnerId: d.PartnerID, Status: operatorapi.UnmatchedDepositStatus(d.Status),
		ResolutionTxHash: d.ResolutionTxHash, ResolutionNote: d.ResolutionNote, ResolvedBy: d.ResolvedBy,
		ResolvedAt: d.ResolvedAt, CreatedAt: d.CreatedAt,
	}
}
