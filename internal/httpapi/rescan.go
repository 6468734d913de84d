package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"partnerd/gen/api"
	"partnerd/internal/chain"
	"partnerd/internal/deposits"
	"partnerd/internal/httpkit"
	"partnerd/internal/idempotency"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/ratelimit"
)

// Rescans is the budget of POST /deposits/rescan per partner, beside its key's
// writes budget: each costs calls to the chain's providers.
const Rescans ratelimit.Class = "rescans"

// RescanLimit is that budget: 10 a minute.
var RescanLimit = ratelimit.Limit{Rate: 10, Burst: 10, Period: time.Minute}

// rescanLimit applies the rescan budget per partner (every key and dashboard
// user of a partner draws on one), through the same limiter and middleware as
// the key budgets: over it, 429 rate_limited with Retry-After.
func rescanLimit(l ratelimit.Limiter, log *slog.Logger) echo.MiddlewareFunc {
	return ratelimit.Middleware(l, map[ratelimit.Class]ratelimit.Limit{Rescans: RescanLimit},
		func(echo.Context) ratelimit.Class { return Rescans },
		func(c echo.Context) string {
			if p, err := partnerFrom(c.Request().Context()); err == nil {
				return "partner:" + p.ID.String()
			}
			return ""
		}, log)
}

var (
	evmHash  = regexp.MustCompile(`^0[xX][0-9a-fA-F]{64}$`)
	tronHash = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)
)

// parseTxHash reads a chain transaction hash in network's form: 0x and 64 hex
// digits on bep20, 64 hex digits on trc20 (any case).
func parseTxHash(network, s string) (common.Hash, bool) {
	switch network {
	case chain.BEP20:
		if evmHash.MatchString(s) {
			return common.HexToHash(strings.ToLower(s[2:])), true
		}
	case chain.TRC20:
		if tronHash.MatchString(s) {
			return common.HexToHash(s), true
		}
	}
	return common.Hash{}, false
}

// rescanned is a rescan's answer with what it was asked.
type rescanned struct {
	network string
	hash    common.Hash
	found   deposits.Rescan
}

// RescanDeposit looks at one chain transaction again for transfers to the
// partner's deposit addresses (POST /deposits/rescan).
func (s *Server) RescanDeposit(ctx context.Context, req api.RescanDepositRequestObject) (api.RescanDepositResponseObject, error) {
	p, err := partnerFrom(ctx)
	if err != nil {
		return nil, err
	}
	network := req.Body.Network
	h, ok := parseTxHash(network, req.Body.TxHash)
	if !ok {
		want := "0x and 64 hex digits"
		if network == chain.TRC20 {
			want = "64 hex digits"
		}
		return nil, apperr.Field(apperr.InvalidRequest, "The transaction hash is not one of this network.", "/tx_hash", "must be "+want+" on "+network)
	}
	answer := func(r rescanned) api.RescanDepositResponseObject {
		ids := make([]uuid.UUID, 0, len(r.found.TransactionIDs))
		ids = append(ids, r.found.TransactionIDs...)
		return api.RescanDeposit200JSONResponse{Body: api.RescanResponse{Success: true, Data: api.RescanResult{
			Network: r.network, TxHash: chain.FormatHash(r.network, r.hash), Result: api.RescanResultResult(r.found.Result), TransactionIds: ids,
		}}}
	}
	key := httpkit.KeyedBy[idempotency.Keeper](ctx, s.keys, answer, api.RescanDepositResponseObject.VisitRescanDepositResponse)
	r, err := key.Apart(ctx, func(ctx context.Context) (rescanned, error) {
		if s.rescans == nil {
			return rescanned{}, apperr.New(apperr.ServiceUnavailable, "Rescans are not available on this server: no deposit watcher reads the chains here.")
		}
		found, err := s.rescans.Rescan(ctx, p.ID, network, h)
		var down *deposits.ChainUnavailableError
		switch {
		case errors.Is(err, deposits.ErrNotWatched):
			return rescanned{}, apperr.New(apperr.ServiceUnavailable,
				"Rescans are not available for "+network+" on this server: no deposit watcher reads its chain here ("+err.Error()+").")
		case errors.As(err, &down):
			s.log.WarnContext(ctx, "rescan: the chain's providers did not answer", "network", network, "tx_hash", chain.FormatHash(network, h), "error", err.Error())
			return rescanned{}, &apperr.Error{Code: apperr.ServiceUnavailable, Message: "The chain's providers cannot answer now; retry later.", RetryAfterSeconds: 5}
		case err != nil:
			return rescanned{}, err
		}
		return rescanned{network: network, hash: h, found: found}, nil
	})
	if err != nil {
		return nil, err
	}
	return answer(r), nil
}
