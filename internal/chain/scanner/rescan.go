package scanner

import (
	"context"
	"errors"

	"github.com/ethereum/go-ethereum/common"

	"partnerd/internal/chain"
	"partnerd/internal/chain/rpc"
)

// Receipts is a Client that also reads transaction receipts (the provider pool,
// rpc.Client): what ReadTransaction needs.
type Receipts interface {
	Receipt(ctx context.Context, txHash common.Hash) (*rpc.Receipt, error)
}

// ErrNoReceipts is a scanner whose client does not read receipts.
var ErrNoReceipts = errors.New("the chain client does not read transaction receipts")

// ReadTransaction reads one transaction again by its hash (a rescan) through the
// scanner's client and rules: its receipt (eth_getTransactionReceipt, served by
// bsc and by java-tron's /jsonrpc alike), believed once its block has the
// network's confirmations and is the block the providers have at that height;
// its Transfer logs turn into transfers exactly as a scanned block's do
// (transfers: the configured tokens only, no zero amounts, deposit addresses
// only, the block's hash and time checked), each with its confirmations. It
// records nothing and takes no lock: the caller hands the transfers to the
// deposits service as the scanner does.
func (s *Scanner) ReadTransaction(ctx context.Context, txHash common.Hash) (chain.Sighting, error) {
	rc, ok := s.client.(Receipts)
	if !ok {
		return chain.Sighting{}, ErrNoReceipts
	}
	r, err := rc.Receipt(ctx, txHash)
	if err != nil || r == nil || r.Failed {
		return chain.Sighting{}, err
	}
	out := chain.Sighting{Found: true, Block: r.BlockNumber}
	head, err := s.client.BlockNumber(ctx)
	if err != nil {
		return chain.Sighting{}, err
	}
	if head >= r.BlockNumber {
		out.Confirmations = int(head - r.BlockNumber + 1)
	}
	if out.Confirmations < max(s.cfg.Confirmations, 1) {
		return out, nil
	}
	b, err := s.client.BlockByNumber(ctx, r.BlockNumber)
	if err != nil {
		return chain.Sighting{}, err
	}
	if b == nil || b.Hash != r.BlockHash {
		// The receipt came from a block no longer at its height (a provider on
		// a branch being reorganised away): not believed now, asked again later.
		return out, nil
	}
	transfers, err := s.transfers(ctx, r.Logs, r.BlockNumber, r.BlockNumber, b)
	if err != nil {
		return chain.Sighting{}, err
	}
	for i := range transfers {
		transfers[i].Confirmations = out.Confirmations
	}
	out.Final, out.Transfers = true, transfers
	return out, nil
}
