package webhook

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStagingRetriesWithinSeconds: in the sandbox an event that found no receiver
// (an endpoint registered before `partnerd listen` started) is retried within
// seconds for its first minute or so, then as production does; production's
// schedule is the documented one, unchanged.
func TestStagingRetriesWithinSeconds(t *testing.T) {
	t.Parallel()
	require.Equal(t, "5s,5m,30m,2h,5h,10h,10h", ScheduleString(ScheduleFor(true)), "production's schedule (webhooks guide) unchanged")

	staging := ScheduleFor(false)
	var waited time.Duration
	for i, d := range staging[:5] {
		require.LessOrEqual(t, d, time.Minute, "staging retry %d waits %s", i+1, d)
		waited += d
	}
	require.LessOrEqual(t, waited, 2*time.Minute+5*time.Second, "five retries within about two minutes of the first attempt")
	require.Equal(t, 5*time.Second, staging[0])
	// After the quick retries, staging follows production's tail: no event waits
	// longer in staging than it would in production.
	prod := ScheduleFor(true)
	require.Equal(t, prod[1:], staging[len(staging)-len(prod)+1:])
	require.Equal(t, "5s,10s,20s,30s,1m,5m,30m,2h,5h,10h,10h", ScheduleString(staging), "the webhooks guide states it")
}
