package store

import "context"

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
