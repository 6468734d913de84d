package scanner_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/gen/operatorclient"
	"partnerd/internal/chain"
	"partnerd/internal/chain/devnet"
	"partnerd/internal/deposits"
	"partnerd/internal/testsupport/testdb"
)

// TestReorgBeforeConfirmation: the block holding a detected deposit is
// reorganised away (the backend's Fork); the detection is undone and nothing
// confirms on the dropped block. On both dialects: BNB Smart Chain's hashes, and
// java-tron's BlockIds (the reorg is noticed by the hashes the node reports).
func TestReorgBeforeConfirmation(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		for _, network := range []string{chain.BEP20, chain.TRC20} {
			t.Run(db.Name+"/"+network, func(t *testing.T) {
				t.Parallel()
				decimals := uint8(18)
				if network == chain.TRC20 {
					decimals = 6
				}
				r := newRig(t, db, network, decimals, nil)
				ctx := context.Background()
				tx := r.create("15500")
				parent, err := r.chain.Backend.Client().HeaderByNumber(ctx, nil)
				require.NoError(t, err)
				r.send(r.token, tx.DepositAddress, tx.CryptoAmount)
				droppedGeth := r.chain.Backend.Commit()
				droppedHdr, err := r.chain.Backend.Client().HeaderByHash(ctx, droppedGeth)
				require.NoError(t, err)
				dropped := droppedGeth
				if network == chain.TRC20 {
					dropped = devnet.BlockID(droppedHdr)
				}
				d := r.waitFor(tx.Id, "detection", status(client.TransactionStatusDepositConfirming))
				depositID := *d.DepositId

				// The block is replaced: another block at its height. (A chain only
				// shorter for a moment proves nothing: a node behind answers so too, so
				// the deposit waits for a block actually returned.)
				require.NoError(t, r.chain.Backend.Fork(parent.Hash()))
				r.chain.Backend.Commit()
				require.Eventually(t, func() bool { return slices.Contains(r.reasons(tx.Id), "deposit:reorged") }, 20*time.Second, 20*time.Millisecond, "the reorg")
				require.Equal(t, []string{"transaction:created", "deposit:detected", "deposit:reorged"}, r.reasons(tx.Id)[:3])
				require.Equal(t, depositID, meta(r.history(tx.Id), "deposit:reorged")["deposit_id"])

				// The new branch grows past the threshold. The node returns the dropped
				// transfer to its pool, so it reappears in a later block: detected again
				// with the same deposit id, and confirmed there, never on the dropped block.
				for i := 0; i < required+1; i++ {
					r.chain.Backend.Commit()
				}
				r.scanned()
				d = r.get(tx.Id)
				all := r.transfers(false)
				require.Len(t, all, 1)
				require.NotEqual(t, dropped.Hex(), all[0].BlockHash, "never confirmed on the dropped block")
				if d.Status == client.TransactionStatusAwaitingDeposit {
					require.Equal(t, deposits.TransferReorged, all[0].State)
					return
				}
				d = r.waitFor(tx.Id, "confirmation on the new branch", status(client.TransactionStatusOrderFilled))
				require.Equal(t, depositID, *d.DepositId)
				require.Equal(t, deposits.TransferConfirmed, r.transfers(false)[0].State)
				require.Equal(t, []string{"transaction:created", "deposit:detected", "deposit:reorged", "deposit:detected", "deposit:confirmed", "order:filled"}, r.reasons(tx.Id))
			})
		}
	}
}

// TestUnmatchedReorg: a transfer kept as unmatched is re-checked against the
// canonical chain until it is final. Its block reorganised away, it leaves the
// operators' list (nothing arrived, nothing to refund); it is never kept on the
// dropped block, and is recorded again where it reappears.
func TestUnmatchedReorg(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, db, chain.BEP20, 18, nil)
			ctx := context.Background()
			tx := r.create("15500")
			r.send(r.token, tx.DepositAddress, tx.CryptoAmount)
			r.chain.Backend.Commit()
			r.waitFor(tx.Id, "detection", status(client.TransactionStatusDepositConfirming))
			parent, err := r.chain.Backend.Client().HeaderByNumber(ctx, nil)
			require.NoError(t, err)

			second := r.send(r.token, tx.DepositAddress, "5")
			dropped := r.chain.Backend.Commit()
			r.scanned()
			ops := r.env.OperatorClient(t, r.env.NewOperator(t))
			open := func() []operatorclient.UnmatchedDeposit {
				res, err := ops.ListUnmatchedDepositsWithResponse(ctx, &operatorclient.ListUnmatchedDepositsParams{})
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
				return res.JSON200.Data.Data
			}
			require.Len(t, open(), 1)

			require.NoError(t, r.chain.Backend.Fork(parent.Hash()))
			for i := 0; i < required+2; i++ {
				r.chain.Backend.Commit()
			}
			r.scanned()
			find := func() *deposits.ChainTransfer {
				for _, tr := range r.transfers(false) {
					if tr.TxHash == second.Hex() {
						return &tr
					}
				}
				return nil
			}
			// The next poll settles what this one recorded.
			require.Eventually(t, func() bool {
				row := find()
				return row != nil && (row.State == deposits.TransferReorged || row.Final)
			}, 20*time.Second, 20*time.Millisecond, "the transfer is settled")
			row := find()
			require.NotEqual(t, dropped.Hex(), row.BlockHash, "never kept on the dropped block")
			listed := open()
			if row.State == deposits.TransferReorged {
				require.Empty(t, listed, "gone from the operators' list")
				return
			}
			// It reappeared on the new branch: listed again, there, and final.
			require.Equal(t, deposits.TransferUnmatched, row.State)
			require.True(t, row.Final)
			require.Len(t, listed, 1)
			require.Equal(t, int64(row.Block), listed[0].BlockNumber)
		})
	}
}
