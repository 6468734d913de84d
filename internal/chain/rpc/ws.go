package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
)

// ErrNoPush: the client cannot push new heads (an http(s) endpoint); the watcher
// polls.
var ErrNoPush = errors.New("the endpoint pushes no new heads (only a ws(s) endpoint does)")

// wsConn is a ws(s) endpoint's connection: go-ethereum's client, dialled at the
// first use and again after a failed dial. Once connected it reconnects by itself
// when the connection drops.
type wsConn struct {
	mu     sync.Mutex
	client *gethrpc.Client
	closed bool
}

// wsMessageLimit matches the limit on an HTTP answer: a catch-up eth_getLogs may be
// large.
const wsMessageLimit = 256 << 20

func (w *wsConn) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.client != nil {
		w.client.Close()
		w.client = nil
	}
}

// conn returns the connection, dialling it (within ctx) when there is none.
func (c *Client) conn(ctx context.Context, method string) (*gethrpc.Client, error) {
	w := c.ws
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, &Error{Kind: KindTransport, Method: method, Message: "client closed"}
	}
	if w.client != nil {
		return w.client, nil
	}
	cl, err := gethrpc.DialOptions(ctx, c.url, gethrpc.WithHeaders(c.opts.Headers),
		gethrpc.WithWebsocketMessageSizeLimit(wsMessageLimit))
	if err != nil {
		return nil, c.wsError(ctx, method, err)
	}
	w.client = cl
	return cl, nil
}

// callWS runs method over the WebSocket; ctx carries the call's timeout.
func (c *Client) callWS(ctx context.Context, out any, method string, params []any) error {
	cl, err := c.conn(ctx, method)
	if err != nil {
		return err
	}
	var result json.RawMessage
	if err := cl.CallContext(ctx, &result, method, params...); err != nil && !errors.Is(err, gethrpc.ErrNoResult) {
		return c.wsError(ctx, method, err)
	}
	return decodeResult(method, result, out)
}

// handshakeStatus finds the HTTP status go-ethereum reports for a refused
// WebSocket handshake ("websocket: bad handshake (HTTP status 429 Too Many Requests)").
var handshakeStatus = regexp.MustCompile(`\(HTTP status (\d{3})`)

// wsError reads a failed WebSocket call as the HTTP transport reads the same
// answer: a JSON-RPC error is rebuilt as its envelope and classified; a refused
// handshake by its status; the rest is a timeout or a transport failure.
func (c *Client) wsError(ctx context.Context, method string, err error) error {
	var re gethrpc.Error
	if errors.As(err, &re) {
		e := map[string]any{"code": re.ErrorCode(), "message": re.Error()}
		var de gethrpc.DataError
		if errors.As(err, &de) && de.ErrorData() != nil {
			e["data"] = de.ErrorData()
		}
		body, merr := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "error": e})
		if merr == nil {
			return errorOf(method, 200, Classify(c.dialect, method, 200, nil, body))
		}
	}
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &Error{Kind: KindTimeout, Method: method, Message: fmt.Sprintf("no answer within %s", c.opts.Timeout)}
	}
	if g := handshakeStatus.FindStringSubmatch(err.Error()); g != nil {
		status, _ := strconv.Atoi(g[1])
		v := Classify(c.dialect, method, status, nil, nil)
		v.Message = c.redact(err)
		return errorOf(method, status, v)
	}
	return &Error{Kind: KindTransport, Method: method, Message: c.redact(err)}
}

// Push reports whether the client can push new heads (a ws(s) endpoint).
func (c *Client) Push() bool { return c.ws != nil }

// SubscribeHeads calls onHead with each new head until ctx is done or the
// subscription fails (returned error); ErrNoPush for an http(s) client. It returns
// nil once ctx is done. A head carries its number, and its hash, parent hash and
// time when the node pushes them (geth and bsc do; the Hash is zero when any of
// them is missing or unreadable): with them the watcher needs no call to learn
// the head or the newest blocks' hashes. The watcher still reads every block's
// logs in order, so a dropped subscription loses nothing, and the caller
// subscribes again after a failure.
func (c *Client) SubscribeHeads(ctx context.Context, onHead func(head *Block)) error {
	if c.ws == nil {
		return ErrNoPush
	}
	const method = "eth_subscribe"
	dialCtx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	cl, err := c.conn(dialCtx, method)
	if err != nil {
		return err
	}
	heads := make(chan rawBlock, 64)
	sub, err := cl.EthSubscribe(dialCtx, heads, "newHeads")
	if err != nil {
		return c.wsError(dialCtx, method, err)
	}
	defer sub.Unsubscribe()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-sub.Err():
			if err == nil {
				err = errors.New("subscription closed")
			}
			return &Error{Kind: KindTransport, Method: method, Message: "newHeads: " + c.redact(err)}
		case h := <-heads:
			n, err := quantity64(h.Number)
			if err != nil {
				return &Error{Kind: KindDecode, Method: method, Message: "newHeads number: " + err.Error()}
			}
			b, err := c.decode(&h)
			if err != nil || b.Hash == (common.Hash{}) {
				b = &Block{Number: n} // a wake-up call only
			}
			onHead(b)
		}
	}
}
