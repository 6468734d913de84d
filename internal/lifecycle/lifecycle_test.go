package lifecycle

import (
	"slices"
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
		require.Contains(t, Statuses, tr.To)
		require.True(t, tr.From == None || slices.Contains(Statuses, tr.From), tr.From)
		require.Regexp(t, `^[a-z]+:[a-z]+$`, tr.Reason)
	}
}

func TestOnlyAwaitingDepositIsCancellable(t *testing.T) {
	t.Parallel()
	for _, s := range Statuses {
		_, ok := Lookup(s, Cancel)
		require.Equal(t, s == AwaitingDeposit, ok, s)
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
