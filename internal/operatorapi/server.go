package operatorapi

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"partnerd/gen/operatorapi"
	"partnerd/internal/apikeys"
	"partnerd/internal/apperr"
	"partnerd/internal/audit"
	"partnerd/internal/backoffice"
	"partnerd/internal/batches"
	"partnerd/internal/httpkit"
	"partnerd/internal/idempotency"
	"partnerd/internal/lifecycle"
	"partnerd/internal/money"
	"partnerd/internal/operators"
	"partnerd/internal/partners"
	"partnerd/internal/transactions"
	"partnerd/internal/unmatched"
)

// Server implements the generated StrictServerInterface.
type Server struct {
	lifecycle *lifecycle.Engine
	stages    *transactions.StageLister
	loader    Loader
	fills     Fills
	unmatched *unmatched.Service
	// backoffice, audit and batches serve the back-office reads, the audit log and
	// the batches.
	backoffice *backoffice.Service
	audit      *audit.Log
	batches    *batches.Service
	partners   *partners.Service
	operators  *operators.Service
	keys       *apikeys.Service
	now        func() time.Time
	log        *slog.Logger
}

var _ operatorapi.StrictServerInterface = (*Server)(nil)

// ListStage returns a page of one stage across partners (GET /transactions).
func (s *Server) ListStage(ctx context.Context, req operatorapi.ListStageRequestObject) (operatorapi.ListStageResponseObject, error) {
	q := req.Params
	limit, after := httpkit.PageParams(q.Limit, q.Cursor)
	f := transactions.StageFilter{PartnerID: q.PartnerId, Network: q.Network, From: q.From, To: q.To, Search: q.Q,
		Oldest: q.Order != nil && *q.Order == operatorapi.Oldest}
	if q.Stage != nil {
		f.Stage = transactions.Stage(*q.Stage)
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
	return command(ctx, s, func(ctx context.Context) (operatorapi.FillOrderResponseObject, error) {
		// The contract's patterns admit decimals only; zero is the one bad value left.
		var rate, fiat decimal.Decimal
		for _, f := range []struct {
			field, in string
			out       *decimal.Decimal
		}{{"/rate", req.Body.Rate, &rate}, {"/fiat_amount", req.Body.FiatAmount, &fiat}} {
			v, err := decimal.NewFromString(f.in)
			if err != nil || !v.IsPositive() {
				return nil, apperr.Field(apperr.InvalidRequest, "The executed sale needs a positive rate and amount.", f.field, "must be a decimal greater than 0")
			}
			*f.out = v
		}
		t, err := s.act(ctx, "fill", req.Id, req.Body.Reference, func(by lifecycle.Actor) (*lifecycle.Transaction, error) {
			return s.lifecycle.FillOrder(ctx, req.Id, by, rate, fiat, req.Body.Reference)
		})
		if err != nil {
			return nil, err
		}
		ok, err := s.actionOK(ctx, t, "Order filled.")
		if err != nil {
			return nil, err
		}
		return operatorapi.FillOrder200JSONResponse{OperatorActionOKJSONResponse: ok}, nil
	})
}

// SettleOrder records the sale's settlement (POST /transactions/{id}/settle).
func (s *Server) SettleOrder(ctx context.Context, req operatorapi.SettleOrderRequestObject) (operatorapi.SettleOrderResponseObject, error) {
	return command(ctx, s, func(ctx context.Context) (operatorapi.SettleOrderResponseObject, error) {
		t, err := s.act(ctx, "settle", req.Id, req.Body.Reference, func(by lifecycle.Actor) (*lifecycle.Transaction, error) {
			return s.lifecycle.SettleOrder(ctx, req.Id, by, req.Body.Reference)
		})
		if err != nil {
			return nil, err
		}
		ok, err := s.actionOK(ctx, t, "Order settled; the transaction is completed.")
		if err != nil {
			return nil, err
		}
		return operatorapi.SettleOrder200JSONResponse{OperatorActionOKJSONResponse: ok}, nil
	})
}

// SettlePayout records the NGN payout (POST /transactions/{id}/payout).
func (s *Server) SettlePayout(ctx context.Context, req operatorapi.SettlePayoutRequestObject) (operatorapi.SettlePayoutResponseObject, error) {
	return command(ctx, s, func(ctx context.Context) (operatorapi.SettlePayoutResponseObject, error) {
		t, err := s.act(ctx, "payout", req.Id, req.Body.Reference, func(by lifecycle.Actor) (*lifecycle.Transaction, error) {
			return s.lifecycle.PayOut(ctx, req.Id, by, req.Body.Reference, nil)
		})
		if err != nil {
			return nil, err
		}
		ok, err := s.actionOK(ctx, t, "Payout settled.")
		if err != nil {
			return nil, err
		}
		return operatorapi.SettlePayout200JSONResponse{OperatorActionOKJSONResponse: ok}, nil
	})
}

// FailTransaction fails a transaction (POST /transactions/{id}/fail).
func (s *Server) FailTransaction(ctx context.Context, req operatorapi.FailTransactionRequestObject) (operatorapi.FailTransactionResponseObject, error) {
	return command(ctx, s, func(ctx context.Context) (operatorapi.FailTransactionResponseObject, error) {
		t, err := s.act(ctx, "fail", req.Id, req.Body.Reason, func(by lifecycle.Actor) (*lifecycle.Transaction, error) {
			return s.lifecycle.FailBy(ctx, req.Id, by, req.Body.Reason)
		})
		if err != nil {
			return nil, err
		}
		ok, err := s.actionOK(ctx, t, "Transaction failed.")
		if err != nil {
			return nil, err
		}
		return operatorapi.FailTransaction200JSONResponse{OperatorActionOKJSONResponse: ok}, nil
	})
}

// RefundTransaction records a deposit's refund (POST /transactions/{id}/refund).
func (s *Server) RefundTransaction(ctx context.Context, req operatorapi.RefundTransactionRequestObject) (operatorapi.RefundTransactionResponseObject, error) {
	return command(ctx, s, func(ctx context.Context) (operatorapi.RefundTransactionResponseObject, error) {
		t, err := s.act(ctx, "refund", req.Id, req.Body.TxHash, func(by lifecycle.Actor) (*lifecycle.Transaction, error) {
			return s.lifecycle.RefundBy(ctx, req.Id, by, req.Body.TxHash)
		})
		if err != nil {
			return nil, err
		}
		ok, err := s.actionOK(ctx, t, "Deposit refunded.")
		if err != nil {
			return nil, err
		}
		return operatorapi.RefundTransaction200JSONResponse{OperatorActionOKJSONResponse: ok}, nil
	})
}

// ListUnmatchedDeposits pages through unmatched deposits (GET /deposits/unmatched).
func (s *Server) ListUnmatchedDeposits(ctx context.Context, req operatorapi.ListUnmatchedDepositsRequestObject) (operatorapi.ListUnmatchedDepositsResponseObject, error) {
	q := req.Params
	status := unmatched.Open
	if q.Status != nil {
		status = unmatched.Status(*q.Status)
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
	return command(ctx, s, func(ctx context.Context) (operatorapi.ResolveUnmatchedDepositResponseObject, error) {
		o, err := operatorFrom(ctx)
		if err != nil {
			return nil, err
		}
		b := req.Body
		d, err := s.unmatched.ResolveUnmatched(ctx, req.Id, o.ID, unmatched.Status(b.Action), b.TxHash, b.Note)
		if err != nil {
			return nil, err
		}
		ref := ""
		if b.TxHash != nil {
			ref = *b.TxHash
		}
		if s.audit != nil {
			did := d.ID
			if err := s.audit.Record(ctx, audit.Entry{OperatorID: o.ID, Action: audit.Action("resolve_" + string(b.Action)),
				UnmatchedDepositID: &did, Reference: b.TxHash}); err != nil {
				return nil, err
			}
		}
		s.committed(ctx, func() {
			s.log.Info("operator action", "operator_id", o.ID.String(), "action", "resolve_"+string(b.Action),
				"unmatched_deposit_id", d.ID.String(), "reference", ref)
		})
		msg := "Deposit resolved."
		return operatorapi.ResolveUnmatchedDeposit200JSONResponse{Body: operatorapi.UnmatchedDepositResponse{
			Success: true, Message: &msg, Data: depositOut(d),
		}}, nil
	})
}

// act runs one audited transaction action for the authenticated operator and logs
// it once it succeeded (the history entry carries the same facts).
func (s *Server) act(ctx context.Context, action string, id uuid.UUID, reference string, fn func(lifecycle.Actor) (*lifecycle.Transaction, error)) (*lifecycle.Transaction, error) {
	o, err := operatorFrom(ctx)
	if err != nil {
		return nil, err
	}
	t, err := fn(lifecycle.Actor{OperatorID: o.ID})
	if err != nil {
		s.log.Info("operator action refused", "operator_id", o.ID.String(), "action", action,
			"transaction_id", id.String(), "reference", reference, "error_code", string(apperr.CodeOf(err)))
		return nil, err
	}
	// The audit row joins the action's unit of work (begun by command).
	if s.audit != nil {
		tid, ref := t.ID, reference
		if err := s.audit.Record(ctx, audit.Entry{OperatorID: o.ID, Action: audit.Action(action), TransactionID: &tid, Reference: &ref}); err != nil {
			return nil, err
		}
	}
	// Logged once the action has committed (with its stored answer), never for a
	// change that rolled back.
	s.committed(ctx, func() {
		s.log.Info("operator action", "operator_id", o.ID.String(), "action", action, "transaction_id", t.ID.String(),
			"partner_id", t.PartnerID.String(), "reference", reference, "status", string(t.Status))
	})
	return t, nil
}

// committed runs f once the request's unit of work has committed.
func (s *Server) committed(ctx context.Context, f func()) { idempotency.OnCommit(ctx, f) }

func (s *Server) actionOK(ctx context.Context, t *lifecycle.Transaction, msg string) (operatorapi.OperatorActionOKJSONResponse, error) {
	out, err := s.out(ctx, t)
	if err != nil {
		return operatorapi.OperatorActionOKJSONResponse{}, err
	}
	return operatorapi.OperatorActionOKJSONResponse{Body: operatorapi.OperatorTransactionResponse{
		Success: true, Message: &msg, Data: out[0],
	}}, nil
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
	for i, t := range ts {
		out[i] = transactionOut(t)
		if f := fills[t.ID]; f != nil {
			out[i].Fill = &operatorapi.OrderFill{Rate: money.FormatRate(f.Rate), FiatAmount: money.FormatFiat(f.FiatAmount),
				Reference: f.Reference, OperatorId: f.OperatorID, FilledAt: f.FilledAt}
		}
	}
	return out, nil
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

func depositOut(d *unmatched.Deposit) operatorapi.UnmatchedDeposit {
	return operatorapi.UnmatchedDeposit{
		Id: d.ID, Network: d.Network, TxHash: d.TxHash, LogIndex: d.LogIndex, ToAddress: d.ToAddress,
		Amount: money.FormatTokens(d.Amount), RawAmount: d.RawAmount, BlockNumber: d.BlockNumber,
		TransactionId: d.TransactionID, Status: operatorapi.UnmatchedDepositStatus(d.Status),
		ResolutionTxHash: d.ResolutionTxHash, ResolutionNote: d.ResolutionNote, ResolvedBy: d.ResolvedBy,
		ResolvedAt: d.ResolvedAt, CreatedAt: d.CreatedAt,
	}
}

// command runs one operator command as a use case: its unit of work begins here
// (idempotency.Run, under the operator's Idempotency-Key when sent), and fn does
// the command and builds its answer inside it. The domain changes fn makes join
// it, as do its audit row and the stored answer, so all of them commit together
// or none does; the answer sent is the one stored.
func command[R any](ctx context.Context, s *Server, fn func(ctx context.Context) (R, error)) (R, error) {
	respond := httpkit.AnswerWith(ctx, func(_ context.Context, r R) (R, error) { return r, nil })
	r, err := idempotency.Run(ctx, s.lifecycle.Begin, func(ctx context.Context, _ lifecycle.Tx) (R, error) { return fn(ctx) })
	if err != nil {
		return r, err
	}
	return respond(ctx, r)
}
