package paymentcases_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/chain"
	"partnerd/internal/chain/devnet"
	"partnerd/internal/testsupport/testdb"
)

func (e *env) rescan(c *client.ClientWithResponses, net, hash string) *client.RescanDepositResponse {
	e.t.Helper()
	res, err := c.RescanDepositWithResponse(context.Background(), &client.RescanDepositParams{}, client.RescanRequest{Network: net, TxHash: hash})
	require.NoError(e.t, err)
	return res
}

// rescanned asks for a rescan and returns its result, which must be a 200.
func (e *env) rescanned(c *client.ClientWithResponses, hash string) client.RescanResult {
	e.t.Helper()
	res := e.rescan(c, network, hash)
	require.Equal(e.t, http.StatusOK, res.StatusCode(), string(res.Body))
	return res.JSON200.Data
}

// payHidden sends amount tokens to a deposit address in a transaction whose logs
// the provider leaves out of eth_getLogs (the watcher never sees it), mines it,
// waits until the watcher has scanned past it, and returns its hash.
func (e *env) payHidden(tx client.Transaction, amount string) common.Hash {
	e.t.Helper()
	to, err := chain.ParseAddress(network, tx.DepositAddress)
	require.NoError(e.t, err)
	raw, err := devnet.Units(amount, decimals)
	require.NoError(e.t, err)
	h, err := e.chain.Transfer(context.Background(), e.token, to, raw)
	require.NoError(e.t, err)
	e.chain.Proxy.HideLogs(h)
	e.chain.Backend.Commit()
	e.scanned()
	return h
}

// A deposit the watcher missed (its provider lost the transfer's log) is found by
// POST /deposits/rescan once deep enough, and the transaction proceeds as if the
// watcher had seen it; asked again, it is known; another partner's payment, an
// unknown hash and a malformed one are told apart; the eleventh rescan in a
// minute is refused.
func TestRescanFindsAMissedDeposit(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			e := start(t, db, nil)
			key := e.api.NewPartner(t)
			checked := e.api.Client(t, key)
			e.c, e.partner = checked, e.api.PartnerID(t, key)
			tx := e.create("31000")
			h := e.payHidden(tx, tx.CryptoAmount)
			require.Equal(t, client.TransactionStatusAwaitingDeposit, e.get(tx.Id).Status, "the watcher missed the transfer")

			// One confirmation of the three required: not believed yet.
			r := e.rescanned(checked, h.Hex())
			require.Equal(t, client.RescanResultResultNotFinal, r.Result)
			require.Empty(t, r.TransactionIds)
			for range required - 1 {
				e.chain.Backend.Commit()
			}
			e.scanned()

			// Upper-case hex is read; the answer is the canonical form.
			r = e.rescanned(checked, "0x"+strings.ToUpper(h.Hex()[2:]))
			require.Equal(t, client.RescanResultResultCredited, r.Result)
			require.Equal(t, h.Hex(), r.TxHash)
			require.Equal(t, client.Network(network), r.Network)
			require.Equal(t, []uuid.UUID{tx.Id}, r.TransactionIds)
			d := e.get(tx.Id)
			require.Len(t, d.Deposits, 1)
			require.Equal(t, h.Hex(), d.Deposits[0].TxHash)

			// The watcher takes it from there: confirmations, then the order.
			e.chain.Backend.Commit()
			e.waitFor(tx.Id, client.TransactionStatusOrderFilled)
			require.Equal(t, story{
				Reasons: []string{"transaction:created", "deposit:detected", "deposit:confirmed", "order:filled"},
				Events:  []string{"transaction.created", "deposit.detected", "deposit.confirmed"},
			}, e.story(tx.Id))

			r = e.rescanned(checked, h.Hex())
			require.Equal(t, client.RescanResultResultAlreadyRecorded, r.Result)
			require.Equal(t, []uuid.UUID{tx.Id}, r.TransactionIds)

			// Another partner's deposit address is not ours, and nothing is
			// recorded for that partner either.
			otherKey := e.api.NewPartner(t)
			other := e.api.Client(t, otherKey)
			otherChecked := other
			res, err := other.CreateTransactionWithResponse(context.Background(), &client.CreateTransactionParams{IdempotencyKey: uuid.NewString()},
				client.CreateTransactionRequest{MerchantReference: "PAY-" + uuid.NewString(), CryptoCurrency: "usdt", Network: network, FiatAmount: ptr("31000")})
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))
			theirs := res.JSON201.Data
			h2 := e.payHidden(theirs, theirs.CryptoAmount)
			for range required {
				e.chain.Backend.Commit()
			}
			r = e.rescanned(checked, h2.Hex())
			require.Equal(t, client.RescanResultResultNotOurs, r.Result)
			require.Empty(t, r.TransactionIds)
			got, err := other.GetTransactionWithResponse(context.Background(), theirs.Id)
			require.NoError(t, err)
			require.Equal(t, client.TransactionStatusAwaitingDeposit, got.JSON200.Data.Status)
			require.Empty(t, got.JSON200.Data.Deposits)

			r = e.rescanned(checked, common.BytesToHash(uuid.New().NodeID()).Hex())
			require.Equal(t, client.RescanResultResultNotFound, r.Result)
			require.Empty(t, r.TransactionIds)

			// Malformed hashes: 400 on /tx_hash.
			for _, bad := range []struct{ net, hash string }{
				{network, "0x1234"}, {network, strings.TrimPrefix(h.Hex(), "0x")}, {chain.TRC20, h.Hex()}, {network, "0x" + strings.Repeat("g", 64)},
			} {
				res := e.rescan(checked, bad.net, bad.hash)
				require.Equal(t, http.StatusBadRequest, res.StatusCode(), string(res.Body))
				require.Equal(t, "invalid_request", string(res.JSON400.Error.Code))
				require.Equal(t, "/tx_hash", res.JSON400.Error.Details[0].Field)
			}

			// Ten rescans a minute per partner: a fresh partner's eleventh is refused.
			fresh := e.api.Client(t, e.api.NewPartner(t))
			for i := range 10 {
				res := e.rescan(fresh, network, "0x1")
				require.Equal(t, http.StatusBadRequest, res.StatusCode(), "rescan %d: %s", i+1, res.Body)
			}
			res429 := e.rescan(fresh, network, h.Hex())
			require.Equal(t, http.StatusTooManyRequests, res429.StatusCode(), string(res429.Body))
			require.Equal(t, "rate_limited", string(res429.JSON429.Error.Code))
			require.NotEmpty(t, res429.HTTPResponse.Header.Get("Retry-After"))
			// Another partner's budget is its own.
			require.Equal(t, http.StatusOK, e.rescan(otherChecked, network, h.Hex()).StatusCode())
		})
	}
}
