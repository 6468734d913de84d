package operatorapi

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"partnerd/gen/operatorapi"
	"partnerd/internal/audit"
	"partnerd/internal/backoffice"
	"partnerd/internal/backoffice/actions"
	"partnerd/internal/backoffice/batches"
	"partnerd/internal/httpkit"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/lifecycle"
	"partnerd/internal/pricing/money"
)

// GetOverview returns the back office at a glance (GET /overview).
func (s *Server) GetOverview(ctx context.Context, _ operatorapi.GetOverviewRequestObject) (operatorapi.GetOverviewResponseObject, error) {
	o, err := s.backoffice.Overview(ctx)
	if err != nil {
		return nil, err
	}
	w := o.RefundWork
	out := operatorapi.Overview{OpenRefundTasks: w.Total(), OpenUnmatchedDeposits: w.Unmatched,
		RefundWork: operatorapi.RefundWork{Unmatched: w.Unmatched, Excess: w.Excess, Short: w.Short, Dust: w.Dust, Failed: w.Failed},
		Stages:     []operatorapi.StageSummary{}, Networks: []operatorapi.NetworkProgress{}, FailingWebhooks: []operatorapi.FailingWebhook{},
		Screening: operatorapi.ScreeningWork{Held: o.Screening.Held, Unknown: o.Screening.Unknown, Pending: o.Screening.Pending}}
	for _, st := range o.Stages {
		out.Stages = append(out.Stages, operatorapi.StageSummary{Stage: operatorapi.Stage(st.Stage), Count: st.Count,
			CryptoAmount: money.FormatTokens(st.Crypto), FiatAmount: money.FormatFiat(st.Fiat)})
	}
	for _, n := range o.Networks {
		out.Networks = append(out.Networks, networkOut(n))
	}
	for _, f := range o.FailingWebhooks {
		out.FailingWebhooks = append(out.FailingWebhooks, operatorapi.FailingWebhook{PartnerId: f.PartnerID,
			PartnerName: f.PartnerName, Url: f.URL, FailingEvents: f.FailingEvents,
			LastStatus: f.LastStatus, LastError: f.LastError, FailingSince: f.FailingSince})
	}
	return operatorapi.GetOverview200JSONResponse{Success: true, Data: out}, nil
}

// networkOut maps a network's stored progress; what was never read is null.
func networkOut(n backoffice.NetworkProgress) operatorapi.NetworkProgress {
	out := operatorapi.NetworkProgress{Network: n.Network, ScannedBlock: n.Scanned, ScannedAt: n.ScannedAt, Lag: n.Lag(),
		Providers: []operatorapi.ChainProvider{}}
	r := n.Reading
	if r == nil {
		return out
	}
	out.HeadBlock, out.HeadAt, out.FinalizedBlock, out.FinalizedAt = r.Head, r.HeadAt, r.Finalized, r.FinalizedAt
	out.UpdatedAt = &r.UpdatedAt
	if r.Finality != "" {
		out.Finality, out.FinalitySince = &r.Finality, r.FinalitySince
	}
	for _, p := range r.Providers {
		cp := operatorapi.ChainProvider{Name: p.Name, State: p.State, Push: p.Push, Since: p.Since}
		if p.Head > 0 {
			h := int64(p.Head)
			cp.HeadBlock = &h
		}
		if p.Error != "" {
			e := p.Error
			cp.Error = &e
		}
		out.Providers = append(out.Providers, cp)
	}
	return out
}

// ListAudit pages through the operators' actions and the command line's (GET /audit).
func (s *Server) ListAudit(ctx context.Context, req operatorapi.ListAuditRequestObject) (operatorapi.ListAuditResponseObject, error) {
	q := req.Params
	limit, after := httpkit.PageParams(q.Limit, q.Cursor)
	f := audit.Filter{OperatorID: q.OperatorId, TransactionID: q.TransactionId, From: q.From, To: q.To}
	if q.Action != nil {
		a := audit.Action(*q.Action)
		if !audit.Known(a) {
			return nil, apperr.Field(apperr.InvalidRequest, "No such audit action.", "action", "must be one of the AuditAction values")
		}
		f.Action = &a
	}
	page, err := s.audit.List(ctx, f, limit, after)
	if err != nil {
		return nil, err
	}
	ids := make([]uuid.UUID, len(page.Items))
	for i, e := range page.Items {
		ids[i] = e.ID
	}
	parties, err := s.backoffice.AuditParties(ctx, ids)
	if err != nil {
		return nil, err
	}
	items := make([]operatorapi.AuditEntry, len(page.Items))
	for i, e := range page.Items {
		p := parties[e.ID]
		var proposer, cliUser *string
		if e.ProposerID != nil {
			proposer = &e.ProposerName
		}
		if e.CLIUser != "" {
			cliUser = &e.CLIUser
		}
		items[i] = operatorapi.AuditEntry{Id: e.ID, Actor: operatorapi.AuditActor(e.Actor), OperatorId: e.OperatorID, OperatorName: e.Who(),
			PartnerUserId: e.PartnerUserID, ProposerId: e.ProposerID, ProposerName: proposer, CliUser: cliUser,
			Action: operatorapi.AuditAction(e.Action), TransactionId: e.TransactionID, UnmatchedDepositId: e.UnmatchedDepositID,
			BatchId: e.BatchID, SubjectId: e.SubjectID, SubjectName: p.SubjectName, PartnerId: p.PartnerID, PartnerName: p.PartnerName,
			Reference: e.Reference, CreatedAt: e.CreatedAt}
	}
	return operatorapi.ListAudit200JSONResponse{Success: true, Data: operatorapi.AuditPage{
		Data: items, HasMore: page.HasMore, Limit: page.Limit, NextCursor: page.NextCursor,
	}}, nil
}

// CreatePayout records one bank transfer for many transactions (POST /payouts).
func (s *Server) CreatePayout(ctx context.Context, req operatorapi.CreatePayoutRequestObject) (operatorapi.CreatePayoutResponseObject, error) {
	o, err := operatorFrom(ctx)
	if err != nil {
		return nil, err
	}
	fiat, err := decimal.NewFromString(req.Body.FiatAmount)
	if err != nil { // the contract's pattern admits decimals only; batches checks the rest
		return nil, apperr.Field(apperr.InvalidRequest, "The NGN amount is not a decimal.", "/fiat_amount", "must be a decimal")
	}
	answer := func(b *batches.Batch) operatorapi.CreatePayoutResponseObject {
		msg := "Payout recorded."
		return operatorapi.CreatePayout200JSONResponse{BatchOKJSONResponse: operatorapi.BatchOKJSONResponse{Body: operatorapi.BatchResponse{
			Success: true, Message: &msg, Data: batchOut(b),
		}}}
	}
	key := httpkit.KeyedBy[actions.Tx](ctx, s.idem, answer, operatorapi.CreatePayoutResponseObject.VisitCreatePayoutResponse)
	b, err := s.actions.BatchPayout(ctx, key, actorOf(ctx, o), req.Body.PartnerId, req.Body.TransactionIds, req.Body.Reference, fiat)
	if err != nil {
		return nil, err
	}
	return answer(b), nil
}

// CreateFill records one liquidity order for many transactions (POST /fills).
func (s *Server) CreateFill(ctx context.Context, req operatorapi.CreateFillRequestObject) (operatorapi.CreateFillResponseObject, error) {
	o, err := operatorFrom(ctx)
	if err != nil {
		return nil, err
	}
	rate, err := decimal.NewFromString(req.Body.Rate)
	if err != nil { // the contract's pattern admits decimals only; the lifecycle checks the rest
		return nil, apperr.Field(apperr.InvalidRequest, "The rate is not a decimal.", "/rate", "must be a decimal")
	}
	answer := func(b *batches.Batch) operatorapi.CreateFillResponseObject {
		msg := "Fill recorded."
		return operatorapi.CreateFill200JSONResponse{BatchOKJSONResponse: operatorapi.BatchOKJSONResponse{Body: operatorapi.BatchResponse{
			Success: true, Message: &msg, Data: batchOut(b),
		}}}
	}
	key := httpkit.KeyedBy[actions.Tx](ctx, s.idem, answer, operatorapi.CreateFillResponseObject.VisitCreateFillResponse)
	b, err := s.actions.BatchFill(ctx, key, actorOf(ctx, o), req.Body.TransactionIds, rate, req.Body.Reference)
	if err != nil {
		return nil, err
	}
	return answer(b), nil
}

// ListPayouts pages through batch payouts (GET /payouts).
func (s *Server) ListPayouts(ctx context.Context, req operatorapi.ListPayoutsRequestObject) (operatorapi.ListPayoutsResponseObject, error) {
	limit, after := httpkit.PageParams(req.Params.Limit, req.Params.Cursor)
	page, err := s.batches.List(ctx, batches.Payout, req.Params.PartnerId, limit, after)
	if err != nil {
		return nil, err
	}
	return operatorapi.ListPayouts200JSONResponse{Success: true, Data: batchPageOut(page)}, nil
}

// ListFills pages through batch fills (GET /fills).
func (s *Server) ListFills(ctx context.Context, req operatorapi.ListFillsRequestObject) (operatorapi.ListFillsResponseObject, error) {
	limit, after := httpkit.PageParams(req.Params.Limit, req.Params.Cursor)
	page, err := s.batches.List(ctx, batches.Fill, nil, limit, after)
	if err != nil {
		return nil, err
	}
	return operatorapi.ListFills200JSONResponse{Success: true, Data: batchPageOut(page)}, nil
}

func batchPageOut(p *batches.Page) operatorapi.BatchPage {
	items := make([]operatorapi.Batch, len(p.Items))
	for i, b := range p.Items {
		items[i] = batchOut(b)
	}
	return operatorapi.BatchPage{Data: items, HasMore: p.HasMore, Limit: p.Limit, NextCursor: p.NextCursor}
}

func batchOut(b *batches.Batch) operatorapi.Batch {
	out := operatorapi.Batch{Id: b.ID, Kind: operatorapi.BatchKind(b.Kind), PartnerId: b.PartnerID, Reference: b.Reference,
		FiatAmount: money.FormatFiat(b.FiatAmount), CryptoAmount: money.FormatTokens(b.CryptoAmount),
		TransactionIds: b.TransactionIDs, OperatorId: b.OperatorID, CreatedAt: b.CreatedAt}
	if out.TransactionIds == nil {
		out.TransactionIds = []uuid.UUID{}
	}
	if b.Rate != nil {
		r := money.FormatRate(*b.Rate)
		out.Rate = &r
	}
	return out
}

// caseOut maps a case file to the detailed transaction.
func (s *Server) caseOut(ctx context.Context, c *backoffice.Case) (operatorapi.OperatorTransactionDetail, error) {
	var out operatorapi.OperatorTransactionDetail
	base, err := s.out(ctx, c.Transaction)
	if err != nil {
		return out, err
	}
	// The detail is the transaction's fields plus its case file (allOf in the contract).
	b, err := json.Marshal(base[0])
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return out, err
	}
	out.Deposits = make([]operatorapi.DepositTransfer, len(c.Deposits))
	for i, d := range c.Deposits {
		out.Deposits[i] = operatorapi.DepositTransfer{TxHash: d.TxHash, LogIndex: d.LogIndex, FromAddress: d.FromAddress,
			Amount: money.FormatTokens(d.Amount), BlockNumber: d.BlockNumber, State: d.State, SeenAt: d.SeenAt}
	}
	if st := c.Settlement; st != nil {
		out.Settlement = &operatorapi.SettlementRecord{Reference: st.Reference, OperatorId: st.OperatorID, SettledAt: st.At}
	}
	if p := c.Payout; p != nil {
		out.Payout = &operatorapi.PayoutRecord{Reference: p.Reference, OperatorId: p.OperatorID, SettledAt: p.At}
		if pb := c.PayoutBatch; pb != nil {
			amount := money.FormatFiat(pb.FiatAmount)
			out.Payout.PayoutId, out.Payout.PayoutFiatAmount = &pb.ID, &amount
		}
	}
	out.AllowedActions = []operatorapi.OperatorAction{}
	for _, a := range lifecycle.AllowedActions(c.Transaction) {
		out.AllowedActions = append(out.AllowedActions, operatorapi.OperatorAction(a))
	}
	out.History = make([]operatorapi.OperatorHistoryEntry, len(c.History))
	names := map[uuid.UUID]*string{}
	for i, h := range c.History {
		e := operatorapi.OperatorHistoryEntry{ToStatus: string(h.To), Reason: h.Reason, ChangedAt: h.ChangedAt,
			OperatorId: h.OperatorID, Reference: h.Reference, Metadata: h.Metadata}
		if id := h.OperatorID; id != nil {
			name, ok := names[*id]
			if !ok {
				if o, err := s.operators.Get(ctx, *id); err == nil {
					name = &o.Name
				} else if apperr.CodeOf(err) != apperr.NotFound {
					return out, err
				}
				names[*id] = name
			}
			e.OperatorName = name
		}
		if h.From != lifecycle.None {
			f := string(h.From)
			e.FromStatus = &f
		}
		if e.Metadata == nil {
			e.Metadata = map[string]any{}
		}
		out.History[i] = e
	}
	return out, nil
}
