package store

import (
	"context"
	"database/sql"
	"strings"
	"sync"
)

// writerStatements are the SQLite writer connection's prepared statements.
// SQLite compiles every statement it is given, and on the one writer that is
// time every queued unit of work waits for: a tenth to a sixth of a create's
// CPU, all of it while holding the writer. So the statements units of work run are
// prepared once on the writer's pool and each unit of work runs them through
// its own transaction (sql.Tx.StmtContext finds them already prepared on its
// connection, the pool's only one).
//
// A statement is prepared after the unit of work that first ran it has
// committed, while that unit still holds its turn as the writer: the connection
// is then back in the pool and no other unit of work can take it. (Preparing on
// the pool while a unit of work holds the only connection would wait for that
// unit, which would wait for the statement: GORM's own PrepareStmt does that,
// which is why the writer does not use it.)
type writerStatements struct {
	db     *sql.DB
	mu     sync.Mutex
	ready  map[string]*sql.Stmt
	wanted map[string]struct{}
}

// maxWriterStatements bounds how many statements the writer keeps prepared:
// the statements of the service's code, with room for the variants GORM builds
// (lists of different lengths); beyond it a statement is compiled each time.
const maxWriterStatements = 256

func newWriterStatements(db *sql.DB) *writerStatements {
	return &writerStatements{db: db, ready: map[string]*sql.Stmt{}, wanted: map[string]struct{}{}}
}

// get returns query's prepared statement, or nil after noting that it is
// wanted (it is prepared once the unit of work commits: prepareWanted).
func (w *writerStatements) get(query string) *sql.Stmt {
	w.mu.Lock()
	defer w.mu.Unlock()
	if st, ok := w.ready[query]; ok {
		return st
	}
	if len(w.ready)+len(w.wanted) < maxWriterStatements {
		w.wanted[query] = struct{}{}
	}
	return nil
}

// prepareWanted prepares the statements noted since the last call. A statement
// that does not prepare is left to be compiled each time, as before.
func (w *writerStatements) prepareWanted(ctx context.Context) {
	w.mu.Lock()
	wanted := w.wanted
	if len(wanted) == 0 {
		w.mu.Unlock()
		return
	}
	w.wanted = map[string]struct{}{}
	w.mu.Unlock()
	for q := range wanted {
		st, err := w.db.PrepareContext(ctx, q)
		if err != nil {
			continue
		}
		w.mu.Lock()
		w.ready[q] = st
		w.mu.Unlock()
	}
}

// preparedTx is a SQLite unit of work's connection pool: its transaction,
// running the writer's prepared statements where it has them.
type preparedTx struct {
	tx    *sql.Tx
	stmts *writerStatements
}

func (p preparedTx) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return p.tx.PrepareContext(ctx, query)
}

// ExecContext compiles a statement that returns rows each time: executed (not
// queried), a prepared one would stop at its first row and stay in progress,
// and SQLite refuses to commit a transaction with a statement in progress.
func (p preparedTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if strings.Contains(query, "RETURNING") {
		return p.tx.ExecContext(ctx, query, args...)
	}
	if st := p.stmts.get(query); st != nil {
		return p.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return p.tx.ExecContext(ctx, query, args...)
}

func (p preparedTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := p.stmts.get(query); st != nil {
		return p.tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return p.tx.QueryContext(ctx, query, args...)
}

func (p preparedTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := p.stmts.get(query); st != nil {
		return p.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return p.tx.QueryRowContext(ctx, query, args...)
}
