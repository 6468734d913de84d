package jobs

import (
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"
)

// Every job kind has its own timeout from the one table, each below the rescue
// interval, and a kind's worker answers exactly its table entry: a new kind
// added without an entry, or a worker reading another kind's, fails here.
func TestTimeoutsPerKind(t *testing.T) {
	t.Parallel()
	workers := map[string]time.Duration{
		DeliverEventArgs{}.Kind():      (&deliverWorker{}).Timeout(&river.Job[DeliverEventArgs]{}),
		ExpireTransactionArgs{}.Kind(): (&expireWorker{}).Timeout(&river.Job[ExpireTransactionArgs]{}),
		SettlementStepArgs{}.Kind():    (&stepWorker{}).Timeout(&river.Job[SettlementStepArgs]{}),
		ScreenTransactionArgs{}.Kind(): (&screenWorker{}).Timeout(&river.Job[ScreenTransactionArgs]{}),
		SweepExpiredArgs{}.Kind():      (&sweepWorker{}).Timeout(&river.Job[SweepExpiredArgs]{}),
		SweepRequeuesArgs{}.Kind():     (&requeueSweepWorker{}).Timeout(&river.Job[SweepRequeuesArgs]{}),
	}
	require.Len(t, Timeouts, len(workers), "one timeout per job kind")
	for kind, got := range workers {
		want, ok := Timeouts[kind]
		require.True(t, ok, "kind %s has a timeout", kind)
		require.Equal(t, want, got, kind)
		require.Positive(t, got, kind)
		require.Less(t, got, DefaultRescueAfter, "%s: a live job is never rescued as dead", kind)
	}
	require.Equal(t, DeliveryTimeout, LongestTimeout(), "a delivery, waiting for a receiver, is the longest")
	// Only deliveries wait for somebody else: the others are cut off sooner.
	for kind, d := range Timeouts {
		if kind != (DeliverEventArgs{}).Kind() {
			require.Less(t, d, DeliveryTimeout, kind)
		}
	}
}
