package paymentcases_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/gen/operatorclient"
	"partnerd/internal/testsupport/testdb"
)

// The operators' one list of money to give back: filters, the unmatched view kept
// apart, resolution once, a short task closed by the transaction's refund, and the
// simulator's amount checked.
func TestRefundTaskList(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := start(t, db, nil)
			sim := simulated{e}

			dusty, over, short := e.create("31000"), e.create("31000"), e.create("31000")
			sim.pay(dusty, "0.25")
			sim.pay(over, dec(over.CryptoAmount).Add(dec("3")).String())
			sim.confirm(over, client.TransactionStatusOrderFilled)
			d := sim.pay(short, "2")
			require.Equal(t, "partial", *d.DepositStatus)
			opTx, err := e.ops.GetOperatorTransactionWithResponse(ctx, short.Id)
			require.NoError(t, err)
			require.Equal(t, "partial", *opTx.JSON200.Data.DepositStatus, "the operator contract speaks the partner's deposit_status")
			e.event(short, client.SimulateRequestEventTransactionExpired)

			list := func(p operatorclient.ListRefundTasksParams) []operatorclient.RefundTask {
				t.Helper()
				res, err := e.ops.ListRefundTasksWithResponse(ctx, &p)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
				return res.JSON200.Data.Data
			}
			kinds := func(ts []operatorclient.RefundTask) map[operatorclient.RefundTaskKind]uuid.UUID {
				out := map[operatorclient.RefundTaskKind]uuid.UUID{}
				for _, task := range ts {
					out[task.Kind] = *task.TransactionId
				}
				return out
			}
			mine := list(operatorclient.ListRefundTasksParams{PartnerId: &e.partner})
			require.Equal(t, map[operatorclient.RefundTaskKind]uuid.UUID{
				operatorclient.Dust: dusty.Id, operatorclient.Excess: over.Id, operatorclient.Short: short.Id,
			}, kinds(mine))
			for _, task := range mine {
				require.Equal(t, e.partner, *task.PartnerId)
				require.Equal(t, network, task.Network)
				require.Equal(t, operatorclient.UnmatchedDepositStatusOpen, task.Status)
			}
			dust := list(operatorclient.ListRefundTasksParams{PartnerId: &e.partner, Kind: ptr(operatorclient.Dust)})
			require.Len(t, dust, 1)
			require.Equal(t, "0.250000", dust[0].Amount)
			require.Empty(t, list(operatorclient.ListRefundTasksParams{PartnerId: &e.partner, Network: ptr("trc20")}))
			require.Empty(t, list(operatorclient.ListRefundTasksParams{PartnerId: ptr(uuid.New())}))

			// The unmatched view shows unmatched transfers only, and resolves only them.
			un, err := e.ops.ListUnmatchedDepositsWithResponse(ctx, &operatorclient.ListUnmatchedDepositsParams{})
			require.NoError(t, err)
			for _, u := range un.JSON200.Data.Data {
				for _, task := range mine {
					require.NotEqual(t, task.Id, u.Id)
				}
			}
			note := "kept as a tip, per the merchant"
			wrongView, err := e.ops.ResolveUnmatchedDepositWithResponse(ctx, dust[0].Id, &operatorclient.ResolveUnmatchedDepositParams{IdempotencyKey: uuid.NewString()},
				operatorclient.ResolveRequest{Action: operatorclient.ResolveRequestActionCredited, Note: &note})
			require.NoError(t, err)
			require.Equal(t, http.StatusNotFound, wrongView.StatusCode(), string(wrongView.Body))

			// Resolution: a credit needs its note; then it is done, by this operator.
			resolve := func(req operatorclient.ResolveRequest) *operatorclient.ResolveRefundTaskResponse {
				res, err := e.ops.ResolveRefundTaskWithResponse(ctx, dust[0].Id, &operatorclient.ResolveRefundTaskParams{IdempotencyKey: uuid.NewString()}, req)
				require.NoError(t, err)
				return res
			}
			require.Equal(t, http.StatusBadRequest, resolve(operatorclient.ResolveRequest{Action: operatorclient.ResolveRequestActionCredited}).StatusCode())
			res := resolve(operatorclient.ResolveRequest{Action: operatorclient.ResolveRequestActionCredited, Note: &note})
			require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
			require.Equal(t, operatorclient.UnmatchedDepositStatusCredited, res.JSON200.Data.Status)
			resolved := list(operatorclient.ListRefundTasksParams{PartnerId: &e.partner, Status: ptr(operatorclient.ListRefundTasksParamsStatusResolved)})
			require.Len(t, resolved, 1)
			require.Equal(t, dust[0].Id, resolved[0].Id)
			require.Equal(t, note, *resolved[0].ResolutionNote)
			require.NotNil(t, resolved[0].ResolvedBy)
			// The resolution is in the audit log, in its unit of work.
			log, err := e.ops.ListAuditWithResponse(ctx, &operatorclient.ListAuditParams{Action: ptr(operatorclient.AuditAction("resolve_credited"))})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, log.StatusCode(), string(log.Body))
			var logged int
			for _, en := range log.JSON200.Data.Data {
				if en.UnmatchedDepositId != nil && *en.UnmatchedDepositId == dust[0].Id {
					logged++
					require.Equal(t, *resolved[0].ResolvedBy, en.OperatorId)
				}
			}
			require.Equal(t, 1, logged, "one audit entry for the resolution")

			// Refunding the short transaction closes its short task with the refund's hash.
			hash := operatorclient.ChainHash("0x" + strings.Repeat("ab", 32))
			ref, err := e.ops.RefundTransactionWithResponse(ctx, short.Id, &operatorclient.RefundTransactionParams{IdempotencyKey: uuid.NewString()},
				operatorclient.RefundRequest{TxHash: hash})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, ref.StatusCode(), string(ref.Body))
			closed := list(operatorclient.ListRefundTasksParams{PartnerId: &e.partner, Status: ptr(operatorclient.ListRefundTasksParamsStatusResolved), Kind: ptr(operatorclient.Short)})
			require.Len(t, closed, 1)
			require.Equal(t, operatorclient.UnmatchedDepositStatusRefunded, closed[0].Status)
			require.Equal(t, hash, *closed[0].ResolutionTxHash)

			// Bad filters and bad simulated amounts are 400s.
			bad, err := e.ops.ListRefundTasksWithResponse(ctx, &operatorclient.ListRefundTasksParams{Kind: ptr(operatorclient.RefundTaskKind("gift"))})
			require.NoError(t, err)
			require.Equal(t, http.StatusBadRequest, bad.StatusCode())
			for _, amount := range []string{"0", "1.1234567", "-1", "abc"} {
				res := e.simulate(client.SimulateRequest{Event: client.SimulateRequestEventDepositDetected, TransactionId: dusty.Id, Amount: ptr(amount)})
				require.Equal(t, http.StatusBadRequest, res.StatusCode(), "%s: %s", amount, res.Body)
			}
		})
	}
}

// A short transaction topped up within the late window: a transfer that leaves it
// short keeps it expired (its short task now covers the new total); the one that
// completes it re-opens it and closes the task.
func TestLateTopUp(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			e := start(t, db, nil)
			sim := simulated{e}
			tx := e.create("31000")
			sim.pay(tx, "2")
			e.event(tx, client.SimulateRequestEventTransactionExpired) // the late window runs from expires_at, still ahead

			d := sim.pay(tx, "3")
			require.Equal(t, client.TransactionStatusExpired, d.Status)
			require.Equal(t, "underpaid", *d.DepositStatus)
			require.Equal(t, "5.000000", *d.DepositAmount)
			short := e.tasks(operatorclient.Short, tx.Id)
			require.Len(t, short, 1, "one open short task, for the whole total")
			require.Equal(t, "5.000000", short[0].Amount)
			require.Equal(t, d.Deposits[1].TxHash, short[0].TxHash)

			d = sim.pay(tx, dec(tx.CryptoAmount).Sub(dec("5")).String())
			require.Equal(t, client.TransactionStatusDepositConfirming, d.Status)
			require.Empty(t, e.tasks(operatorclient.Short, tx.Id), "paid in full: the short task is closed")
			sim.confirm(tx, client.TransactionStatusOrderFilled)
			require.Equal(t, story{
				Reasons: []string{"transaction:created", "deposit:partial", "system:expired", "deposit:partial", "deposit:detected", "deposit:confirmed", "order:filled"},
				Events:  []string{"transaction.created", "deposit.detected", "transaction.expired", "deposit.detected", "deposit.detected", "deposit.confirmed"},
			}, e.story(tx.Id))
		})
	}
}

// The operators' overview shows how far the chain watcher has read: the node's
// head as the watcher last saw it, the scanned block and the lag between them.
func TestOverviewShowsTheWatcher(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := start(t, db, nil)
			onChain{e}.pay(e.create("31000"), "1") // mines a block and waits until it is scanned
			// The scanning instance stores its reading at most once a second.
			var bep20 *operatorclient.NetworkProgress
			require.Eventually(t, func() bool {
				res, err := e.ops.GetOverviewWithResponse(ctx)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
				bep20 = nil
				for i, n := range res.JSON200.Data.Networks {
					if n.Network == network {
						bep20 = &res.JSON200.Data.Networks[i]
					}
				}
				require.NotNil(t, bep20, "the watched network is listed")
				// The reading is stored at most once a second, the cursor with each
				// batch: the stored head may trail the cursor until the next write.
				return bep20.HeadBlock != nil && bep20.ScannedBlock != nil && *bep20.HeadBlock >= *bep20.ScannedBlock
			}, 10*time.Second, 50*time.Millisecond, "the head the watcher read is stored")
			require.NotNil(t, bep20.ScannedBlock)
			require.GreaterOrEqual(t, *bep20.HeadBlock, *bep20.ScannedBlock)
			require.NotNil(t, bep20.Lag)
			require.Equal(t, *bep20.HeadBlock-*bep20.ScannedBlock, *bep20.Lag)
		})
	}
}
