package jobs_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/internal/jobs"
	"partnerd/internal/webhook"
)

// A delivery job outlives the receiver's timeout (so an attempt is cut off by the
// receiver's deadline, with its bookkeeping done), and River rescues only jobs
// running longer than any live one can.
func TestDeliveryTimeouts(t *testing.T) {
	t.Parallel()
	require.Greater(t, jobs.DeliveryTimeout, webhook.Timeout+5*time.Second)
	require.Greater(t, jobs.DefaultRescueAfter, jobs.DeliveryTimeout)
}
