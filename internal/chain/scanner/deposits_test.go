package scanner_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/gen/operatorclient"
	"partnerd/internal/chain"
	"partnerd/internal/deposits"
	"partnerd/internal/testsupport/testdb"
)

// TestDepositsOnChain runs the deposit rules against a real node: detection and
// rising confirmations, confirmation exactly at the threshold, 18-decimal amounts,
// overpayment, underpayment (partial), a second transfer (unmatched), other
// contracts and unknown addresses (ignored).
func TestDepositsOnChain(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, db, chain.BEP20, 18, nil)
			ctx := context.Background()
			exact, over, under, other := r.create("15500"), r.create("31000"), r.create("15500"), r.create("15500")
			otherToken, err := r.chain.Deploy(ctx, 18) // its own block
			require.NoError(t, err)

			// Exact, with 18-decimal dust below the 6th decimal: credited rounded down.
			amount, err := decimal.NewFromString(exact.CryptoAmount)
			require.NoError(t, err)
			units := amount.Shift(18).Add(decimal.RequireFromString("999999999999")).BigInt()
			to, err := chain.ParseAddress(chain.BEP20, exact.DepositAddress)
			require.NoError(t, err)
			hash := r.sendRaw(r.token, to, units)
			r.send(r.token, over.DepositAddress, decimal.RequireFromString(over.CryptoAmount).Add(decimal.RequireFromString("1.5")).String())
			r.send(r.token, under.DepositAddress, decimal.RequireFromString(under.CryptoAmount).Sub(decimal.RequireFromString("0.000001")).String())
			// Another contract paying other's address, and our token paying an address we never issued.
			r.send(otherToken, other.DepositAddress, other.CryptoAmount)
			r.sendRaw(r.token, common.HexToAddress("0x00000000000000000000000000000000000000aa"), units)
			// A zero transfer and dust below 0.000001 to an open transaction: no payment.
			otherAddr, err := chain.ParseAddress(chain.BEP20, other.DepositAddress)
			require.NoError(t, err)
			r.sendRaw(r.token, otherAddr, decimal.Zero.BigInt())
			r.sendRaw(r.token, otherAddr, decimal.RequireFromString("999999999999").BigInt())
			block := r.chain.Backend.Commit()

			d := r.waitFor(exact.Id, "detection", status(client.TransactionStatusDepositConfirming))
			require.Equal(t, 1, *d.Confirmations)
			require.Equal(t, required, *d.RequiredConfirmations)
			require.Equal(t, "confirming", *d.DepositStatus)
			require.Equal(t, exact.CryptoAmount, *d.DepositAmount, "18-decimal amount rounded down to 6 decimals, exactly")
			require.Equal(t, hash.Hex(), *d.DepositTxHash)
			hdr, err := r.chain.Backend.Client().HeaderByHash(ctx, block)
			require.NoError(t, err)
			require.Equal(t, int64(hdr.Time), d.ReceivedAt.Unix(), "received_at is the block's time")
			require.Nil(t, d.ConfirmedAt)
			firstID := *d.DepositId

			// Confirmations rise with each block and confirm exactly at the threshold.
			for n := 2; n < required; n++ {
				r.chain.Backend.Commit()
				d = r.waitFor(exact.Id, "confirmations", confirmations(n))
				require.Equal(t, client.TransactionStatusDepositConfirming, d.Status)
			}
			r.scanned()
			require.Equal(t, client.TransactionStatusDepositConfirming, r.get(exact.Id).Status, "one block short of the threshold")
			r.chain.Backend.Commit()
			d = r.waitFor(exact.Id, "confirmation", status(client.TransactionStatusOrderFilled))
			require.Equal(t, required, *d.Confirmations)
			require.Equal(t, "confirmed", *d.DepositStatus)
			require.Equal(t, firstID, *d.DepositId)
			require.Equal(t, []string{"transaction:created", "deposit:detected", "deposit:confirmed", "order:filled"}, r.reasons(exact.Id))
			require.Nil(t, meta(r.history(exact.Id), "deposit:confirmed")["excess"])

			// Overpaid: proceeds, the excess recorded.
			d = r.waitFor(over.Id, "confirmation", status(client.TransactionStatusOrderFilled))
			require.Equal(t, "1.5", meta(r.history(over.Id), "deposit:confirmed")["excess"])

			// Short: a partial payment, waiting for the rest (confirmed transfers included).
			d = r.get(under.Id)
			require.Equal(t, client.TransactionStatusAwaitingDeposit, d.Status)
			require.Equal(t, "partial", *d.DepositStatus)
			require.Equal(t, []string{"transaction:created", "deposit:partial"}, r.reasons(under.Id))
			require.Equal(t, "0.000001", meta(r.history(under.Id), "deposit:partial")["shortfall"])
			types := eventTypes(t, r, under.Id)
			require.Equal(t, []string{"transaction.created", "deposit.detected"}, types)

			// Other contracts, unknown addresses, zero and dust: ignored.
			require.Equal(t, client.TransactionStatusAwaitingDeposit, r.get(other.Id).Status)
			require.Len(t, r.transfers(false), 3)

			// A second transfer to a paid address: unmatched, the transaction unchanged.
			second := r.send(r.token, exact.DepositAddress, "5")
			r.chain.Backend.Commit()
			r.scanned()
			un := r.transfers(true)
			require.Len(t, un, 1)
			require.Equal(t, second.Hex(), un[0].TxHash)
			require.Equal(t, deposits.TransferUnmatched, un[0].State)
			require.Equal(t, exact.Id, *un[0].TransactionID)
			require.Equal(t, "5", un[0].Amount.String())
			require.Equal(t, client.TransactionStatusOrderFilled, r.get(exact.Id).Status)
			require.Len(t, r.history(exact.Id), 4)

			// The operators see it through their API, and refund it once.
			ops := r.env.OperatorClient(t, r.env.NewOperator(t))
			list, err := ops.ListUnmatchedDepositsWithResponse(ctx, &operatorclient.ListUnmatchedDepositsParams{})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, list.StatusCode(), string(list.Body))
			require.Len(t, list.JSON200.Data.Data, 1)
			got := list.JSON200.Data.Data[0]
			require.Equal(t, second.Hex(), got.TxHash)
			require.Equal(t, "5.000000", got.Amount)
			require.Equal(t, exact.Id, *got.TransactionId)
			refund := operatorclient.ChainHash("0x" + strings.Repeat("cd", 32))
			res, err := ops.ResolveUnmatchedDepositWithResponse(ctx, got.Id,
				&operatorclient.ResolveUnmatchedDepositParams{IdempotencyKey: uuid.NewString()},
				operatorclient.ResolveRequest{Action: operatorclient.ResolveRequestActionRefunded, TxHash: &refund})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
			list, err = ops.ListUnmatchedDepositsWithResponse(ctx, &operatorclient.ListUnmatchedDepositsParams{})
			require.NoError(t, err)
			require.Empty(t, list.JSON200.Data.Data, "resolved: no longer open")
		})
	}
}

func eventTypes(t *testing.T, r *rig, id uuid.UUID) []string {
	t.Helper()
	return r.env.EventTypes(t, id)
}
