package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"partnerd/internal/chain"
	"partnerd/internal/chain/rpc"
)

// The memory node must answer what the watcher's client reads from the real
// nodes: otherwise the benchmark measures something else.
func TestMemNodeAnswersAsTheNodes(t *testing.T) {
	t.Parallel()
	for _, network := range []string{chain.BEP20, chain.TRC20} {
		t.Run(network, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			n, err := startMemNode(network, 3*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close()
			dialect, err := rpc.For(network)
			if err != nil {
				t.Fatal(err)
			}
			c, err := rpc.New(n.URL, dialect, rpc.Options{Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var paid common.Address
			paid[19] = 7
			if made := n.mine(30, 4, []payment{{to: paid, raw: big.NewInt(1_500_000)}}); made != 1 {
				t.Fatalf("mined %d payments, want 1", made)
			}

			id, err := c.ChainID(ctx)
			if err != nil || id.Cmp(dialect.MainnetChainID) != 0 {
				t.Fatalf("chain id %v, %v; want %v", id, err, dialect.MainnetChainID)
			}
			head, err := c.BlockNumber(ctx)
			if err != nil || head != 30 {
				t.Fatalf("head %d, %v; want 30", head, err)
			}
			b, err := c.BlockByNumber(ctx, 12)
			if err != nil || b == nil || b.Number != 12 {
				t.Fatalf("block 12: %+v, %v", b, err)
			}
			parent, err := c.BlockByNumber(ctx, 11)
			if err != nil || b.ParentHash != parent.Hash {
				t.Fatalf("block 12's parent %s, block 11 %s (%v)", b.ParentHash, parent.Hash, err)
			}
			if network == chain.TRC20 && new(big.Int).SetBytes(b.Hash[:8]).Uint64() != 12 {
				t.Fatalf("Tron's block id %s does not start with its number", b.Hash)
			}
			fin, err := c.Finalized(ctx)
			if err != nil || fin.Number != 30-n.finalDepth {
				t.Fatalf("finalized %+v, %v; want %d", fin, err, 30-n.finalDepth)
			}
			if missing, err := c.BlockByNumber(ctx, 31); err != nil || missing != nil {
				t.Fatalf("block 31: %+v, %v; want none", missing, err)
			}

			logs, err := c.Logs(ctx, 1, 30, []common.Address{n.contract}, chain.TransferTopic)
			if err != nil {
				t.Fatal(err)
			}
			if len(logs) != 30*4+1 {
				t.Fatalf("%d logs, want %d", len(logs), 30*4+1)
			}
			found := 0
			for _, lg := range logs {
				if lg.Address != n.contract || len(lg.Topics) != 3 || lg.Topics[0] != chain.TransferTopic || len(lg.Data) != 32 {
					t.Fatalf("log %+v is not the token's Transfer", lg)
				}
				blk, err := c.BlockByNumber(ctx, lg.BlockNumber)
				if err != nil || blk.Hash != lg.BlockHash {
					t.Fatalf("log of block %d carries hash %s, the block %v (%v)", lg.BlockNumber, lg.BlockHash, blk, err)
				}
				if common.BytesToAddress(lg.Topics[2][:]) == paid {
					found++
					if new(big.Int).SetBytes(lg.Data).Int64() != 1_500_000 {
						t.Fatalf("payment of %x", lg.Data)
					}
				}
			}
			if found != 1 {
				t.Fatalf("the payment appears %d times", found)
			}
			// The logsBloom: on bsc the bloom of the block's logs (each Transfer's
			// contract and topics in it, a block without logs ruling the token
			// out); java-tron sends 256 zero bytes, which its dialect reads as none.
			checkBloom(t, n, c, network, logs)
			// The filter is honoured: a range, another contract, another topic.
			if logs, err := c.Logs(ctx, 5, 6, []common.Address{n.contract}, chain.TransferTopic); err != nil || len(logs) != 8 || logs[0].BlockNumber != 5 || logs[7].BlockNumber != 6 {
				t.Fatalf("blocks 5..6: %d logs, %v", len(logs), err)
			}
			if logs, err := c.Logs(ctx, 1, 30, []common.Address{{1}}, chain.TransferTopic); err != nil || len(logs) != 0 {
				t.Fatalf("another contract: %d logs, %v", len(logs), err)
			}
			if logs, err := c.Logs(ctx, 1, 30, []common.Address{n.contract}, common.Hash{1}); err != nil || len(logs) != 0 {
				t.Fatalf("another topic: %d logs, %v", len(logs), err)
			}
			// The caps, in the node's words.
			n.setCaps(10, 50)
			if _, err := c.Logs(ctx, 1, 20, []common.Address{n.contract}, chain.TransferTopic); rpc.KindOf(err) != rpc.KindRange || rpc.LimitOf(err) != 10 {
				t.Fatalf("over the range cap: %v", err)
			}
			if _, err := c.Logs(ctx, 1, 10, []common.Address{n.contract}, chain.TransferTopic); err != nil && network == chain.TRC20 {
				t.Fatalf("java-tron admits to − from = cap: %v", err)
			}
			n.setCaps(0, 50)
			if _, err := c.Logs(ctx, 1, 30, []common.Address{n.contract}, chain.TransferTopic); rpc.KindOf(err) != rpc.KindResults || rpc.LimitOf(err) != 50 {
				t.Fatalf("over the result cap: %v", err)
			}
			if n.Calls("eth_getLogs") != 7 || n.Busy() <= 0 {
				t.Fatalf("%d eth_getLogs counted, busy %s", n.Calls("eth_getLogs"), n.Busy())
			}

			// A replica serves the same chain over WebSocket and pushes new heads.
			r, err := n.replica()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			ws, err := rpc.New(r.WSURL, dialect, rpc.Options{Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			if logs, err := ws.Logs(ctx, 5, 6, []common.Address{n.contract}, chain.TransferTopic); err != nil || len(logs) != 8 {
				t.Fatalf("over ws, blocks 5..6: %d logs, %v", len(logs), err)
			}
			if same, err := ws.BlockByNumber(ctx, 12); err != nil || same.Hash != b.Hash {
				t.Fatalf("the replica's block 12: %+v, %v; want %s", same, err, b.Hash)
			}
			r.setCaps(10, 0)
			if _, err := ws.Logs(ctx, 1, 20, []common.Address{n.contract}, chain.TransferTopic); rpc.KindOf(err) != rpc.KindRange {
				t.Fatalf("over ws, over the range cap: %v", err)
			}
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			heads := make(chan *rpc.Block, 8)
			go func() { _ = ws.SubscribeHeads(sctx, func(h *rpc.Block) { heads <- h }) }()
			for r.Calls("eth_subscribe") == 0 && sctx.Err() == nil {
				time.Sleep(5 * time.Millisecond)
			}
			n.mine(1, 4, nil)
			select {
			case h := <-heads:
				if h.Number != 31 || h.Hash != n.blocks[31].hash {
					t.Fatalf("pushed head %d %s, want 31 %s", h.Number, h.Hash, n.blocks[31].hash)
				}
				// The pushed header carries the block's bloom, as geth's newHeads does.
				if want := n.blocks[31].bloom.Bytes(); network == chain.BEP20 && !bytes.Equal(h.Bloom, want) || network == chain.TRC20 && h.Bloom != nil {
					t.Fatalf("pushed head's bloom %x, want %x", h.Bloom, want)
				}
			case <-sctx.Done():
				t.Fatal("no head pushed")
			}
			if r.Calls("eth_getLogs") != 2 || n.Calls("eth_getLogs") != 7 {
				t.Fatalf("calls counted per provider: replica %d, node %d", r.Calls("eth_getLogs"), n.Calls("eth_getLogs"))
			}
		})
	}
}

// checkBloom checks the logsBloom of n's blocks against logs, the token's
// Transfer logs of blocks 1..30: bsc's holds each log's contract and topics, as
// geth's does, and a block without logs has one that rules the token out;
// java-tron's is 256 zero bytes.
func checkBloom(t *testing.T, n *memNode, c *rpc.Client, network string, logs []rpc.Log) {
	t.Helper()
	ctx := context.Background()
	blooms := map[uint64]types.Bloom{}
	bloom := func(num uint64) types.Bloom {
		if b, ok := blooms[num]; ok {
			return b
		}
		var raw struct {
			LogsBloom string `json:"logsBloom"`
		}
		if err := json.Unmarshal(n.renderBlock(n.blocks[num]), &raw); err != nil {
			t.Fatal(err)
		}
		var b types.Bloom
		if err := b.UnmarshalText([]byte(raw.LogsBloom)); err != nil {
			t.Fatalf("block %d's logsBloom %q: %v", num, raw.LogsBloom, err)
		}
		blooms[num] = b
		return b
	}
	if network == chain.TRC20 {
		for num := uint64(1); num <= 30; num++ {
			if b := bloom(num); b != (types.Bloom{}) {
				t.Fatalf("java-tron block %d's logsBloom is not 256 zero bytes: %x", num, b)
			}
		}
		if b, err := c.BlockByNumber(ctx, 12); err != nil || b.Bloom != nil {
			t.Fatalf("java-tron's dialect reads a bloom: %x, %v", b.Bloom, err)
		}
		return
	}
	for _, lg := range logs {
		b := bloom(lg.BlockNumber)
		if !b.Test(lg.Address[:]) {
			t.Fatalf("block %d's bloom lacks its log's contract %s", lg.BlockNumber, lg.Address)
		}
		for _, topic := range lg.Topics {
			if !b.Test(topic[:]) {
				t.Fatalf("block %d's bloom lacks its log's topic %s", lg.BlockNumber, topic)
			}
		}
	}
	// Exactly geth's bloom of those logs (types.CreateBloom of a receipt holding them).
	receipt := &types.Receipt{}
	for _, lg := range logs {
		if lg.BlockNumber == 12 {
			receipt.Logs = append(receipt.Logs, &types.Log{Address: lg.Address, Topics: lg.Topics, Data: lg.Data})
		}
	}
	if len(receipt.Logs) == 0 || types.CreateBloom(receipt) != bloom(12) {
		t.Fatalf("block 12's bloom is not geth's bloom of its %d logs", len(receipt.Logs))
	}
	// What the watcher reads: the same bloom through its client, saying the token's
	// Transfer may be there.
	b, err := c.BlockByNumber(ctx, 12)
	if err != nil || b == nil || !bytes.Equal(b.Bloom, bloom(12).Bytes()) || !b.MayHold(n.contract[:], chain.TransferTopic[:]) {
		t.Fatalf("block 12 through the client: %+v, %v", b, err)
	}
	// A block without logs, on a chain of its own (the node's blocks stay as the
	// test reads them): an empty bloom, ruling the token's Transfer out; with
	// other contracts' Transfer logs, their bits and not the token's.
	other, err := startMemNode(network, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	oc, err := rpc.New(other.URL, rpc.BSC, rpc.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer oc.Close()
	other.mine(1, 0, nil)
	other.others = 5
	other.mine(1, 0, nil)
	empty, err := oc.BlockByNumber(ctx, 1)
	if err != nil || empty == nil || !bytes.Equal(empty.Bloom, make([]byte, 256)) || empty.MayHold(other.contract[:], chain.TransferTopic[:]) {
		t.Fatalf("a block without logs: %+v, %v", empty, err)
	}
	busy, err := oc.BlockByNumber(ctx, 2)
	if err != nil || busy == nil || !busy.MayHold(chain.TransferTopic[:]) || busy.MayHold(other.contract[:], chain.TransferTopic[:]) {
		t.Fatalf("a block with other contracts' logs: %+v, %v", busy, err)
	}
}
