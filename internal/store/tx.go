package store

import (
	"context"
	"database/sql"

	"gorm.io/gorm"
)

type txKey struct{}

// conn returns the database transaction carried by ctx, or the pool. Every query
// goes through it, so a domain service can group store calls in InTx without the
// store's methods taking a transaction argument.
func (s *Store) conn(ctx context.Context) *gorm.DB {
	if tx, ok := ctx.Value(txKey{}).(*gorm.DB); ok {
		return tx
	}
	return s.db.WithContext(ctx)
}

// InTx runs fn in a database transaction carried by the context it passes to fn.
// Inside another transaction it uses a savepoint, so fn's failure undoes only fn's
// writes and the outer transaction can go on (on PostgreSQL a failed statement would
// otherwise abort the whole transaction).
func (s *Store) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	return s.conn(ctx).Transaction(func(tx *gorm.DB) error {
		return fn(context.WithValue(ctx, txKey{}, tx))
	})
}

// Tx is a database transaction opened by Begin.
type Tx struct{ db *gorm.DB }

// Begin opens a transaction and returns a context carrying it. The caller must end
// it with Commit or Rollback. It spans more than one service call: the
// idempotency layer uses it to commit a request's effects and its stored response
// together.
func (s *Store) Begin(ctx context.Context) (context.Context, *Tx, error) {
	tx := s.conn(ctx).Begin()
	if tx.Error != nil {
		return nil, nil, tx.Error
	}
	return context.WithValue(ctx, txKey{}, tx), &Tx{db: tx}, nil
}

// Commit commits the transaction.
func (t *Tx) Commit() error { return t.db.Commit().Error }

// Rollback rolls the transaction back; it is safe after Commit.
func (t *Tx) Rollback() { t.db.Rollback() }

// SQLTx returns the *sql.Tx of the database transaction ctx carries, for libraries
// that write through database/sql in the same transaction (River inserts its jobs so).
func (s *Store) SQLTx(ctx context.Context) (*sql.Tx, bool) {
	tx, ok := ctx.Value(txKey{}).(*gorm.DB)
	if !ok {
		return nil, false
	}
	sqlTx, ok := tx.Statement.ConnPool.(*sql.Tx)
	return sqlTx, ok
}
