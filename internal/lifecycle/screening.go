package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"partnerd/internal/audit/actor"
	"partnerd/internal/kit/apperr"
)

// Screening is where a transaction stands in the screening of its deposits'
// senders (package screening asks the screeners; this file holds the one rule of
// what each state allows). Nothing is sold, settled, paid out or sent back on
// chain unless the state Proceeds.
type Screening string

// The screening states.
const (
	// ScreeningNone: nothing to screen (no deposit yet) or screening off.
	ScreeningNone Screening = ""
	// ScreeningPending: a sender waits for a screener (a job asks it).
	ScreeningPending Screening = "pending"
	// ScreeningUnknown: a screener could not answer; asked again until it does.
	ScreeningUnknown Screening = "unknown"
	// ScreeningClear: every sender screened clear.
	ScreeningClear Screening = "clear"
	// ScreeningHeld: a sender was named: held for an operator's review.
	ScreeningHeld Screening = "held"
	// ScreeningReleased: an operator took the hit for a false positive.
	ScreeningReleased Screening = "released"
	// ScreeningBlocked: an operator blocked the funds (the transaction failed;
	// nothing is ever filled, swept or sent back).
	ScreeningBlocked Screening = "blocked"
)

// Proceeds reports whether money in this state may be sold, paid out or sent back.
func (s Screening) Proceeds() bool {
	return s == ScreeningNone || s == ScreeningClear || s == ScreeningReleased
}

// UnderReview is what the partner is told: the transaction waits on a review (a
// hit, or a screener that cannot answer), never why.
func (s Screening) UnderReview() bool { return s == ScreeningHeld || s == ScreeningUnknown }

// ScreeningVerdict is one screening's verdict (screening.Verdict's values).
type ScreeningVerdict string

// The verdicts.
const (
	VerdictClear   ScreeningVerdict = "clear"
	VerdictHit     ScreeningVerdict = "hit"
	VerdictUnknown ScreeningVerdict = "unknown"
)

// ScreeningRecord is one screening of a deposit's sender, with its evidence
// (Findings: the screeners' answers as JSON). The latest record per address is the
// current one; Released marks a hit an operator released.
type ScreeningRecord struct {
	ID            uuid.UUID
	TransactionID uuid.UUID
	Network       string
	Address       string
	Verdict       ScreeningVerdict
	Findings      json.RawMessage
	CheckedAt     time.Time
	Released      bool
}

// ScreeningTx is what screening needs of a unit of work: its records, and the
// job that asks the screeners that cannot answer inside it.
type ScreeningTx interface {
	InsertScreening(ctx context.Context, r *ScreeningRecord) error
	// ScreeningsOf returns transaction id's records, oldest first.
	ScreeningsOf(ctx context.Context, id uuid.UUID) ([]ScreeningRecord, error)
	// ScheduleScreening inserts the job that screens transaction id's senders
	// (again, all of them, when rescreen).
	ScheduleScreening(ctx context.Context, id uuid.UUID, rescreen bool) error
	// Listings returns the active imported lists naming key (screening.Key).
	Listings(ctx context.Context, key string) ([]Listing, error)
	// InsertScreeningDecision records an operator's review decision.
	InsertScreeningDecision(ctx context.Context, d ScreeningDecision) error
}

// ScreeningDecision is an operator's decision on a transaction under review,
// with its note (kept for the regulator; never shown to the partner).
type ScreeningDecision struct {
	TransactionID uuid.UUID
	Decision      ReviewDecision
	Note          string
	OperatorID    uuid.UUID
	DecidedAt     time.Time
}

// Listing is one imported list naming an address: the evidence of a list hit.
type Listing struct {
	Source     string
	Published  time.Time
	ImportedAt time.Time
}

// Screener screens a deposit's sender inside the unit of work that counted it,
// when it can answer there (an imported list is a read of the database); Inline
// reports false when the sender must be asked outside it (a remote screener: the
// screening job). It is nil when screening is off.
type Screener interface {
	Inline(ctx context.Context, tx Tx, network, address string, now time.Time) (*ScreeningRecord, bool, error)
}

// Senders are the distinct senders of t's counted transfers, in order: who is
// screened, and where a refund would go.
func Senders(t *Transaction) []string {
	var out []string
	seen := map[string]bool{}
	if t.Deposit == nil {
		return nil
	}
	for _, tr := range t.Deposit.Transfers {
		if tr.From != "" && !seen[tr.From] {
			seen[tr.From] = true
			out = append(out, tr.From)
		}
	}
	return out
}

// ScreeningStateOf is the rule that turns t's records into its state: a hit on a
// sender nobody released holds it; a sender with no answer yet is pending, one
// whose screener could not answer unknown; otherwise clear (released when an
// operator released one of its hits). failOpen (staging only) lets an unknown
// answer proceed as clear.
func ScreeningStateOf(t *Transaction, records []ScreeningRecord, failOpen bool) Screening {
	latest := map[string]ScreeningRecord{}
	released := map[string]bool{}
	for _, r := range records {
		latest[r.Address] = r
		if r.Released {
			released[r.Address] = true
		}
	}
	held, pending, unknown, anyReleased := false, false, false, false
	from := Senders(t)
	if t.RefundRequestedAt != nil && t.RefundAddress != nil {
		// The destination the partner asked a refund to is screened with the
		// senders: a hit on it holds the transaction as a sender's would.
		if _, ok := latest[*t.RefundAddress]; ok {
			from = append(from, *t.RefundAddress)
		}
	}
	for _, a := range from {
		r, ok := latest[a]
		switch {
		case !ok:
			pending = true
		case r.Verdict == VerdictHit && released[a]:
			anyReleased = true
		case r.Verdict == VerdictHit:
			held = true
		case r.Verdict == VerdictUnknown && !failOpen:
			unknown = true
		}
	}
	switch {
	case held:
		return ScreeningHeld
	case pending:
		return ScreeningPending
	case unknown:
		return ScreeningUnknown
	case anyReleased:
		return ScreeningReleased
	case len(from) == 0:
		return t.Screening
	}
	return ScreeningClear
}

// screenSender runs inside the change that counted a transfer from sender to t:
// the sender is screened inline when the screener can answer there, else the
// screening job is scheduled; t's state follows its records.
func (l *Engine) screenSender(ctx context.Context, tx Tx, t *Transaction, sender string, now time.Time) error {
	if l.screener == nil || sender == "" || t.Screening == ScreeningBlocked {
		return nil
	}
	records, err := tx.ScreeningsOf(ctx, t.ID)
	if err != nil {
		return err
	}
	for _, r := range records {
		if r.Address == sender && r.Verdict != VerdictUnknown {
			t.Screening = ScreeningStateOf(t, records, l.failOpen)
			return nil // screened before (an earlier transfer of the same sender)
		}
	}
	rec, inline, err := l.screener.Inline(ctx, tx, t.Network, sender, now)
	if err != nil {
		return err
	}
	if !inline {
		t.Screening = ScreeningPending
		return tx.ScheduleScreening(ctx, t.ID, false)
	}
	rec.ID, rec.TransactionID = uuid.New(), t.ID
	if err := tx.InsertScreening(ctx, rec); err != nil {
		return err
	}
	t.Screening = ScreeningStateOf(t, append(records, *rec), l.failOpen)
	return nil
}

// ApplyScreening records the screening job's results for transaction id and moves
// its state by them: a transaction whose deposit is confirmed and may now proceed
// fills (with the automatic liquidity adapter) in the same unit of work. It
// returns the transaction and its new state.
func (l *Engine) ApplyScreening(ctx context.Context, tx Tx, id uuid.UUID, results []ScreeningRecord) (*Transaction, error) {
	return l.change(ctx, tx, id, func(ctx context.Context, tx Tx, t *Transaction, now time.Time) ([]step, error) {
		if t.Screening == ScreeningBlocked {
			return nil, nil
		}
		for i := range results {
			results[i].ID, results[i].TransactionID = uuid.New(), t.ID
			if err := tx.InsertScreening(ctx, &results[i]); err != nil {
				return nil, err
			}
		}
		records, err := tx.ScreeningsOf(ctx, t.ID)
		if err != nil {
			return nil, err
		}
		t.Screening = ScreeningStateOf(t, records, l.failOpen)
		return l.fillIfDue(t, nil)
	})
}

// fillIfDue fills t when its deposit is confirmed, it waits for its fill and
// may proceed, with the automatic liquidity adapter.
func (l *Engine) fillIfDue(t *Transaction, meta map[string]any) ([]step, error) {
	if !l.fillsOnConfirm() || !t.Screening.Proceeds() || t.Status != DepositConfirming ||
		t.Deposit == nil || t.Deposit.Status != DepositStatusConfirmed {
		return nil, nil
	}
	s, err := move(t, FillOrder, "filled", meta)
	if err != nil {
		return nil, err
	}
	return []step{s}, nil
}

// ReviewDecision is an operator's decision on a held transaction.
type ReviewDecision string

// The decisions.
const (
	// Release: a false positive; the transaction proceeds as if clear.
	Release ReviewDecision = "released"
	// Block: the funds are blocked; the transaction fails and nothing is ever
	// filled, swept or sent back.
	Block ReviewDecision = "blocked"
)

// Review applies an operator's decision to a transaction under review (held, or
// unknown because a screener cannot answer). Release marks its hits released and
// lets it proceed (a confirmed deposit fills at once with the automatic
// liquidity adapter); Block fails it (history review:failed and
// transaction.failed, which name no reason) and closes its refund tasks, whose
// money is never sent back. The note is the operator's (kept in the audit trail,
// never in what the partner reads). Errors: NotFound, InvalidStateTransition.
func (l *Engine) Review(ctx context.Context, tx Tx, id uuid.UUID, by actor.Actor, decision ReviewDecision, note string) (*Transaction, error) {
	return l.change(ctx, tx, id, func(ctx context.Context, tx Tx, t *Transaction, now time.Time) ([]step, error) {
		if !t.Screening.UnderReview() {
			return nil, apperr.New(apperr.InvalidStateTransition,
				fmt.Sprintf("The transaction is not under review (screening %s).", screeningWord(t.Screening)))
		}
		if err := tx.InsertScreeningDecision(ctx, ScreeningDecision{TransactionID: t.ID, Decision: decision, Note: note,
			OperatorID: by.OperatorID(), DecidedAt: now}); err != nil {
			return nil, err
		}
		switch decision {
		case Release:
			records, err := tx.ScreeningsOf(ctx, t.ID)
			if err != nil {
				return nil, err
			}
			for _, r := range records {
				if r.Verdict != VerdictClear && !r.Released {
					r.Released, r.ID, r.CheckedAt = true, uuid.New(), now
					if err := tx.InsertScreening(ctx, &r); err != nil {
						return nil, err
					}
				}
			}
			t.Screening = ScreeningReleased
			return l.fillIfDue(t, nil)
		case Block:
			s, err := move(t, BlockFunds, "failed", meta(by))
			if err != nil {
				return nil, err
			}
			t.Screening = ScreeningBlocked
			if t.Deposit != nil {
				t.Deposit.Status = DepositStatusFailed
			}
			if l.tasks != nil {
				op := by.OperatorID()
				for _, kind := range []TaskKind{TaskShort, TaskExcess, TaskDust, TaskUnmatched} {
					if err := l.tasks.CloseOpen(ctx, tx, t.ID, kind, &op, "", "blocked: never sent back"); err != nil {
						return nil, err
					}
				}
			}
			return []step{s}, nil
		}
		return nil, fmt.Errorf("lifecycle: unknown review decision %q", decision)
	})
}

func screeningWord(s Screening) string {
	if s == ScreeningNone {
		return "none"
	}
	return string(s)
}

// Received is the token amount t's deposit received (zero without one).
func Received(t *Transaction) decimal.Decimal {
	if t.Deposit == nil {
		return decimal.Zero
	}
	return t.Deposit.Amount
}
