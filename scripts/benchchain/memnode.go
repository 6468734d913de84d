package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"math/bits"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	gethrpc "github.com/ethereum/go-ethereum/rpc"

	"partnerd/internal/chain"
)

// memNode is a JSON-RPC node answering from memory: its blocks and their Transfer
// logs are rendered once, when mined, in the node software's shape (bsc: geth's
// fields, a logsBloom of the block's logs; java-tron: its field set, BlockId
// hashes, stateRoot "0x", a logsBloom of 256 zero bytes and 0x41 addresses in
// logs), so serving eth_getLogs is a copy of bytes and the watcher,
// not the node, is what a catch-up measures. The time spent inside its handlers is
// counted (busy) so that it can be taken out of the watcher's figures. It serves
// HTTP at URL and WebSocket at WSURL (the same methods, and eth_subscribe
// "newHeads"); replica starts a second provider of the same chain.
type memNode struct {
	*memChain
	URL, WSURL string

	capMu sync.Mutex
	// rangeCap and resultCap are a provider's eth_getLogs caps (blocks, results).
	rangeCap  uint64
	resultCap int

	busy  atomic.Int64 // nanoseconds inside the handlers
	calls sync.Map     // method → *atomic.Int64
	srv   []*http.Server
}

// memChain is the chain the memory nodes serve.
type memChain struct {
	tron     bool
	chainID  *big.Int
	contract common.Address
	// finalDepth puts the "finalized" block this far below the head (BNB Smart
	// Chain's fast finality: 2; Tron's solidified block: 19).
	finalDepth uint64
	blockTime  time.Duration
	genesis    time.Time
	// others is how many Transfer logs of other contracts each bsc block also
	// holds: they are in its logsBloom (as every log of a block is) but never in
	// an answer to the watcher's filter, which names the token (0: none, so a
	// block without the token's logs has an empty bloom).
	others int

	mu     sync.RWMutex
	blocks []*memBlock // by number; block 0 is genesis
	rng    *rand.Rand
	heads  map[chan *memBlock]struct{} // newHeads subscribers
}

// memBlock is one mined block: its header fields and its logs, each rendered once.
type memBlock struct {
	number     uint64
	hash       common.Hash
	parentHash common.Hash
	time       uint64
	// logs holds every log's JSON object, comma-separated; ends[i] is where log i
	// ends, tos[i] and froms[i] its indexed topics (for filters naming them).
	logs  []byte
	ends  []int
	tos   []common.Hash
	froms []common.Hash
	// bloom is the block's logsBloom: on bsc the M3:2048 bloom of every log's
	// address and topics (the token's Transfer logs and the others'); java-tron
	// writes 256 zero bytes ("no value").
	bloom types.Bloom
}

// payment is a transfer the backlog must carry to a given address.
type payment struct {
	to  common.Address
	raw *big.Int
}

func startMemNode(network string, blockTime time.Duration) (*memNode, error) {
	c := &memChain{tron: network == chain.TRC20, blockTime: blockTime, heads: map[chan *memBlock]struct{}{},
		genesis: time.Now().Add(-30 * 24 * time.Hour).Truncate(time.Second), rng: rand.New(rand.NewPCG(1, uint64(len(network))))}
	c.chainID, c.finalDepth = big.NewInt(56), 2
	if c.tron {
		c.chainID, c.finalDepth = big.NewInt(0x2b6653dc), 19
	}
	c.random(c.contract[:])
	c.mine(1, 0, nil) // genesis
	return c.serve()
}

// replica starts another provider of n's chain.
func (n *memNode) replica() (*memNode, error) { return n.memChain.serve() }

func (c *memChain) serve() (*memNode, error) {
	n := &memNode{memChain: c, rangeCap: 5000, resultCap: 10000}
	ws := gethrpc.NewServer()
	if err := ws.RegisterName("eth", &memEth{n: n}); err != nil {
		return nil, err
	}
	for i, h := range []http.Handler{n, ws.WebsocketHandler([]string{"*"})} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			n.Close()
			return nil, err
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		n.srv = append(n.srv, srv)
		go func() { _ = srv.Serve(ln) }()
		if i == 0 {
			n.URL = "http://" + ln.Addr().String()
		} else {
			n.WSURL = "ws://" + ln.Addr().String()
		}
	}
	return n, nil
}

func (n *memNode) Close() {
	for _, s := range n.srv {
		_ = s.Close()
	}
}

// setCaps sets the eth_getLogs caps: blocks per request and results (0: none).
func (n *memNode) setCaps(blocks uint64, results int) {
	n.capMu.Lock()
	n.rangeCap, n.resultCap = blocks, results
	n.capMu.Unlock()
}

// random fills b from the node's generator (not cryptographic: test data).
func (n *memChain) random(b []byte) {
	for i := 0; i < len(b); i += 8 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], n.rng.Uint64())
		copy(b[i:], w[:])
	}
}

// Head returns the newest block's number.
func (n *memChain) Head() uint64 {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return uint64(len(n.blocks) - 1)
}

// Busy returns the time spent inside the node's handler so far.
func (n *memNode) Busy() time.Duration { return time.Duration(n.busy.Load()) }

// Calls returns the calls of method answered so far ("": all).
func (n *memNode) Calls(method string) int {
	total := 0
	n.calls.Range(func(k, v any) bool {
		if method == "" || k.(string) == method {
			total += int(v.(*atomic.Int64).Load())
		}
		return true
	})
	return total
}

// mine appends count blocks of density Transfer logs to random addresses each (a
// fraction: that many on average, e.g. 0.05 is a block in 20 with one), the
// payments spread over them (at most one a block), and returns how many payments
// it made.
func (n *memChain) mine(count int, density float64, pay []payment) int {
	every := max(1, count/max(len(pay), 1))
	k := 0
	for b := 0; b < count; b++ {
		n.mu.RLock()
		num := uint64(len(n.blocks))
		var parent common.Hash
		if num > 0 {
			parent = n.blocks[num-1].hash
		}
		n.mu.RUnlock()
		blk := &memBlock{number: num, parentHash: parent, time: uint64(n.genesis.Add(time.Duration(num) * n.blockTime).Unix())}
		n.random(blk.hash[:])
		if n.tron {
			// Tron's BlockId: the number in the first 8 bytes.
			binary.BigEndian.PutUint64(blk.hash[:8], num)
		}
		var txs []payment
		if num > 0 {
			logs := int(density)
			if frac := density - float64(logs); frac > 0 && n.rng.Float64() < frac {
				logs++
			}
			for i := 0; i < logs; i++ {
				var to common.Address
				n.random(to[:])
				txs = append(txs, payment{to: to, raw: big.NewInt(int64(1 + n.rng.IntN(1_000_000_000)))})
			}
			if b%every == 0 && k < len(pay) {
				txs = append(txs, pay[k])
				k++
			}
		}
		for i, t := range txs {
			var tx, from common.Hash
			n.random(tx[:])
			n.random(from[12:])
			to := common.BytesToHash(t.to[:])
			if i > 0 {
				blk.logs = append(blk.logs, ',')
			}
			blk.logs = n.renderLog(blk.logs, blk, uint64(i), tx, from, to, t.raw)
			blk.ends = append(blk.ends, len(blk.logs))
			blk.tos = append(blk.tos, to)
			blk.froms = append(blk.froms, from)
		}
		if !n.tron {
			n.bloom(blk, len(txs))
		}
		n.mu.Lock()
		n.blocks = append(n.blocks, blk)
		for sub := range n.heads {
			select {
			case sub <- blk:
			default: // a subscriber behind misses a head, as a node's slow subscriber does
			}
		}
		n.mu.Unlock()
	}
	return k
}

// bloom sets the block's logsBloom as geth does (types.Bloom.Add of each log's
// address and each of its topics): its logs (count Transfer logs of the token)
// and the others' Transfer logs (memChain.others, random contracts and parties).
func (n *memChain) bloom(blk *memBlock, count int) {
	var buf [6]byte
	if count+n.others > 0 {
		blk.bloom.AddWithBuffer(chain.TransferTopic[:], &buf)
	}
	if count > 0 {
		blk.bloom.AddWithBuffer(n.contract[:], &buf)
	}
	for i := 0; i < count; i++ {
		blk.bloom.AddWithBuffer(blk.froms[i][:], &buf)
		blk.bloom.AddWithBuffer(blk.tos[i][:], &buf)
	}
	for i := 0; i < n.others; i++ {
		var contract common.Address
		var from, to common.Hash
		n.random(contract[:])
		n.random(from[12:])
		n.random(to[12:])
		blk.bloom.AddWithBuffer(contract[:], &buf)
		blk.bloom.AddWithBuffer(from[:], &buf)
		blk.bloom.AddWithBuffer(to[:], &buf)
	}
}

// bloomStats returns, over blocks from..to, the mean share of bits set in the
// logsBloom, how many blocks hold no log of the token, and how many of those
// have a bloom that lets the token's Transfer be there (false positives: the
// watcher waits below such a block until it is deep).
func (n *memChain) bloomStats(from, to uint64) (fill float64, empty, maybe int) {
	n.mu.RLock()
	blocks := n.blocks[min(from, uint64(len(n.blocks))):min(to+1, uint64(len(n.blocks)))]
	n.mu.RUnlock()
	for _, b := range blocks {
		set := 0
		for _, x := range b.bloom {
			set += bits.OnesCount8(x)
		}
		fill += float64(set) / (8 * types.BloomByteLength)
		if len(b.ends) == 0 {
			empty++
			if b.bloom.Test(n.contract[:]) && b.bloom.Test(chain.TransferTopic[:]) {
				maybe++
			}
		}
	}
	return fill / float64(max(len(blocks), 1)), empty, maybe
}

// renderLog appends the JSON of one Transfer log as the node software sends it.
func (n *memChain) renderLog(b []byte, blk *memBlock, index uint64, tx, from, to common.Hash, raw *big.Int) []byte {
	var data common.Hash
	raw.FillBytes(data[:])
	str := func(b []byte, key string, v []byte) []byte {
		b = append(b, `"`...)
		b = append(b, key...)
		b = append(b, `":"0x`...)
		b = hex.AppendEncode(b, v)
		return append(b, '"')
	}
	qty := func(b []byte, key string, v uint64) []byte {
		b = append(b, `"`...)
		b = append(b, key...)
		b = append(b, `":"0x`...)
		b = strconv.AppendUint(b, v, 16)
		return append(b, '"')
	}
	topics := func(b []byte) []byte {
		b = append(b, `"topics":["0x`...)
		b = hex.AppendEncode(b, chain.TransferTopic[:])
		b = append(b, `","0x`...)
		b = hex.AppendEncode(b, from[:])
		b = append(b, `","0x`...)
		b = hex.AppendEncode(b, to[:])
		return append(b, `"]`...)
	}
	b = append(b, '{')
	if n.tron {
		// java-tron's field order, and addresses in Tron's 21-byte form (0x41 ‖ 20 bytes).
		b = qty(b, "logIndex", index)
		b = append(b, ',')
		b = qty(b, "blockNumber", blk.number)
		b = append(b, ',')
		b = str(b, "blockHash", blk.hash[:])
		b = append(b, ',')
		b = str(b, "transactionHash", tx[:])
		b = append(b, ',')
		b = qty(b, "transactionIndex", index)
		b = append(b, ',')
		b = str(b, "address", append([]byte{chain.TronPrefix}, n.contract[:]...))
		b = append(b, ',')
		b = str(b, "data", data[:])
		b = append(b, ',')
		b = topics(b)
		return append(b, `,"removed":false}`...)
	}
	b = str(b, "address", n.contract[:])
	b = append(b, ',')
	b = topics(b)
	b = append(b, ',')
	b = str(b, "data", data[:])
	b = append(b, ',')
	b = qty(b, "blockNumber", blk.number)
	b = append(b, ',')
	b = str(b, "transactionHash", tx[:])
	b = append(b, ',')
	b = qty(b, "transactionIndex", index)
	b = append(b, ',')
	b = str(b, "blockHash", blk.hash[:])
	b = append(b, ',')
	b = qty(b, "logIndex", index)
	return append(b, `,"removed":false}`...)
}

// renderBlock renders a block without its transactions, as eth_getBlockByNumber
// with false answers it: bsc's logsBloom is the block's, java-tron's 256 zero
// bytes.
func (n *memChain) renderBlock(b *memBlock) []byte {
	zero := func(k int) string { return "0x" + strings.Repeat("0", 2*k) }
	if n.tron {
		return fmt.Appendf(nil, `{"baseFeePerGas":"0x0","difficulty":"0x0","extraData":"0x","gasLimit":"0x0","gasUsed":"0x0","hash":"%s","logsBloom":"%s","miner":"0x%s","mixHash":"%s","nonce":"%s","number":"0x%x","parentHash":"%s","receiptsRoot":"%s","sha3Uncles":"%s","size":"0x%x","stateRoot":"0x","timestamp":"0x%x","totalDifficulty":"0x0","transactions":[],"transactionsRoot":"%s","uncles":[]}`,
			b.hash.Hex(), zero(256), strings.Repeat("0", 40), zero(32), zero(8), b.number, b.parentHash.Hex(), zero(32), zero(32), 1000+len(b.logs)/4, b.time, zero(32))
	}
	return fmt.Appendf(nil, `{"baseFeePerGas":"0x0","blobGasUsed":"0x0","difficulty":"0x2","excessBlobGas":"0x0","extraData":"0xd883010000846765746888676f312e32312e38856c696e7578","gasLimit":"0x84fe1c","gasUsed":"0x%x","hash":"%s","logsBloom":"%s","miner":"0x%s","mixHash":"%s","nonce":"%s","number":"0x%x","parentBeaconBlockRoot":"%s","parentHash":"%s","receiptsRoot":"%s","sha3Uncles":"0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347","size":"0x%x","stateRoot":"%s","timestamp":"0x%x","totalDifficulty":"0x0","transactions":[],"transactionsRoot":"%s","uncles":[],"withdrawals":[],"withdrawalsRoot":"0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421"}`,
		51_000*len(b.ends), b.hash.Hex(), prefixed(b.bloom[:]), strings.Repeat("0", 40), zero(32), zero(8), b.number, zero(32), b.parentHash.Hex(), zero(32), 1000+len(b.logs)/4, zero(32), b.time, zero(32))
}

// prefixed is b in hex with 0x.
func prefixed(b []byte) string { return "0x" + hex.EncodeToString(b) }

type memRequest struct {
	ID     json.RawMessage   `json:"id"`
	Method string            `json:"method"`
	Params []json.RawMessage `json:"params"`
}

type memError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *memError) Error() string  { return e.Message }
func (e *memError) ErrorCode() int { return e.Code }

// memEth serves the node's methods over WebSocket (go-ethereum's RPC server:
// eth_chainId, eth_blockNumber, eth_getBlockByNumber, eth_getLogs and
// eth_subscribe "newHeads").
type memEth struct{ n *memNode }

func (m *memEth) do(method string, params ...json.RawMessage) (json.RawMessage, error) {
	t0 := time.Now()
	defer func() { m.n.busy.Add(int64(time.Since(t0))) }()
	out, e := m.n.call(method, params)
	if e != nil {
		return nil, e
	}
	return out, nil
}

func (m *memEth) ChainId() (json.RawMessage, error)     { return m.do("eth_chainId") }
func (m *memEth) BlockNumber() (json.RawMessage, error) { return m.do("eth_blockNumber") }
func (m *memEth) GetBlockByNumber(tag json.RawMessage, full bool) (json.RawMessage, error) {
	return m.do("eth_getBlockByNumber", tag)
}
func (m *memEth) GetLogs(filter json.RawMessage) (json.RawMessage, error) {
	return m.do("eth_getLogs", filter)
}

// NewHeads pushes each new block's header fields, as a node's newHeads does
// (geth's header carries the logsBloom).
func (m *memEth) NewHeads(ctx context.Context) (*gethrpc.Subscription, error) {
	notifier, ok := gethrpc.NotifierFromContext(ctx)
	if !ok {
		return nil, gethrpc.ErrNotificationsUnsupported
	}
	c, _ := m.n.calls.LoadOrStore("eth_subscribe", new(atomic.Int64))
	c.(*atomic.Int64).Add(1)
	sub := notifier.CreateSubscription()
	heads := make(chan *memBlock, 64)
	m.n.mu.Lock()
	m.n.heads[heads] = struct{}{}
	m.n.mu.Unlock()
	go func() {
		defer func() {
			m.n.mu.Lock()
			delete(m.n.heads, heads)
			m.n.mu.Unlock()
		}()
		for {
			select {
			case b := <-heads:
				_ = notifier.Notify(sub.ID, json.RawMessage(fmt.Sprintf(`{"number":"0x%x","hash":"%s","parentHash":"%s","timestamp":"0x%x","logsBloom":"%s"}`,
					b.number, b.hash.Hex(), b.parentHash.Hex(), b.time, prefixed(b.bloom[:]))))
			case <-sub.Err():
				return
			}
		}
	}()
	return sub, nil
}

func (n *memNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t0 := time.Now()
	defer func() { n.busy.Add(int64(time.Since(t0))) }()
	// The node's samples carry a label, so a CPU profile of the run can leave them out.
	pprof.SetGoroutineLabels(pprof.WithLabels(r.Context(), pprof.Labels("part", "node")))
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	var out bytes.Buffer
	if trimmed := bytes.TrimSpace(body); len(trimmed) > 0 && trimmed[0] == '[' {
		var reqs []memRequest
		if err := json.Unmarshal(trimmed, &reqs); err != nil {
			out.WriteString(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`)
		} else {
			out.WriteByte('[')
			for i, req := range reqs {
				if i > 0 {
					out.WriteByte(',')
				}
				n.answer(&out, req)
			}
			out.WriteByte(']')
		}
	} else {
		var req memRequest
		if err := json.Unmarshal(body, &req); err != nil {
			out.WriteString(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`)
		} else {
			n.answer(&out, req)
		}
	}
	out.WriteByte('\n')
	w.Header().Set("Content-Length", strconv.Itoa(out.Len()))
	_, _ = w.Write(out.Bytes())
}

// answer writes one JSON-RPC answer.
func (n *memNode) answer(out *bytes.Buffer, req memRequest) {
	id := string(req.ID)
	if id == "" {
		id = "null"
	}
	fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,`, id)
	result, e := n.call(req.Method, req.Params)
	if e != nil {
		msg, _ := json.Marshal(e.Message)
		fmt.Fprintf(out, `"error":{"code":%d,"message":%s}}`, e.Code, msg)
		return
	}
	out.WriteString(`"result":`)
	out.Write(result)
	out.WriteByte('}')
}

// call answers method: its result's JSON, or an error.
func (n *memNode) call(method string, params []json.RawMessage) ([]byte, *memError) {
	c, _ := n.calls.LoadOrStore(method, new(atomic.Int64))
	c.(*atomic.Int64).Add(1)
	switch method {
	case "eth_chainId":
		return fmt.Appendf(nil, `"0x%x"`, n.chainID), nil
	case "net_version":
		return fmt.Appendf(nil, `"%d"`, n.chainID), nil
	case "eth_blockNumber":
		return fmt.Appendf(nil, `"0x%x"`, n.Head()), nil
	case "eth_getBlockByNumber":
		if len(params) == 0 {
			return nil, &memError{-32602, "missing value for required argument 0"}
		}
		num, e := n.tag(params[0])
		if e != nil {
			return nil, e
		}
		n.mu.RLock()
		var b *memBlock
		if num < uint64(len(n.blocks)) {
			b = n.blocks[num]
		}
		n.mu.RUnlock()
		if b == nil {
			return []byte("null"), nil
		}
		return n.renderBlock(b), nil
	case "eth_getLogs":
		return n.getLogs(params)
	}
	return nil, &memError{-32601, fmt.Sprintf("the method %s does not exist/is not available", method)}
}

// tag reads a block number or tag.
func (n *memChain) tag(raw json.RawMessage) (uint64, *memError) {
	var s string
	if len(raw) == 0 {
		return n.Head(), nil
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, &memError{-32602, "invalid block number"}
	}
	head := n.Head()
	switch s {
	case "latest", "":
		return head, nil
	case "earliest":
		return 0, nil
	case "finalized":
		if head < n.finalDepth {
			return 0, nil
		}
		return head - n.finalDepth, nil
	case "safe", "pending":
		if n.tron {
			return 0, &memError{-32602, "TAG " + s + " not supported"}
		}
		return head, nil
	}
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil || !strings.HasPrefix(s, "0x") {
		return 0, &memError{-32602, "invalid block number"}
	}
	return v, nil
}

// getLogs answers eth_getLogs with the filter honoured (range, addresses, topics)
// and the provider's caps, in the node's error texts.
func (n *memNode) getLogs(params []json.RawMessage) ([]byte, *memError) {
	if len(params) != 1 {
		return nil, &memError{-32602, "invalid argument"}
	}
	var f struct {
		FromBlock json.RawMessage   `json:"fromBlock"`
		ToBlock   json.RawMessage   `json:"toBlock"`
		Address   json.RawMessage   `json:"address"`
		Topics    []json.RawMessage `json:"topics"`
	}
	if err := json.Unmarshal(params[0], &f); err != nil {
		return nil, &memError{-32602, "invalid argument 0"}
	}
	from, e := n.tag(f.FromBlock)
	if e != nil {
		return nil, e
	}
	to, e := n.tag(f.ToBlock)
	if e != nil {
		return nil, e
	}
	if from > to {
		if n.tron {
			return nil, &memError{-32602, "please verify: fromBlock <= toBlock"}
		}
		return nil, &memError{-32000, "invalid block range params"}
	}
	n.capMu.Lock()
	rangeCap, resultCap := n.rangeCap, n.resultCap
	n.capMu.Unlock()
	if rangeCap > 0 {
		// java-tron refuses to − from > cap; BSC providers count the blocks.
		if n.tron && to-from > rangeCap {
			return nil, &memError{-32602, fmt.Sprintf("exceed max block range: %d", rangeCap)}
		}
		if !n.tron && to-from+1 > rangeCap {
			return nil, &memError{-32000, fmt.Sprintf("exceed maximum block range: %d", rangeCap)}
		}
	}
	match := n.addressMatches(f.Address)
	topics := make([]map[common.Hash]bool, len(f.Topics))
	for i, raw := range f.Topics {
		topics[i] = hashSet(raw)
	}
	if len(topics) > 0 && topics[0] != nil && !topics[0][chain.TransferTopic] || len(topics) > 3 {
		match = false
	}
	filterTo := len(topics) > 2 && topics[2] != nil
	filterFrom := len(topics) > 1 && topics[1] != nil
	n.mu.RLock()
	blocks := n.blocks
	n.mu.RUnlock()
	to = min(to, uint64(len(blocks)-1))
	count := 0
	if match && from <= to {
		for _, b := range blocks[from : to+1] {
			count += len(b.ends)
		}
	}
	if resultCap > 0 && count > resultCap {
		return nil, &memError{-32005, fmt.Sprintf("query returned more than %d results", resultCap)}
	}
	var out bytes.Buffer
	out.Grow(count*700 + 2)
	out.WriteByte('[')
	first := true
	if match && from <= to {
		for _, b := range blocks[from : to+1] {
			if len(b.ends) == 0 {
				continue
			}
			if !filterTo && !filterFrom {
				// The whole block at once.
				if !first {
					out.WriteByte(',')
				}
				out.Write(b.logs)
				first = false
				continue
			}
			start := 0
			for i, end := range b.ends {
				lo := start
				start = end + 1
				if (filterTo && !topics[2][b.tos[i]]) || (filterFrom && !topics[1][b.froms[i]]) {
					continue
				}
				if !first {
					out.WriteByte(',')
				}
				out.Write(b.logs[lo:end])
				first = false
			}
		}
	}
	out.WriteByte(']')
	return out.Bytes(), nil
}

// addressMatches reports whether a filter's address (a string, a list, or none)
// names the token contract; java-tron takes 0x41-prefixed addresses too.
func (n *memNode) addressMatches(raw json.RawMessage) bool {
	if len(raw) == 0 || string(raw) == "null" {
		return true
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		var one string
		if json.Unmarshal(raw, &one) != nil {
			return false
		}
		list = []string{one}
	}
	want := hex.EncodeToString(n.contract[:])
	for _, a := range list {
		h := strings.ToLower(strings.TrimPrefix(a, "0x"))
		if n.tron && len(h) == 42 && strings.HasPrefix(h, "41") {
			h = h[2:]
		}
		if h == want {
			return true
		}
	}
	return false
}

// hashSet reads a topic position: null (any), one hash, or a list of hashes.
func hashSet(raw json.RawMessage) map[common.Hash]bool {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		var one string
		if json.Unmarshal(raw, &one) != nil {
			return map[common.Hash]bool{}
		}
		list = []string{one}
	}
	set := map[common.Hash]bool{}
	for _, s := range list {
		set[common.HexToHash(s)] = true
	}
	return set
}
