package scanner_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/chain"
	"partnerd/internal/lifecycle"
	"partnerd/internal/testdb"
)

// TestReorgBeforeConfirmation: the block holding a detected deposit is
// reorganised away (the backend's Fork); the detection is undone and nothing
// confirms on the dropped block.
func TestReorgBeforeConfirmation(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, db, chain.BEP20, 18, nil)
			ctx := context.Background()
			tx := r.create("15500")
			parent, err := r.chain.Backend.Client().HeaderByNumber(ctx, nil)
			require.NoError(t, err)
			r.send(r.token, tx.DepositAddress, tx.CryptoAmount)
			dropped := r.chain.Backend.Commit()
			d := r.waitFor(tx.Id, "detection", status(client.TransactionStatusDepositConfirming))
			depositID := *d.DepositId

			require.NoError(t, r.chain.Backend.Fork(parent.Hash()))
			d = r.waitFor(tx.Id, "the reorg", status(client.TransactionStatusAwaitingDeposit))
			require.Nil(t, d.DepositId, "the deposit is gone")
			require.Nil(t, d.DepositAmount)
			require.Equal(t, []string{"transaction:created", "deposit:detected", "deposit:reorged"}, r.reasons(tx.Id))
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
				require.Equal(t, lifecycle.TransferReorged, all[0].State)
				return
			}
			d = r.waitFor(tx.Id, "confirmation on the new branch", status(client.TransactionStatusOrderFilled))
			require.Equal(t, depositID, *d.DepositId)
			require.Equal(t, lifecycle.TransferConfirmed, r.transfers(false)[0].State)
			require.Equal(t, []string{"transaction:created", "deposit:detected", "deposit:reorged", "deposit:detected", "deposit:confirmed", "order:filled"}, r.reasons(tx.Id))
		})
	}
}
