package lifecycle

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTableIsConsistent(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, tr := range Table {
		key := string(tr.From) + "|" + string(tr.Trigger)
		require.False(t, seen[key], "one row per (from, trigger): %s", key)
		seen[key] = true
		require.True(t, tr.To.Valid(), tr.To)
		require.True(t, tr.From == None || tr.From.Valid(), tr.From)
		require.Regexp(t, `^[a-z]+:[a-z]+$`, tr.Reason)
	}
}

func TestOnlyAwaitingDepositIsCancellable(t *testing.T) {
	t.Parallel()
	for _, s := range Statuses {
		require.Equal(t, s == AwaitingDeposit, Cancellable(s), s)
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	tr, ok := Lookup(None, Create)
	require.True(t, ok)
	require.Equal(t, AwaitingDeposit, tr.To)
	require.Equal(t, EventCreated, tr.Event)
	_, ok = Lookup(Completed, Cancel)
	require.False(t, ok)
	require.Panics(t, func() { MustLookup(Cancelled, Settle) })
}
