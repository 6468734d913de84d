package store

import (
	"context"
	"slices"

	"gorm.io/gorm"
)

// MigrateTo applies the application's migrations up to version only, so a test
// can fill a database as an older release left it before a migration runs.
func (s *Store) MigrateTo(ctx context.Context, version int64) error {
	p, err := s.migrator()
	if err != nil {
		return err
	}
	_, err = p.UpTo(ctx, version)
	return err
}

// MigrateDownTo rolls the application's migrations back until version is the
// last applied, so a test can check a migration's Down.
func (s *Store) MigrateDownTo(ctx context.Context, version int64) error {
	p, err := s.migrator()
	if err != nil {
		return err
	}
	_, err = p.DownTo(ctx, version)
	return err
}

// WriterStatements reports how many statements SQLite's writer keeps prepared
// (0 on PostgreSQL).
func (s *Store) WriterStatements() int {
	if e, ok := s.eng.(*sqliteEngine); ok {
		e.stmts.mu.Lock()
		defer e.stmts.mu.Unlock()
		return len(e.stmts.ready)
	}
	return 0
}

// Statement is one statement the store ran, as sent: its SQL (with the
// database's placeholders) and its values.
type Statement struct {
	SQL  string
	Vars []any
}

// RecordReads calls fn with every read statement the store runs from now on
// (GORM's query and row paths), once it has run without error, so a test can
// examine the statements the store really issues.
func (s *Store) RecordReads(fn func(Statement)) error {
	record := func(db *gorm.DB) {
		if db.Error == nil && db.Statement.SQL.Len() > 0 {
			fn(Statement{SQL: db.Statement.SQL.String(), Vars: slices.Clone(db.Statement.Vars)})
		}
	}
	if err := s.db.Callback().Query().After("gorm:query").Register("test:record_query", record); err != nil {
		return err
	}
	return s.db.Callback().Row().After("gorm:row").Register("test:record_row", record)
}

// Exec runs statement in the unit of work, so a test can write rows as an older
// schema holds them (the store's own writes name today's columns).
func (tx *Tx) Exec(ctx context.Context, statement string, args ...any) error {
	return tx.db.WithContext(ctx).Exec(statement, args...).Error
}
