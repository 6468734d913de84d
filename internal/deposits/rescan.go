package deposits

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"

	"partnerd/internal/chain"
)

// A rescan lives here, beside Record, because it is the watcher's crediting
// asked for one transaction: the network's scanner reads the transaction again
// (scanner.Scanner.ReadTransaction: the same log reading and filtering as a
// scanned block's), and each transfer to the asking partner's deposit addresses
// goes through record, the one path by which the watcher hands a transfer to the
// lifecycle. Nothing else credits; what follows (screening, confirmations, the
// late window, unmatched transfers) is the watcher's usual work.

// TransactionReader reads one chain transaction again (scanner.Scanner).
type TransactionReader interface {
	ReadTransaction(ctx context.Context, txHash common.Hash) (chain.Sighting, error)
}

// Rescan results (the contract's RescanResult.result).
const (
	RescanCredited        = "credited"
	RescanAlreadyRecorded = "already_recorded"
	RescanNotOurs         = "not_ours"
	RescanNotFinal        = "not_final"
	RescanNotFound        = "not_found"
)

// Rescan is what a rescan found: Result (Rescan*) and the partner's
// transactions the chain transaction paid (credited now or before).
type Rescan struct {
	Result         string
	TransactionIDs []uuid.UUID
}

// ErrNotWatched is a network without a deposit watcher on this server (staging
// with the simulator only): nothing can be read from its chain.
var ErrNotWatched = errors.New("no deposit watcher reads this network on this server")

// ChainUnavailableError is the chain's providers failing to answer a rescan.
type ChainUnavailableError struct{ Err error }

func (e *ChainUnavailableError) Error() string { return "chain providers: " + e.Err.Error() }
func (e *ChainUnavailableError) Unwrap() error { return e.Err }

// Rescanner runs rescans: one TransactionReader per watched network.
type Rescanner struct {
	d       *Deposits
	readers map[string]TransactionReader
	off     map[string]string
}

// NewRescanner returns the rescans of d's transfers, reading each network
// through its reader; a network without one is not watched here, for the
// reason off gives (CHAIN_RPC_<NETWORK> unset, say).
func NewRescanner(d *Deposits, readers map[string]TransactionReader, off map[string]string) *Rescanner {
	return &Rescanner{d: d, readers: readers, off: off}
}

// Rescan reads transaction txHash on network again and records every transfer
// of the network's token to one of partner partnerID's deposit addresses that
// was not recorded yet (see the comment at the top of this file). Transfers to
// other partners' addresses are neither recorded nor reported. Errors:
// ErrNotWatched, *ChainUnavailableError, or the database's.
func (r *Rescanner) Rescan(ctx context.Context, partnerID uuid.UUID, network string, txHash common.Hash) (Rescan, error) {
	reader := r.readers[network]
	if reader == nil || r.d == nil {
		if why := r.off[network]; why != "" {
			return Rescan{}, fmt.Errorf("%w (%s: %s)", ErrNotWatched, network, why)
		}
		return Rescan{}, fmt.Errorf("%w (%s)", ErrNotWatched, network)
	}
	seen, err := reader.ReadTransaction(ctx, txHash)
	if err != nil {
		if ctx.Err() != nil {
			return Rescan{}, ctx.Err()
		}
		return Rescan{}, &ChainUnavailableError{Err: err}
	}
	switch {
	case !seen.Found:
		return Rescan{Result: RescanNotFound}, nil
	case !seen.Final:
		return Rescan{Result: RescanNotFinal}, nil
	}
	addrs := make([]string, 0, len(seen.Transfers))
	for _, t := range seen.Transfers {
		addrs = append(addrs, t.ToAddress)
	}
	mine := map[string]bool{}
	if len(addrs) > 0 {
		if mine, err = r.d.st.PartnerDepositAddresses(ctx, partnerID, network, addrs); err != nil {
			return Rescan{}, err
		}
	}
	var ours []chain.Transfer
	for _, t := range seen.Transfers {
		if mine[t.ToAddress] {
			ours = append(ours, t)
		}
	}
	if len(ours) == 0 {
		return Rescan{Result: RescanNotOurs}, nil
	}
	fresh, ids, err := r.d.recordFound(ctx, ours)
	if err != nil {
		return Rescan{}, err
	}
	out := Rescan{Result: RescanAlreadyRecorded, TransactionIDs: ids}
	if fresh {
		out.Result = RescanCredited
	}
	return out, nil
}

// recordFound records transfers as Record does, without moving the cursor (a
// rescan reads no blocks), and reports whether any was recorded now and the
// transactions they pay, in their order.
func (d *Deposits) recordFound(ctx context.Context, transfers []chain.Transfer) (bool, []uuid.UUID, error) {
	var found []*ChainTransfer
	var ids []uuid.UUID
	fresh := false
	err := d.st.WithTx(ctx, func(ctx context.Context, tx Tx) error {
		found, ids, fresh = found[:0], ids[:0], false
		for _, tr := range transfers {
			row, isNew, err := d.record(ctx, tx, tr)
			if err != nil {
				return err
			}
			if isNew {
				fresh = true
				if row.State == TransferUnmatched {
					found = append(found, row)
				}
			}
			if row.TransactionID != nil && !slices.Contains(ids, *row.TransactionID) {
				ids = append(ids, *row.TransactionID)
			}
		}
		return nil
	})
	if err != nil {
		return false, nil, err
	}
	if d.observer != nil {
		for _, u := range found {
			d.observer.Unmatched(u)
		}
	}
	return fresh, ids, nil
}
