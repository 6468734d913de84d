// Package store persists the service's data through GORM on PostgreSQL (production)
// or an embedded SQLite file (local runs). One code path serves both; the few
// differences live in per-dialect migrations and in the Dialect checks below. The
// same conformance suite (store_test.go) runs against both databases.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	neturl "net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"partnerd/internal/apperr"
)

// Dialect names the database behind a Store.
type Dialect string

// The supported dialects.
const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)

// DefaultURL is used when DATABASE_URL is unset: the embedded database.
const DefaultURL = "sqlite:data/partnerd.db"

//go:embed migrations
var migrationsFS embed.FS

// Store is the database. Its methods are safe for concurrent use.
type Store struct {
	db      *gorm.DB
	sql     *sql.DB
	dialect Dialect
}

// Now is the clock every stored time comes from: UTC, truncated to microseconds,
// the precision both databases keep, so a value read back equals the value written.
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// ParseURL returns the dialect and driver DSN for a DATABASE_URL: "postgres://…" or
// "postgresql://…" for PostgreSQL (an optional pool_max_conns=N caps the pool),
// "sqlite:PATH" for the embedded database.
func ParseURL(url string) (Dialect, string, error) {
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		dsn, _, err := poolSize(url)
		if err != nil {
			return "", "", err
		}
		return Postgres, dsn, nil
	case strings.HasPrefix(url, "sqlite:"):
		path := strings.TrimPrefix(url, "sqlite:")
		if path == "" {
			return "", "", errors.New("DATABASE_URL sqlite: needs a file path, e.g. sqlite:data/partnerd.db")
		}
		// Foreign keys are off by default in SQLite; WAL lets readers run beside the
		// writer; immediate transactions take the write lock up front so two writers
		// wait (busy_timeout) instead of failing on a lock upgrade.
		return SQLite, "file:" + path + "?_foreign_keys=on&_journal_mode=WAL&_busy_timeout=10000&_txlock=immediate", nil
	default:
		return "", "", fmt.Errorf("DATABASE_URL %q: want postgres://… or sqlite:PATH", redact(url))
	}
}

// Open connects to url (see ParseURL). It does not migrate; call Migrate.
func Open(ctx context.Context, url string) (*Store, error) {
	dialect, dsn, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	cfg := &gorm.Config{
		TranslateError: true,
		NowFunc:        Now,
		Logger:         logger.Discard,
	}
	var dial gorm.Dialector
	switch dialect {
	case Postgres:
		dial = postgres.Open(dsn)
	case SQLite:
		path := strings.TrimPrefix(url, "sqlite:")
		if dir := filepath.Dir(path); dir != "." {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("create database directory: %w", err)
			}
		}
		dial = sqlite.Open(dsn)
	}
	db, err := gorm.Open(dial, cfg)
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", dialect, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	if dialect == Postgres {
		_, size, _ := poolSize(url) // validated by ParseURL
		sqlDB.SetMaxOpenConns(size)
		sqlDB.SetMaxIdleConns(min(size, 10))
		sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("connect to %s database: %w", dialect, err)
	}
	return &Store{db: db, sql: sqlDB, dialect: dialect}, nil
}

// DefaultPoolSize is how many PostgreSQL connections one Store opens at most when
// the URL does not say (pool_max_conns). Test helpers lower it once, before any
// Store opens, so every suite stays small on a shared server.
var DefaultPoolSize = 20

// poolSize takes the pool_max_conns parameter (pgxpool's name for it) out of a
// PostgreSQL URL, since the server would reject it as an unknown setting, and returns
// the URL without it and the size (DefaultPoolSize when absent). Tests pass a small
// one so several suites fit under the server's max_connections.
func poolSize(raw string) (string, int, error) {
	u, err := neturl.Parse(raw)
	if err != nil {
		return "", 0, fmt.Errorf("DATABASE_URL %q: %w", redact(raw), err)
	}
	q := u.Query()
	v := q.Get("pool_max_conns")
	if !q.Has("pool_max_conns") {
		return raw, DefaultPoolSize, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return "", 0, fmt.Errorf("DATABASE_URL pool_max_conns=%q: want a positive integer", v)
	}
	q.Del("pool_max_conns")
	u.RawQuery = q.Encode()
	return u.String(), n, nil
}

// Dialect returns which database this is.
func (s *Store) Dialect() Dialect { return s.dialect }

// SQL returns the underlying *sql.DB (for migrations and readiness checks).
func (s *Store) SQL() *sql.DB { return s.sql }

// Close closes the connection pool.
func (s *Store) Close() error { return s.sql.Close() }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.sql.PingContext(ctx) }

func (s *Store) migrator() (*goose.Provider, error) {
	sub, err := fs.Sub(migrationsFS, "migrations/"+string(s.dialect))
	if err != nil {
		return nil, err
	}
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true)}
	dialect := goose.DialectSQLite3
	if s.dialect == Postgres {
		dialect = goose.DialectPostgres
		// Several instances may start at once; an advisory lock makes one migrate
		// while the others wait.
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return nil, err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	return goose.NewProvider(dialect, s.sql, sub, opts...)
}

// Migrate applies every pending migration of this dialect and returns how many ran.
func (s *Store) Migrate(ctx context.Context) (int, error) {
	p, err := s.migrator()
	if err != nil {
		return 0, fmt.Errorf("load migrations: %w", err)
	}
	res, err := p.Up(ctx)
	if err != nil {
		return len(res), fmt.Errorf("migrate: %w", err)
	}
	return len(res), nil
}

// PendingMigrations reports whether migrations remain to be applied (readiness).
func (s *Store) PendingMigrations(ctx context.Context) (bool, error) {
	p, err := s.migrator()
	if err != nil {
		return false, err
	}
	return p.HasPending(ctx)
}

// notFound returns apperr NotFound for gorm.ErrRecordNotFound, else err wrapped with what.
func notFound(err error, what string) error {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return apperr.New(apperr.NotFound, fmt.Sprintf("The %s was not found.", what))
	}
	return fmt.Errorf("load %s: %w", what, err)
}

// redact hides a password in a database URL before it reaches a message.
func redact(url string) string {
	at := strings.LastIndex(url, "@")
	scheme := strings.Index(url, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return url
	}
	creds := url[scheme+3 : at]
	if i := strings.Index(creds, ":"); i >= 0 {
		return url[:scheme+3] + creds[:i] + ":***" + url[at:]
	}
	return url
}

// QueueDepth returns how many jobs wait in River's queue (available, scheduled,
// retryable or pending), for the queue-depth metric.
func (s *Store) QueueDepth(ctx context.Context) (float64, error) {
	var n int64
	err := s.db.WithContext(ctx).Raw(`SELECT count(*) FROM river_job WHERE state IN ('available', 'scheduled', 'retryable', 'pending')`).Scan(&n).Error
	return float64(n), err
}
