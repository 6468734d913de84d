// Package deposits is the chain watcher's side of payments: it keeps what the
// scanners found (each transfer to a deposit address, by network, hash and log
// index; each network's cursor) and applies every transfer to its transaction
// through the lifecycle engine's payment rules (lifecycle.Engine.ReceiveTransfer,
// ConfirmTransfer, DropTransfer), in the same unit of work as its own
// bookkeeping. It implements scanner.Sink.
package deposits

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"partnerd/internal/chain"
	"partnerd/internal/lifecycle"
)

// ChainTransfer is a token transfer to one of our deposit addresses, identified by
// (Network, TxHash, LogIndex).
type ChainTransfer struct {
	Network   string
	TxHash    string
	LogIndex  uint
	Token     string
	Block     uint64
	BlockHash string
	BlockTime time.Time
	From, To  string
	// Raw is the amount in the token's base units; Amount is it at 6 decimals, rounded down.
	Raw    decimal.Decimal
	Amount decimal.Decimal
	// TransactionID is the transaction owning the address.
	TransactionID *uuid.UUID
	DepositID     string
	State         string
	// Final marks an unmatched transfer whose block has the network's
	// confirmations: no longer re-checked against reorganisations.
	Final bool
	// Confirmations is the deposit's count (read with pending transfers only).
	Confirmations int
	// Note says why an unmatched transfer was not applied.
	Note      string
	CreatedAt time.Time
}

// Chain transfer states.
const (
	TransferPending   = "pending"
	TransferConfirmed = "confirmed"
	TransferReorged   = "reorged"
	TransferUnmatched = "unmatched"
)

// Tx is the unit of work of a batch of transfers: the lifecycle's changes and the
// watcher's own bookkeeping of each transfer, committed together.
type Tx interface {
	lifecycle.Tx
	// MoveChainCursor sets the cursor to next if it is still prev (nil: unset) and
	// reports whether it did.
	MoveChainCursor(ctx context.Context, network string, prev *chain.Cursor, next chain.Cursor) (bool, error)
	// ChainTransfer returns the transfer with that key, or nil.
	ChainTransfer(ctx context.Context, network, txHash string, logIndex uint) (*ChainTransfer, error)
	SaveChainTransfer(ctx context.Context, t *ChainTransfer) error
	// TransactionIDByAddress returns the transaction whose deposit address on network is addr.
	TransactionIDByAddress(ctx context.Context, network, addr string) (uuid.UUID, error)
	DeleteDeposit(ctx context.Context, transactionID uuid.UUID) error
}

// ChainStore is what the deposit watcher keeps in the database: reads outside a
// unit of work, and the unit of work (WithTx) in which a batch's writes are made.
type ChainStore interface {
	// WithTx runs fn in a unit of work of its own, handing fn its tx.
	WithTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	ChainCursor(ctx context.Context, network string) (*chain.Cursor, error)
	PendingChainTransfers(ctx context.Context, network string) ([]ChainTransfer, error)
	// WatchedAddresses returns which of addrs are deposit addresses of network.
	WatchedAddresses(ctx context.Context, network string, addrs []string) (map[string]bool, error)
	// PartnerDepositAddresses returns which of addrs are deposit addresses of
	// network of partner partnerID's transactions.
	PartnerDepositAddresses(ctx context.Context, partnerID uuid.UUID, network string, addrs []string) (map[string]bool, error)
}

// UnmatchedRecorder is the operators' refund list (refunds.Service) as the
// deposit watcher needs it: transfers that did not count are recorded there by the
// payment rules (payments.go), and forgotten here when their block is reorganised
// away.
type UnmatchedRecorder interface {
	// Forget removes the still-open record of a transfer whose block was
	// reorganised away (nothing arrived: nothing to refund).
	Forget(ctx context.Context, tx lifecycle.TaskTx, network, txHash string, logIndex int) error
}

// UnmatchedObserver hears of transfers stored as unmatched (for the log and metrics).
type UnmatchedObserver interface {
	Unmatched(t *ChainTransfer)
}

// Deposits applies what the chain scanners find to transactions through the
// Engine (the same rules as the sandbox simulator). It implements scanner.Sink.
type Deposits struct {
	l         *lifecycle.Engine
	st        ChainStore
	unmatched UnmatchedRecorder
	observer  UnmatchedObserver
}

// New returns the deposits service.
func New(l *lifecycle.Engine, st ChainStore, u UnmatchedRecorder, o UnmatchedObserver) *Deposits {
	return &Deposits{l: l, st: st, unmatched: u, observer: o}
}

// Cursor returns network's scanner cursor (nil before the first batch).
func (d *Deposits) Cursor(ctx context.Context, network string) (*chain.Cursor, error) {
	return d.st.ChainCursor(ctx, network)
}

// Watching returns which of addrs are our deposit addresses.
func (d *Deposits) Watching(ctx context.Context, network string, addrs []string) (map[string]bool, error) {
	return d.st.WatchedAddresses(ctx, network, addrs)
}

// ErrCursorMoved means another scanner moved the cursor: the batch was not recorded.
var ErrCursorMoved = errors.New("chain cursor moved by another scanner")

// Record stores a batch: each transfer not seen before (or seen in a block that was
// reorganised away) is applied to its transaction or stored as unmatched, and the
// cursor moves from prev to next, all in one database transaction.
func (d *Deposits) Record(ctx context.Context, network string, prev *chain.Cursor, next chain.Cursor, transfers []chain.Transfer) error {
	var found []*ChainTransfer
	err := d.st.WithTx(ctx, func(ctx context.Context, tx Tx) error {
		found = found[:0]
		for _, tr := range transfers {
			row, fresh, err := d.record(ctx, tx, tr)
			if err != nil {
				return err
			}
			if fresh && row.State == TransferUnmatched {
				found = append(found, row)
			}
		}
		ok, err := tx.MoveChainCursor(ctx, network, prev, next)
		if err != nil {
			return err
		}
		if !ok {
			return ErrCursorMoved
		}
		return nil
	})
	if err == nil && d.observer != nil {
		for _, u := range found {
			d.observer.Unmatched(u)
		}
	}
	return err
}

// record applies one transfer (see Record) and returns its row, and whether it
// was recorded now (fresh) or seen before (the row as it was: a no-op).
func (d *Deposits) record(ctx context.Context, tx Tx, tr chain.Transfer) (*ChainTransfer, bool, error) {
	hash := chain.FormatHash(tr.Network, tr.TxHash)
	old, err := tx.ChainTransfer(ctx, tr.Network, hash, tr.LogIndex)
	if err != nil {
		return nil, false, err
	}
	if old != nil && old.State != TransferReorged {
		return old, false, nil // seen before: a no-op
	}
	id, err := tx.TransactionIDByAddress(ctx, tr.Network, tr.ToAddress)
	if err != nil {
		return nil, false, err
	}
	row := &ChainTransfer{
		Network: tr.Network, TxHash: hash, LogIndex: tr.LogIndex, Token: tr.Token,
		Block: tr.Block, BlockHash: tr.BlockHash.Hex(), BlockTime: tr.BlockTime,
		From: chain.FormatAddress(tr.Network, tr.From), To: tr.ToAddress,
		Raw: decimal.NewFromBigInt(tr.Raw, 0), Amount: tr.Amount,
		TransactionID: &id, DepositID: chain.DepositID(tr.Network, tr.TxHash, tr.LogIndex),
	}
	if old != nil {
		row.CreatedAt = old.CreatedAt
	}
	// Never confirmed here, even when already deep enough (a catch-up): the next
	// poll re-checks the block against the canonical chain first.
	o, note, err := d.l.ReceiveTransfer(ctx, tx, id, lifecycle.Incoming{
		ID: row.DepositID, Token: row.Token, Hash: row.TxHash, LogIndex: int(row.LogIndex), Block: int64(row.Block),
		From: row.From, To: row.To, Amount: row.Amount, Raw: row.Raw.String(),
		Confirmations: max(tr.Confirmations, 1), ReceivedAt: row.BlockTime,
	})
	if err != nil {
		return nil, false, err
	}
	switch o {
	case lifecycle.Counted, lifecycle.Known:
		row.State = TransferPending
	default: // dust and transfers the transaction does not take: kept for the operators
		row.State, row.Note = TransferUnmatched, note
	}
	return row, true, tx.SaveChainTransfer(ctx, row)
}

// Pending returns network's detected deposits that have not confirmed yet.
func (d *Deposits) Pending(ctx context.Context, network string) ([]chain.Pending, error) {
	rows, err := d.st.PendingChainTransfers(ctx, network)
	if err != nil {
		return nil, err
	}
	out := make([]chain.Pending, 0, len(rows))
	for _, r := range rows {
		p := chain.Pending{Network: r.Network, TxHash: chain.ParseHash(r.TxHash), LogIndex: r.LogIndex,
			Block: r.Block, BlockHash: chain.ParseHash(r.BlockHash), Confirmations: r.Confirmations,
			Unmatched: r.State == TransferUnmatched}
		out = append(out, p)
	}
	return out, nil
}

// Confirm raises p's confirmations (lifecycle.Engine.ConfirmTransfer). An
// unmatched transfer becomes final at the network's requirement, once final (its
// block at or below the node's finalized block; always on a node without one).
func (d *Deposits) Confirm(ctx context.Context, p chain.Pending, confirmations int, final bool) error {
	if p.Unmatched {
		return d.onUnmatched(ctx, p, func(row *ChainTransfer) bool {
			if confirmations < d.l.RequiredFor(p.Network) || !final {
				return false
			}
			row.Final = true
			return true
		})
	}
	return d.onPending(ctx, p, func(ctx context.Context, tx Tx, row *ChainTransfer) error {
		fate, err := d.l.ConfirmTransfer(ctx, tx, *row.TransactionID, row.DepositID, confirmations, final)
		if err != nil {
			return err
		}
		d.settle(row, fate)
		return nil
	})
}

// Drop undoes p, whose block left the canonical chain (lifecycle.Engine.DropTransfer):
// the transfer no longer counts, and a deposit left with no transfer is removed.
// The transfer is counted again if it reappears.
func (d *Deposits) Drop(ctx context.Context, p chain.Pending) error {
	if p.Unmatched {
		return d.onUnmatched(ctx, p, func(row *ChainTransfer) bool {
			row.State, row.Note = TransferReorged, "its block was reorganised away before it was final"
			return true
		})
	}
	return d.onPending(ctx, p, func(ctx context.Context, tx Tx, row *ChainTransfer) error {
		fate, emptied, err := d.l.DropTransfer(ctx, tx, *row.TransactionID, row.DepositID, map[string]any{
			"deposit_id": row.DepositID, "blockchain_hash": row.TxHash, "block": row.Block, "block_hash": row.BlockHash,
		})
		if err != nil {
			return err
		}
		d.settle(row, fate)
		if emptied {
			return tx.DeleteDeposit(ctx, *row.TransactionID)
		}
		return nil
	})
}

// settle records in row what the engine made of its transfer.
func (d *Deposits) settle(row *ChainTransfer, fate lifecycle.Fate) {
	switch fate {
	case lifecycle.Settled:
		row.State = TransferConfirmed
	case lifecycle.Dropped:
		row.State = TransferReorged
	case lifecycle.Gone:
		row.State, row.Note = TransferUnmatched, "the transaction's deposit is no longer this transfer"
	}
}

// onPending runs fn on pending transfer p, when it is still pending, and saves
// the transfer's new state, in one unit of work with the change fn makes.
func (d *Deposits) onPending(ctx context.Context, p chain.Pending, fn func(ctx context.Context, tx Tx, row *ChainTransfer) error) error {
	return d.st.WithTx(ctx, func(ctx context.Context, tx Tx) error {
		row, err := tx.ChainTransfer(ctx, p.Network, chain.FormatHash(p.Network, p.TxHash), p.LogIndex)
		if err != nil {
			return err
		}
		if row == nil || row.State != TransferPending || row.TransactionID == nil {
			return nil
		}
		if err := fn(ctx, tx, row); err != nil {
			return err
		}
		if row.State != TransferPending {
			return tx.SaveChainTransfer(ctx, row)
		}
		return nil
	})
}

// onUnmatched applies fn to unmatched transfer p and, when fn changed it, saves it
// in one unit of work; a transfer dropped by a reorganisation also leaves the
// operators' list (it never arrived), and is recorded again if it reappears.
func (d *Deposits) onUnmatched(ctx context.Context, p chain.Pending, fn func(row *ChainTransfer) bool) error {
	return d.st.WithTx(ctx, func(ctx context.Context, tx Tx) error {
		row, err := tx.ChainTransfer(ctx, p.Network, chain.FormatHash(p.Network, p.TxHash), p.LogIndex)
		if err != nil || row == nil || row.State != TransferUnmatched || row.Final {
			return err
		}
		if !fn(row) {
			return nil
		}
		if row.State == TransferReorged && d.unmatched != nil {
			if err := d.unmatched.Forget(ctx, tx, row.Network, row.TxHash, int(row.LogIndex)); err != nil {
				return err
			}
		}
		return tx.SaveChainTransfer(ctx, row)
	})
}
