package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"partnerd/internal/jobs"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/lifecycle"
	"partnerd/internal/transactions"
)

type transactionRow struct {
	ID                uuid.UUID `gorm:"primaryKey"`
	PartnerID         uuid.UUID
	MerchantReference string
	ReferenceKey      string
	MerchantID        *string
	TerminalID        *string
	SellerPhone       *string
	CryptoCurrency    string
	Network           string
	CryptoAmount      decimal.Decimal
	FiatAmount        decimal.Decimal
	Rate              decimal.Decimal
	QuoteID           *uuid.UUID
	DepositAddress    string
	AddressIndex      int64
	Status            string
	CreatedAt         time.Time
	UpdatedAt         time.Time
	ExpiresAt         time.Time
	PayoutSettledAt   *time.Time
	Version           int64
	Screening         string
	RefundAddress     *string
	RefundRequestedAt *time.Time
}

func (transactionRow) TableName() string { return "transactions" }

func (r *transactionRow) domain() *lifecycle.Transaction {
	return &lifecycle.Transaction{
		ID: r.ID, PartnerID: r.PartnerID, MerchantReference: r.MerchantReference, ReferenceKey: r.ReferenceKey,
		MerchantID: r.MerchantID, TerminalID: r.TerminalID, SellerPhone: r.SellerPhone,
		Token: r.CryptoCurrency, Network: r.Network,
		CryptoAmount: r.CryptoAmount, FiatAmount: r.FiatAmount, Rate: r.Rate, QuoteID: r.QuoteID,
		DepositAddress: r.DepositAddress, AddressIndex: uint32(r.AddressIndex),
		Status:    lifecycle.Status(r.Status),
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC(),
		PayoutSettledAt: utcPtr(r.PayoutSettledAt), Version: r.Version,
		Screening:     lifecycle.Screening(r.Screening),
		RefundAddress: r.RefundAddress, RefundRequestedAt: utcPtr(r.RefundRequestedAt),
	}
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// InsertTransaction inserts t. A merchant reference the partner already used (in
// any letter case) is apperr DuplicateMerchantReference. The insert skips a
// conflict on the reference index instead of failing on it, so the unit of work
// stays usable (a failed statement would abort a PostgreSQL transaction).
//
// It is one of the statements every create runs, so it is written out rather than
// built by GORM from the model (which cost a tenth of a create's CPU).
func (tx *Tx) InsertTransaction(ctx context.Context, t *lifecycle.Transaction) error {
	res := tx.db.WithContext(ctx).Exec(`INSERT INTO transactions (id, partner_id, merchant_reference, reference_key,
		merchant_id, terminal_id, seller_phone, crypto_currency, network, crypto_amount, fiat_amount, rate, quote_id,
		deposit_address, address_index, status, created_at, updated_at, expires_at, version, refund_address)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)
		ON CONFLICT (partner_id, reference_key) DO NOTHING`,
		t.ID, t.PartnerID, t.MerchantReference, t.ReferenceKey, t.MerchantID, t.TerminalID, t.SellerPhone,
		t.Token, t.Network, t.CryptoAmount, t.FiatAmount, t.Rate, t.QuoteID,
		t.DepositAddress, int64(t.AddressIndex), string(t.Status), t.CreatedAt, t.UpdatedAt, t.ExpiresAt, t.RefundAddress)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return apperr.Field(apperr.DuplicateMerchantReference,
			"A transaction with this merchant_reference already exists.",
			"/merchant_reference", "already used by this partner (case-insensitive)")
	}
	return nil
}

// NextAddressIndex allocates the next derivation index of network. On PostgreSQL it
// is a sequence per network (EnsureAddressSequences creates them): nextval never
// hands out a value twice, even when the transaction that took it rolls back (that
// index is simply never used), and it holds no lock, so concurrent creations do not
// queue behind one another. SQLite has one writer at a time anyway; there a counter
// row is incremented inside the caller's transaction.
func (tx *Tx) NextAddressIndex(ctx context.Context, network string) (uint32, error) {
	next, err := tx.s.eng.nextAddressIndex(ctx, tx, network)
	if err != nil {
		return 0, fmt.Errorf("allocate address index of %s: %w", network, err)
	}
	idx := next - 1
	if idx < 0 || idx >= 1<<31 {
		return 0, fmt.Errorf("address index %d of %s out of the non-hardened range", idx, network)
	}
	return uint32(idx), nil
}

// ReleaseAddressIndex hands back index, allocated by NextAddressIndex in this unit
// of work, when no transaction took it (the create failed: a duplicate reference,
// say): on PostgreSQL it goes back to the front of the instance's block, so the
// next create of the network takes it; on SQLite the counter goes back by one
// (this unit of work holds the one writer, so nobody took a later index since).
// A create that fails thus leaves no unused address, whether or not the unit of
// work commits (an idempotent request stores its 409 and commits).
func (tx *Tx) ReleaseAddressIndex(ctx context.Context, network string, index uint32) error {
	if err := tx.s.eng.releaseAddressIndex(ctx, tx, network, index); err != nil {
		return fmt.Errorf("release address index %d of %s: %w", index, network, err)
	}
	return nil
}

// EnsureAddressSequences creates the PostgreSQL sequence of each network's deposit
// address indexes, starting where the network's counter row left off (if any). It is
// idempotent and a no-op on SQLite. Call it at start with every configured network.
func (s *Store) EnsureAddressSequences(ctx context.Context, networks []string) error {
	return s.eng.ensureAddressSequences(ctx, s, networks)
}

// MarkQuoteUsed sets the quote's used_at when unset and reports whether it did; a
// conditional update, correct under concurrency on both databases.
func (tx *Tx) MarkQuoteUsed(ctx context.Context, id uuid.UUID, at time.Time) (bool, error) {
	res := tx.db.WithContext(ctx).Model(&quoteRow{}).Where("id = ? AND used_at IS NULL", id).Update("used_at", at)
	return res.RowsAffected == 1, res.Error
}

type historyRow struct {
	ID            int64 `gorm:"primaryKey"`
	TransactionID uuid.UUID
	FromStatus    *string
	ToStatus      string
	Reason        string
	Metadata      *string
	ChangedAt     time.Time
}

func (historyRow) TableName() string { return "status_history" }

// InsertHistory appends a status-history entry. It is written behind (later):
// with the event and the key's answer that usually follow it, one round trip.
func (tx *Tx) InsertHistory(ctx context.Context, h *lifecycle.HistoryEntry) error {
	var from, meta *string
	if h.From != lifecycle.None {
		f := string(h.From)
		from = &f
	}
	if h.Metadata != nil {
		b, err := json.Marshal(h.Metadata)
		if err != nil {
			return err
		}
		m := string(b)
		meta = &m
	}
	return tx.later(ctx, laterWrite{query: `INSERT INTO status_history (transaction_id, from_status, to_status, reason, metadata, changed_at)
		VALUES (?, ?, ?, ?, ?, ?) RETURNING true AS r`, args: []any{h.TransactionID, from, string(h.To), h.Reason, meta, h.ChangedAt}})
}

// History returns a transaction's status history, oldest first.
func (s *Store) History(ctx context.Context, transactionID uuid.UUID) ([]lifecycle.HistoryEntry, error) {
	var rows []historyRow
	if err := s.read(ctx).Where("transaction_id = ?", transactionID).Order("id").Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]lifecycle.HistoryEntry, 0, len(rows))
	for _, r := range rows {
		h := lifecycle.HistoryEntry{TransactionID: r.TransactionID, To: lifecycle.Status(r.ToStatus), Reason: r.Reason, ChangedAt: r.ChangedAt.UTC()}
		if r.FromStatus != nil {
			h.From = lifecycle.Status(*r.FromStatus)
		}
		if r.Metadata != nil {
			if err := json.Unmarshal([]byte(*r.Metadata), &h.Metadata); err != nil {
				return nil, fmt.Errorf("history metadata: %w", err)
			}
		}
		out = append(out, h)
	}
	return out, nil
}

type eventRow struct {
	ID            uuid.UUID `gorm:"primaryKey"`
	PartnerID     uuid.UUID
	TransactionID uuid.UUID
	Type          string
	Payload       string
	CreatedAt     time.Time
}

func (eventRow) TableName() string { return "events" }

// AppendEvent writes an outbox event and, when the partner has an enabled
// webhook endpoint, its delivery job, both in this unit of work. An event of a
// type the partner's endpoint does not receive (webhook.Receives) is not written
// at all; with no endpoint every event is. While no endpoint is enabled the event
// waits as pending with no job (a job could only find nothing to do); enabling an
// endpoint queues every pending event, and the periodic requeue sweep catches an
// event whose unit of work raced that. The insert checks the endpoint's types and
// reports its state itself (RETURNING) and is written behind (later), so an event
// costs no round trip of its own; its job is enqueued once it has been sent,
// still in this unit of work.
func (tx *Tx) AppendEvent(ctx context.Context, e *lifecycle.Event) error {
	return tx.later(ctx, laterWrite{
		query: `INSERT INTO events (id, partner_id, transaction_id, type, payload, created_at)
		SELECT ?, ?, ?, ?, ?, ?
		WHERE NOT EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.partner_id = ? AND NOT (` + receivesEvent + `))
		RETURNING (SELECT w.enabled FROM webhook_endpoints w WHERE w.partner_id = events.partner_id) AS r`,
		args: []any{e.ID, e.PartnerID, e.TransactionID, string(e.Type), string(e.Payload), e.CreatedAt,
			e.PartnerID, receivesPattern(string(e.Type))},
		done: func(ctx context.Context, rows int64, enabled bool) error {
			if rows > 1 {
				return fmt.Errorf("append event %s: %d rows written", e.ID, rows)
			}
			if rows == 0 || !enabled {
				return nil // not a type the endpoint receives, or deliveries off
			}
			return tx.Enqueue(ctx, jobs.DeliverEventArgs{EventID: e.ID}, nil)
		},
	})
}

// TransactionByID returns partnerID's transaction id with its deposit, or apperr NotFound.
func (s *Store) TransactionByID(ctx context.Context, partnerID, id uuid.UUID) (*lifecycle.Transaction, error) {
	return loadTransaction(s.read(ctx), false, "t.id = ? AND t.partner_id = ?", id, partnerID)
}

// TransactionByReference returns partnerID's transaction whose folded reference is
// referenceKey, with its deposit, or apperr NotFound.
func (s *Store) TransactionByReference(ctx context.Context, partnerID uuid.UUID, referenceKey string) (*lifecycle.Transaction, error) {
	return loadTransaction(s.read(ctx), false, "t.partner_id = ? AND t.reference_key = ?", partnerID, referenceKey)
}

// TransactionForUpdate returns transaction id of any partner with its deposit, as
// this unit of work sees it (for the lifecycle, whose callers checked the partner
// already or act for the system), and holds the transaction's row until the unit
// of work ends. A concurrent change of the same transaction waits here and then
// reads the committed state, so it is refused by the state machine (409) before
// it inserts anything that depends on the state (a fill, a revenue row) and
// would break a key. On PostgreSQL that is SELECT … FOR UPDATE (of the
// transaction's row only: the deposit is on the nullable side of the join); on
// SQLite the one writer serialises the units of work already. UpdateTransaction
// stays conditional on the version read here as a second guard.
func (tx *Tx) TransactionForUpdate(ctx context.Context, id uuid.UUID) (*lifecycle.Transaction, error) {
	return loadTransaction(tx.db.WithContext(ctx), tx.s.eng.locksRows(), "t.id = ?", id)
}

// transactionWithDeposit is a transaction row with its deposit's columns (all
// null when it has none), read in one query.
type transactionWithDeposit struct {
	Row                      transactionRow `gorm:"embedded"`
	DepDepositID             *string
	DepStatus                *string
	DepConfirmations         *int
	DepRequiredConfirmations *int
	DepChainHash             *string
	DepAmount                decimal.NullDecimal
	DepReceivedAt            *time.Time
	DepConfirmedAt           *time.Time
}

// transactionColumns are transactionRow's columns in the order of its fields
// (transactionRow.fields), for the reads that scan rows by hand: the read by id
// and the list are the API's hottest statements, and scanning their columns
// directly instead of through GORM's reflection took a quarter to a third of
// their CPU away.
const transactionColumns = `id, partner_id, merchant_reference, reference_key, merchant_id, terminal_id,
	seller_phone, crypto_currency, network, crypto_amount, fiat_amount, rate, quote_id, deposit_address,
	address_index, status, created_at, updated_at, expires_at, payout_settled_at, version, screening,
	refund_address, refund_requested_at`

// fields are pointers to r's fields in the order of transactionColumns.
func (r *transactionRow) fields() []any {
	return []any{&r.ID, &r.PartnerID, &r.MerchantReference, &r.ReferenceKey, &r.MerchantID, &r.TerminalID,
		&r.SellerPhone, &r.CryptoCurrency, &r.Network, &r.CryptoAmount, &r.FiatAmount, &r.Rate, &r.QuoteID, &r.DepositAddress,
		&r.AddressIndex, &r.Status, &r.CreatedAt, &r.UpdatedAt, &r.ExpiresAt, &r.PayoutSettledAt, &r.Version, &r.Screening,
		&r.RefundAddress, &r.RefundRequestedAt}
}

// transactionWithDepositColumns are the joined read's columns, in the order of
// transactionWithDeposit.fields.
var transactionWithDepositColumns = qualified("t", transactionColumns) +
	`, d.deposit_id, d.status, d.confirmations, d.required_confirmations, d.chain_hash, d.amount,
	d.received_at, d.confirmed_at`

// qualified prefixes each of the comma-separated columns with table.
func qualified(table, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = table + "." + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

// fields are pointers to row's fields in the order of transactionWithDepositColumns.
func (row *transactionWithDeposit) fields() []any {
	return append(row.Row.fields(), &row.DepDepositID, &row.DepStatus, &row.DepConfirmations, &row.DepRequiredConfirmations,
		&row.DepChainHash, &row.DepAmount, &row.DepReceivedAt, &row.DepConfirmedAt)
}

// loadTransaction reads one transaction and its deposit in a single query (and the
// deposit's transfers in a second); lock first takes the transaction's row lock
// (SELECT … FOR UPDATE, PostgreSQL only) in a statement of its own. Locking in the
// joined read instead would lose updates: under READ COMMITTED a FOR UPDATE that
// waited for a concurrent change re-reads only the locked row, so the deposit
// joined to it would be the one from before that change (an expiry's "underpaid"
// read back as "partial" by a confirmation that waited for it, then written
// over). A statement after the lock reads everything as committed.
func loadTransaction(db *gorm.DB, lock bool, where string, args ...any) (*lifecycle.Transaction, error) {
	var row transactionWithDeposit
	if lock {
		var ids []string
		if err := db.Table("transactions AS t").Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).
			Where(where, args...).Pluck("t.id", &ids).Error; err != nil {
			return nil, fmt.Errorf("lock transaction: %w", err)
		}
	}
	rows, err := db.Raw("SELECT "+transactionWithDepositColumns+
		" FROM transactions AS t LEFT JOIN deposits d ON d.transaction_id = t.id WHERE "+where+" LIMIT 1", args...).Rows()
	if err != nil {
		return nil, notFound(err, "transaction")
	}
	found := rows.Next()
	if found {
		err = rows.Scan(row.fields()...)
	}
	err = errors.Join(err, rows.Err(), rows.Close())
	switch {
	case err != nil:
		return nil, notFound(err, "transaction")
	case !found:
		return nil, notFound(gorm.ErrRecordNotFound, "transaction")
	}
	t := row.Row.domain()
	if row.DepDepositID != nil {
		t.Deposit = (&depositRow{
			TransactionID: t.ID, DepositID: *row.DepDepositID, Status: deref(row.DepStatus),
			Confirmations: deref(row.DepConfirmations), RequiredConfirmations: deref(row.DepRequiredConfirmations),
			ChainHash: deref(row.DepChainHash), Amount: row.DepAmount.Decimal,
			ReceivedAt: deref(row.DepReceivedAt), ConfirmedAt: row.DepConfirmedAt,
		}).domain()
		var trs []depositTransferRow
		if err := db.Where("transaction_id = ?", t.ID).Order("position").Find(&trs).Error; err != nil {
			return nil, fmt.Errorf("load deposit transfers: %w", err)
		}
		for _, r := range trs {
			t.Deposit.Transfers = append(t.Deposit.Transfers, r.domain())
		}
	}
	return t, nil
}

// depositTransferRow is one transfer counted toward a deposit.
type depositTransferRow struct {
	TransactionID         uuid.UUID `gorm:"primaryKey"`
	TransferID            string    `gorm:"primaryKey"`
	Position              int
	TxHash                string
	LogIndex              int
	FromAddress           string
	Amount                decimal.Decimal
	BlockNumber           int64
	Confirmations         int
	RequiredConfirmations int
	ReceivedAt            time.Time
	ConfirmedAt           *time.Time
}

func (depositTransferRow) TableName() string { return "deposit_transfers" }

func (r depositTransferRow) domain() lifecycle.Transfer {
	return lifecycle.Transfer{
		ID: r.TransferID, Hash: r.TxHash, LogIndex: r.LogIndex, From: r.FromAddress, Amount: r.Amount, Block: r.BlockNumber,
		Confirmations: r.Confirmations, RequiredConfirmations: r.RequiredConfirmations,
		ReceivedAt: r.ReceivedAt.UTC(), ConfirmedAt: utcPtr(r.ConfirmedAt),
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// UpdateTransaction writes t's mutable state if its version is unchanged, bumping it.
func (tx *Tx) UpdateTransaction(ctx context.Context, t *lifecycle.Transaction) (bool, error) {
	res := tx.db.WithContext(ctx).Model(&transactionRow{}).Where("id = ? AND version = ?", t.ID, t.Version).Updates(map[string]any{
		"status": string(t.Status), "updated_at": t.UpdatedAt, "payout_settled_at": t.PayoutSettledAt, "version": t.Version + 1,
		"crypto_amount": t.CryptoAmount, "fiat_amount": t.FiatAmount, "rate": t.Rate, "screening": string(t.Screening),
		"refund_address": t.RefundAddress, "refund_requested_at": t.RefundRequestedAt,
	})
	return res.RowsAffected == 1, res.Error
}

// DueForExpiry returns up to limit ids of transactions awaiting deposit whose
// deadline is at or before now, oldest deadline first.
func (s *Store) DueForExpiry(ctx context.Context, now time.Time, limit int) ([]uuid.UUID, error) {
	var ids []uuid.UUID
	err := s.read(ctx).Model(&transactionRow{}).Where("status = ? AND expires_at <= ?", string(lifecycle.AwaitingDeposit), now).
		Order("expires_at").Limit(limit).Pluck("id", &ids).Error
	return ids, err
}

// PartnerRates returns the partner's fee and share rates.
func (tx *Tx) PartnerRates(ctx context.Context, partnerID uuid.UUID) (decimal.Decimal, decimal.Decimal, error) {
	p, err := partnerByID(tx.db.WithContext(ctx), partnerID)
	if err != nil {
		return decimal.Decimal{}, decimal.Decimal{}, err
	}
	return p.FeeRate, p.ShareRate, nil
}

type depositRow struct {
	TransactionID         uuid.UUID `gorm:"primaryKey"`
	DepositID             string
	Status                string
	Confirmations         int
	RequiredConfirmations int
	ChainHash             string
	Amount                decimal.Decimal
	ReceivedAt            time.Time
	ConfirmedAt           *time.Time
	UpdatedAt             time.Time
}

func (depositRow) TableName() string { return "deposits" }

func (r *depositRow) domain() *lifecycle.Deposit {
	return &lifecycle.Deposit{
		ID: r.DepositID, Status: r.Status, Confirmations: r.Confirmations, RequiredConfirmations: r.RequiredConfirmations,
		Hash: r.ChainHash, Amount: r.Amount, ReceivedAt: r.ReceivedAt.UTC(), ConfirmedAt: utcPtr(r.ConfirmedAt),
	}
}

// SaveDeposit inserts or updates the deposit of transaction id.
func (tx *Tx) SaveDeposit(ctx context.Context, id uuid.UUID, d *lifecycle.Deposit) error {
	row := depositRow{
		TransactionID: id, DepositID: d.ID, Status: d.Status, Confirmations: d.Confirmations,
		RequiredConfirmations: d.RequiredConfirmations, ChainHash: d.Hash, Amount: d.Amount,
		ReceivedAt: d.ReceivedAt, ConfirmedAt: d.ConfirmedAt, UpdatedAt: Now(),
	}
	db := tx.db.WithContext(ctx)
	if err := db.Save(&row).Error; err != nil {
		return err
	}
	// The transfers are few: replaced as a whole.
	if err := db.Where("transaction_id = ?", id).Delete(&depositTransferRow{}).Error; err != nil {
		return err
	}
	if len(d.Transfers) == 0 {
		return nil
	}
	rows := make([]depositTransferRow, len(d.Transfers))
	for i, tr := range d.Transfers {
		rows[i] = depositTransferRow{
			TransactionID: id, TransferID: tr.ID, Position: i, TxHash: tr.Hash, LogIndex: tr.LogIndex, FromAddress: tr.From,
			Amount: tr.Amount, BlockNumber: tr.Block, Confirmations: tr.Confirmations,
			RequiredConfirmations: tr.RequiredConfirmations, ReceivedAt: tr.ReceivedAt, ConfirmedAt: tr.ConfirmedAt,
		}
	}
	return db.Create(&rows).Error
}

// ListTransactions returns up to q.Limit of partnerID's transactions matching q,
// ordered by (created_at, id) descending, starting after q.After. The keyset
// condition and order match the (partner_id, created_at DESC, id DESC) index, so a
// deep page costs what the first one does. Each transaction's Deposit holds its
// status only (nil without one); TransactionByID reads the whole deposit.
func (s *Store) ListTransactions(ctx context.Context, partnerID uuid.UUID, q transactions.ListQuery) ([]*lifecycle.Transaction, error) {
	db := s.read(ctx).Where("partner_id = ?", partnerID)
	if len(q.Statuses) > 0 {
		st := make([]string, len(q.Statuses))
		for i, v := range q.Statuses {
			st[i] = string(v)
		}
		db = db.Where("status IN ?", st)
	}
	db = whereEq(db, "merchant_id", q.MerchantID)
	db = whereEq(db, "terminal_id", q.TerminalID)
	db = whereEq(db, "reference_key", q.ReferenceKey)
	db = whereEq(db, "deposit_address", q.AddressKey)
	db = whereEq(db, "network", q.Network)
	if len(q.HashKeys) > 0 {
		db = db.Where("EXISTS (SELECT 1 FROM deposit_transfers dt WHERE dt.transaction_id = transactions.id AND dt.tx_hash IN ?)", q.HashKeys)
	}
	db = within(db, "created_at", q.From, q.To)
	db, err := afterPosition(db, "created_at", "id", q.After)
	if err != nil {
		return nil, err
	}
	// Each row's deposit status (a primary-key lookup per row of the page) is what
	// the list tells of the deposit: whether the transaction waits on its partner's
	// decision (lifecycle.ActionRequired).
	rows, err := db.Table("transactions").Select(transactionColumns +
		", (SELECT d.status FROM deposits d WHERE d.transaction_id = transactions.id)").
		Order("created_at DESC, id DESC").Limit(q.Limit).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]*lifecycle.Transaction, 0, q.Limit)
	for rows.Next() {
		var r transactionRow
		var depositStatus *string
		if err := rows.Scan(append(r.fields(), &depositStatus)...); err != nil {
			return nil, err
		}
		t := r.domain()
		if depositStatus != nil {
			t.Deposit = &lifecycle.Deposit{Status: *depositStatus}
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// Transaction returns transaction id of any partner with its deposit (the
// operator API's view), or apperr NotFound.
func (s *Store) Transaction(ctx context.Context, id uuid.UUID) (*lifecycle.Transaction, error) {
	return loadTransaction(s.read(ctx), false, "t.id = ?", id)
}

// IssuedAddress is one deposit address the service handed out: its derivation
// index under the network's account key, the transaction it belongs to and what
// that transaction's deposit received.
type IssuedAddress struct {
	Index         uint32
	Address       string
	TransactionID uuid.UUID
	Status        string
	Token         string
	// Received is the matched deposit's amount; nil when none was matched.
	Received *decimal.Decimal
}

// IssuedAddresses calls fn with every deposit address issued on network, by
// index, reading the rows as they come (a network may have millions). The
// address of a transaction whose funds were blocked is left out: blocked
// property is never swept.
func (s *Store) IssuedAddresses(ctx context.Context, network string, fn func(IssuedAddress) error) error {
	rows, err := s.read(ctx).Raw(`SELECT t.address_index, t.deposit_address, t.id, t.status, t.crypto_currency, d.amount
		FROM transactions t LEFT JOIN deposits d ON d.transaction_id = t.id
		WHERE t.network = ? AND t.screening <> 'blocked' ORDER BY t.address_index`, network).Rows()
	if err != nil {
		return fmt.Errorf("issued addresses of %s: %w", network, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			a        IssuedAddress
			idx      int64
			received decimal.NullDecimal
		)
		if err := rows.Scan(&idx, &a.Address, &a.TransactionID, &a.Status, &a.Token, &received); err != nil {
			return fmt.Errorf("issued addresses of %s: %w", network, err)
		}
		a.Index = uint32(idx)
		if received.Valid {
			a.Received = &received.Decimal
		}
		if err := fn(a); err != nil {
			return err
		}
	}
	return rows.Err()
}
