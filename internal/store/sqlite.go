package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/shopspring/decimal"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"

	"partnerd/internal/kit/dburl"
	"partnerd/internal/webhook"
)

// sqliteEngine is the store on an embedded SQLite file (local runs, one
// instance): one writer connection that units of work queue for in Go, a read
// pool beside it (WAL), locks within the process keyed by the database file, an
// address counter row, and amounts summed in Go.
type sqliteEngine struct {
	// file is the database file's absolute path with symbolic links resolved,
	// which names the database for the in-process locks.
	file string
	// writer holds a token while a unit of work has the one writer (queueWriter).
	writer chan struct{}
	// stopCheckpoints ends the checkpointer; checkpointsDone is closed when it has.
	stopCheckpoints chan struct{}
	checkpointsDone chan struct{}
	// stmts are the writer's prepared statements.
	stmts *writerStatements
}

// checkpointEvery is how often the checkpointer copies the write-ahead log into
// the database file.
const checkpointEvery = 100 * time.Millisecond

func init() { engines[SQLite] = func() engine { return &sqliteEngine{} } }

func (*sqliteEngine) dialect() Dialect { return SQLite }

func (*sqliteEngine) dbSystem() attribute.KeyValue { return semconv.DBSystemNameSQLite }

// connect opens the one-writer pool and the read pool. Writers queue in Go for
// the one writer connection instead of spinning on SQLITE_BUSY with backoff (the
// cause of multi-second tail latencies under concurrent writes), while reads run
// in parallel beside them.
func (e *sqliteEngine) connect(_ context.Context, s *Store, url, dsn string) error {
	path := dburl.SQLitePath(url)
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create database directory: %w", err)
		}
	}
	e.file = databaseFile(path)
	// SQLite compiles every statement it is given: prepared statements kept per
	// connection (GORM's PrepareStmt) spare that on every read. Not on the one
	// writer connection: GORM prepares a statement it has not seen under a lock
	// shared by the pool, on a connection of the pool, so a write outside a unit
	// of work preparing (and waiting for the writer) while the unit of work holding
	// the writer prepares its next statement (and waits for the lock) deadlock
	// until a deadline.
	var err error
	if s.wdb, err = gormOpen(sqlite.Open(dsn), false); err != nil {
		return err
	}
	if s.wsql, err = s.wdb.DB(); err != nil {
		return err
	}
	s.wsql.SetMaxOpenConns(1)
	s.wsql.SetMaxIdleConns(1)
	s.wsql.SetConnMaxIdleTime(0)
	s.wsql.SetConnMaxLifetime(0)
	readDSN := strings.Replace(dsn, "&_txlock=immediate", "", 1)
	if s.db, err = gormOpen(sqlite.Open(readDSN), true); err != nil {
		_ = s.wsql.Close()
		return err
	}
	if s.sql, err = s.db.DB(); err != nil {
		return err
	}
	s.sql.SetMaxOpenConns(max(4, runtime.GOMAXPROCS(0)*2))
	// SQLite checkpoints by default in the commit that fills the log past 1,000
	// pages: every 50 to 100 creates, one of them copied the log into the file and
	// synced it while holding the one writer, with every queued writer behind it
	// (most of the creates' p99). The writer's connection no longer checkpoints;
	// a goroutine does, on a connection of the read pool, without blocking writers
	// (PASSIVE). Should the writer's connection be replaced, the new one
	// checkpoints by itself again, as before.
	if _, err := s.wsql.Exec("PRAGMA wal_autocheckpoint = 0"); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	e.writer = make(chan struct{}, 1)
	e.stmts = newWriterStatements(s.wsql)
	e.stopCheckpoints, e.checkpointsDone = make(chan struct{}), make(chan struct{})
	go e.checkpoint(s.sql)
	return nil
}

// checkpoint copies the write-ahead log into the database file every
// checkpointEvery until close. A failed checkpoint is tried again at the next
// tick: the log only grows meanwhile.
func (e *sqliteEngine) checkpoint(db *sql.DB) {
	defer close(e.checkpointsDone)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-e.stopCheckpoints:
			return
		case <-t.C:
			_, _ = db.Exec("PRAGMA wal_checkpoint(PASSIVE)")
		}
	}
}

func (e *sqliteEngine) close() {
	if e.stopCheckpoints != nil {
		close(e.stopCheckpoints)
		<-e.checkpointsDone
		e.stopCheckpoints = nil
	}
}

// queueWriter queues the units of work for the one writer in arrival order: a
// goroutine blocked sending on a channel is served first in, first out. Left to
// database/sql's pool, the writer connection went to a waiter picked at random
// (sql.DB hands a freed connection to a random request), so with 16 creates
// waiting one in a hundred waited for some 70 others instead of at most 15:
// that, not the work, was most of the creates' p99.
func (e *sqliteEngine) queueWriter(ctx context.Context) (func(), error) {
	select {
	case e.writer <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var once sync.Once
	return func() { once.Do(func() { <-e.writer }) }, nil
}

func (*sqliteEngine) maxConns() int { return 0 }

// jobDriver is River's SQLite driver on the one-writer pool.
func (*sqliteEngine) jobDriver(s *Store) riverdriver.Driver[*sql.Tx] { return riversqlite.New(s.wsql) }

func (*sqliteEngine) gooseDialect() goose.Dialect { return goose.DialectSQLite3 }

// localLocks holds SQLite's locks: database file + "\x00" + name → *sync.Mutex. Keyed
// by the file, so two stores on one database file exclude each other and stores on
// different files (parallel tests, say) do not.
var localLocks sync.Map

func (e *sqliteEngine) lock(name string) *sync.Mutex {
	v, _ := localLocks.LoadOrStore(e.file+"\x00"+name, &sync.Mutex{})
	return v.(*sync.Mutex)
}

// withMigrationLock holds this process's migration lock of the database file, so
// two stores opened on one file never migrate it at once.
func (e *sqliteEngine) withMigrationLock(_ context.Context, _ *Store, fn func() error) error {
	mu := e.lock("migrate")
	mu.Lock()
	defer mu.Unlock()
	return fn()
}

// tryLock is a lock within this process on the database file and the name:
// SQLite serves a single instance.
func (e *sqliteEngine) tryLock(_ context.Context, _ *Store, name string) (*ChainLock, bool, error) {
	mu := e.lock(name)
	if !mu.TryLock() {
		return nil, false, nil
	}
	return &ChainLock{release: mu.Unlock}, true, nil
}

// ensureAddressSequences has nothing to prepare: the counter row is created on
// first use.
func (*sqliteEngine) ensureAddressSequences(context.Context, *Store, []string) error { return nil }

// nextAddressIndex increments network's counter row inside the caller's unit of
// work: SQLite has one writer at a time anyway.
func (*sqliteEngine) nextAddressIndex(ctx context.Context, tx *Tx, network string) (int64, error) {
	var next int64
	err := tx.db.WithContext(ctx).Raw(`INSERT INTO address_counters (network, next_index) VALUES (?, 1)
			ON CONFLICT (network) DO UPDATE SET next_index = address_counters.next_index + 1
			RETURNING next_index`, network).Scan(&next).Error
	return next, err
}

// releaseAddressIndex puts the counter back by one: this unit of work holds the
// one writer, so nobody took a later index since.
func (*sqliteEngine) releaseAddressIndex(ctx context.Context, tx *Tx, network string, index uint32) error {
	return tx.db.WithContext(ctx).Exec(`UPDATE address_counters SET next_index = ? WHERE network = ? AND next_index = ?`,
		int64(index), network, int64(index)+1).Error
}

// unitPool runs a unit of work's statements through its transaction with the
// writer's prepared statements; committed prepares the ones it ran unprepared,
// while the unit of work still holds the writer.
func (e *sqliteEngine) unitPool(tx *sql.Tx) gorm.ConnPool { return preparedTx{tx, e.stmts} }

func (e *sqliteEngine) committed(ctx context.Context) { e.stmts.prepareWanted(ctx) }

// batchesWrites: no, each write is sent when it is made (in process, and
// SQLite's WITH clauses do not write).
func (*sqliteEngine) batchesWrites() bool { return false }

// locksRows: the one writer serialises the units of work already.
func (*sqliteEngine) locksRows() bool { return false }

// timeParam: SQLite keeps times as text; a cast would change them.
func (*sqliteEngine) timeParam() string { return "?" }

// lockServing holds an exclusive lock on a file beside the database
// (PATH.serve.lock) until release or the process's end: two serving processes
// would each run the chain watchers, job workers and sweeps on one writer, which
// SQLite serialises into timeouts.
func (*sqliteEngine) lockServing(url string) (func(), error) {
	path := dburl.SQLitePath(url)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path+".serve.lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, errors.New("another partnerd serve is using this SQLite file (one serving process per file: stop the other, set DATABASE_URL to another file, or use PostgreSQL for several instances)")
	}
	return func() { _ = f.Close() }, nil
}

// countSums streams the values and adds them in Go: SQLite keeps amounts as
// text, and its SUM would add them as floats.
func (*sqliteEngine) countSums(q *gorm.DB, columns ...string) (int64, []decimal.Decimal, error) {
	rows, err := q.Select(strings.Join(columns, ", ")).Rows()
	if err != nil {
		return 0, nil, err
	}
	defer rows.Close()
	var n int64
	sums := make([]decimal.Decimal, len(columns))
	vals := make([]decimal.Decimal, len(columns))
	dest := make([]any, len(columns))
	for i := range vals {
		dest[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return 0, nil, err
		}
		n++
		for i, v := range vals {
			sums[i] = sums[i].Add(v)
		}
	}
	return n, sums, rows.Err()
}

// saveEventState: no single-statement form; the caller runs the steps.
func (*sqliteEngine) saveEventState(context.Context, *Store, *webhook.Event, *webhook.Attempt, time.Time) (bool, bool, error) {
	return false, false, nil
}

// takeDelivery: no single-statement form; the caller runs the steps.
func (*sqliteEngine) takeDelivery(context.Context, *Store, uuid.UUID) (*webhook.Event, *webhook.Endpoint, bool, bool, error) {
	return nil, nil, false, false, nil
}

// databaseFile returns the one name of a SQLite database file however it is
// reached (relative path, symbolic link).
func databaseFile(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	return path
}
