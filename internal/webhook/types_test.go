package webhook_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"partnerd/internal/kit/apperr"
	"partnerd/internal/webhook"
)

// Which types an endpoint receives: every type with no endpoint or no list,
// else the listed ones; the test event's type follows; a requested list is
// checked and put in the order of the contract's enum.
func TestEnabledEventsRule(t *testing.T) {
	t.Parallel()
	every := &webhook.Endpoint{}
	some := &webhook.Endpoint{EnabledEvents: []string{"deposit.confirmed", "payout.settled"}}
	for _, typ := range webhook.EventTypes {
		require.True(t, webhook.Receives(nil, typ), "no endpoint: %s recorded", typ)
		require.True(t, webhook.Receives(every, typ), typ)
	}
	require.True(t, webhook.Receives(some, "payout.settled"))
	require.False(t, webhook.Receives(some, "transaction.created"))
	require.Equal(t, webhook.EventTypes, webhook.EventsOf(nil))
	require.Equal(t, webhook.EventTypes, webhook.EventsOf(every))
	require.Equal(t, []string{"deposit.confirmed", "payout.settled"}, webhook.EventsOf(some))

	require.Equal(t, "transaction.created", webhook.TestTypeOf(every))
	require.Equal(t, "deposit.confirmed", webhook.TestTypeOf(some))
	require.Equal(t, "transaction.created", webhook.TestTypeOf(&webhook.Endpoint{EnabledEvents: []string{"payout.settled", "transaction.created"}}))

	got, err := webhook.ParseEvents([]string{"payout.settled", "transaction.failed", "transaction.created"})
	require.NoError(t, err)
	require.Equal(t, []string{"transaction.created", "transaction.failed", "payout.settled"}, got)
	for _, bad := range [][]string{nil, {}, {"transaction.created", "transaction.unknown"}, {"payout.settled", "payout.settled"}} {
		_, err := webhook.ParseEvents(bad)
		require.Equal(t, apperr.InvalidRequest, apperr.CodeOf(err), "%q", bad)
	}
}
