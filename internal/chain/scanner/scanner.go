// Package scanner is the deposit watcher of one network: it follows the chain's
// head through go-ethereum's ethclient (eth_blockNumber, eth_getLogs,
// eth_getBlockByNumber), hands the Transfer logs of the configured token to deposit
// addresses to a Sink in bounded batches, raises confirmations, and re-checks that a
// deposit's block is still canonical before it confirms.
//
// # One scanner per network
//
// Every instance runs a Scanner for every configured network, but only the holder of
// the network's lock scans: on PostgreSQL a session-level advisory lock held on a
// dedicated connection for as long as the scanner runs (Locker). A long-running
// loop with its own backoff fits a lock better than a River periodic job (whose
// runs would need their own overlap guard and would add the job poll interval to
// the detection delay). If the holder dies, its connection closes, PostgreSQL
// releases the lock, and another instance takes over within a poll interval. As a
// second guard the cursor is moved with a compare-and-set in the batch's database
// transaction, so even two scanners could not record one batch twice. SQLite
// serves a single instance; its lock is a process-local one.
package scanner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"partnerd/internal/chain"
)

// Client is the part of ethclient.Client the scanner uses.
type Client interface {
	BlockNumber(ctx context.Context) (uint64, error)
	FilterLogs(ctx context.Context, q ethereum.FilterQuery) ([]types.Log, error)
	HeaderByNumber(ctx context.Context, number *big.Int) (*types.Header, error)
}

// Sink records what the scanner finds (the deposits service).
type Sink interface {
	// Cursor returns the network's cursor, or nil before the first batch.
	Cursor(ctx context.Context, network string) (*chain.Cursor, error)
	// Watching returns which of addrs (in the network's form) are deposit addresses.
	Watching(ctx context.Context, network string, addrs []string) (map[string]bool, error)
	// Record stores the batch's transfers and moves the cursor from prev (nil: none
	// yet) to next, in one database transaction. It fails, recording nothing, when
	// the cursor is no longer prev. It returns how many transfers were unmatched.
	Record(ctx context.Context, network string, prev *chain.Cursor, next chain.Cursor, transfers []chain.Transfer) error
	// Pending returns the network's detected deposits that are not final.
	Pending(ctx context.Context, network string) ([]chain.Pending, error)
	// Confirm records that p now has confirmations confirmations (its block was just
	// checked to be canonical); at the network's requirement it confirms.
	Confirm(ctx context.Context, p chain.Pending, confirmations int) error
	// Drop undoes p: its block is no longer canonical.
	Drop(ctx context.Context, p chain.Pending) error
}

// Lock is a held scanner lock.
type Lock interface {
	// Alive reports an error when the lock may have been lost (its connection died).
	Alive(ctx context.Context) error
	Release()
}

// Locker hands out the per-network scanner lock.
type Locker interface {
	// TryLock takes the lock named name if it is free; ok is false when another
	// instance holds it.
	TryLock(ctx context.Context, name string) (l Lock, ok bool, err error)
}

// Metrics hears the scanner's progress.
type Metrics interface {
	ChainHead(network string, block uint64)
	ChainScanned(network string, block uint64)
	ChainRPCError(network string)
}

// Config configures one network's scanner.
type Config struct {
	Network string
	// Tokens are the network's token contracts.
	Tokens []chain.Token
	// Confirmations is the network's requirement; a first start begins at head −
	// Confirmations unless StartBlock is set.
	Confirmations int
	StartBlock    *uint64
	// PollInterval is the wait between polls once caught up (CHAIN_POLL_INTERVAL).
	PollInterval time.Duration
	// MaxBatch bounds the blocks of one eth_getLogs (default 500).
	MaxBatch uint64
	// MaxBackoff caps the wait after RPC errors (default 1 minute).
	MaxBackoff time.Duration
	// LagWarning is the lag in blocks beyond which a warning is logged (default 300).
	LagWarning uint64
}

// Scanner watches one network.
type Scanner struct {
	cfg     Config
	client  Client
	sink    Sink
	locker  Locker
	metrics Metrics
	log     *slog.Logger
	batch   uint64
	byAddr  map[common.Address]chain.Token
}

// New returns a scanner of cfg.Network.
func New(cfg Config, client Client, sink Sink, locker Locker, m Metrics, log *slog.Logger) *Scanner {
	if cfg.MaxBatch == 0 {
		cfg.MaxBatch = 500
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = time.Minute
	}
	if cfg.LagWarning == 0 {
		cfg.LagWarning = 300
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 3 * time.Second
	}
	by := map[common.Address]chain.Token{}
	for _, t := range cfg.Tokens {
		by[t.Contract] = t
	}
	return &Scanner{cfg: cfg, client: client, sink: sink, locker: locker, metrics: m,
		log: log.With("network", cfg.Network), batch: cfg.MaxBatch, byAddr: by}
}

// Run scans until ctx is done. It never returns an error: RPC and database
// failures are logged, counted and retried with a growing backoff.
func (s *Scanner) Run(ctx context.Context) {
	var lock Lock
	defer func() {
		if lock != nil {
			lock.Release()
		}
	}()
	backoff := s.cfg.PollInterval
	for ctx.Err() == nil {
		if lock != nil {
			if err := lock.Alive(ctx); err != nil {
				s.log.Warn("chain scanner lost its lock", "error", err.Error())
				lock.Release()
				lock = nil
			}
		}
		if lock == nil {
			l, ok, err := s.locker.TryLock(ctx, "chain-scanner/"+s.cfg.Network)
			if err != nil && ctx.Err() == nil {
				s.log.Warn("chain scanner lock", "error", err.Error())
			}
			if !ok {
				sleep(ctx, s.cfg.PollInterval)
				continue
			}
			lock = l
			s.log.Info("chain scanner started", "confirmations", s.cfg.Confirmations)
		}
		more, err := s.Poll(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.metrics.ChainRPCError(s.cfg.Network)
			s.log.Warn("chain scan failed; retrying", "error", err.Error(), "retry_in", backoff.String())
			sleep(ctx, backoff)
			backoff = min(backoff*2, s.cfg.MaxBackoff)
			continue
		}
		backoff = s.cfg.PollInterval
		if !more {
			sleep(ctx, s.cfg.PollInterval)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Poll runs one step: re-check and confirm pending deposits, then scan one batch.
// It reports whether blocks remain to scan (the caller polls again at once).
func (s *Scanner) Poll(ctx context.Context) (more bool, err error) {
	head, err := s.client.BlockNumber(ctx)
	if err != nil {
		return false, fmt.Errorf("eth_blockNumber: %w", err)
	}
	s.metrics.ChainHead(s.cfg.Network, head)
	cur, err := s.sink.Cursor(ctx, s.cfg.Network)
	if err != nil {
		return false, err
	}
	// Is the cursor's block still canonical? Block hashes chain, so if it is, so is
	// every block below it, and the pending deposits there need no check of their own.
	intact := false
	if cur != nil {
		hdr, err := s.client.HeaderByNumber(ctx, new(big.Int).SetUint64(cur.Block))
		if err != nil && !errors.Is(err, ethereum.NotFound) {
			return false, fmt.Errorf("header %d: %w", cur.Block, err)
		}
		intact = hdr != nil && hdr.Hash() == cur.Hash
	}
	if err := s.settle(ctx, head, cur, intact); err != nil {
		return false, err
	}
	if cur == nil {
		start := uint64(0)
		switch {
		case s.cfg.StartBlock != nil:
			start = *s.cfg.StartBlock
		case head+1 > uint64(s.cfg.Confirmations):
			start = head + 1 - uint64(s.cfg.Confirmations)
		}
		if start == 0 {
			// Nothing before genesis: begin with block 0 itself.
			return s.scan(ctx, nil, 0, head)
		}
		hdr, err := s.client.HeaderByNumber(ctx, new(big.Int).SetUint64(start-1))
		if err != nil {
			return false, fmt.Errorf("header %d: %w", start-1, err)
		}
		first := chain.Cursor{Block: start - 1, Hash: hdr.Hash()}
		if err := s.sink.Record(ctx, s.cfg.Network, nil, first, nil); err != nil {
			return false, err
		}
		s.log.Info("chain scanner cursor set", "start_block", start)
		return true, nil
	}
	if !intact {
		// Reorganised at or below the cursor: rescan from an ancestor still
		// canonical; transfers seen before are recognised by (tx hash, log index).
		back, err := s.rewind(ctx, cur, head)
		if err != nil {
			return false, err
		}
		if err := s.sink.Record(ctx, s.cfg.Network, cur, back, nil); err != nil {
			return false, err
		}
		s.log.Warn("chain reorganised below the cursor; rescanning", "cursor", cur.Block, "from", back.Block+1)
		return true, nil
	}
	s.metrics.ChainScanned(s.cfg.Network, cur.Block)
	if cur.Block >= head {
		return false, nil
	}
	if lag := head - cur.Block; lag > s.cfg.LagWarning {
		s.log.Warn("chain scanner is behind", "lag_blocks", lag, "head", head, "scanned", cur.Block)
	}
	return s.scan(ctx, cur, cur.Block+1, head)
}

// rewind finds the newest ancestor of the cursor at most one reorg depth back
// whose hash the node still has on its canonical chain (the walk is bounded by the
// network's confirmations, the deepest reorg the service tolerates).
func (s *Scanner) rewind(ctx context.Context, cur *chain.Cursor, head uint64) (chain.Cursor, error) {
	depth := uint64(max(s.cfg.Confirmations, 1)) * 2
	to := min(cur.Block, head)
	if to > depth {
		to -= depth
	} else {
		to = 0
	}
	hdr, err := s.client.HeaderByNumber(ctx, new(big.Int).SetUint64(to))
	if err != nil {
		return chain.Cursor{}, fmt.Errorf("header %d: %w", to, err)
	}
	return chain.Cursor{Block: to, Hash: hdr.Hash()}, nil
}

// scan reads the logs of blocks from..min(head, from+batch−1) and records them with
// the new cursor. A provider's range error halves the batch and retries at once.
func (s *Scanner) scan(ctx context.Context, cur *chain.Cursor, from, head uint64) (bool, error) {
	for {
		to := min(head, from+s.batch-1)
		logs, err := s.client.FilterLogs(ctx, ethereum.FilterQuery{
			FromBlock: new(big.Int).SetUint64(from), ToBlock: new(big.Int).SetUint64(to),
			Addresses: s.contracts(), Topics: [][]common.Hash{{chain.TransferTopic}},
		})
		if err != nil {
			if rangeError(err) && s.batch > 1 {
				s.batch = max(1, s.batch/2)
				s.log.Info("log range refused; smaller batches", "batch", s.batch, "error", err.Error())
				continue
			}
			return false, fmt.Errorf("eth_getLogs %d-%d: %w", from, to, err)
		}
		// The batch's last header is read before the deposits' own headers are
		// compared with their logs: a reorganisation before this read makes that
		// comparison fail (and the batch is retried), one after it leaves the cursor
		// on the old branch too, which the next poll notices. So the recorded
		// cursor never vouches for a deposit on another branch.
		end, err := s.client.HeaderByNumber(ctx, new(big.Int).SetUint64(to))
		if err != nil {
			return false, fmt.Errorf("header %d: %w", to, err)
		}
		transfers, err := s.transfers(ctx, logs)
		if err != nil {
			return false, err
		}
		for i := range transfers {
			transfers[i].Confirmations = int(head - transfers[i].Block + 1)
		}
		if err := s.sink.Record(ctx, s.cfg.Network, cur, chain.Cursor{Block: to, Hash: end.Hash()}, transfers); err != nil {
			return false, err
		}
		s.metrics.ChainScanned(s.cfg.Network, to)
		if s.batch < s.cfg.MaxBatch {
			s.batch = min(s.cfg.MaxBatch, s.batch*2)
		}
		return to < head, nil
	}
}

func (s *Scanner) contracts() []common.Address {
	out := make([]common.Address, 0, len(s.cfg.Tokens))
	for _, t := range s.cfg.Tokens {
		out = append(out, t.Contract)
	}
	return out
}

// rangeError reports whether a provider refused eth_getLogs for its block range or
// result size (the wording differs by provider).
func rangeError(err error) bool {
	m := strings.ToLower(err.Error())
	for _, w := range []string{"range", "too many", "limit", "exceed", "too large", "query returned more than"} {
		if strings.Contains(m, w) {
			return true
		}
	}
	return false
}

// transfers turns logs into transfers to our deposit addresses; logs of other
// contracts, malformed logs, amounts that round to zero and transfers to other
// addresses are ignored.
func (s *Scanner) transfers(ctx context.Context, logs []types.Log) ([]chain.Transfer, error) {
	var cands []chain.Transfer
	var addrs []string
	for _, lg := range logs {
		tok, ok := s.byAddr[lg.Address]
		if !ok || lg.Removed || len(lg.Topics) != 3 || lg.Topics[0] != chain.TransferTopic || len(lg.Data) != 32 {
			continue
		}
		to := common.BytesToAddress(lg.Topics[2].Bytes())
		raw := new(big.Int).SetBytes(lg.Data)
		t := chain.Transfer{
			Network: s.cfg.Network, Token: tok.Symbol, TxHash: lg.TxHash, LogIndex: lg.Index,
			Block: lg.BlockNumber, BlockHash: lg.BlockHash,
			From: common.BytesToAddress(lg.Topics[1].Bytes()), To: to, ToAddress: chain.FormatAddress(s.cfg.Network, to),
			Raw: raw, Amount: chain.ToAmount(raw, tok.Decimals),
		}
		if !t.Amount.IsPositive() {
			// Zero (or below 0.000001) is no payment: such transfers are address
			// poisoning spam, and as a deposit one would fail its transaction as underpaid.
			continue
		}
		cands = append(cands, t)
		addrs = append(addrs, t.ToAddress)
	}
	if len(cands) == 0 {
		return nil, nil
	}
	watched, err := s.sink.Watching(ctx, s.cfg.Network, addrs)
	if err != nil {
		return nil, err
	}
	var out []chain.Transfer
	times := map[uint64]*types.Header{}
	for _, t := range cands {
		if !watched[t.ToAddress] {
			continue
		}
		hdr, ok := times[t.Block]
		if !ok {
			if hdr, err = s.client.HeaderByNumber(ctx, new(big.Int).SetUint64(t.Block)); err != nil {
				return nil, fmt.Errorf("header %d: %w", t.Block, err)
			}
			times[t.Block] = hdr
		}
		if hdr.Hash() != t.BlockHash {
			return nil, fmt.Errorf("block %d changed while scanning (reorganisation); retrying", t.Block)
		}
		t.BlockTime = time.Unix(int64(hdr.Time), 0).UTC()
		out = append(out, t)
	}
	return out, nil
}

// settle re-checks every pending deposit's block against the canonical chain and
// drops those whose block is gone; the others get head − block + 1 confirmations.
// A deposit at or below an intact cursor is canonical (see Poll); any other is
// checked by its own block's header.
func (s *Scanner) settle(ctx context.Context, head uint64, cur *chain.Cursor, intact bool) error {
	pending, err := s.sink.Pending(ctx, s.cfg.Network)
	if err != nil {
		return err
	}
	hashes := map[uint64]common.Hash{}
	for _, p := range pending {
		canonical := intact && cur != nil && p.Block <= cur.Block
		if !canonical {
			h, ok := hashes[p.Block]
			if !ok {
				hdr, err := s.client.HeaderByNumber(ctx, new(big.Int).SetUint64(p.Block))
				if err != nil && !errors.Is(err, ethereum.NotFound) {
					return fmt.Errorf("header %d: %w", p.Block, err)
				}
				if hdr != nil {
					h = hdr.Hash()
				}
				hashes[p.Block] = h
			}
			canonical = h == p.BlockHash
		}
		if !canonical {
			s.log.Warn("deposit's block reorganised away; deposit dropped", "tx_hash", p.TxHash.Hex(), "log_index", p.LogIndex, "block", p.Block)
			if err := s.sink.Drop(ctx, p); err != nil {
				return err
			}
			continue
		}
		if head < p.Block {
			continue
		}
		n := int(head - p.Block + 1)
		if n <= p.Confirmations && n < s.cfg.Confirmations {
			continue // nothing new, and not deep enough to confirm
		}
		if err := s.sink.Confirm(ctx, p, n); err != nil {
			return err
		}
	}
	return nil
}
