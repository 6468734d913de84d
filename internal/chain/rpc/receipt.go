package rpc

import (
	"context"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
)

// Receipt is what the watcher reads of a transaction's receipt: where it was
// mined, whether it succeeded, and its logs (read as eth_getLogs' are, in the
// client's dialect).
type Receipt struct {
	BlockNumber uint64
	// BlockHash is the hash the node reports for the receipt's block (Tron's
	// BlockId on java-tron), compared with the block's own as the scanner does.
	BlockHash common.Hash
	// Failed: the receipt's status is 0x0 (reverted, or on Tron a failed
	// contract call). A receipt without a status counts as succeeded.
	Failed bool
	Logs   []Log
}

type rawReceipt struct {
	BlockNumber string   `json:"blockNumber"`
	BlockHash   string   `json:"blockHash"`
	Status      *string  `json:"status"`
	Logs        []rawLog `json:"logs"`
}

// Receipt returns eth_getTransactionReceipt of txHash, nil when the node does not
// know the transaction (or has not mined it). geth and its forks (bsc) and
// java-tron's /jsonrpc answer the same method and shape; java-tron's logs carry
// its BlockId as their block hash, and addresses may come with Tron's 0x41
// prefix, which the dialect reads as it reads eth_getLogs.
func (c *Client) Receipt(ctx context.Context, txHash common.Hash) (*Receipt, error) {
	const method = "eth_getTransactionReceipt"
	var raw *rawReceipt
	if err := c.call(ctx, &raw, method, txHash.Hex()); err != nil {
		return nil, err
	}
	if raw == nil || raw.BlockHash == "" || raw.BlockNumber == "" {
		return nil, nil // unknown, or pending (no block yet)
	}
	bad := func(err error) (*Receipt, error) {
		return nil, &Error{Kind: KindDecode, Method: method, Message: err.Error()}
	}
	var r Receipt
	var err error
	if r.BlockNumber, err = quantity64(raw.BlockNumber); err != nil {
		return bad(fmt.Errorf("receipt blockNumber: %w", err))
	}
	if r.BlockHash, err = hash(raw.BlockHash); err != nil {
		return bad(fmt.Errorf("receipt blockHash: %w", err))
	}
	if raw.Status != nil {
		st, err := quantity64(*raw.Status)
		if err != nil {
			return bad(fmt.Errorf("receipt status: %w", err))
		}
		r.Failed = st == 0
	}
	for _, l := range raw.Logs {
		lg, err := c.dialect.log(l)
		if err != nil {
			return bad(err)
		}
		r.Logs = append(r.Logs, lg)
	}
	return &r, nil
}
