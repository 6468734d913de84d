// Package rpc is the deposit watcher's JSON-RPC client: the few Ethereum methods it
// needs (eth_chainId, eth_blockNumber, eth_getBlockByNumber, eth_getLogs, and
// eth_call for the sanctions oracle), read as the node answers them rather than as
// go-ethereum's types expect.
//
// Real nodes are not geth. java-tron's /jsonrpc reports blocks with stateRoot "0x"
// and a block hash that is Tron's BlockId (8-byte block number ‖ 24 bytes of a
// sha256 of the raw header), so a header decoded into types.Header fails and a hash
// recomputed locally never matches. The client therefore decodes only number, hash,
// parentHash and timestamp, leniently, and the watcher compares the hash the node
// reports. Providers cap eth_getLogs, rate-limit and sometimes hang: every call has
// a timeout, and every answer, over HTTP or a WebSocket (ws.go), is read by one
// classifier (classify.go) into an *Error whose Kind says what happened and, where
// the provider named them, the cap to respect or the wait to honour, so the
// scanner can size requests and back off.
package rpc

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// Block is what the watcher needs of a block, as the node reports it.
type Block struct {
	Number     uint64
	Hash       common.Hash
	ParentHash common.Hash
	Time       time.Time
	// Bloom is the block's logsBloom (256 bytes), nil when the node sends none
	// or its dialect has none (java-tron): see MayHold.
	Bloom []byte
}

// Log is one event log, as the node reports it.
type Log struct {
	Address     common.Address
	Topics      []common.Hash
	Data        []byte
	BlockNumber uint64
	BlockHash   common.Hash
	TxHash      common.Hash
	Index       uint
	Removed     bool
}

// Reader is what the deposit watcher reads of a node: the methods of Client, which
// the scanner and the provider pool take (the pool is a Reader over several).
// Blocks and logs come as the node reports them, its hashes trusted, never
// recomputed.
type Reader interface {
	ChainID(ctx context.Context) (*big.Int, error)
	BlockNumber(ctx context.Context) (uint64, error)
	// BlockByNumber returns nil when the node has no such block.
	BlockByNumber(ctx context.Context, number uint64) (*Block, error)
	// Finalized returns the node's finalized block; an error of kind
	// KindUnsupported means the node has none, KindNotReady that it cannot tell yet.
	Finalized(ctx context.Context) (*Block, error)
	Logs(ctx context.Context, from, to uint64, contracts []common.Address, topic common.Hash) ([]Log, error)
}

// Options configure a Client.
type Options struct {
	// Headers are sent with every call, and with a ws(s) endpoint's handshake
	// (CHAIN_RPC_HEADERS_<NETWORK> and _<N>, e.g. an API key).
	Headers http.Header
	// Timeout bounds every call (CHAIN_RPC_TIMEOUT; default 10s).
	Timeout time.Duration
	// HTTP is the transport of an http(s) endpoint (default: a client of its own).
	HTTP *http.Client
}

// Client calls one node over HTTP or a WebSocket.
type Client struct {
	url     string
	dialect Dialect
	opts    Options
	http    *http.Client
	id      atomic.Uint64
	// ws is set for a ws(s) endpoint (see ws.go).
	ws *wsConn
}

// New returns a client of the node at url (http, https, ws or wss) speaking
// dialect. A ws(s) endpoint is dialled at the first call, so a provider down at
// start does not fail New.
func New(endpoint string, dialect Dialect, opts Options) (*Client, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	c := &Client{url: endpoint, dialect: dialect, opts: opts}
	switch {
	case strings.HasPrefix(endpoint, "http://") || strings.HasPrefix(endpoint, "https://"):
		c.http = opts.HTTP
		if c.http == nil {
			c.http = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: 90 * time.Second}}
		}
	case strings.HasPrefix(endpoint, "ws://") || strings.HasPrefix(endpoint, "wss://"):
		c.ws = &wsConn{}
	default:
		return nil, errors.New("the watcher speaks JSON-RPC over http(s) or ws(s)")
	}
	return c, nil
}

// Dialect returns the client's dialect.
func (c *Client) Dialect() Dialect { return c.dialect }

// Close releases idle connections (a WebSocket's connection).
func (c *Client) Close() {
	if c.ws != nil {
		c.ws.close()
		return
	}
	c.http.CloseIdleConnections()
}

type request struct {
	JSONRPC string `json:"jsonrpc"`
	ID      uint64 `json:"id"`
	Method  string `json:"method"`
	Params  []any  `json:"params"`
}

// call runs method and decodes its result into out (left untouched on null).
func (c *Client) call(ctx context.Context, out any, method string, params ...any) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	if params == nil {
		params = []any{}
	}
	if c.ws != nil {
		return c.callWS(ctx, out, method, params)
	}
	body, err := json.Marshal(request{JSONRPC: "2.0", ID: c.id.Add(1), Method: method, Params: params})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, vs := range c.opts.Headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	res, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return &Error{Kind: KindTimeout, Method: method, Message: fmt.Sprintf("no answer within %s", c.opts.Timeout)}
		}
		return &Error{Kind: KindTransport, Method: method, Message: c.redact(err)}
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 256<<20))
	if err != nil {
		if ctx.Err() != nil {
			return &Error{Kind: KindTimeout, Method: method, Message: fmt.Sprintf("no complete answer within %s", c.opts.Timeout)}
		}
		return &Error{Kind: KindTransport, Method: method, Message: c.redact(err)}
	}
	if logs, ok := out.(*[]rawLog); ok && res.StatusCode == http.StatusOK {
		// A catch-up's eth_getLogs answers are megabytes: read them in one pass.
		if parsed, ok := parseLogsAnswer(raw); ok {
			*logs = parsed
			return nil
		}
	}
	v, result := classify(c.dialect, method, res.StatusCode, res.Header, raw)
	if v.Kind != "" {
		return errorOf(method, res.StatusCode, v)
	}
	return decodeResult(method, result, out)
}

// redact is err's text without the endpoint: providers put keys in it.
func (c *Client) redact(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	if u, perr := url.Parse(c.url); perr == nil {
		for _, s := range []string{c.url, u.Host + u.Path, u.RawQuery, strings.Trim(u.Path, "/")} {
			if len(s) >= 8 {
				msg = strings.ReplaceAll(msg, s, "…")
			}
		}
	}
	return msg
}

// errorOf is a verdict as the error the client returns.
func errorOf(method string, status int, v Verdict) *Error {
	e := &Error{Kind: v.Kind, Method: method, Code: v.Code, Message: v.Message, RetryAfter: v.Wait, Cap: v.Cap}
	if status != http.StatusOK {
		e.Status = status
	}
	return e
}

// decodeResult reads an ok answer's result into out (left untouched on null).
func decodeResult(method string, result json.RawMessage, out any) error {
	if len(result) == 0 || string(result) == "null" {
		return nil
	}
	if err := json.Unmarshal(result, out); err != nil {
		return &Error{Kind: KindDecode, Method: method, Message: err.Error()}
	}
	return nil
}

// ChainID returns eth_chainId.
func (c *Client) ChainID(ctx context.Context) (*big.Int, error) {
	var s string
	if err := c.call(ctx, &s, "eth_chainId"); err != nil {
		return nil, err
	}
	v, err := ParseQuantity(s)
	if err != nil {
		return nil, &Error{Kind: KindDecode, Method: "eth_chainId", Message: err.Error()}
	}
	return v, nil
}

// BlockNumber returns eth_blockNumber, the head.
func (c *Client) BlockNumber(ctx context.Context) (uint64, error) {
	var s string
	if err := c.call(ctx, &s, "eth_blockNumber"); err != nil {
		return 0, err
	}
	v, err := quantity64(s)
	if err != nil {
		return 0, &Error{Kind: KindDecode, Method: "eth_blockNumber", Message: err.Error()}
	}
	return v, nil
}

// BlockByNumber returns block number as the node reports it; nil when it has no
// such block.
func (c *Client) BlockByNumber(ctx context.Context, number uint64) (*Block, error) {
	return c.block(ctx, "0x"+strconv.FormatUint(number, 16))
}

// Finalized returns the node's finalized block (the "finalized" tag: BNB Smart
// Chain's fast finality, Tron's solidified block). An error of KindUnsupported
// means the node refuses the tag; KindNotReady (geth's "finalized block not found"
// while it starts) means it has none yet and is asked again.
func (c *Client) Finalized(ctx context.Context) (*Block, error) {
	b, err := c.block(ctx, "finalized")
	var e *Error
	if errors.As(err, &e) && (e.Kind == KindRPC || e.Kind == KindRefused) {
		// "TAG finalized not supported", "invalid block number", …: no finality rule.
		e.Kind = KindUnsupported
	}
	if err == nil && b == nil {
		return nil, &Error{Kind: KindUnsupported, Method: "eth_getBlockByNumber", Message: "no finalized block"}
	}
	return b, err
}

// Call runs eth_call: data sent to contract to as a call (no transaction), at
// block number block, and returns what the contract returned. A view function is
// read at a pinned block so the answer names the state it came from; a node that
// runs eth_call only at "latest" (java-tron, Dialect.CallsAtLatest) is asked at
// "latest", its answer the state at its head when it ran (block, read just
// before, is the least that head can be). A revert is
// an error of kind KindReverted (about the call, not the node); a contract that
// returned nothing (an address without code) answers an empty result, for the
// caller to judge.
func (c *Client) Call(ctx context.Context, to common.Address, data []byte, block uint64) ([]byte, error) {
	msg := map[string]string{"to": c.dialect.filterAddress(to), "data": "0x" + hex.EncodeToString(data)}
	at := "0x" + strconv.FormatUint(block, 16)
	if c.dialect.CallsAtLatest {
		at = "latest"
	}
	var s string
	if err := c.call(ctx, &s, "eth_call", msg, at); err != nil {
		var e *Error
		if errors.As(err, &e) && reverted(e) {
			e.Kind = KindReverted
		}
		return nil, err
	}
	out, err := hexBytes(s)
	if err != nil {
		return nil, &Error{Kind: KindDecode, Method: "eth_call", Message: err.Error()}
	}
	return out, nil
}

// reverted reports whether an eth_call error is the contract reverting: geth and
// its forks answer code 3 ("execution reverted" with the revert data, whatever
// the reason's text says), others only the text.
func reverted(e *Error) bool {
	if e.Status != 0 {
		return false // an HTTP error: the gateway's, not the contract's
	}
	return e.Code == 3 || e.Kind == KindRPC && strings.Contains(strings.ToLower(e.Message), "revert")
}

// rawBlock holds the fields the watcher reads; the rest of whatever the node sends
// (stateRoot "0x", Tron's extra fields) is ignored.
type rawBlock struct {
	Number     string `json:"number"`
	Hash       string `json:"hash"`
	ParentHash string `json:"parentHash"`
	Timestamp  string `json:"timestamp"`
	LogsBloom  string `json:"logsBloom"`
}

func (c *Client) block(ctx context.Context, tag string) (*Block, error) {
	var raw *rawBlock
	if err := c.call(ctx, &raw, "eth_getBlockByNumber", tag, false); err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, nil
	}
	b, err := c.decode(raw)
	if err != nil {
		return nil, &Error{Kind: KindDecode, Method: "eth_getBlockByNumber", Message: fmt.Sprintf("block %s: %v", tag, err)}
	}
	return b, nil
}

// decode reads a block as the client's dialect sends it: without a bloom where
// the dialect has none (java-tron's 256 zero bytes would rule every log out).
func (c *Client) decode(raw *rawBlock) (*Block, error) {
	b, err := raw.decode()
	if err == nil && c.dialect.NoBlooms {
		b.Bloom = nil
	}
	return b, err
}

// SyncStatus is a node's answer to eth_syncing.
type SyncStatus struct {
	// Syncing: the node says it is catching up (geth and its forks answer false
	// once synced; java-tron answers an object whenever it has peers, its highest
	// block estimated from the head's age, so Behind is what counts).
	Syncing bool
	// Current and Highest are the node's head and the highest block it knows of.
	Current, Highest uint64
}

// Behind returns how many blocks the node says it is behind (0 when synced).
func (s SyncStatus) Behind() uint64 {
	if !s.Syncing || s.Highest <= s.Current {
		return 0
	}
	return s.Highest - s.Current
}

// Syncing returns eth_syncing: asked when a head looks wrong (0, or far below
// the one the node reported before), to tell a node catching up from one gone back.
func (c *Client) Syncing(ctx context.Context) (SyncStatus, error) {
	var raw json.RawMessage
	if err := c.call(ctx, &raw, "eth_syncing"); err != nil {
		return SyncStatus{}, err
	}
	var synced bool
	if len(raw) == 0 || json.Unmarshal(raw, &synced) == nil {
		return SyncStatus{}, nil // false (or null): synced
	}
	var obj struct {
		CurrentBlock string `json:"currentBlock"`
		HighestBlock string `json:"highestBlock"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return SyncStatus{}, &Error{Kind: KindDecode, Method: "eth_syncing", Message: err.Error()}
	}
	st := SyncStatus{Syncing: true}
	st.Current, _ = quantity64(obj.CurrentBlock)
	st.Highest, _ = quantity64(obj.HighestBlock)
	return st, nil
}

// decode reads the block's fields (a parent hash may be missing at genesis).
func (raw *rawBlock) decode() (*Block, error) {
	bad := func(err error) (*Block, error) { return nil, err }
	n, err := quantity64(raw.Number)
	if err != nil {
		return bad(err)
	}
	h, err := hash(raw.Hash)
	if err != nil {
		return bad(err)
	}
	p, err := hash(raw.ParentHash)
	if err != nil && n > 0 {
		return bad(err)
	}
	ts, err := quantity64(raw.Timestamp)
	if err != nil {
		return bad(err)
	}
	b := &Block{Number: n, Hash: h, ParentHash: p, Time: blockTime(ts)}
	if bloom, err := hexBytes(raw.LogsBloom); err == nil && len(bloom) == bloomBytes {
		b.Bloom = bloom
	}
	return b, nil
}

// msTimestamps is where a block timestamp stops being seconds: as seconds it would
// be after the year 5000. java-tron before August 2022 sends milliseconds,
// which as seconds would be the year 54000 and more.
const msTimestamps = 100_000_000_000

// blockTime reads a block's timestamp, in seconds or (old java-tron) milliseconds.
func blockTime(ts uint64) time.Time {
	if ts >= msTimestamps {
		return time.UnixMilli(int64(min(ts, math.MaxInt64))).UTC()
	}
	return time.Unix(int64(ts), 0).UTC()
}

type rawLog struct {
	Address     string   `json:"address"`
	Topics      []string `json:"topics"`
	Data        string   `json:"data"`
	BlockNumber string   `json:"blockNumber"`
	BlockHash   string   `json:"blockHash"`
	TxHash      string   `json:"transactionHash"`
	LogIndex    string   `json:"logIndex"`
	Removed     bool     `json:"removed"`
}

// Logs returns the logs of contracts with topic 0 topic in blocks from..to.
func (c *Client) Logs(ctx context.Context, from, to uint64, contracts []common.Address, topic common.Hash) ([]Log, error) {
	addrs := make([]string, len(contracts))
	for i, a := range contracts {
		addrs[i] = c.dialect.filterAddress(a)
	}
	filter := map[string]any{
		"fromBlock": "0x" + strconv.FormatUint(from, 16), "toBlock": "0x" + strconv.FormatUint(to, 16),
		"address": addrs, "topics": [][]string{{topic.Hex()}},
	}
	var raw []rawLog
	if err := c.call(ctx, &raw, "eth_getLogs", filter); err != nil {
		return nil, err
	}
	out := make([]Log, 0, len(raw))
	for _, r := range raw {
		lg, err := c.dialect.log(r)
		if err != nil {
			return nil, &Error{Kind: KindDecode, Method: "eth_getLogs", Message: err.Error()}
		}
		out = append(out, lg)
	}
	return out, nil
}

// ParseQuantity reads a JSON-RPC quantity: 0x hex, or (leniently) decimal.
func ParseQuantity(s string) (*big.Int, error) {
	s = strings.TrimSpace(s)
	v, ok := new(big.Int), false
	if h, isHex := strings.CutPrefix(strings.ToLower(s), "0x"); isHex {
		if h == "" {
			return big.NewInt(0), nil
		}
		v, ok = v.SetString(h, 16)
	} else {
		v, ok = v.SetString(s, 10)
	}
	if !ok || v.Sign() < 0 {
		return nil, fmt.Errorf("%q is not a quantity", s)
	}
	return v, nil
}

func quantity64(s string) (uint64, error) {
	v, err := ParseQuantity(s)
	if err != nil {
		return 0, err
	}
	if !v.IsUint64() {
		return 0, fmt.Errorf("%q is out of range", s)
	}
	return v.Uint64(), nil
}

// hash reads 32 bytes of hex (0x optional).
func hash(s string) (common.Hash, error) {
	h := strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	if len(h) != 64 {
		return common.Hash{}, fmt.Errorf("%q is not a 32-byte hash", s)
	}
	var out common.Hash
	if _, err := hexDecode(out[:], h); err != nil {
		return common.Hash{}, fmt.Errorf("%q is not a 32-byte hash", s)
	}
	return out, nil
}

func hexBytes(s string) ([]byte, error) {
	h := strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	if len(h)%2 == 1 {
		h = "0" + h
	}
	out := make([]byte, len(h)/2)
	if _, err := hexDecode(out, h); err != nil {
		return nil, fmt.Errorf("%q is not hex", s)
	}
	return out, nil
}

func hexDecode(dst []byte, s string) (int, error) { return hex.Decode(dst, []byte(s)) }
