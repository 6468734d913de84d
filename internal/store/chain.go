package store

import (
	"context"
	"errors"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"partnerd/internal/chain"
	"partnerd/internal/deposits"
)

type chainCursorRow struct {
	Network   string `gorm:"primaryKey"`
	Block     int64
	BlockHash string
	UpdatedAt time.Time
}

func (chainCursorRow) TableName() string { return "chain_cursors" }

// ChainCursor returns network's scanner cursor, or nil when none is stored.
func (s *Store) ChainCursor(ctx context.Context, network string) (*chain.Cursor, error) {
	var row chainCursorRow
	err := s.read(ctx).Where("network = ?", network).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &chain.Cursor{Block: uint64(row.Block), Hash: common.HexToHash(row.BlockHash)}, nil
}

// MoveChainCursor sets network's cursor to next if it is still prev (nil: no cursor
// yet), a compare-and-set, and reports whether it did.
func (s *Store) MoveChainCursor(ctx context.Context, network string, prev *chain.Cursor, next chain.Cursor) (bool, error) {
	row := chainCursorRow{Network: network, Block: int64(next.Block), BlockHash: next.Hash.Hex(), UpdatedAt: Now()}
	if prev == nil {
		res := s.write(ctx).Exec(`INSERT INTO chain_cursors (network, block, block_hash, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (network) DO NOTHING`, row.Network, row.Block, row.BlockHash, row.UpdatedAt)
		return res.RowsAffected == 1, res.Error
	}
	res := s.write(ctx).Model(&chainCursorRow{}).
		Where("network = ? AND block = ? AND block_hash = ?", network, int64(prev.Block), prev.Hash.Hex()).
		Updates(map[string]any{"block": row.Block, "block_hash": row.BlockHash, "updated_at": row.UpdatedAt})
	return res.RowsAffected == 1, res.Error
}

type chainTransferRow struct {
	Network       string `gorm:"primaryKey"`
	TxHash        string `gorm:"primaryKey"`
	LogIndex      int64  `gorm:"primaryKey"`
	Token         string
	BlockNumber   int64
	BlockHash     string
	BlockTime     time.Time
	FromAddress   string
	ToAddress     string
	RawAmount     decimal.Decimal
	Amount        decimal.Decimal
	TransactionID *uuid.UUID
	DepositID     string
	State         string
	Final         bool
	Note          string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// Confirmations is read from the deposit by PendingChainTransfers only.
	Confirmations int `gorm:"->;-:migration"`
}

func (chainTransferRow) TableName() string { return "chain_transfers" }

func (r *chainTransferRow) domain() deposits.ChainTransfer {
	return deposits.ChainTransfer{
		Network: r.Network, TxHash: r.TxHash, LogIndex: uint(r.LogIndex), Token: r.Token,
		Block: uint64(r.BlockNumber), BlockHash: r.BlockHash, BlockTime: r.BlockTime.UTC(),
		From: r.FromAddress, To: r.ToAddress, Raw: r.RawAmount, Amount: r.Amount,
		TransactionID: r.TransactionID, DepositID: r.DepositID, State: r.State, Final: r.Final, Note: r.Note,
		Confirmations: r.Confirmations, CreatedAt: r.CreatedAt.UTC(),
	}
}

// ChainTransfer returns the transfer (network, txHash, logIndex), or nil.
func (s *Store) ChainTransfer(ctx context.Context, network, txHash string, logIndex uint) (*deposits.ChainTransfer, error) {
	var row chainTransferRow
	err := s.read(ctx).Where("network = ? AND tx_hash = ? AND log_index = ?", network, txHash, int64(logIndex)).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	t := row.domain()
	return &t, nil
}

// SaveChainTransfer inserts or updates a transfer.
func (s *Store) SaveChainTransfer(ctx context.Context, t *deposits.ChainTransfer) error {
	now := Now()
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now
	}
	row := chainTransferRow{
		Network: t.Network, TxHash: t.TxHash, LogIndex: int64(t.LogIndex), Token: t.Token,
		BlockNumber: int64(t.Block), BlockHash: t.BlockHash, BlockTime: t.BlockTime,
		FromAddress: t.From, ToAddress: t.To, RawAmount: t.Raw, Amount: t.Amount,
		TransactionID: t.TransactionID, DepositID: t.DepositID, State: t.State, Final: t.Final, Note: t.Note,
		CreatedAt: t.CreatedAt, UpdatedAt: now,
	}
	// An upsert rather than Save: a log index of 0 is a zero primary key to GORM.
	return s.write(ctx).Omit("Confirmations").Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "network"}, {Name: "tx_hash"}, {Name: "log_index"}},
		DoUpdates: clause.AssignmentColumns([]string{"token", "block_number", "block_hash", "block_time", "from_address", "to_address", "raw_amount", "amount", "transaction_id", "deposit_id", "state", "final", "note", "updated_at"}),
	}).Create(&row).Error
}

// PendingChainTransfers returns network's transfers still to be checked against
// the canonical chain, oldest block first: the pending ones, with their deposit's
// confirmations, and the unmatched ones not yet final.
func (s *Store) PendingChainTransfers(ctx context.Context, network string) ([]deposits.ChainTransfer, error) {
	var rows []chainTransferRow
	err := s.read(ctx).Table("chain_transfers AS c").
		Select("c.*, COALESCE(d.confirmations, 0) AS confirmations").
		Joins("LEFT JOIN deposits d ON d.transaction_id = c.transaction_id AND d.deposit_id = c.deposit_id").
		Where("c.network = ? AND (c.state = ? OR (c.state = ? AND c.final = ?))",
			network, deposits.TransferPending, deposits.TransferUnmatched, false).
		Order("c.block_number, c.tx_hash, c.log_index").Scan(&rows).Error
	if err != nil {
		return nil, err
	}
	out := make([]deposits.ChainTransfer, len(rows))
	for i := range rows {
		out[i] = rows[i].domain()
	}
	return out, nil
}

// ChainTransfers returns the transfers stored as unmatched (all of them when
// unmatchedOnly is false), newest first, at most limit.
func (s *Store) ChainTransfers(ctx context.Context, unmatchedOnly bool, limit int) ([]deposits.ChainTransfer, error) {
	db := s.read(ctx).Model(&chainTransferRow{})
	if unmatchedOnly {
		db = db.Where("state = ?", deposits.TransferUnmatched)
	}
	var rows []chainTransferRow
	if err := db.Order("created_at DESC, network, tx_hash, log_index").Limit(limit).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]deposits.ChainTransfer, len(rows))
	for i := range rows {
		out[i] = rows[i].domain()
	}
	return out, nil
}

// watchedChunk is how many addresses one WatchedAddresses query asks about: a
// whole eth_getLogs answer (the scanner aims at 5,000 logs) in one statement,
// under both databases' parameter limits (PostgreSQL 65,535, SQLite 32,766).
// Planning is per statement: ten statements of 500 addresses cost PostgreSQL
// several times the planning and round trips of one of 5,000.
const watchedChunk = 5000

// WatchedAddresses returns which of addrs are deposit addresses on network. A
// catch-up asks it about every transfer's recipient (80 a block on USDT), so each
// address is asked once and a batch's addresses in one statement.
func (s *Store) WatchedAddresses(ctx context.Context, network string, addrs []string) (map[string]bool, error) {
	return s.depositAddresses(ctx, nil, network, addrs)
}

// PartnerDepositAddresses returns which of addrs are deposit addresses on network
// of partner partnerID's transactions (a rescan credits only the asking
// partner's), in statements of watchedChunk addresses.
func (s *Store) PartnerDepositAddresses(ctx context.Context, partnerID uuid.UUID, network string, addrs []string) (map[string]bool, error) {
	return s.depositAddresses(ctx, &partnerID, network, addrs)
}

// depositAddresses returns which of addrs are deposit addresses on network (of
// partner's transactions only, when partner is set).
func (s *Store) depositAddresses(ctx context.Context, partner *uuid.UUID, network string, addrs []string) (map[string]bool, error) {
	out := map[string]bool{}
	seen := make(map[string]struct{}, len(addrs))
	uniq := make([]string, 0, len(addrs))
	for _, a := range addrs {
		if _, ok := seen[a]; !ok {
			seen[a] = struct{}{}
			uniq = append(uniq, a)
		}
	}
	for len(uniq) > 0 {
		n := min(len(uniq), watchedChunk)
		var found []string
		q := s.read(ctx).Model(&transactionRow{}).Where("network = ? AND deposit_address IN ?", network, uniq[:n])
		if partner != nil {
			q = q.Where("partner_id = ?", *partner)
		}
		if err := q.Distinct().Pluck("deposit_address", &found).Error; err != nil {
			return nil, err
		}
		for _, a := range found {
			out[a] = true
		}
		uniq = uniq[n:]
	}
	return out, nil
}

// TransactionIDByAddress returns the transaction whose deposit address on network
// is addr (addresses are never reused), or apperr NotFound.
func (s *Store) TransactionIDByAddress(ctx context.Context, network, addr string) (uuid.UUID, error) {
	var row transactionRow
	if err := s.read(ctx).Select("id").Where("network = ? AND deposit_address = ?", network, addr).
		Order("created_at DESC").Take(&row).Error; err != nil {
		return uuid.Nil, notFound(err, "transaction")
	}
	return row.ID, nil
}

// DeleteDeposit removes a transaction's deposit (a reorganised-away detection).
func (s *Store) DeleteDeposit(ctx context.Context, transactionID uuid.UUID) error {
	if err := s.write(ctx).Where("transaction_id = ?", transactionID).Delete(&depositTransferRow{}).Error; err != nil {
		return err
	}
	return s.write(ctx).Where("transaction_id = ?", transactionID).Delete(&depositRow{}).Error
}

// The deposit watcher's bookkeeping in its unit of work (deposits.Tx).

// MoveChainCursor is Store.MoveChainCursor in the unit of work.
func (tx *Tx) MoveChainCursor(ctx context.Context, network string, prev *chain.Cursor, next chain.Cursor) (bool, error) {
	return tx.store().MoveChainCursor(ctx, network, prev, next)
}

// ChainTransfer is Store.ChainTransfer in the unit of work.
func (tx *Tx) ChainTransfer(ctx context.Context, network, txHash string, logIndex uint) (*deposits.ChainTransfer, error) {
	return tx.store().ChainTransfer(ctx, network, txHash, logIndex)
}

// SaveChainTransfer is Store.SaveChainTransfer in the unit of work.
func (tx *Tx) SaveChainTransfer(ctx context.Context, t *deposits.ChainTransfer) error {
	return tx.store().SaveChainTransfer(ctx, t)
}

// TransactionIDByAddress is Store.TransactionIDByAddress in the unit of work.
func (tx *Tx) TransactionIDByAddress(ctx context.Context, network, addr string) (uuid.UUID, error) {
	return tx.store().TransactionIDByAddress(ctx, network, addr)
}

// DeleteDeposit is Store.DeleteDeposit in the unit of work.
func (tx *Tx) DeleteDeposit(ctx context.Context, transactionID uuid.UUID) error {
	return tx.store().DeleteDeposit(ctx, transactionID)
}
