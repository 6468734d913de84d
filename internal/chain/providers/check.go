package providers

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"partnerd/internal/chain/rpc"
)

// check cross-checks m before its first answer: see the package comment.
func (p *Pool) check(ctx context.Context, m *member) error {
	if err := p.checkChainID(ctx, m); err != nil {
		return err
	}
	p.mu.Lock()
	if m.agreed || len(p.seen) == 0 {
		// Nothing read yet to compare with: the first provider sets the reference.
		m.agreed = true
		p.mu.Unlock()
		return nil
	}
	if m.head < p.opts.CheckDepth {
		p.mu.Unlock()
		return nil // its head is not known yet: checked once it is
	}
	head := m.head
	n, want, ok := p.referenceLocked(head - p.opts.CheckDepth)
	if !ok {
		p.mu.Unlock()
		return nil // every block read so far is above it: checked later
	}
	p.mu.Unlock()
	b, err := m.c.BlockByNumber(ctx, n)
	if err != nil {
		p.failed(m, mBlock, err)
		return err
	}
	if b == nil {
		// No block at or below its own head: a backend behind (a load balancer's
		// choice), not another branch. Asked again later.
		p.countError(rpc.KindMissingBlock)
		return &rpc.Error{Kind: rpc.KindMissingBlock, Method: mBlock,
			Message: fmt.Sprintf("no block %d although its head is %d: a backend behind", n, head)}
	}
	p.mu.Lock()
	if b.Hash == want {
		if m.disagree {
			p.log.Info("chain provider agrees with the blocks read so far again", "provider", m.name, "block", n)
		}
		m.agreed, m.disagree = true, false
		p.updateLocked(time.Now())
		p.mu.Unlock()
		p.report()
		return nil
	}
	got := b.Hash.Hex()
	if !m.disagree {
		p.log.Error("chain provider reports another block than the one read so far; not used until it agrees (another branch or another chain)",
			"provider", m.name, "block", n, "hash", got, "expected", want.Hex())
	}
	m.disagree, m.agreed = true, false
	m.lastErr = fmt.Sprintf("block %d is %s here, %s elsewhere", n, got, want.Hex())
	p.updateLocked(time.Now())
	p.mu.Unlock()
	p.report()
	return &rpc.Error{Kind: rpc.KindRPC, Method: mBlock, Message: errDisagree.Error() + ": " + m.lastErr}
}

// checkChainID compares m's eth_chainId with the network's before m's first use.
func (p *Pool) checkChainID(ctx context.Context, m *member) error {
	p.mu.Lock()
	ok, wrong, why := m.idOK, m.wrongChain, m.lastErr
	p.mu.Unlock()
	if ok {
		return nil
	}
	if wrong {
		return &rpc.Error{Kind: rpc.KindRPC, Method: mChainID, Message: why}
	}
	got, err := m.c.ChainID(ctx)
	if err != nil {
		p.failed(m, mChainID, err)
		return err
	}
	p.mu.Lock()
	if got.Cmp(p.opts.ChainID) == 0 {
		m.idOK = true
		p.mu.Unlock()
		return nil
	}
	m.wrongChain = true
	m.lastErr = fmt.Sprintf("chain id %s, want %s (CHAIN_ID_%s)", got, p.opts.ChainID, strings.ToUpper(p.opts.Network))
	p.log.Error("chain provider reports another chain id; it is out of the pool", "provider", m.name, "error", m.lastErr)
	p.updateLocked(time.Now())
	p.mu.Unlock()
	p.report()
	return &rpc.Error{Kind: rpc.KindRPC, Method: mChainID, Message: m.lastErr}
}

// referenceLocked returns the newest block at or below n whose hash the pool has answered with.
func (p *Pool) referenceLocked(n uint64) (uint64, common.Hash, bool) {
	best, found := uint64(0), false
	for k := range p.seen {
		if k <= n && (!found || k > best) {
			best, found = k, true
		}
	}
	return best, p.seen[best], found
}

// remember keeps a block's hash as a reference for later cross-checks (the newest 256).
func (p *Pool) remember(b *rpc.Block) {
	if b == nil || len(p.members) < 2 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[b.Number] = b.Hash
	if len(p.seen) > 256 {
		keys := make([]uint64, 0, len(p.seen))
		for k := range p.seen {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
		for _, k := range keys[:len(keys)-256] {
			delete(p.seen, k)
		}
	}
}
