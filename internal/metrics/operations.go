package metrics

import (
	"context"
	"database/sql"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Operations is the work that waits on operators, as the back office counts it
// from the database: the same figures on every instance, so alert rules take the
// max over instances, never the sum.
type Operations struct {
	// Stages is the number of transactions in each back-office stage
	// (awaiting_fill, awaiting_settlement, awaiting_payout, failed,
	// confirming_too_long).
	Stages map[string]float64
	// RefundWork is the refund work by kind (unmatched, excess, short, dust, and
	// failed: transactions to refund or settle by hand).
	RefundWork map[string]float64
	// FailingWebhookEndpoints is the number of enabled endpoints with events that
	// failed or retry after a failed attempt.
	FailingWebhookEndpoints float64
	// Screening is the transactions whose funds wait on screening, by state
	// (held, unknown, pending).
	Screening map[string]float64
}

// ScrapeTimeout bounds each database read made at scrape time, so a scrape of a
// process whose database hangs still answers (Prometheus's own default timeout
// is 10 s) with the reads that failed left out.
const ScrapeTimeout = 3 * time.Second

// opsCollector exports Operations, read at scrape time; nothing when the read
// fails (the database being down is partnerd_database_up's job to say).
type opsCollector struct {
	stages, refunds, failing, screening *prometheus.Desc
	f                                   func(context.Context) (Operations, error)
}

// ObserveOperations registers partnerd_stage_transactions{stage},
// partnerd_refund_work{kind} and partnerd_webhook_failing_endpoints, read from f
// on every scrape (with ScrapeTimeout), so alerts on work waiting for operators
// need no polling loop of their own. Call it once.
func (m *Metrics) ObserveOperations(f func(context.Context) (Operations, error)) {
	m.reg.MustRegister(&opsCollector{
		stages: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "stage_transactions"),
			"Transactions in each back-office stage (awaiting_fill, awaiting_settlement, awaiting_payout, failed, confirming_too_long: confirming longer than CONFIRMING_TOO_LONG_AFTER), read from the database at scrape time.",
			[]string{"stage"}, nil),
		refunds: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "refund_work"),
			"Refund work waiting for an operator, by kind (unmatched, excess, short, dust: open refund tasks; failed: transactions in stage failed), read from the database at scrape time.",
			[]string{"kind"}, nil),
		failing: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "webhook_failing_endpoints"),
			"Enabled webhook endpoints with events that failed or retry after a failed attempt, read from the database at scrape time.",
			nil, nil),
		screening: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "screening_waiting_transactions"),
			"Transactions whose funds wait on screening, by state (held: for an operator's review; unknown: a screener cannot answer; pending: being asked), computed at scrape time.",
			[]string{"state"}, nil),
		f: f,
	})
}

func (c *opsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.stages
	ch <- c.refunds
	ch <- c.failing
	ch <- c.screening
}

func (c *opsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), ScrapeTimeout)
	defer cancel()
	ops, err := c.f(ctx)
	if err != nil {
		return
	}
	for stage, v := range ops.Stages {
		ch <- prometheus.MustNewConstMetric(c.stages, prometheus.GaugeValue, v, stage)
	}
	for kind, v := range ops.RefundWork {
		ch <- prometheus.MustNewConstMetric(c.refunds, prometheus.GaugeValue, v, kind)
	}
	ch <- prometheus.MustNewConstMetric(c.failing, prometheus.GaugeValue, ops.FailingWebhookEndpoints)
	for state, v := range ops.Screening {
		ch <- prometheus.MustNewConstMetric(c.screening, prometheus.GaugeValue, v, state)
	}
}

// dbUp exports 1 when ping succeeds at scrape time, else 0: always present, so
// "the database is unreachable" is a value an alert can match rather than an
// absence it must guess at.
type dbUp struct {
	desc *prometheus.Desc
	ping func(context.Context) error
}

func (d dbUp) Describe(ch chan<- *prometheus.Desc) { ch <- d.desc }

func (d dbUp) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), ScrapeTimeout)
	defer cancel()
	v := 1.0
	if err := d.ping(ctx); err != nil {
		v = 0
	}
	ch <- prometheus.MustNewConstMetric(d.desc, prometheus.GaugeValue, v)
}

// ObserveDatabase registers partnerd_database_up (ping, at scrape time) and the
// connection pool's go_sql_* series (labelled db_name="partnerd"): in use, idle,
// waits and time waited for a connection, which show a pool too small for the
// load before requests time out. Call it once.
func (m *Metrics) ObserveDatabase(db *sql.DB) {
	m.reg.MustRegister(
		dbUp{desc: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "database_up"),
			"1 when the database answered a ping at scrape time, 0 when it did not.", nil, nil),
			ping: db.PingContext},
		collectors.NewDBStatsCollector(db, Namespace),
	)
}
