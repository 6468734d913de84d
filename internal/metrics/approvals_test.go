package metrics_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"partnerd/internal/metrics"
)

func TestObserveApprovals(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	var fail atomic.Bool
	var pending atomic.Int64
	var oldest atomic.Int64 // time.Duration
	m.ObserveApprovals(func(ctx context.Context) (int, time.Duration, error) {
		if _, ok := ctx.Deadline(); !ok {
			return 0, 0, errors.New("read without a deadline")
		}
		if fail.Load() {
			return 0, 0, errors.New("database down")
		}
		return int(pending.Load()), time.Duration(oldest.Load()), nil
	})

	// None waiting: both present, both 0 (an alert compares a value, not an absence).
	fams := scrape(t, m)
	require.InDelta(t, 0, series(t, fams, "partnerd_approvals_pending", nil).GetGauge().GetValue(), 0)
	require.InDelta(t, 0, series(t, fams, "partnerd_approval_oldest_pending_seconds", nil).GetGauge().GetValue(), 0)

	// Read on every scrape, the wait in seconds.
	pending.Store(3)
	oldest.Store(int64(4*time.Hour + 1500*time.Millisecond))
	fams = scrape(t, m)
	require.InDelta(t, 3, series(t, fams, "partnerd_approvals_pending", nil).GetGauge().GetValue(), 0)
	require.InDelta(t, 14401.5, series(t, fams, "partnerd_approval_oldest_pending_seconds", nil).GetGauge().GetValue(), 1e-9)
	require.Equal(t, dto.MetricType_GAUGE, fams["partnerd_approvals_pending"].GetType())
	require.Equal(t, dto.MetricType_GAUGE, fams["partnerd_approval_oldest_pending_seconds"].GetType())

	// A failed read leaves both out and the scrape still answers.
	fail.Store(true)
	fams = scrape(t, m)
	require.NotContains(t, fams, "partnerd_approvals_pending")
	require.NotContains(t, fams, "partnerd_approval_oldest_pending_seconds")
	require.Contains(t, fams, "go_goroutines")
}
