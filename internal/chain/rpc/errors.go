package rpc

import (
	"errors"
	"fmt"
	"time"
)

// Kinds of failure, the label of partnerd_chain_rpc_errors_total{network,kind}.
const (
	// KindRange: the provider refused eth_getLogs for its block range.
	KindRange = "range"
	// KindResults: the provider refused eth_getLogs for the number of logs or the
	// size of the answer.
	KindResults = "results"
	// KindRateLimit: HTTP 429, -32005, "limit exceeded", TronGrid's "frequency limit":
	// back off (RetryAfterOf says how long when the provider named it), never a cap.
	KindRateLimit = "rate_limit"
	// KindRefused: the node does not serve the method at all.
	KindRefused = "refused"
	// KindNotReady: the node cannot answer yet ("finalized block not found" while
	// it starts, "header not found" behind its head): transient, retried.
	KindNotReady = "not_ready"
	// KindBehind: a successful answer that is wrong because the node (or the
	// backend a load balancer chose) is behind or syncing: a head below the head
	// it reported before by more than the reorganisation depth, or 0, or an
	// eth_syncing that says so. Transient: not a rewind of the chain.
	KindBehind = "behind"
	// KindMissingBlock: a null block at or below a head the same provider
	// reported: a backend behind, never a reorganisation.
	KindMissingBlock = "missing_block"
	// KindMissingLogs: an eth_getLogs answer without logs that a block's header
	// (its logsBloom) or a later answer contradicts: a backend that had not
	// reached the blocks asked for.
	KindMissingLogs = "missing_logs"
	// KindUnsupported: the node does not answer the "finalized" block tag.
	KindUnsupported = "unsupported"
	// KindReverted: an eth_call's contract reverted: about the call (a wrong
	// contract, wrong arguments), not the node, so no other provider is asked.
	KindReverted = "reverted"
	// KindTimeout: no answer within CHAIN_RPC_TIMEOUT.
	KindTimeout = "timeout"
	// KindTransport: the connection failed.
	KindTransport = "transport"
	// KindHTTP: an HTTP status other than 2xx the body does not explain.
	KindHTTP = "http"
	// KindDecode: a 2xx answer that is neither JSON-RPC nor an error body.
	KindDecode = "decode"
	// KindRPC: any other JSON-RPC error.
	KindRPC = "rpc"
	// KindOperator: the provider will not serve the watcher until a person acts: a
	// bad, revoked or missing key, an exhausted monthly quota or plan, a retired
	// endpoint, a method or history outside the plan. Waiting does not help, so the
	// provider leaves the rotation and the operator is told (an ERROR, the
	// provider's state); it is tried again now and then, since a plan may be renewed.
	KindOperator = "operator"
)

// Error is a failed call. Message is the node's own answer.
type Error struct {
	Kind    string
	Method  string
	Status  int // HTTP status, when not 200
	Code    int // JSON-RPC error code, when the node sent one
	Message string
	// RetryAfter is the wait the provider asked for (Retry-After and the like, or a
	// hint in the body: Infura's backoff_seconds, TronGrid's "suspended for 30s").
	RetryAfter time.Duration
	// Cap is the cap a range or result refusal names (0: none named).
	Cap uint64
}

func (e *Error) Error() string {
	s := e.Method + ": " + e.Kind
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Code != 0 {
		s += fmt.Sprintf(" (code %d)", e.Code)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// KindOf returns err's kind ("" when err is not an *Error).
func KindOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

// NotReady reports whether kind says the node cannot answer yet: it said so
// (KindNotReady), or its successful answer showed it (KindBehind,
// KindMissingBlock, KindMissingLogs). Another provider may answer, and the same
// one is asked again after a poll interval, without a growing backoff.
func NotReady(kind string) bool {
	switch kind {
	case KindNotReady, KindBehind, KindMissingBlock, KindMissingLogs:
		return true
	}
	return false
}

// RetryAfterOf returns the wait an error asked for (0 when none).
func RetryAfterOf(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}

// LimitOf returns the cap a range or result error names ("exceed max block range:
// 5000", "query returned more than 10000 results", a cap in error.data), or 0 when
// it names none.
func LimitOf(err error) uint64 {
	var e *Error
	if errors.As(err, &e) {
		return e.Cap
	}
	return 0
}

// KindSubscriptions: the provider refused a subscription for the number already
// open on the connection ("too many subscriptions on this connection"). No wait
// on the same connection ends it: the connection is dropped and dialled anew.
const KindSubscriptions = "subscriptions"
