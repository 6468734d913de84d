package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"partnerd/internal/jobs"
	"partnerd/internal/lifecycle"
	"partnerd/internal/screening"
)

// screeningRow is one screening of a deposit's sender (lifecycle.ScreeningRecord).
type screeningRow struct {
	ID            uuid.UUID `gorm:"primaryKey"`
	TransactionID uuid.UUID
	Network       string
	Address       string
	Verdict       string
	Findings      string
	CheckedAt     time.Time
	Decision      string
}

func (screeningRow) TableName() string { return "screenings" }

func (r screeningRow) domain() lifecycle.ScreeningRecord {
	return lifecycle.ScreeningRecord{ID: r.ID, TransactionID: r.TransactionID, Network: r.Network, Address: r.Address,
		Verdict: lifecycle.ScreeningVerdict(r.Verdict), Findings: json.RawMessage(r.Findings), CheckedAt: r.CheckedAt.UTC(),
		Released: r.Decision == string(lifecycle.Release)}
}

// InsertScreening records one screening in the unit of work.
func (tx *Tx) InsertScreening(ctx context.Context, r *lifecycle.ScreeningRecord) error {
	decision := ""
	if r.Released {
		decision = string(lifecycle.Release)
	}
	findings := string(r.Findings)
	if findings == "" {
		findings = "[]"
	}
	return tx.db.WithContext(ctx).Create(&screeningRow{ID: r.ID, TransactionID: r.TransactionID, Network: r.Network,
		Address: r.Address, Verdict: string(r.Verdict), Findings: findings, CheckedAt: r.CheckedAt.UTC(), Decision: decision}).Error
}

// ScreeningsOf returns transaction id's screenings, oldest first, in the unit of work.
func (tx *Tx) ScreeningsOf(ctx context.Context, id uuid.UUID) ([]lifecycle.ScreeningRecord, error) {
	return tx.store().Screenings(ctx, id)
}

// Screenings returns transaction id's screenings, oldest first.
func (s *Store) Screenings(ctx context.Context, id uuid.UUID) ([]lifecycle.ScreeningRecord, error) {
	var rows []screeningRow
	if err := s.read(ctx).Where("transaction_id = ?", id).Order("checked_at, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("screenings of %s: %w", id, err)
	}
	out := make([]lifecycle.ScreeningRecord, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

// ScheduleScreening inserts the job that screens transaction id's senders.
func (tx *Tx) ScheduleScreening(ctx context.Context, id uuid.UUID, rescreen bool) error {
	return tx.Enqueue(ctx, jobs.ScreenTransactionArgs{TransactionID: id, Rescreen: rescreen}, nil)
}

// ScreeningList is one imported address list.
type ScreeningList = screening.ImportedList

type screeningListRow struct {
	ID         uuid.UUID `gorm:"primaryKey"`
	Source     string
	Published  string
	Size       int
	ImportedAt time.Time
	Active     bool
}

func (screeningListRow) TableName() string { return "screening_lists" }

// listsOf maps list rows to the screening package's lists (published is a date
// stored as text on both databases).
func listsOf(rows []screeningListRow) []ScreeningList {
	out := make([]ScreeningList, len(rows))
	for i, r := range rows {
		p, _ := time.Parse(time.DateOnly, r.Published[:min(len(r.Published), 10)])
		out[i] = ScreeningList{ID: r.ID, Source: r.Source, Published: p, Size: r.Size, ImportedAt: r.ImportedAt.UTC(), Active: r.Active}
	}
	return out
}

type screeningEntryRow struct {
	ListID     uuid.UUID `gorm:"primaryKey"`
	AddressKey string    `gorm:"primaryKey"`
	Address    string
}

func (screeningEntryRow) TableName() string { return "screening_list_entries" }

// ListEntry is an address as a list names it, with its key (screening.Key).
type ListEntry = screening.Entry

// ImportScreeningList stores a list of source published on published in one unit
// of work: the source's earlier import is kept as a record but no longer
// screened against, and every transaction whose funds have not moved on (no fill
// yet, not blocked) is queued to be screened again against it. It returns the
// list and how many transactions were queued.
func (s *Store) ImportScreeningList(ctx context.Context, source string, published time.Time, entries []ListEntry, now time.Time) (*ScreeningList, int, error) {
	l := &ScreeningList{ID: uuid.New(), Source: source, Published: published, Size: len(entries), ImportedAt: now.UTC(), Active: true}
	queued := 0
	err := s.Transact(ctx, func(ctx context.Context, tx *Tx) error {
		db := tx.db.WithContext(ctx)
		if err := db.Model(&screeningListRow{}).Where("source = ? AND active = ?", source, true).Update("active", false).Error; err != nil {
			return err
		}
		if err := db.Exec(`DELETE FROM screening_list_entries WHERE list_id IN (SELECT id FROM screening_lists WHERE source = ? AND active = ?)`, source, false).Error; err != nil {
			return err
		}
		if err := db.Create(&screeningListRow{ID: l.ID, Source: source, Published: published.Format(time.DateOnly), Size: len(entries),
			ImportedAt: l.ImportedAt, Active: true}).Error; err != nil {
			return err
		}
		rows := make([]screeningEntryRow, 0, len(entries))
		for _, e := range entries {
			rows = append(rows, screeningEntryRow{ListID: l.ID, AddressKey: e.Key, Address: e.Address})
		}
		if len(rows) > 0 {
			if err := db.CreateInBatches(rows, 500).Error; err != nil {
				return err
			}
		}
		var ids []uuid.UUID
		if err := db.Model(&transactionRow{}).Where("screening IN ? AND status IN ?",
			[]string{string(lifecycle.ScreeningPending), string(lifecycle.ScreeningUnknown), string(lifecycle.ScreeningClear), string(lifecycle.ScreeningReleased)},
			[]string{string(lifecycle.AwaitingDeposit), string(lifecycle.DepositConfirming), string(lifecycle.Expired)}).
			Pluck("id", &ids).Error; err != nil {
			return err
		}
		for _, id := range ids {
			if err := tx.ScheduleScreening(ctx, id, true); err != nil {
				return err
			}
		}
		queued = len(ids)
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("import screening list %s: %w", source, err)
	}
	return l, queued, nil
}

// ScreeningLists returns the imported lists, the active ones first, newest first.
func (s *Store) ScreeningLists(ctx context.Context) ([]ScreeningList, error) {
	var rows []screeningListRow
	if err := s.read(ctx).Order("active DESC, imported_at DESC").Find(&rows).Error; err != nil {
		return nil, err
	}
	return listsOf(rows), nil
}

// ListedIn returns the active lists naming key (empty when none does).
func (s *Store) ListedIn(ctx context.Context, key string) ([]ScreeningList, error) {
	var rows []screeningListRow
	err := s.read(ctx).Table("screening_lists AS l").Select("l.*").
		Joins("JOIN screening_list_entries e ON e.list_id = l.id").
		Where("e.address_key = ? AND l.active = ?", key, true).Order("l.source").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("look up %s in the screening lists: %w", key, err)
	}
	return listsOf(rows), nil
}

// Listings is ListedIn as the screeners read it.
func (s *Store) Listings(ctx context.Context, key string) ([]lifecycle.Listing, error) {
	ls, err := s.ListedIn(ctx, key)
	if err != nil {
		return nil, err
	}
	out := make([]lifecycle.Listing, len(ls))
	for i, l := range ls {
		out[i] = lifecycle.Listing{Source: l.Source, Published: l.Published, ImportedAt: l.ImportedAt}
	}
	return out, nil
}

// Listings is Store.Listings in the unit of work.
func (tx *Tx) Listings(ctx context.Context, key string) ([]lifecycle.Listing, error) {
	return tx.store().Listings(ctx, key)
}

// HasScreeningSource reports whether a list of source was ever imported.
func (s *Store) HasScreeningSource(ctx context.Context, source string) (bool, error) {
	var n int64
	err := s.read(ctx).Model(&screeningListRow{}).Where("source = ?", source).Count(&n).Error
	return n > 0, err
}

type screeningDecisionRow struct {
	TransactionID uuid.UUID `gorm:"primaryKey"`
	Decision      string
	Note          string
	OperatorID    uuid.UUID
	DecidedAt     time.Time `gorm:"primaryKey"`
}

func (screeningDecisionRow) TableName() string { return "screening_decisions" }

// InsertScreeningDecision records an operator's decision in the unit of work.
func (tx *Tx) InsertScreeningDecision(ctx context.Context, d lifecycle.ScreeningDecision) error {
	return tx.db.WithContext(ctx).Create(&screeningDecisionRow{TransactionID: d.TransactionID, Decision: string(d.Decision),
		Note: d.Note, OperatorID: d.OperatorID, DecidedAt: d.DecidedAt.UTC()}).Error
}

// ScreeningDecisions returns the decisions on transaction id, oldest first.
func (s *Store) ScreeningDecisions(ctx context.Context, id uuid.UUID) ([]lifecycle.ScreeningDecision, error) {
	var rows []screeningDecisionRow
	if err := s.read(ctx).Where("transaction_id = ?", id).Order("decided_at").Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]lifecycle.ScreeningDecision, len(rows))
	for i, r := range rows {
		out[i] = lifecycle.ScreeningDecision{TransactionID: r.TransactionID, Decision: lifecycle.ReviewDecision(r.Decision),
			Note: r.Note, OperatorID: r.OperatorID, DecidedAt: r.DecidedAt.UTC()}
	}
	return out, nil
}

// TransactionsInScreening returns up to limit transactions whose screening is one
// of states, oldest change first (the review queue, the blocked report).
func (s *Store) TransactionsInScreening(ctx context.Context, states []lifecycle.Screening, limit int) ([]*lifecycle.Transaction, error) {
	var ids []uuid.UUID
	names := make([]string, len(states))
	for i, st := range states {
		names[i] = string(st)
	}
	if err := s.read(ctx).Model(&transactionRow{}).Where("screening IN ?", names).Order("updated_at, id").Limit(limit).
		Pluck("id", &ids).Error; err != nil {
		return nil, err
	}
	out := make([]*lifecycle.Transaction, 0, len(ids))
	for _, id := range ids {
		t, err := s.Transaction(ctx, id)
		if errors.Is(err, gorm.ErrRecordNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// CountInScreening returns how many transactions are in each screening state of
// states (the overview, the metrics).
func (s *Store) CountInScreening(ctx context.Context, states []lifecycle.Screening) (map[lifecycle.Screening]int, error) {
	names := make([]string, len(states))
	for i, st := range states {
		names[i] = string(st)
	}
	var rows []struct {
		Screening string
		N         int
	}
	if err := s.read(ctx).Model(&transactionRow{}).Select("screening, COUNT(*) AS n").Where("screening IN ?", names).
		Group("screening").Scan(&rows).Error; err != nil {
		return nil, err
	}
	out := map[lifecycle.Screening]int{}
	for _, r := range rows {
		out[lifecycle.Screening(r.Screening)] = r.N
	}
	return out, nil
}
