package paymentcases_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/gen/operatorclient"
	"partnerd/internal/testsupport/testdb"
)

// An expired short transaction's transfers reorganised away: its open short task
// follows what still counts (the smaller total), and goes with the last transfer.
func TestReorgOfAnExpiredShortPayment(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := start(t, db, nil)
			p := onChain{e}

			// Two transfers, the second reorganised away: the task covers the first.
			two := e.create("31000")
			p.pay(two, "1")
			parent, err := e.chain.Backend.Client().HeaderByNumber(ctx, nil)
			require.NoError(t, err)
			p.pay(two, "2")
			e.event(two, client.SimulateRequestEventTransactionExpired)
			short := e.tasks(operatorclient.Short, two.Id)
			require.Len(t, short, 1)
			require.Equal(t, "3.000000", short[0].Amount)
			_, err = e.chain.Replace(ctx, parent.Hash())
			require.NoError(t, err)
			// The reorganisation is read block by block, each in its own unit of
			// work: wait for the state it ends in, then check all of it.
			require.Eventually(t, func() bool {
				d := e.get(two.Id)
				return d.DepositAmount != nil && *d.DepositAmount == "1.000000" && d.DepositStatus != nil && *d.DepositStatus == "underpaid"
			}, 20*time.Second, 50*time.Millisecond)
			d := e.get(two.Id)
			require.Equal(t, client.TransactionStatusExpired, d.Status)
			require.Equal(t, "underpaid", *d.DepositStatus)
			short = e.tasks(operatorclient.Short, two.Id)
			require.Len(t, short, 1, "one open short task, for what still counts")
			require.Equal(t, "1.000000", short[0].Amount)
			require.Equal(t, d.Deposits[0].TxHash, short[0].TxHash)

			// The only transfer reorganised away: nothing arrived, nothing to refund.
			one := e.create("31000")
			parent, err = e.chain.Backend.Client().HeaderByNumber(ctx, nil)
			require.NoError(t, err)
			p.pay(one, "2")
			e.event(one, client.SimulateRequestEventTransactionExpired)
			require.Len(t, e.tasks(operatorclient.Short, one.Id), 1)
			_, err = e.chain.Replace(ctx, parent.Hash())
			require.NoError(t, err)
			require.Eventually(t, func() bool { return e.get(one.Id).DepositAmount == nil }, 20*time.Second, 50*time.Millisecond)
			require.Equal(t, client.TransactionStatusExpired, e.get(one.Id).Status)
			require.Empty(t, e.tasks(operatorclient.Short, one.Id), "no short task without money")
		})
	}
}

// A late transfer completed a short payment (its short task closed) and is then
// reorganised away: the transaction is short again and the short task, recorded
// under the same transfer as the closed one, is open again for the total.
func TestReorgOfALateCompletion(t *testing.T) {
	t.Parallel()
	late := map[string]string{"DEPOSIT_WINDOW": "1s", "EXPIRY_SWEEP_INTERVAL": "100ms", "LATE_PAYMENT_WINDOW": "10m"}
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := start(t, db, late)
			p := onChain{e}
			tx := e.create("31000")
			e.waitFor(tx.Id, client.TransactionStatusExpired)
			d := p.pay(tx, "2")
			require.Equal(t, client.TransactionStatusExpired, d.Status)
			first := e.tasks(operatorclient.Short, tx.Id)
			require.Len(t, first, 1)
			parent, err := e.chain.Backend.Client().HeaderByNumber(ctx, nil)
			require.NoError(t, err)
			d = p.pay(tx, dec(tx.CryptoAmount).Sub(dec("2")).String())
			require.Equal(t, client.TransactionStatusDepositConfirming, d.Status)
			require.Empty(t, e.tasks(operatorclient.Short, tx.Id))

			_, err = e.chain.Replace(ctx, parent.Hash())
			require.NoError(t, err)
			d = e.waitFor(tx.Id, client.TransactionStatusExpired)
			require.Equal(t, "underpaid", *d.DepositStatus)
			require.Equal(t, "2.000000", *d.DepositAmount)
			short := e.tasks(operatorclient.Short, tx.Id)
			require.Len(t, short, 1, "the money is on the operators' list again")
			require.Equal(t, "2.000000", short[0].Amount)
			require.Equal(t, first[0].Id, short[0].Id, "the closed task, re-opened")
			require.Nil(t, short[0].ResolvedAt)
		})
	}
}

// The late window is measured by the transfer's block time, not by when the
// service processes it: a transfer mined after the window is kept for refund even
// when it is read within it.
func TestLateWindowByBlockTime(t *testing.T) {
	t.Parallel()
	late := map[string]string{"DEPOSIT_WINDOW": "1s", "EXPIRY_SWEEP_INTERVAL": "100ms", "LATE_PAYMENT_WINDOW": "10m"}
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			e := start(t, db, late)
			p := onChain{e}
			tx := e.create("31000")
			e.waitFor(tx.Id, client.TransactionStatusExpired)
			require.NoError(t, e.chain.Backend.AdjustTime(time.Hour)) // the next blocks are an hour ahead
			d := p.pay(tx, tx.CryptoAmount)
			require.Equal(t, client.TransactionStatusExpired, d.Status)
			require.Nil(t, d.DepositStatus)
			un := e.tasks(operatorclient.Unmatched, tx.Id)
			require.Len(t, un, 1, "mined after the late window: kept for refund")
			require.Equal(t, dec(tx.CryptoAmount).StringFixed(6), un[0].Amount)
		})
	}
}
