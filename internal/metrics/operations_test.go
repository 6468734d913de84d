package metrics_test

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"testing"

	_ "github.com/mattn/go-sqlite3"
	"github.com/stretchr/testify/require"

	"partnerd/internal/metrics"
)

func TestObserveOperations(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	var fail atomic.Bool
	var failing atomic.Int64
	m.ObserveOperations(func(ctx context.Context) (metrics.Operations, error) {
		if _, ok := ctx.Deadline(); !ok {
			return metrics.Operations{}, errors.New("read without a deadline")
		}
		if fail.Load() {
			return metrics.Operations{}, errors.New("database down")
		}
		return metrics.Operations{
			Stages:                  map[string]float64{"confirming_too_long": 2, "awaiting_fill": 5},
			RefundWork:              map[string]float64{"unmatched": 1, "failed": 0},
			FailingWebhookEndpoints: float64(failing.Load()),
		}, nil
	})

	failing.Store(3)
	fams := scrape(t, m)
	require.InDelta(t, 2, series(t, fams, "partnerd_stage_transactions", map[string]string{"stage": "confirming_too_long"}).GetGauge().GetValue(), 0)
	require.InDelta(t, 5, series(t, fams, "partnerd_stage_transactions", map[string]string{"stage": "awaiting_fill"}).GetGauge().GetValue(), 0)
	require.InDelta(t, 1, series(t, fams, "partnerd_refund_work", map[string]string{"kind": "unmatched"}).GetGauge().GetValue(), 0)
	require.InDelta(t, 0, series(t, fams, "partnerd_refund_work", map[string]string{"kind": "failed"}).GetGauge().GetValue(), 0)
	require.InDelta(t, 3, series(t, fams, "partnerd_webhook_failing_endpoints", nil).GetGauge().GetValue(), 0)

	// Read on every scrape.
	failing.Store(0)
	require.InDelta(t, 0, series(t, scrape(t, m), "partnerd_webhook_failing_endpoints", nil).GetGauge().GetValue(), 0)

	// A failed read leaves the three out and the scrape still answers.
	fail.Store(true)
	fams = scrape(t, m)
	for _, name := range []string{"partnerd_stage_transactions", "partnerd_refund_work", "partnerd_webhook_failing_endpoints"} {
		require.NotContains(t, fams, name)
	}
	require.Contains(t, fams, "go_goroutines")
}

func TestObserveDatabase(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("sqlite3", "file:"+t.TempDir()+"/up.db")
	require.NoError(t, err)
	m := metrics.New()
	m.ObserveDatabase(db)

	fams := scrape(t, m)
	require.InDelta(t, 1, series(t, fams, "partnerd_database_up", nil).GetGauge().GetValue(), 0)
	require.Contains(t, fams, "go_sql_open_connections")
	require.Contains(t, fams, "go_sql_wait_count_total")

	// A database that cannot answer is 0, not absent.
	require.NoError(t, db.Close())
	require.InDelta(t, 0, series(t, scrape(t, m), "partnerd_database_up", nil).GetGauge().GetValue(), 0)
}
