// Package jobs runs the service's background jobs with River
// (github.com/riverqueue/river) on the same database as the store: PostgreSQL
// through River's database/sql driver, or the embedded SQLite file through River's
// SQLite driver. River keeps its own tables (river_job, river_leader, …) beside the
// application's; Migrate creates them.
//
// The one job so far expires transactions: a transaction awaiting its deposit is
// expired at its expires_at. The code that creates the transaction inserts an
// expiry job in the same database transaction (InsertExpiryTx), so the job exists
// exactly when the row does. A Runner works those jobs, and a periodic sweep
// (ExpireDue) catches anything a job missed. With several instances every Runner
// fetches jobs, but River locks a job for one worker, so each job runs once; only
// the elected leader schedules jobs and enqueues the periodic sweep. A job runs
// again only when its Expire failed (River retries it with backoff) or its worker
// died mid-job (River rescues it after an hour), which is why Expire must be
// idempotent.
//
// # Timing
//
// River's leader moves scheduled jobs to "available" every 5 seconds, looking 5
// seconds ahead, and workers fetch available jobs whose time has come every
// FetchPollInterval. A job inserted at least 5 seconds before its time (an expiry
// is inserted 30 minutes before) therefore starts within about FetchPollInterval
// of it; one inserted closer to its time may start up to 5 seconds late. While no
// Runner is up nothing runs; due jobs run once one starts.
//
// # SQLite
//
// River's SQLite driver recommends a pool of one connection (SetMaxOpenConns(1))
// to avoid SQLITE_BUSY errors. The store's SQLite DSN already makes that
// unnecessary and it is better left alone: busy_timeout makes a writer wait for the
// lock instead of failing, WAL lets readers run beside the writer, and
// _txlock=immediate takes the write lock when a transaction begins, so no
// transaction fails upgrading a read lock. A one-connection pool would instead
// deadlock any code that queries the pool while it holds a transaction. Use River
// on SQLite only with a DSN that keeps those three settings, and run one instance
// per database file.
package jobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
)

// The dialects, as store.Dialect spells them.
const (
	Postgres = "postgres"
	SQLite   = "sqlite"
)

// Defaults for Options.
const (
	DefaultSweepInterval     = time.Minute
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

// ExpireTransactionArgs is the job that expires one transaction at its expires_at.
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

// SweepExpiredArgs is the periodic job that expires every due transaction, the
// backstop for expiry jobs that were lost or failed for good.
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
	// FetchPollInterval is how often each Runner looks for jobs that are due;
	// DefaultFetchPollInterval when zero. Neither database driver gets notified of
	// new jobs, so this bounds how late a due job starts.
	FetchPollInterval time.Duration

	// Deliverer delivers webhook events; without it the Runner refuses delivery
	// jobs (none are inserted in that case).
	Deliverer Deliverer
	// Requeues feeds the periodic sweep of lost requeues (with Deliverer).
	Requeues Requeues
	// Stepper performs automatic settlement steps (settlement.go); nil for none.
	Stepper Stepper

	// noStagger starts the leader's maintenance services at once instead of each
	// after a random delay of up to a second (River's TestOnly); tests set it.
	noStagger bool
}

// Runner works the jobs. Create it with NewRunner, then Start and Stop it.
type Runner struct {
	client  *river.Client[*sql.Tx]
	db      *sql.DB
	dialect string
	log     *slog.Logger
}

// NewRunner returns a Runner working jobs on db, the store's pool (Store.SQL()),
// with dialect "postgres" or "sqlite". Run Migrate first.
func NewRunner(db *sql.DB, dialect string, exp Expirer, opts Options) (*Runner, error) {
	if db == nil {
		return nil, errors.New("jobs: nil database")
	}
	if exp == nil {
		return nil, errors.New("jobs: nil Expirer")
	}
	driver, err := newDriver(db, dialect)
	if err != nil {
		return nil, err
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
	r := &Runner{db: db, dialect: dialect, log: logger}
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
		queues[QueueWebhooks] = river.QueueConfig{MaxWorkers: webhookWorkers}
	}
	if opts.Requeues != nil {
		if err := river.AddWorkerSafely(workers, &requeueSweepWorker{src: opts.Requeues, runner: r}); err != nil {
			return nil, err
		}
		periodic = append(periodic, river.NewPeriodicJob(river.PeriodicInterval(sweep),
			func() (river.JobArgs, *river.InsertOpts) { return SweepRequeuesArgs{}, nil },
			&river.PeriodicJobOpts{ID: "sweep_webhook_requeues"}))
	}
	client, err := river.NewClient(driver, &river.Config{
		ID:                clientID(),
		Logger:            logger,
		Workers:           workers,
		Queues:            queues,
		FetchPollInterval: poll,
		TestOnly:          opts.noStagger,
		// The cooldown may not exceed the poll interval.
		FetchCooldown: min(poll, river.FetchCooldownDefault),
		PeriodicJobs:  periodic,
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: create River client: %w", err)
	}
	r.client = client
	return r, nil
}

// Start starts working jobs in the background and returns. It fails when River's
// tables lack migrations (run Migrate first). Cancelling ctx stops the Runner
// abruptly, cancelling running jobs; use Stop for a graceful stop.
func (r *Runner) Start(ctx context.Context) error {
	pending, err := PendingMigrations(ctx, r.db, r.dialect)
	if err != nil {
		return err
	}
	if pending {
		return errors.New("jobs: River's tables are not migrated; run jobs.Migrate first")
	}
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

// InsertExpiryTx inserts the job that expires transactionID at at, in tx: the job
// is committed or rolled back with the transaction that created the row. dialect
// is "postgres" or "sqlite". Inserting it again for the same transaction is a
// no-op. It needs no Runner in this process.
func InsertExpiryTx(ctx context.Context, tx *sql.Tx, dialect string, transactionID uuid.UUID, at time.Time) error {
	if tx == nil {
		return errors.New("jobs: nil transaction")
	}
	client, err := insertClient(dialect)
	if err != nil {
		return err
	}
	if _, err := client.InsertTx(ctx, tx, ExpireTransactionArgs{TransactionID: transactionID}, &river.InsertOpts{ScheduledAt: at}); err != nil {
		return fmt.Errorf("jobs: insert expiry of transaction %s: %w", transactionID, err)
	}
	return nil
}

// Migrate creates or updates River's tables on db (the store's pool) for dialect
// "postgres" or "sqlite". On PostgreSQL it holds an advisory lock so that instances
// starting together migrate one after the other. On SQLite it assumes one process.
func Migrate(ctx context.Context, db *sql.DB, dialect string) error {
	m, err := migrator(db, dialect)
	if err != nil {
		return err
	}
	up := func() error {
		if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
			return fmt.Errorf("jobs: migrate: %w", err)
		}
		return nil
	}
	if dialect == Postgres {
		return withAdvisoryLock(ctx, db, up)
	}
	return up()
}

// PendingMigrations reports whether River's tables on db lack migrations
// (readiness; Start refuses to run then).
func PendingMigrations(ctx context.Context, db *sql.DB, dialect string) (bool, error) {
	m, err := migrator(db, dialect)
	if err != nil {
		return false, err
	}
	res, err := m.Validate(ctx)
	if err != nil {
		return false, fmt.Errorf("jobs: check migrations: %w", err)
	}
	return !res.OK, nil
}

func migrator(db *sql.DB, dialect string) (*rivermigrate.Migrator[*sql.Tx], error) {
	if db == nil {
		return nil, errors.New("jobs: nil database")
	}
	driver, err := newDriver(db, dialect)
	if err != nil {
		return nil, err
	}
	// River's migrator logs every step at info level; only its warnings matter here.
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: quiet})
	if err != nil {
		return nil, fmt.Errorf("jobs: migrator: %w", err)
	}
	return m, nil
}

// migrateLockKey is the PostgreSQL advisory lock Migrate holds.
var migrateLockKey = func() int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("partnerd/jobs.Migrate"))
	return int64(h.Sum64())
}()

// withAdvisoryLock runs fn while a session of db holds migrateLockKey. fn runs on
// other connections of the pool; the lock only serializes instances.
func withAdvisoryLock(ctx context.Context, db *sql.DB, fn func() error) (err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("jobs: migrate: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", migrateLockKey); err != nil {
		return fmt.Errorf("jobs: migrate: take lock: %w", err)
	}
	defer func() {
		_, uerr := conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrateLockKey)
		if uerr != nil && err == nil {
			err = fmt.Errorf("jobs: migrate: release lock: %w", uerr)
		}
	}()
	return fn()
}

// newDriver returns River's driver for dialect over db.
func newDriver(db *sql.DB, dialect string) (riverdriver.Driver[*sql.Tx], error) {
	switch dialect {
	case Postgres:
		return riverdatabasesql.New(db), nil
	case SQLite:
		return riversqlite.New(db), nil
	default:
		return nil, unknownDialect(dialect)
	}
}

var (
	insertMu      sync.Mutex
	insertClients = map[string]*river.Client[*sql.Tx]{}
)

// insertClient returns the insert-only River client for dialect. It has no pool:
// it only ever inserts on a caller's transaction.
func insertClient(dialect string) (*river.Client[*sql.Tx], error) {
	insertMu.Lock()
	defer insertMu.Unlock()
	if c, ok := insertClients[dialect]; ok {
		return c, nil
	}
	driver, err := newDriver(nil, dialect)
	if err != nil {
		return nil, err
	}
	c, err := river.NewClient(driver, &river.Config{Logger: slog.Default()})
	if err != nil {
		return nil, fmt.Errorf("jobs: create River client: %w", err)
	}
	insertClients[dialect] = c
	return c, nil
}

func unknownDialect(dialect string) error {
	return fmt.Errorf("jobs: unknown dialect %q: want %q or %q", dialect, Postgres, SQLite)
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

func (w *expireWorker) Work(ctx context.Context, job *river.Job[ExpireTransactionArgs]) error {
	return w.exp.Expire(ctx, job.Args.TransactionID)
}

type sweepWorker struct {
	river.WorkerDefaults[SweepExpiredArgs]
	exp Expirer
}

func (w *sweepWorker) Work(ctx context.Context, _ *river.Job[SweepExpiredArgs]) error {
	_, err := w.exp.ExpireDue(ctx, time.Now(), SweepLimit)
	return err
}
