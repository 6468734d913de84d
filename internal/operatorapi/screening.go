package operatorapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"

	openapi_types "github.com/oapi-codegen/runtime/types"

	"partnerd/gen/operatorapi"
	"partnerd/internal/kit/csvexport"
	"partnerd/internal/lifecycle"
	"partnerd/internal/pricing/money"
	"partnerd/internal/screening"
)

// Screening reads what the review queue, the lists and the blocked-property
// report show (the store).
type Screening interface {
	TransactionsInScreening(ctx context.Context, states []lifecycle.Screening, limit int) ([]*lifecycle.Transaction, error)
	Screenings(ctx context.Context, id uuid.UUID) ([]lifecycle.ScreeningRecord, error)
	ScreeningDecisions(ctx context.Context, id uuid.UUID) ([]lifecycle.ScreeningDecision, error)
	ScreeningLists(ctx context.Context) ([]screening.ImportedList, error)
}

// queueLimit bounds the review queue and the blocked report.
const queueLimit = 500

// ReviewTransaction records an operator's decision on a held transaction
// (POST /transactions/{id}/review).
func (s *Server) ReviewTransaction(ctx context.Context, req operatorapi.ReviewTransactionRequestObject) (operatorapi.ReviewTransactionResponseObject, error) {
	o, err := operatorFrom(ctx)
	if err != nil {
		return nil, err
	}
	decision, message := lifecycle.Release, "Released: the transaction proceeds."
	if req.Body.Decision == operatorapi.Block {
		decision, message = lifecycle.Block, "Blocked: the transaction failed; its funds are kept."
	}
	key, answer := actionAnswerOf(ctx, s.idem, message, func(ok operatorapi.OperatorActionOKJSONResponse) operatorapi.ReviewTransactionResponseObject {
		return operatorapi.ReviewTransaction200JSONResponse{OperatorActionOKJSONResponse: ok}
	}, operatorapi.ReviewTransactionResponseObject.VisitReviewTransactionResponse)
	t, err := s.actions.Review(ctx, key, actorOf(ctx, o), req.Id, decision, req.Body.Note)
	if err != nil {
		return nil, err
	}
	return answer(t), nil
}

// ListScreeningReviews is the review queue (GET /screening/reviews).
func (s *Server) ListScreeningReviews(ctx context.Context, req operatorapi.ListScreeningReviewsRequestObject) (operatorapi.ListScreeningReviewsResponseObject, error) {
	states := []lifecycle.Screening{lifecycle.ScreeningHeld, lifecycle.ScreeningUnknown}
	if req.Params.State != nil && *req.Params.State == operatorapi.All {
		states = append(states, lifecycle.ScreeningPending)
	}
	ts, err := s.screening.TransactionsInScreening(ctx, states, queueLimit)
	if err != nil {
		return nil, err
	}
	out := make([]operatorapi.ScreeningReview, 0, len(ts))
	for _, t := range ts {
		records, err := s.screening.Screenings(ctx, t.ID)
		if err != nil {
			return nil, err
		}
		results, err := screeningResults(records)
		if err != nil {
			return nil, err
		}
		received := money.FormatTokens(lifecycle.Received(t))
		out = append(out, operatorapi.ScreeningReview{
			TransactionId: t.ID, PartnerId: t.PartnerID, Status: string(t.Status), Screening: operatorapi.ScreeningReviewScreening(t.Screening),
			Network: t.Network, CryptoCurrency: t.Token, DepositAddress: t.DepositAddress, Received: received,
			Senders: nonNil(lifecycle.Senders(t)), Results: results, UpdatedAt: t.UpdatedAt,
		})
	}
	return operatorapi.ListScreeningReviews200JSONResponse{Data: out, Success: true}, nil
}

// screeningResults maps records to the contract's results, their findings as stored.
func screeningResults(records []lifecycle.ScreeningRecord) ([]operatorapi.ScreeningResult, error) {
	out := make([]operatorapi.ScreeningResult, 0, len(records))
	for _, r := range records {
		findings := []operatorapi.ScreeningFinding{}
		if len(r.Findings) > 0 {
			if err := json.Unmarshal(r.Findings, &findings); err != nil {
				return nil, fmt.Errorf("screening %s: findings: %w", r.ID, err)
			}
		}
		out = append(out, operatorapi.ScreeningResult{Address: r.Address, Verdict: operatorapi.ScreeningResultVerdict(r.Verdict),
			CheckedAt: r.CheckedAt, Released: r.Released, Findings: findings})
	}
	return out, nil
}

// ListScreeningLists lists the imported lists (GET /screening/lists).
func (s *Server) ListScreeningLists(ctx context.Context, _ operatorapi.ListScreeningListsRequestObject) (operatorapi.ListScreeningListsResponseObject, error) {
	ls, err := s.screening.ScreeningLists(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]operatorapi.ScreeningList, 0, len(ls))
	for _, l := range ls {
		out = append(out, operatorapi.ScreeningList{Id: l.ID, Source: l.Source, Published: dateOf(l), Size: l.Size,
			ImportedAt: l.ImportedAt, Active: l.Active})
	}
	return operatorapi.ListScreeningLists200JSONResponse{Data: out, Success: true}, nil
}

// BlockedPropertyReport is the CSV of every blocked transaction (GET /screening/blocked).
func (s *Server) BlockedPropertyReport(ctx context.Context, _ operatorapi.BlockedPropertyReportRequestObject) (operatorapi.BlockedPropertyReportResponseObject, error) {
	ts, err := s.screening.TransactionsInScreening(ctx, []lifecycle.Screening{lifecycle.ScreeningBlocked}, queueLimit*20)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	w, err := csvexport.New(&buf, "transaction_id", "partner_id", "network", "token", "deposit_address", "amount", "sender",
		"chain_hashes", "evidence", "blocked_at", "operator_id", "note")
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		records, err := s.screening.Screenings(ctx, t.ID)
		if err != nil {
			return nil, err
		}
		decisions, err := s.screening.ScreeningDecisions(ctx, t.ID)
		if err != nil {
			return nil, err
		}
		var block lifecycle.ScreeningDecision
		for _, d := range decisions {
			if d.Decision == lifecycle.Block {
				block = d
			}
		}
		var hashes, evidence []string
		if t.Deposit != nil {
			for _, tr := range t.Deposit.Transfers {
				hashes = append(hashes, tr.Hash)
			}
		}
		for _, r := range records {
			if r.Verdict == lifecycle.VerdictHit {
				evidence = append(evidence, r.Address+": "+string(r.Findings))
			}
		}
		if err := w.Row(csvexport.Text(t.ID.String()), csvexport.Text(t.PartnerID.String()), csvexport.Word(t.Network),
			csvexport.Word(t.Token), csvexport.Text(t.DepositAddress), csvexport.Amount(money.FormatTokens(lifecycle.Received(t))),
			csvexport.Text(strings.Join(lifecycle.Senders(t), " ")), csvexport.Text(strings.Join(hashes, " ")),
			csvexport.Text(strings.Join(evidence, "; ")), csvexport.Time(block.DecidedAt),
			csvexport.Text(block.OperatorID.String()), csvexport.Text(block.Note)); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return operatorapi.BlockedPropertyReport200TextcsvResponse{Body: &buf, ContentLength: int64(buf.Len())}, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func dateOf(l screening.ImportedList) openapi_types.Date {
	return openapi_types.Date{Time: l.Published}
}
