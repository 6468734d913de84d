package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"gorm.io/gorm"
)

// The write-behind of a unit of work. A write whose answer nobody needs before
// the unit of work's next statement (a history row, an outbox event, the stored
// answer of an idempotency key) waits on the Tx, and the writes waiting go to
// the database together, as one statement, just before the next statement of
// any kind, before a job is enqueued, or before the commit. A create's history
// row, its event and its key's answer are thus one round trip instead of three;
// what the unit of work reads still sees every write it made, in order, because
// nothing is read before the writes ahead of it are sent.
//
// On PostgreSQL the writes are data-modifying common table expressions of one
// statement (WITH w0 AS (INSERT … RETURNING …), w1 AS (…) SELECT …), which
// PostgreSQL runs as one. SQLite has no such statements and no network between
// the service and the database: there each write is sent when it is made.

// laterWrite is one INSERT (or upsert) waiting to be sent: query has GORM's ?
// placeholders and ends in "RETURNING <one boolean> AS r" (true when the caller
// needs no value). done, if set, is handed how many rows the write returned and
// whether any of their values was true, once it has been sent.
type laterWrite struct {
	query string
	args  []any
	done  func(ctx context.Context, rows int64, any bool) error
}

// later queues w (PostgreSQL) or sends it now (SQLite).
func (tx *Tx) later(ctx context.Context, w laterWrite) error {
	if !tx.s.eng.batchesWrites() {
		return tx.send(ctx, []laterWrite{w})
	}
	tx.behind = append(tx.behind, w)
	return nil
}

// flush sends the writes waiting, if any, and runs their done in order. Its
// error ends the unit of work (Transact returns it, whatever fn says).
func (tx *Tx) flush(ctx context.Context) error {
	if len(tx.behind) == 0 || tx.failed != nil {
		return tx.failed
	}
	ws := tx.behind
	tx.behind = nil
	for len(ws) > 0 {
		n := min(len(ws), maxBehind)
		if err := tx.send(ctx, ws[:n]); err != nil {
			tx.failed = err
			return err
		}
		ws = ws[n:]
	}
	return nil
}

// maxBehind is how many writes one statement carries at most: a bulk change
// (every pending event of a partner, say) goes in statements of this many, well
// inside PostgreSQL's limits on a statement's parameters and select list.
const maxBehind = 32

// send runs ws: as one statement on PostgreSQL, one by one on SQLite.
func (tx *Tx) send(ctx context.Context, ws []laterWrite) error {
	rows, flags := make([]int64, len(ws)), make([]bool, len(ws))
	if tx.s.eng.batchesWrites() {
		var q strings.Builder
		var args []any
		dest := make([]any, 0, 2*len(ws))
		nullFlags := make([]sql.NullBool, len(ws))
		q.WriteString("WITH ")
		for i, w := range ws {
			if i > 0 {
				q.WriteString(", ")
			}
			fmt.Fprintf(&q, "w%d AS (%s)", i, w.query)
			args = append(args, w.args...)
		}
		q.WriteString(" SELECT ")
		for i := range ws {
			if i > 0 {
				q.WriteString(", ")
			}
			fmt.Fprintf(&q, "(SELECT count(*) FROM w%d), (SELECT bool_or(r) FROM w%d)", i, i)
			dest = append(dest, &rows[i], &nullFlags[i])
		}
		if err := tx.direct.WithContext(ctx).Raw(q.String(), args...).Row().Scan(dest...); err != nil {
			return fmt.Errorf("write behind: %w", err)
		}
		for i := range ws {
			flags[i] = nullFlags[i].Bool
		}
	} else {
		for i, w := range ws {
			sqlRows, err := tx.direct.WithContext(ctx).Raw(w.query, w.args...).Rows()
			if err != nil {
				return err
			}
			for sqlRows.Next() {
				var r sql.NullBool
				if err := sqlRows.Scan(&r); err != nil {
					_ = sqlRows.Close()
					return err
				}
				rows[i]++
				flags[i] = flags[i] || r.Bool
			}
			if err := errors.Join(sqlRows.Err(), sqlRows.Close()); err != nil {
				return err
			}
		}
	}
	for i, w := range ws {
		if w.done == nil {
			continue
		}
		if err := w.done(ctx, rows[i], flags[i]); err != nil {
			return err
		}
	}
	return nil
}

// flushFirst is the connection pool of a unit of work that writes behind: every
// statement sends the writes waiting first.
type flushFirst struct {
	tx   *Tx
	pool gorm.ConnPool
}

func (f flushFirst) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	if err := f.tx.flush(ctx); err != nil {
		return nil, err
	}
	return f.pool.PrepareContext(ctx, query)
}

func (f flushFirst) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := f.tx.flush(ctx); err != nil {
		return nil, err
	}
	return f.pool.ExecContext(ctx, query, args...)
}

func (f flushFirst) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if err := f.tx.flush(ctx); err != nil {
		return nil, err
	}
	return f.pool.QueryContext(ctx, query, args...)
}

// QueryRowContext cannot hand back a failed flush's error itself (a *sql.Row is
// made only by database/sql): the statement then fails as the aborted
// transaction makes it, and the unit of work ends with the flush's error.
func (f flushFirst) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	_ = f.tx.flush(ctx)
	return f.pool.QueryRowContext(ctx, query, args...)
}
