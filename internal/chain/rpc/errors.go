package rpc

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Kinds of failure, the label of partnerd_chain_rpc_errors_total{network,kind}.
const (
	// KindRange: the provider refused eth_getLogs for its block range.
	KindRange = "range"
	// KindResults: the provider refused eth_getLogs for the number of logs.
	KindResults = "results"
	// KindRateLimit: HTTP 429, -32005 or "limit exceeded": back off, never a range error.
	KindRateLimit = "rate_limit"
	// KindRefused: the node does not serve the method at all.
	KindRefused = "refused"
	// KindNotReady: the node cannot answer yet ("finalized block not found" while
	// it starts, "header not found" behind its head): transient, retried.
	KindNotReady = "not_ready"
	// KindUnsupported: the node does not answer the "finalized" block tag.
	KindUnsupported = "unsupported"
	// KindTimeout: no answer within CHAIN_RPC_TIMEOUT.
	KindTimeout = "timeout"
	// KindTransport: the connection failed.
	KindTransport = "transport"
	// KindHTTP: an HTTP status other than 200 (and 429).
	KindHTTP = "http"
	// KindDecode: an answer the client cannot read.
	KindDecode = "decode"
	// KindRPC: any other JSON-RPC error.
	KindRPC = "rpc"
)

// Error is a failed call. Message is the node's own answer.
type Error struct {
	Kind    string
	Method  string
	Status  int // HTTP status, when not 200
	Code    int // JSON-RPC error code, when the node sent one
	Message string
	// RetryAfter is the node's Retry-After, when it sent one.
	RetryAfter time.Duration
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

// RetryAfterOf returns the Retry-After an error carried (0 when none).
func RetryAfterOf(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}

// The places a cap's number appears in the nodes' and providers' messages.
var limitPatterns = []*regexp.Regexp{
	regexp.MustCompile(`more than (\d+) (?:results|logs)`),                  // geth forks, java-tron, Infura
	regexp.MustCompile(`block range(?: limit)?(?: is)?(?: of)?:? \(?(\d+)`), // "exceed max block range: 5000"
	regexp.MustCompile(`up to an? (\d+) block range`),                       // Alchemy
	regexp.MustCompile(`(?:maximum|max|limit)(?: is| of)?:? (\d+)`),
}

// LimitOf returns the cap a range or result error names ("exceed max block range:
// 5000", "query returned more than 10000 results"), or 0 when it names none.
func LimitOf(err error) uint64 {
	var e *Error
	if !errors.As(err, &e) || (e.Kind != KindRange && e.Kind != KindResults) {
		return 0
	}
	m := strings.ToLower(e.Message)
	for _, re := range limitPatterns {
		if g := re.FindStringSubmatch(m); g != nil {
			if n, err := strconv.ParseUint(g[1], 10, 64); err == nil && n > 1 {
				return n
			}
		}
	}
	return 0
}
