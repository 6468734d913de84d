package devnet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"
)

// Dialect is how the proxy in front of the simulated node answers.
type Dialect string

// The dialects of the nodes the service reads.
const (
	// BSC answers as BNB Smart Chain behind a provider: geth's shapes, the
	// "finalized" tag two blocks behind the head (fast finality), a provider's caps.
	BSC Dialect = "bsc"
	// JavaTron answers as java-tron's /jsonrpc: its block field set with stateRoot
	// "0x", BlockId hashes (8-byte number ‖ 24 bytes of the sha256 of the raw
	// header) in blocks and logs, "finalized" = the solidified block ~19 behind,
	// its caps (5,000 blocks, 10,000 results), eth_call only at "latest" (a block
	// number refused) and its error texts.
	JavaTron Dialect = "java-tron"
)

// Proxy is a thin HTTP layer in front of the simulated node that rewrites its
// answers into a dialect and can misbehave like a provider (rate limits,
// -32005, hanging, refusing eth_getLogs). Settings may change while it serves.
type Proxy struct {
	// URL is the proxy's JSON-RPC endpoint.
	URL     string
	dialect Dialect
	node    string
	chain   *Chain
	srv     *http.Server
	ln      net.Listener
	closed  chan struct{}

	mu             sync.Mutex
	rangeCap       uint64
	resultCap      int
	finalizedDepth uint64
	noFinalized    bool
	rateLimitUntil time.Time
	retryAfter     int
	limitExceeded  int
	hang           int
	refuseLogs     bool
	wideLogs       uint64
	wideAnswer     answer // status 0: off
	suspendUntil   time.Time
	suspendAnswer  answer
	notFoundUntil  time.Time
	finalizedCalls int
	calls          map[string]int
	header         string
	headerValue    string
	withHeader     int
	withoutHeader  int
	ids            map[common.Hash]common.Hash
	hidden         map[common.Hash]bool
}

func newProxy(c *Chain, port int, d Dialect) (*Proxy, error) {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return nil, err
	}
	p := &Proxy{URL: "http://" + ln.Addr().String(), dialect: d, node: c.NodeURL, chain: c, ln: ln, closed: make(chan struct{}),
		rangeCap: 5000, resultCap: 10000, finalizedDepth: 2, calls: map[string]int{}, ids: map[common.Hash]common.Hash{}}
	if d == JavaTron {
		p.finalizedDepth = 19
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Close stops the proxy (hanging calls return).
func (p *Proxy) Close() error {
	close(p.closed)
	return p.srv.Close()
}

// HideLogs leaves the logs of transaction txHash out of every eth_getLogs
// answer, as a provider that lost them would (its receipt still has them): the
// watcher never sees its transfers.
func (p *Proxy) HideLogs(txHash common.Hash) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hidden == nil {
		p.hidden = map[common.Hash]bool{}
	}
	p.hidden[txHash] = true
}

// SetCaps sets the eth_getLogs caps: blocks per request and results (0: none).
func (p *Proxy) SetCaps(blocks uint64, results int) {
	p.mu.Lock()
	p.rangeCap, p.resultCap = blocks, results
	p.mu.Unlock()
}

// SetFinalizedDepth puts the "finalized" block depth blocks below the head; off
// makes the node answer the tag with an error, as a node without it does
// (java-tron: "TAG finalized not supported"; a geth fork from before the tag: the
// tag is not a block number).
func (p *Proxy) SetFinalizedDepth(depth uint64, off bool) {
	p.mu.Lock()
	p.finalizedDepth, p.noFinalized = depth, off
	p.mu.Unlock()
}

// RateLimit answers every call with HTTP 429 and Retry-After: retryAfter seconds
// for d.
func (p *Proxy) RateLimit(d time.Duration, retryAfter int) {
	p.mu.Lock()
	p.rateLimitUntil, p.retryAfter = time.Now().Add(d), retryAfter
	p.mu.Unlock()
}

// LimitExceeded answers the next n eth_getLogs with -32005 "limit exceeded", as
// the public BNB Smart Chain endpoints do.
func (p *Proxy) LimitExceeded(n int) {
	p.mu.Lock()
	p.limitExceeded = n
	p.mu.Unlock()
}

// Hang makes the next n calls hang until the caller gives up.
func (p *Proxy) Hang(n int) {
	p.mu.Lock()
	p.hang = n
	p.mu.Unlock()
}

// RefuseLogs makes the node refuse eth_getLogs outright (method not available).
func (p *Proxy) RefuseLogs(on bool) {
	p.mu.Lock()
	p.refuseLogs = on
	p.mu.Unlock()
}

// answer is a raw HTTP answer: a status and a body sent as they are.
type answer struct {
	status int
	body   string
}

// FailWideLogs answers every eth_getLogs spanning more than blocks blocks (to −
// from + 1; 0: every one) with HTTP status and body as they are (status 0: off): a
// refusal in words no rule knows, such as a provider's bare HTTP 400 or a
// gateway's error page.
func (p *Proxy) FailWideLogs(blocks uint64, status int, body string) {
	p.mu.Lock()
	p.wideLogs, p.wideAnswer = blocks, answer{status, body}
	p.mu.Unlock()
}

// Suspend answers every call with HTTP status and body for d, as TronGrid does
// while it suspends a key: HTTP 403 (503 with a key) and {"Error":"The key exceeds
// the frequency limit(15), and the query server is suspended for 30s"}.
func (p *Proxy) Suspend(d time.Duration, status int, body string) {
	p.mu.Lock()
	p.suspendUntil, p.suspendAnswer = time.Now().Add(d), answer{status, body}
	p.mu.Unlock()
}

// FinalizedNotFound answers eth_getBlockByNumber("finalized") for d with geth's
// {"code":-32000,"message":"finalized block not found"}, as a geth or bsc node
// does while it (re)starts and has not yet seen a finalized block.
func (p *Proxy) FinalizedNotFound(d time.Duration) {
	p.mu.Lock()
	p.notFoundUntil = time.Now().Add(d)
	p.mu.Unlock()
}

// FinalizedCalls returns how many calls asked for the "finalized" block.
func (p *Proxy) FinalizedCalls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.finalizedCalls
}

// Calls returns how many calls of method the proxy received ("" : all).
func (p *Proxy) Calls(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if method == "" {
		n := 0
		for _, c := range p.calls {
			n += c
		}
		return n
	}
	return p.calls[method]
}

// WatchHeader starts counting calls that carry the header name with value and
// those that do not.
func (p *Proxy) WatchHeader(name, value string) {
	p.mu.Lock()
	p.header, p.headerValue = name, value
	p.mu.Unlock()
}

// HeaderCounts returns the calls with and without the watched header.
func (p *Proxy) HeaderCounts() (with, without int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.withHeader, p.withoutHeader
}

type rpcRequest struct {
	ID     json.RawMessage   `json:"id"`
	Method string            `json:"method"`
	Params []json.RawMessage `json:"params"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var req rpcRequest
	if err := json.Unmarshal(body, &req); err != nil {
		// Batches and anything else go to the node as they are.
		p.forward(w, r.Context(), body)
		return
	}
	p.mu.Lock()
	p.calls[req.Method]++
	if p.header != "" {
		if r.Header.Get(p.header) == p.headerValue {
			p.withHeader++
		} else {
			p.withoutHeader++
		}
	}
	limited, retry := time.Now().Before(p.rateLimitUntil), p.retryAfter
	hang := p.hang > 0
	if hang {
		p.hang--
	}
	var raw *answer
	if time.Now().Before(p.suspendUntil) {
		raw = &p.suspendAnswer
	} else if p.wideAnswer.status != 0 && req.Method == "eth_getLogs" && logsSpan(req) > p.wideLogs {
		raw = &p.wideAnswer
	}
	p.mu.Unlock()
	if raw != nil && !hang {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(raw.status)
		_, _ = io.WriteString(w, raw.body)
		return
	}
	if hang {
		select {
		case <-r.Context().Done():
		case <-p.closed:
		}
		return
	}
	if limited {
		w.Header().Set("Retry-After", strconv.Itoa(retry))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":429,"message":"Too Many Requests"}}`, idOr(req.ID))
		return
	}
	result, rerr := p.answer(r.Context(), req, body)
	w.Header().Set("Content-Type", "application/json")
	out := map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(idOr(req.ID))}
	if rerr != nil {
		out["error"] = rerr
	} else {
		out["result"] = result
	}
	_ = json.NewEncoder(w).Encode(out)
}

// logsSpan returns the blocks an eth_getLogs filter spans (0 when it names no
// numbers).
func logsSpan(req rpcRequest) uint64 {
	if len(req.Params) != 1 {
		return 0
	}
	var f struct{ FromBlock, ToBlock string }
	if json.Unmarshal(req.Params[0], &f) != nil {
		return 0
	}
	from, err1 := hexutil.DecodeUint64(f.FromBlock)
	to, err2 := hexutil.DecodeUint64(f.ToBlock)
	if err1 != nil || err2 != nil || to < from {
		return 0
	}
	return to - from + 1
}

func idOr(id json.RawMessage) string {
	if len(id) == 0 {
		return "null"
	}
	return string(id)
}

func (p *Proxy) forward(w http.ResponseWriter, ctx context.Context, body []byte) {
	relayTo(w, ctx, p.node, body)
}

// relayTo posts body to target and copies its answer (status and body) to w: the
// proxies pass what they do not rewrite through unchanged.
func relayTo(w http.ResponseWriter, ctx context.Context, target string, body []byte) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(res.StatusCode)
	_, _ = io.Copy(w, res.Body)
}

// call runs method on the node.
func (p *Proxy) call(ctx context.Context, method string, params ...any) (json.RawMessage, *rpcError) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.node, bytes.NewReader(body))
	if err != nil {
		return nil, &rpcError{Code: -32603, Message: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, &rpcError{Code: -32603, Message: err.Error()}
	}
	defer res.Body.Close()
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		return nil, &rpcError{Code: -32603, Message: err.Error()}
	}
	if out.Error != nil {
		return nil, out.Error
	}
	return out.Result, nil
}

func (p *Proxy) head(ctx context.Context) (uint64, *rpcError) {
	raw, e := p.call(ctx, "eth_blockNumber")
	if e != nil {
		return 0, e
	}
	var s hexutil.Uint64
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, &rpcError{Code: -32603, Message: err.Error()}
	}
	return uint64(s), nil
}

func (p *Proxy) answer(ctx context.Context, req rpcRequest, body []byte) (any, *rpcError) {
	params := make([]any, len(req.Params))
	for i, raw := range req.Params {
		params[i] = raw
	}
	switch req.Method {
	case "eth_chainId":
		if p.dialect == JavaTron {
			// java-tron: the last 4 bytes of the genesis block's id.
			id, e := p.blockID(ctx, 0)
			if e != nil {
				return nil, e
			}
			return hexutil.EncodeBig(new(big.Int).SetBytes(id[28:])), nil
		}
	case "eth_getBlockByNumber":
		return p.block(ctx, req)
	case "eth_getLogs":
		return p.logs(ctx, req)
	case "eth_call":
		if p.dialect == JavaTron {
			return p.tronCall(ctx, req)
		}
	}
	return p.call(ctx, req.Method, params...)
}

// java-tron's eth_call refusals (TronJsonRpcImpl.getCall), with the codes of
// jsonrpc4j's @JsonRpcError annotations on the method (TronJsonRpc.getCall):
// -32602 for invalid params, -32600 for an invalid request, -32000 for an
// internal error; jsonrpc4j sends the annotation's data, the string "{}", along.
const (
	tronQuantityNotSupported = "QUANTITY not supported, just support TAG as latest"
	tronTagNotSupported      = "TAG [earliest | pending | finalized] not supported"
)

func tronRefusal(code int, message string) *rpcError {
	return &rpcError{Code: code, Message: message, Data: "{}"}
}

// tronCall answers eth_call as java-tron does: it runs a call only on the state
// of its head, so the block parameter may only say "latest". A block number is
// refused, never answered from another block's state; the tags earliest, pending
// and finalized are refused in words of their own. The object form
// ({"blockNumber": …} or {"blockHash": …}) is checked for the block's existence
// and then runs at latest all the same, whatever block it names.
func (p *Proxy) tronCall(ctx context.Context, req rpcRequest) (any, *rpcError) {
	if len(req.Params) != 2 {
		// jsonrpc4j finds no method taking that many parameters.
		return nil, &rpcError{Code: -32602, Message: "method parameters invalid"}
	}
	if e := p.tronCallBlock(ctx, req.Params[1]); e != nil {
		return nil, e
	}
	return p.call(ctx, "eth_call", req.Params[0], "latest")
}

// tronCallBlock judges eth_call's block parameter as java-tron does (nil: run
// the call at latest).
func (p *Proxy) tronCallBlock(ctx context.Context, raw json.RawMessage) *rpcError {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) > 0 && raw[0] == '{':
		return p.tronCallObject(ctx, raw)
	case len(raw) == 0 || raw[0] != '"':
		// Neither a string nor an object (a bare number, null).
		return tronRefusal(-32600, "invalid json request")
	}
	var tag string
	if err := json.Unmarshal(raw, &tag); err != nil {
		return tronRefusal(-32600, "invalid json request")
	}
	switch {
	case strings.EqualFold(tag, "latest"):
		return nil
	case strings.EqualFold(tag, "earliest"), strings.EqualFold(tag, "pending"), strings.EqualFold(tag, "finalized"):
		return tronRefusal(-32602, tronTagNotSupported)
	}
	if _, ok := tronNumber(tag); !ok {
		// "safe" and anything else that is no tag java-tron knows nor a number.
		return tronRefusal(-32602, "invalid block number")
	}
	return tronRefusal(-32602, tronQuantityNotSupported)
}

// tronCallObject judges the object form of the block parameter: the block it
// names must exist (the call still runs at latest).
func (p *Proxy) tronCallObject(ctx context.Context, raw json.RawMessage) *rpcError {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return tronRefusal(-32600, "invalid json request")
	}
	field := func(name string) (string, *rpcError) {
		var s string
		if err := json.Unmarshal(obj[name], &s); err != nil {
			return "", tronRefusal(-32602, "invalid json request") // not a string
		}
		return s, nil
	}
	if _, ok := obj["blockNumber"]; ok {
		s, e := field("blockNumber")
		if e != nil {
			return e
		}
		n, ok := tronNumber(s)
		if !ok {
			return tronRefusal(-32602, "invalid block number")
		}
		if n.Sign() < 0 || !n.IsUint64() {
			return tronRefusal(-32000, "header not found")
		}
		if _, err := p.chain.Backend.Client().HeaderByNumber(ctx, n); err != nil {
			return tronRefusal(-32000, "header not found")
		}
		return nil
	}
	if _, ok := obj["blockHash"]; ok {
		s, e := field("blockHash")
		if e != nil {
			return e
		}
		h, err := hexutil.Decode(s)
		if !strings.HasPrefix(s, "0x") {
			h, err = hexutil.Decode("0x" + s)
		}
		if err != nil || len(h) != common.HashLength {
			return tronRefusal(-32602, "invalid hash value")
		}
		// Block hashes here are BlockIds: the number is their first 8 bytes.
		id := common.BytesToHash(h)
		hd, err := p.chain.Backend.Client().HeaderByNumber(ctx, new(big.Int).SetUint64(binary.BigEndian.Uint64(id[:8])))
		if err != nil || p.idOf(hd) != id {
			return tronRefusal(-32000, "header for hash not found")
		}
		return nil
	}
	return tronRefusal(-32600, "invalid json request")
}

// tronNumber reads a block number as java-tron does (ByteArray.hexToBigInteger):
// hex after "0x", decimal otherwise.
func tronNumber(s string) (*big.Int, bool) {
	if rest, ok := strings.CutPrefix(s, "0x"); ok {
		return new(big.Int).SetString(rest, 16)
	}
	return new(big.Int).SetString(s, 10)
}

func (p *Proxy) tagNumber(ctx context.Context, raw json.RawMessage) (uint64, bool, *rpcError) {
	var tag string
	if err := json.Unmarshal(raw, &tag); err != nil {
		return 0, false, &rpcError{Code: -32602, Message: "invalid block number"}
	}
	p.mu.Lock()
	depth, off, notFound := p.finalizedDepth, p.noFinalized, time.Now().Before(p.notFoundUntil)
	if tag == "finalized" {
		p.finalizedCalls++
	}
	p.mu.Unlock()
	switch tag {
	case "latest", "":
		h, e := p.head(ctx)
		return h, true, e
	case "earliest":
		return 0, true, nil
	case "finalized":
		if off {
			if p.dialect == JavaTron {
				return 0, false, &rpcError{Code: -32602, Message: "TAG finalized not supported"}
			}
			// What go-ethereum's BlockNumber decoding answered before the tag existed.
			return 0, false, &rpcError{Code: -32602, Message: "invalid argument 0: hex string without 0x prefix"}
		}
		if notFound {
			return 0, false, &rpcError{Code: -32000, Message: "finalized block not found"}
		}
		h, e := p.head(ctx)
		if e != nil {
			return 0, false, e
		}
		if h < depth {
			return 0, true, nil
		}
		return h - depth, true, nil
	case "pending", "safe":
		if p.dialect == JavaTron {
			return 0, false, &rpcError{Code: -32602, Message: "TAG " + tag + " not supported"}
		}
		h, e := p.head(ctx)
		return h, true, e
	}
	n, err := hexutil.DecodeUint64(tag)
	if err != nil {
		return 0, false, &rpcError{Code: -32602, Message: "invalid block number"}
	}
	return n, true, nil
}

func (p *Proxy) block(ctx context.Context, req rpcRequest) (any, *rpcError) {
	if len(req.Params) == 0 {
		return nil, &rpcError{Code: -32602, Message: "missing value for required argument 0"}
	}
	n, _, e := p.tagNumber(ctx, req.Params[0])
	if e != nil {
		return nil, e
	}
	if p.dialect != JavaTron {
		return p.call(ctx, "eth_getBlockByNumber", hexutil.EncodeUint64(n), false)
	}
	b, err := p.chain.Backend.Client().BlockByNumber(ctx, new(big.Int).SetUint64(n))
	if err != nil {
		return nil, nil // java-tron answers null for a block it does not have
	}
	id := p.idOf(b.Header())
	parent := common.Hash{}
	if n > 0 {
		ph, err := p.chain.Backend.Client().HeaderByHash(ctx, b.ParentHash())
		if err != nil {
			return nil, &rpcError{Code: -32603, Message: err.Error()}
		}
		parent = p.idOf(ph)
	}
	txs := make([]string, 0, len(b.Transactions()))
	for _, tx := range b.Transactions() {
		txs = append(txs, tx.Hash().Hex())
	}
	zero := func(n int) string { return hexutil.Encode(make([]byte, n)) }
	return map[string]any{
		"number": hexutil.EncodeUint64(n), "hash": id.Hex(), "parentHash": parent.Hex(),
		"nonce": zero(8), "sha3Uncles": zero(32), "logsBloom": zero(256),
		"transactionsRoot": b.TxHash().Hex(), "stateRoot": "0x", "receiptsRoot": zero(32),
		"miner": strings.ToLower(b.Coinbase().Hex()), "difficulty": "0x0", "totalDifficulty": "0x0", "extraData": "0x",
		"size": hexutil.EncodeUint64(b.Size()), "gasLimit": hexutil.EncodeUint64(b.GasLimit()), "gasUsed": hexutil.EncodeUint64(b.GasUsed()),
		"timestamp": hexutil.EncodeUint64(b.Time()), "transactions": txs, "uncles": []string{},
		"baseFeePerGas": "0x0", "mixHash": zero(32),
	}, nil
}

// BlockID is Tron's id of a block: its number (8 bytes, big-endian) followed by
// the last 24 bytes of the sha256 of its raw header (here: the header's RLP).
func BlockID(h *types.Header) common.Hash {
	raw, _ := rlp.EncodeToBytes(h)
	sum := sha256.Sum256(raw)
	binary.BigEndian.PutUint64(sum[:8], h.Number.Uint64())
	return common.Hash(sum)
}

func (p *Proxy) idOf(h *types.Header) common.Hash {
	p.mu.Lock()
	defer p.mu.Unlock()
	if id, ok := p.ids[h.Hash()]; ok {
		return id
	}
	id := BlockID(h)
	p.ids[h.Hash()] = id
	return id
}

func (p *Proxy) blockID(ctx context.Context, n uint64) (common.Hash, *rpcError) {
	h, err := p.chain.Backend.Client().HeaderByNumber(ctx, new(big.Int).SetUint64(n))
	if err != nil {
		return common.Hash{}, &rpcError{Code: -32603, Message: err.Error()}
	}
	return p.idOf(h), nil
}

func (p *Proxy) logs(ctx context.Context, req rpcRequest) (any, *rpcError) {
	p.mu.Lock()
	refuse, limited := p.refuseLogs, p.limitExceeded > 0
	if limited {
		p.limitExceeded--
	}
	rangeCap, resultCap := p.rangeCap, p.resultCap
	p.mu.Unlock()
	if refuse {
		return nil, &rpcError{Code: -32601, Message: "the method eth_getLogs does not exist/is not available"}
	}
	if limited {
		return nil, &rpcError{Code: -32005, Message: "limit exceeded"}
	}
	if len(req.Params) != 1 {
		return nil, &rpcError{Code: -32602, Message: "invalid argument"}
	}
	var f map[string]json.RawMessage
	if err := json.Unmarshal(req.Params[0], &f); err != nil {
		return nil, &rpcError{Code: -32602, Message: "invalid argument 0"}
	}
	from, _, e := p.tagNumber(ctx, f["fromBlock"])
	if e != nil {
		return nil, e
	}
	to, _, e := p.tagNumber(ctx, f["toBlock"])
	if e != nil {
		return nil, e
	}
	if from > to {
		if p.dialect == JavaTron {
			return nil, &rpcError{Code: -32602, Message: "please verify: fromBlock <= toBlock"}
		}
		return nil, &rpcError{Code: -32000, Message: "invalid block range params"}
	}
	if rangeCap > 0 {
		// java-tron refuses to − from > cap; BSC providers count the blocks.
		if p.dialect == JavaTron && to-from > rangeCap {
			return nil, &rpcError{Code: -32602, Message: fmt.Sprintf("exceed max block range: %d", rangeCap)}
		}
		if p.dialect != JavaTron && to-from+1 > rangeCap {
			return nil, &rpcError{Code: -32000, Message: fmt.Sprintf("exceed maximum block range: %d", rangeCap)}
		}
	}
	raw, e := p.call(ctx, "eth_getLogs", req.Params[0])
	if e != nil {
		return nil, e
	}
	var logs []map[string]any
	if err := json.Unmarshal(raw, &logs); err != nil {
		return nil, &rpcError{Code: -32603, Message: err.Error()}
	}
	p.mu.Lock()
	if len(p.hidden) > 0 {
		kept := logs[:0]
		for _, lg := range logs {
			if h, _ := lg["transactionHash"].(string); !p.hidden[common.HexToHash(h)] {
				kept = append(kept, lg)
			}
		}
		logs = kept
	}
	p.mu.Unlock()
	if resultCap > 0 && len(logs) > resultCap {
		return nil, &rpcError{Code: -32005, Message: fmt.Sprintf("query returned more than %d results", resultCap), Data: map[string]any{}}
	}
	if p.dialect != JavaTron {
		return logs, nil
	}
	out := make([]map[string]any, 0, len(logs))
	for _, lg := range logs {
		bh, _ := lg["blockHash"].(string)
		p.mu.Lock()
		id, ok := p.ids[common.HexToHash(bh)]
		p.mu.Unlock()
		if !ok {
			h, err := p.chain.Backend.Client().HeaderByHash(ctx, common.HexToHash(bh))
			if err != nil {
				return nil, &rpcError{Code: -32603, Message: err.Error()}
			}
			id = p.idOf(h)
		}
		// java-tron's log field set, BlockId as the block hash.
		out = append(out, map[string]any{
			"logIndex": lg["logIndex"], "blockNumber": lg["blockNumber"], "blockHash": id.Hex(),
			"transactionHash": lg["transactionHash"], "transactionIndex": lg["transactionIndex"],
			"address": lg["address"], "data": lg["data"], "topics": lg["topics"], "removed": false,
		})
	}
	return out, nil
}
