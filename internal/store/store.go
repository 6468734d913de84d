// Package store persists the service's data through GORM on PostgreSQL (production)
// or an embedded SQLite file (local runs). One code path serves both; what differs
// between them lives in two places only: the per-database migration trees, and the
// two implementations of engine (postgres.go, sqlite.go): pools, locks, address
// indexes, row locks, exact sums and single-statement fast paths. No other file
// asks which database it is (a test reads the package's source to hold it so).
// The same conformance suite (storetest) runs against both databases.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"partnerd/internal/jobs"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/dburl"
	"partnerd/internal/kit/secrets"
)

// Dialect names the database behind a Store (see dburl: the URL grammar).
type Dialect = dburl.Dialect

// The supported dialects.
const (
	Postgres = dburl.Postgres
	SQLite   = dburl.SQLite
)

// DefaultURL is used when DATABASE_URL is unset: the embedded database.
const DefaultURL = dburl.Default

//go:embed migrations
var migrationsFS embed.FS

// Store is the database. Its methods are safe for concurrent use.
//
// Reads go to db. Writes go through a unit of work (Transact, or a
// single-statement write by write()) on wdb. On PostgreSQL both are the same pool.
// On SQLite, which has one writer at a time anyway, wdb is a pool of exactly one
// connection: writers queue in Go for that connection instead of spinning on
// SQLITE_BUSY with backoff (the cause of multi-second tail latencies under
// concurrent writes), while reads run in parallel on db beside them (WAL).
type Store struct {
	db   *gorm.DB
	wdb  *gorm.DB
	sql  *sql.DB
	wsql *sql.DB
	// eng is what this database does its own way (postgres.go, sqlite.go).
	eng engine
	// jobs inserts River jobs on a unit of work's *sql.Tx (see Tx.Enqueue).
	jobs *river.Client[*sql.Tx]
	// in is the unit of work this copy is bound to (Tx.store), nil for the
	// Store itself: a Transact on a bound copy runs in it and opens nothing.
	in *Tx
	// keys seal the stored secrets (UseSecrets; the development key until then).
	keys *secrets.Keyring
	// raw gives spans to the statements run on database/sql outside GORM (Trace;
	// nil while traces are not exported).
	raw *statementTracer
}

// Now is the clock every stored time comes from: UTC, truncated to microseconds,
// the precision both databases keep, so a value read back equals the value written.
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// ParseURL returns the dialect and driver DSN for a DATABASE_URL (dburl.Parse).
func ParseURL(url string) (Dialect, string, error) { return dburl.Parse(url) }

// Open connects to url (see ParseURL). It does not migrate; call Migrate. The
// PostgreSQL pool holds at most the URL's pool_max_conns connections
// (dburl.DefaultPoolSize when absent).
func Open(ctx context.Context, url string) (*Store, error) {
	dialect, dsn, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	newEngine, ok := engines[dialect]
	if !ok {
		return nil, fmt.Errorf("no store for %s databases", dialect)
	}
	s := &Store{eng: newEngine(), keys: secrets.Development()}
	// A failure to connect names the setting, so a newcomer knows what to change.
	if err := s.eng.connect(ctx, s, url, dsn); err != nil {
		return nil, fmt.Errorf("DATABASE_URL %s: %w", dburl.Redact(url), err)
	}
	if err := s.sql.PingContext(ctx); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("DATABASE_URL %s: connect to %s database: %w", dburl.Redact(url), dialect, err)
	}
	// An insert-only client (no queues, no workers): it writes jobs on a caller's
	// transaction and, on PostgreSQL, the NOTIFY that wakes the workers at commit.
	// It notifies a queue at most once per FetchCooldown: jobs.WebhookFetchCooldown,
	// so that a delivery committed just after a notification is not left for the
	// next poll.
	if err := s.newJobClient(nil); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// LockServing is taken by a serving process before it opens the database: on
// SQLite a second one is refused (one serving process per file); on PostgreSQL
// instances share the work and nothing is held. The error names DATABASE_URL.
func LockServing(url string) (release func(), err error) {
	dialect, _, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	newEngine, ok := engines[dialect]
	if !ok {
		return nil, fmt.Errorf("no store for %s databases", dialect)
	}
	release, err = newEngine().lockServing(url)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL %s: %w", dburl.Redact(url), err)
	}
	return release, nil
}

// newJobClient makes the store's insert-only River client with middleware
// (Trace adds the tracing one).
func (s *Store) newJobClient(middleware []rivertype.Middleware) error {
	c, err := river.NewClient(s.JobDriver(), &river.Config{Logger: quietLogger(), FetchCooldown: jobs.WebhookFetchCooldown, Middleware: middleware})
	if err != nil {
		return fmt.Errorf("job inserts: %w", err)
	}
	s.jobs = c
	return nil
}

func gormOpen(dial gorm.Dialector, prepare bool) (*gorm.DB, error) {
	db, err := gorm.Open(dial, &gorm.Config{
		PrepareStmt:    prepare,
		TranslateError: true,
		NowFunc:        Now,
		Logger:         logger.Discard,
		// Every multi-statement write runs in an explicit unit of work (Transact);
		// GORM's own wrapping of single statements would only add BEGIN/COMMIT.
		SkipDefaultTransaction: true,
	})
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	return db, nil
}

// JobDriver returns River's driver over this database, for the job runner and
// the store's own job inserts. On PostgreSQL it is River's database/sql driver
// over the same pool GORM uses, with a pgx (riverpgxv5) listener on the same
// pgx pool: jobs are inserted on the very *sql.Tx of a unit of work (so a job
// commits exactly with the change that scheduled it), and the insert's NOTIFY
// wakes every instance's workers through LISTEN at commit instead of at their
// next poll. On SQLite it is River's SQLite driver on the one-writer pool.
func (s *Store) JobDriver() riverdriver.Driver[*sql.Tx] { return s.eng.jobDriver(s) }

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// Dialect returns which database this is.
func (s *Store) Dialect() Dialect { return s.eng.dialect() }

// SQL returns the underlying *sql.DB that reads use (for tests and tools).
func (s *Store) SQL() *sql.DB { return s.sql }

// Close closes the connection pools.
func (s *Store) Close() error {
	err := s.sql.Close()
	if s.wsql != s.sql {
		err = errors.Join(err, s.wsql.Close())
	}
	s.eng.close()
	return err
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.sql.PingContext(ctx) }

func (s *Store) migrator() (*goose.Provider, error) {
	sub, err := fs.Sub(migrationsFS, "migrations/"+string(s.eng.dialect()))
	if err != nil {
		return nil, err
	}
	return goose.NewProvider(s.eng.gooseDialect(), s.wsql, sub, goose.WithDisableGlobalRegistry(true))
}

func (s *Store) jobMigrator() (*rivermigrate.Migrator[*sql.Tx], error) {
	return rivermigrate.New(s.JobDriver(), &rivermigrate.Config{Logger: quietLogger()})
}

// Migrate applies every pending migration, the application's (goose, per
// dialect) and River's, and returns how many of the application's ran. On
// PostgreSQL one advisory lock covers both, so instances starting together
// migrate one after the other; SQLite serves one process.
func (s *Store) Migrate(ctx context.Context) (int, error) {
	p, err := s.migrator()
	if err != nil {
		return 0, fmt.Errorf("load migrations: %w", err)
	}
	jm, err := s.jobMigrator()
	if err != nil {
		return 0, fmt.Errorf("load job queue migrations: %w", err)
	}
	var n int
	err = s.withMigrationLock(ctx, func() error {
		res, err := p.Up(ctx)
		n = len(res)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if _, err := jm.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
			return fmt.Errorf("job queue migrations: %w", err)
		}
		return nil
	})
	return n, err
}

// PendingMigrations reports whether migrations (the application's or River's)
// remain to be applied (readiness).
func (s *Store) PendingMigrations(ctx context.Context) (bool, error) {
	p, err := s.migrator()
	if err != nil {
		return false, err
	}
	if pending, err := p.HasPending(ctx); err != nil || pending {
		return pending, err
	}
	jm, err := s.jobMigrator()
	if err != nil {
		return false, err
	}
	res, err := jm.Validate(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("check job queue migrations: %w", err)
	}
	return !res.OK, nil
}

// withMigrationLock runs fn while this store holds its database's migration lock
// (engine.withMigrationLock), so two migrators of one database never run at once.
// fn's statements use other connections: the lock only serializes migrators.
func (s *Store) withMigrationLock(ctx context.Context, fn func() error) error {
	return s.eng.withMigrationLock(ctx, s, fn)
}

// notFound returns apperr NotFound for gorm.ErrRecordNotFound, else err wrapped with what.
func notFound(err error, what string) error {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return apperr.New(apperr.NotFound, fmt.Sprintf("The %s was not found.", what))
	}
	return fmt.Errorf("load %s: %w", what, err)
}

// QueueDepth returns how many jobs wait in River's queue (available, scheduled,
// retryable or pending), for the queue-depth metric.
func (s *Store) QueueDepth(ctx context.Context) (float64, error) {
	var n int64
	err := s.db.WithContext(ctx).Raw(`SELECT count(*) FROM river_job WHERE state IN ('available', 'scheduled', 'retryable', 'pending')`).Scan(&n).Error
	return float64(n), err
}

// MaxConns returns how many connections the PostgreSQL pool opens at most (0 on
// SQLite, which has one writer and a small read pool).
func (s *Store) MaxConns() int { return s.eng.maxConns() }
