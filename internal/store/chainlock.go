package store

import (
	"context"
	"database/sql"
	"sync"
)

// ChainLock is a held scanner lock (see TryLock).
type ChainLock struct {
	conn    *sql.Conn // PostgreSQL: the session holding the advisory lock
	release func()
	once    sync.Once
}

// Alive checks that the lock's session still answers; when it does not, the lock
// may have been released by the server and must be taken again.
func (l *ChainLock) Alive(ctx context.Context) error {
	if l.conn == nil {
		return nil
	}
	return l.conn.PingContext(ctx)
}

// Release gives the lock up.
func (l *ChainLock) Release() { l.once.Do(l.release) }

// TryLock takes the lock named name if no one holds it (engine.tryLock: on
// PostgreSQL a session-level advisory lock every instance on the database
// competes for, released with its session when the holder dies; on SQLite, which
// serves a single instance, a lock within this process on the database file and
// the name).
func (s *Store) TryLock(ctx context.Context, name string) (*ChainLock, bool, error) {
	return s.eng.tryLock(ctx, s, name)
}
