package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// approvalsCollector exports four eyes' waiting proposals, read at scrape time;
// nothing when the read fails (the database being down is partnerd_database_up's
// job to say). Like Operations, the figures come from the database and are the
// same on every instance.
type approvalsCollector struct {
	pending, oldest *prometheus.Desc
	f               func(context.Context) (int, time.Duration, error)
}

// ObserveApprovals registers partnerd_approvals_pending (proposals waiting for a
// second operator) and partnerd_approval_oldest_pending_seconds (how long the
// oldest has waited, 0 for none), read from f on every scrape (with
// ScrapeTimeout). f is approvals.Service.Waiting's shape: the count, the oldest
// one's wait. Call it once.
func (m *Metrics) ObserveApprovals(f func(context.Context) (int, time.Duration, error)) {
	m.reg.MustRegister(&approvalsCollector{
		pending: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "approvals_pending"),
			"Proposed actions waiting for a second operator (four eyes: pending and not expired), read from the database at scrape time.",
			nil, nil),
		oldest: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "approval_oldest_pending_seconds"),
			"How long the oldest proposal waiting for a second operator has waited, in seconds (0 when none waits), read from the database at scrape time.",
			nil, nil),
		f: f,
	})
}

func (c *approvalsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pending
	ch <- c.oldest
}

func (c *approvalsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), ScrapeTimeout)
	defer cancel()
	n, oldest, err := c.f(ctx)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, oldest.Seconds())
}
