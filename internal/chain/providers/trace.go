package providers

import (
	"context"
	"math/big"
	"net/url"

	"github.com/ethereum/go-ethereum/common"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"partnerd/internal/chain/rpc"
)

// Attributes of a provider call's span: which network and provider (Name: scheme
// and host), the blocks asked for, and how the call ended ("ok", or the
// failure's rpc.Kind*, "error" for one without a kind, such as the caller's
// context ending).
const (
	attrNetwork   = attribute.Key("chain.network")
	attrProvider  = attribute.Key("chain.provider")
	attrOutcome   = attribute.Key("chain.outcome")
	attrFromBlock = attribute.Key("chain.from_block")
	attrToBlock   = attribute.Key("chain.to_block")
	outcomeOK     = "ok"
)

var rpcSystem = semconv.RPCSystemKey.String("jsonrpc")

// tracedClient gives each call of one provider's client a client span named by
// its JSON-RPC method, a child of the span of the work that made it (a scan, a
// sanctions check): the operator sees which provider answered what, how long it
// took and why it failed, failovers included. A call made outside traced work
// (the pool's background head reads, one a standby provider every poll) starts no
// trace of its own: each would be a trace of one span. With the no-op tracer
// provider (traces off) no span is recording, so a call costs one check.
type tracedClient struct {
	Client
	tracer  trace.Tracer
	network string
	name    string
	host    string
}

func newTracedClient(c Client, tracer trace.Tracer, network, name, endpoint string) *tracedClient {
	t := &tracedClient{Client: c, tracer: tracer, network: network, name: name}
	if u, err := url.Parse(endpoint); err == nil {
		t.host = u.Hostname() // never the path or query, where providers put keys
	}
	return t
}

// start returns ctx with method's span, or ctx and nil when the work calling is
// not traced.
func (t *tracedClient) start(ctx context.Context, method string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, nil
	}
	attrs = append(attrs, rpcSystem, semconv.RPCMethod(method), attrNetwork.String(t.network), attrProvider.String(t.name))
	if t.host != "" {
		attrs = append(attrs, semconv.ServerAddress(t.host))
	}
	return t.tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// end records the call's outcome on span (nil: not traced) and ends it.
func end(span trace.Span, err error, attrs ...attribute.KeyValue) {
	if span == nil {
		return
	}
	defer span.End()
	if err == nil {
		span.SetAttributes(append(attrs, attrOutcome.String(outcomeOK))...)
		return
	}
	kind := rpc.KindOf(err)
	if kind == "" {
		kind = "error"
	}
	span.SetAttributes(append(attrs, attrOutcome.String(kind), semconv.ErrorTypeKey.String(kind))...)
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}

func (t *tracedClient) ChainID(ctx context.Context) (*big.Int, error) {
	ctx, span := t.start(ctx, mChainID)
	id, err := t.Client.ChainID(ctx)
	end(span, err)
	return id, err
}

func (t *tracedClient) BlockNumber(ctx context.Context) (uint64, error) {
	ctx, span := t.start(ctx, mHead)
	head, err := t.Client.BlockNumber(ctx)
	if err == nil {
		end(span, nil, attribute.Int64("chain.head_block", int64(head)))
	} else {
		end(span, err)
	}
	return head, err
}

func (t *tracedClient) BlockByNumber(ctx context.Context, number uint64) (*rpc.Block, error) {
	ctx, span := t.start(ctx, mBlock, attribute.Int64("chain.block", int64(number)))
	b, err := t.Client.BlockByNumber(ctx, number)
	end(span, err)
	return b, err
}

func (t *tracedClient) Finalized(ctx context.Context) (*rpc.Block, error) {
	ctx, span := t.start(ctx, mBlock, attribute.String("chain.block", "finalized"))
	b, err := t.Client.Finalized(ctx)
	if err == nil && b != nil {
		end(span, nil, attribute.Int64("chain.finalized_block", int64(b.Number)))
	} else {
		end(span, err)
	}
	return b, err
}

func (t *tracedClient) Logs(ctx context.Context, from, to uint64, contracts []common.Address, topic common.Hash) ([]rpc.Log, error) {
	ctx, span := t.start(ctx, mLogs, attrFromBlock.Int64(int64(from)), attrToBlock.Int64(int64(to)))
	logs, err := t.Client.Logs(ctx, from, to, contracts, topic)
	end(span, err, attribute.Int("chain.logs", len(logs)))
	return logs, err
}

// Call runs eth_call on the provider's client when it runs eth_call (Caller).
func (t *tracedClient) Call(ctx context.Context, to common.Address, data []byte, block uint64) ([]byte, error) {
	c, ok := t.Client.(Caller)
	if !ok {
		return nil, noCall()
	}
	ctx, span := t.start(ctx, mCall, attribute.Int64("chain.block", int64(block)))
	out, err := c.Call(ctx, to, data, block)
	end(span, err)
	return out, err
}

// noCall is the answer of a provider whose client does not run eth_call.
func noCall() error {
	return &rpc.Error{Kind: rpc.KindUnsupported, Method: mCall, Message: "the provider's client does not run eth_call"}
}

// Receipt reads a transaction's receipt on the provider's client when it reads
// receipts (Receipts).
func (t *tracedClient) Receipt(ctx context.Context, txHash common.Hash) (*rpc.Receipt, error) {
	c, ok := t.Client.(Receipts)
	if !ok {
		return nil, &rpc.Error{Kind: rpc.KindUnsupported, Method: mReceipt, Message: "the provider's client does not read receipts"}
	}
	ctx, span := t.start(ctx, mReceipt, attribute.String("chain.tx_hash", txHash.Hex()))
	r, err := c.Receipt(ctx, txHash)
	end(span, err)
	return r, err
}
