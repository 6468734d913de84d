package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/riverqueue/river"
	"gorm.io/gorm"
)

// Tx is one unit of work: a database transaction and what must commit with it.
// Every multi-statement write of the service goes through one, opened by
// Transact. Domain packages see it through their own transaction interfaces
// (lifecycle.Tx, idempotency.Tx, …), which *Tx implements; their write methods
// exist only there, so a write outside a transaction does not compile.
//
// A Tx also carries what happens around the commit: jobs are inserted on it
// (Enqueue: they commit or roll back with the change that scheduled them), and
// AfterCommit hooks (metrics, transition logs) run only once the commit succeeded,
// so an observer never hears of a change that was rolled back.
type Tx struct {
	s     *Store
	db    *gorm.DB
	sqlTx *sql.Tx
	after []func()
	// undo runs when the unit of work is rolled back before its commit was sent
	// (what it took from outside the database goes back: an address index).
	undo []func()
	// heldIndexes are the address indexes the unit took (PostgreSQL).
	heldIndexes []*heldIndex
	// direct is db without the write-behind (PostgreSQL's flush runs on it).
	direct *gorm.DB
	// behind holds the writes waiting to go together (see later); failed is the
	// first error sending them, which the unit of work ends with.
	behind []laterWrite
	failed error
}

// Transact runs fn in a unit of work and commits it when fn returns nil; an error
// or a panic rolls everything back. fn is handed the unit of work; whatever must
// happen in it is given that tx as a parameter (nothing finds it in ctx). A
// Transact on the Store bound to a unit of work (Tx.store: a Store statement made
// in one) runs fn in that unit and opens nothing. AfterCommit hooks run after the
// commit.
func (s *Store) Transact(ctx context.Context, fn func(ctx context.Context, tx *Tx) error) (err error) {
	if s.in != nil {
		return fn(ctx, s.in)
	}
	release, err := s.eng.queueWriter(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer release()
	sqlTx, err := s.wsql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	tx := &Tx{s: s, sqlTx: sqlTx}
	// Two GORM sessions on this transaction: db, every statement of the unit
	// of work (sending the writes behind first where the engine batches them),
	// and direct, on which they are sent.
	pool := s.eng.unitPool(sqlTx)
	tx.db, tx.direct = tx.session(ctx, pool), tx.session(ctx, pool)
	if s.eng.batchesWrites() {
		tx.db.Statement.ConnPool = flushFirst{tx, pool}
	}
	committing := false
	defer func() {
		if p := recover(); p != nil {
			_ = sqlTx.Rollback()
			tx.undone()
			panic(p)
		}
		if err != nil {
			_ = sqlTx.Rollback()
			if !committing {
				// A failed commit may still have landed: what the unit took stays taken.
				tx.undone()
			}
		}
	}()
	if err = fn(ctx, tx); err == nil {
		err = tx.flush(ctx)
	}
	if tx.failed != nil {
		// A statement fn made after a failed flush failed too, for that reason.
		err = tx.failed
	}
	if err != nil {
		return err
	}
	committing = true
	if err = sqlTx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	s.eng.committed(ctx)
	release() // the observers below may write on their own
	for _, f := range tx.after {
		f()
	}
	return nil
}

// session is a GORM session on the unit of work's connection pool: the same
// thing gorm.DB.Begin builds, but on a *sql.Tx we own, so River can insert on it
// too. (A session made with a context has a statement of its own.)
func (tx *Tx) session(ctx context.Context, pool gorm.ConnPool) *gorm.DB {
	db := tx.s.wdb.Session(&gorm.Session{NewDB: true, Context: ctx})
	db.Statement.ConnPool = pool
	return db
}

// store is the Store's statements bound to this unit of work: its pools are the
// transaction. The Tx methods that are a Store query or write made inside a unit
// of work (the deposit watcher's bookkeeping, say) are one line over it, so the
// statement is written once and the transaction is handed on, never looked up.
func (tx *Tx) store() *Store {
	c := *tx.s
	c.db, c.wdb = tx.db, tx.db
	c.sql, c.wsql = nil, nil
	c.in = tx
	return &c
}

// onRollback runs f if the unit of work is rolled back before its commit is
// sent: it never committed, so what it took may be handed out again.
func (tx *Tx) onRollback(f func()) { tx.undo = append(tx.undo, f) }

// undone runs the rollback hooks, latest first.
func (tx *Tx) undone() {
	for i := len(tx.undo) - 1; i >= 0; i-- {
		tx.undo[i]()
	}
	tx.undo = nil
}

// AfterCommit runs f once the unit of work has committed (never if it rolls
// back). Hooks run in the order they were added.
func (tx *Tx) AfterCommit(f func()) { tx.after = append(tx.after, f) }

// Enqueue inserts a River job on this unit of work: it exists exactly when the
// change that scheduled it commits.
func (tx *Tx) Enqueue(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) error {
	if err := tx.flush(ctx); err != nil {
		return err
	}
	if _, err := tx.s.jobs.InsertTx(ctx, tx.sqlTx, args, opts); err != nil {
		return fmt.Errorf("enqueue %s: %w", args.Kind(), err)
	}
	return nil
}

// Dialect returns the database behind the unit of work.
func (tx *Tx) Dialect() Dialect { return tx.s.eng.dialect() }

// read returns where the Store's queries go: the read pool, or the unit of work
// this Store is bound to (Tx.store), so a query made in a unit sees its writes.
func (s *Store) read(ctx context.Context) *gorm.DB { return s.db.WithContext(ctx) }

// write returns where the Store's single-statement writes go: the write pool
// (SQLite's one writer), or the unit of work this Store is bound to (Tx.store).
func (s *Store) write(ctx context.Context) *gorm.DB { return s.wdb.WithContext(ctx) }

// Scoped is the store as one domain package sees it: every read of the Store,
// and WithTx handing fn the unit of work as that package's transaction interface
// T. Build it with For.
type Scoped[T any] struct {
	*Store
	as func(*Tx) T
}

// For returns s scoped to the transaction interface T, which as converts a unit
// of work to (func(tx *store.Tx) T { return tx }): the compiler checks that *Tx
// implements T, so no unit of work is type-checked at run time.
func For[T any](s *Store, as func(*Tx) T) Scoped[T] { return Scoped[T]{s, as} }

// WithTx runs fn in a unit of work (Transact), as T.
func (s Scoped[T]) WithTx(ctx context.Context, fn func(ctx context.Context, tx T) error) error {
	return s.Transact(ctx, func(ctx context.Context, tx *Tx) error { return fn(ctx, s.as(tx)) })
}
