// Package jobs runs the service's background jobs with River
// (github.com/riverqueue/river) on the same database as the store, through the
// driver the store provides (store.JobDriver): on PostgreSQL River's database/sql
// driver with a pgx listener, so workers are woken by LISTEN/NOTIFY when a job is
// committed; on SQLite River's SQLite driver on the store's one-writer pool. River
// keeps its own tables (river_job, river_leader, …) beside the application's;
// store.Migrate creates them.
//
// Jobs are inserted by the unit of work that makes them necessary (store.Tx.Enqueue),
// so a job exists exactly when its change commits: a webhook event's delivery,
// when the partner has an enabled endpoint. Periodic jobs are enqueued by the
// elected leader only, so with several instances each runs once per interval:
// the expiry sweep (every SweepInterval, a second by default, over the partial
// index of transactions awaiting their deposit; each expiry is a
// version-conditional update, so a transaction is expired exactly once) and the
// sweep of lost webhook requeues. A job runs again only when it failed (River
// retries it with backoff) or its worker died mid-job (River rescues it), which is
// why every worker is idempotent.
package jobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"
	"go.opentelemetry.io/otel/trace"

	"partnerd/internal/jobs/quietlog"
)

// Defaults for Options.
const (
	DefaultSweepInterval     = time.Second
	DefaultFetchPollInterval = time.Second
)

// SweepLimit is how many due transactions one sweep expires at most; the next
// sweep continues where it stopped.
const SweepLimit = 500

// maxWorkers is how many jobs one Runner works at once.
const maxWorkers = 10

// Expirer expires transactions; the transactions domain implements it.
type Expirer interface {
	// Expire expires the transaction if it still awaits its deposit. It must be
	// idempotent: when the transaction has moved on (or is already expired) it does
	// nothing and returns nil. An error makes River retry the job later.
	Expire(ctx context.Context, transactionID uuid.UUID) error
	// ExpireDue expires up to limit transactions awaiting their deposit whose
	// expires_at is not after now, and returns how many it expired.
	ExpireDue(ctx context.Context, now time.Time, limit int) (int, error)
}

// ExpireTransactionArgs is the job that expires one transaction at its
// expires_at. Nothing inserts it any more (the sweep expires transactions); its
// worker stays to drain jobs queued by earlier versions of the service.
type ExpireTransactionArgs struct {
	TransactionID uuid.UUID `json:"transaction_id"`
}

// Kind is the job's kind in River's tables.
func (ExpireTransactionArgs) Kind() string { return "expire_transaction" }

// InsertOpts makes the job unique by its arguments: a transaction has at most one
// expiry job (pending, scheduled, running or completed and not yet cleaned up), so
// inserting it again is a no-op.
func (ExpireTransactionArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// SweepExpiredArgs is the periodic job that expires every due transaction.
type SweepExpiredArgs struct{}

// Kind is the job's kind in River's tables.
func (SweepExpiredArgs) Kind() string { return "sweep_expired_transactions" }

// InsertOpts gives a sweep a single attempt: a failed sweep is not retried, the
// next one does its work.
func (SweepExpiredArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 1} }

// Options configure a Runner. The zero value is usable.
type Options struct {
	// Logger receives River's logs; slog.Default() when nil.
	Logger *slog.Logger
	// SweepInterval is how often the leader enqueues the sweep; DefaultSweepInterval
	// when zero. A sweep also runs when a Runner becomes leader.
	SweepInterval time.Duration
	// FetchPollInterval is how often each Runner looks for jobs that are due
	// without being told; DefaultFetchPollInterval when zero. On PostgreSQL a
	// committed job wakes the workers at once (LISTEN/NOTIFY) and this only
	// bounds the wait for scheduled retries; on SQLite it bounds every wait.
	FetchPollInterval time.Duration
	// RequeueInterval is how often the leader looks for lost webhook requeues and
	// pending events nobody queued; a minute when zero.
	RequeueInterval time.Duration

	// RescueAfter is how long a job may run before River takes its process for
	// dead and retries it; DefaultRescueAfter when zero. It must exceed
	// LongestTimeout, the longest a live job runs.
	RescueAfter time.Duration

	// Deliverer delivers webhook events; without it the Runner refuses delivery
	// jobs (none are inserted in that case).
	Deliverer Deliverer
	// Requeues feeds the periodic sweep of lost requeues (with Deliverer).
	Requeues Requeues
	// Stepper performs automatic settlement steps (settlement.go); nil for none.
	Stepper Stepper
	// Screener screens deposit senders with remote screeners (screening.go); nil
	// when screening needs no job.
	Screener TransactionScreener

	// Tracing, when set, gives each job's work a span in the trace of the code
	// that enqueued it (TraceMiddleware); nil while traces are not exported.
	Tracing trace.TracerProvider

	// noStagger starts the leader's maintenance services at once instead of each
	// after a random delay of up to a second (River's TestOnly); tests set it.
	noStagger bool
}

// Runner works the jobs. Create it with NewRunner, then Start and Stop it.
type Runner struct {
	client      *river.Client[*sql.Tx]
	log         *slog.Logger
	quiet       *quietlog.Handler
	rescueAfter time.Duration
}

// NewRunner returns a Runner working jobs through driver (store.JobDriver; the
// store must be migrated).
func NewRunner(driver riverdriver.Driver[*sql.Tx], exp Expirer, opts Options) (*Runner, error) {
	if driver == nil {
		return nil, errors.New("jobs: nil driver")
	}
	if exp == nil {
		return nil, errors.New("jobs: nil Expirer")
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	sweep := opts.SweepInterval
	if sweep <= 0 {
		sweep = DefaultSweepInterval
	}
	poll := opts.FetchPollInterval
	if poll <= 0 {
		poll = DefaultFetchPollInterval
	}

	rescue := opts.RescueAfter
	if rescue <= 0 {
		rescue = DefaultRescueAfter
	}
	if rescue <= LongestTimeout() {
		return nil, fmt.Errorf("jobs: rescue after %s: must exceed the longest job timeout, %s", rescue, LongestTimeout())
	}

	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &expireWorker{exp: exp}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &sweepWorker{exp: exp}); err != nil {
		return nil, err
	}
	if err := addStepWorker(workers, opts.Stepper); err != nil {
		return nil, err
	}
	if opts.Screener != nil {
		if err := river.AddWorkerSafely(workers, &screenWorker{s: opts.Screener}); err != nil {
			return nil, err
		}
	}
	quiet := quietLog(logger.Handler())
	r := &Runner{log: slog.New(quiet.WithAttrs([]slog.Attr{slog.String("component", "jobs")})), quiet: quiet, rescueAfter: rescue}
	requeueEvery := opts.RequeueInterval
	if requeueEvery <= 0 {
		requeueEvery = time.Minute
	}
	queues := map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: maxWorkers}}
	periodic := []*river.PeriodicJob{
		river.NewPeriodicJob(river.PeriodicInterval(sweep),
			func() (river.JobArgs, *river.InsertOpts) { return SweepExpiredArgs{}, nil },
			&river.PeriodicJobOpts{ID: "sweep_expired_transactions", RunOnStart: true}),
	}
	if opts.Deliverer != nil {
		if err := river.AddWorkerSafely(workers, &deliverWorker{d: opts.Deliverer}); err != nil {
			return nil, err
		}
		queues[QueueWebhooks] = river.QueueConfig{MaxWorkers: webhookWorkers, FetchCooldown: min(poll, WebhookFetchCooldown)}
	}
	if opts.Requeues != nil {
		if err := river.AddWorkerSafely(workers, &requeueSweepWorker{src: opts.Requeues, runner: r}); err != nil {
			return nil, err
		}
		periodic = append(periodic, river.NewPeriodicJob(river.PeriodicInterval(requeueEvery),
			func() (river.JobArgs, *river.InsertOpts) { return SweepRequeuesArgs{}, nil },
			&river.PeriodicJobOpts{ID: "sweep_webhook_requeues"}))
	}
	middleware := []rivertype.Middleware{&recovered{quiet: quiet}}
	if opts.Tracing != nil {
		middleware = append(middleware, TraceMiddleware(opts.Tracing)...)
	}
	client, err := river.NewClient(driver, &river.Config{
		ID:                clientID(),
		Middleware:        middleware,
		Logger:            slog.New(quietInfo{quiet.WithAttrs([]slog.Attr{slog.String("component", "river")})}),
		Workers:           workers,
		Queues:            queues,
		FetchPollInterval: poll,
		TestOnly:          opts.noStagger,
		// The cooldown may not exceed the poll interval.
		FetchCooldown: min(poll, river.FetchCooldownDefault),
		PeriodicJobs:  periodic,
		// Each kind has its own timeout (Timeouts); a kind missing there gets the
		// shortest. A job whose process died (kill -9, a lost machine) stays running
		// until the rescuer retries it: soon after the longest a live job runs.
		JobTimeout:           defaultTimeout,
		RescueStuckJobsAfter: rescue,
		// A sweep a second leaves many completed jobs; an hour of them is plenty
		// to look into.
		CompletedJobRetentionPeriod: time.Hour,
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: create River client: %w", err)
	}
	r.client = client
	return r, nil
}

// Start starts working jobs in the background and returns. Cancelling ctx stops
// the Runner abruptly, cancelling running jobs; use Stop for a graceful stop.
func (r *Runner) Start(ctx context.Context) error {
	if err := r.client.Start(ctx); err != nil {
		return fmt.Errorf("jobs: start: %w", err)
	}
	return nil
}

// Stop stops fetching jobs and waits for the running ones to finish. If ctx ends
// first it returns ctx's error; the Runner then goes on stopping, and Stop may be
// called again.
func (r *Runner) Stop(ctx context.Context) error {
	return r.client.Stop(ctx)
}

// Timeouts is how long one job of each kind may run before River cancels it and
// retries it later: a delivery waits for a receiver (DeliveryTimeout); the
// others read and write a few rows (a sweep a few hundred), and a kind that
// hangs longer than that is stuck on the database, better retried than waited
// for. River rescues a job whose process died after RescueAfter, one setting for
// every kind, which must exceed the longest of these (LongestTimeout).
var Timeouts = map[string]time.Duration{
	DeliverEventArgs{}.Kind():      DeliveryTimeout,
	ExpireTransactionArgs{}.Kind(): 10 * time.Second,
	SettlementStepArgs{}.Kind():    10 * time.Second,
	// A screening asks remote screeners for a few senders; what is not answered
	// in time is unknown, asked again at the next run.
	ScreenTransactionArgs{}.Kind(): 20 * time.Second,
	SweepExpiredArgs{}.Kind():      20 * time.Second,
	SweepRequeuesArgs{}.Kind():     20 * time.Second,
}

// defaultTimeout is the timeout of a kind missing from Timeouts (a test keeps the
// table complete).
const defaultTimeout = 10 * time.Second

// LongestTimeout is the longest of Timeouts: RescueAfter must exceed it.
func LongestTimeout() time.Duration {
	longest := defaultTimeout
	for _, d := range Timeouts {
		longest = max(longest, d)
	}
	return longest
}

// clientID names a Runner in River's tables (leader election, job attempts): the
// host plus a random suffix, unique even for several Runners in one process.
func clientID() string {
	host, _ := os.Hostname()
	host = strings.NewReplacer(".", "_", "-", "_").Replace(host)
	if len(host) > 60 {
		host = host[:60]
	}
	if host == "" {
		host = "unknown_host"
	}
	return host + "_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
}

type expireWorker struct {
	river.WorkerDefaults[ExpireTransactionArgs]
	exp Expirer
}

func (w *expireWorker) Timeout(*river.Job[ExpireTransactionArgs]) time.Duration {
	return Timeouts[ExpireTransactionArgs{}.Kind()]
}

func (w *expireWorker) Work(ctx context.Context, job *river.Job[ExpireTransactionArgs]) error {
	return w.exp.Expire(ctx, job.Args.TransactionID)
}

type sweepWorker struct {
	river.WorkerDefaults[SweepExpiredArgs]
	exp Expirer
}

func (w *sweepWorker) Timeout(*river.Job[SweepExpiredArgs]) time.Duration {
	return Timeouts[SweepExpiredArgs{}.Kind()]
}

func (w *sweepWorker) Work(ctx context.Context, _ *river.Job[SweepExpiredArgs]) error {
	_, err := w.exp.ExpireDue(ctx, time.Now(), SweepLimit)
	return err
}

// Lines of the job queue's outages (quietLog).
const (
	downLine = "job queue cannot reach the database"
	upLine   = "job queue reaches the database again"
)

// quietLog is the one place where the job queue's repeated warnings and errors
// are collapsed (package quietlog): River's own (component river) and the
// Runner's (component jobs) go through it. River's services log every failed
// retry (its producer each FetchPollInterval, its elector, notifier and
// maintenance services on their own schedules), and almost all of what they log
// at WARN or ERROR is a statement that failed because the database is away: a
// six-minute outage wrote over 3,000 lines. Now the first is logged as
// downLine (with River's message as cause and its error), a different message
// once, repeats only counted; the outage ends with one upLine (suppressed,
// down_for) when a job succeeds again (the recovered middleware), which
// needs the database to have fetched it, or, as a backstop when no job runs,
// at the first line logged after recoveryQuiet without a warning.
func quietLog(h slog.Handler) *quietlog.Handler {
	return quietlog.New(h, quietlog.Options{Down: downLine, Up: upLine, Quiet: recoveryQuiet})
}

// recoveryQuiet is how long without a warning from the job queue ends an
// outage when no job has said so: longer than River's longest retry backoff,
// so a long outage is not told twice.
const recoveryQuiet = 5 * time.Minute

// recovered tells the job queue's log that the database is reached again when a
// job succeeds: River fetched it from the database, and its work (whose
// statements use the same database) went through.
type recovered struct {
	river.WorkerMiddlewareDefaults
	quiet *quietlog.Handler
}

func (m *recovered) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	err := doInner(ctx)
	if err == nil {
		m.quiet.Recovered(context.Background()) // the line is no part of the job's trace
	}
	return err
}

// quietInfo passes River's log on with its INFO lines demoted to DEBUG: River
// reports routine work (an idle producer every few seconds, elections, periodic
// jobs) at INFO, which would drown the service's own lines; its warnings and
// errors stay as they are.
type quietInfo struct{ h slog.Handler }

func (q quietInfo) Enabled(ctx context.Context, l slog.Level) bool {
	return q.h.Enabled(ctx, demote(l))
}

func (q quietInfo) Handle(ctx context.Context, r slog.Record) error {
	r.Level = demote(r.Level)
	return q.h.Handle(ctx, r)
}

func (q quietInfo) WithAttrs(as []slog.Attr) slog.Handler { return quietInfo{q.h.WithAttrs(as)} }
func (q quietInfo) WithGroup(name string) slog.Handler    { return quietInfo{q.h.WithGroup(name)} }

func demote(l slog.Level) slog.Level {
	if l == slog.LevelInfo {
		return slog.LevelDebug
	}
	return l
}
