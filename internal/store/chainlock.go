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

// localLocks holds SQLite's locks: database file + "\x00" + name → *sync.Mutex. Keyed
// by the file, so two stores on one database file exclude each other and stores on
// different files (parallel tests, say) do not.
var localLocks sync.Map

// TryLock takes the lock named name if no one holds it. On PostgreSQL it is a
// session-level advisory lock on the name and the schema (so two deployments
// sharing a database do not exclude each other), held on a
// connection taken from the pool for as long as the lock is held: every instance
// on the database competes for it, and a holder that dies (or loses its
// connection) releases it with its session. SQLite serves a single instance, so
// there it is a lock within this process on the database file and the name.
func (s *Store) TryLock(ctx context.Context, name string) (*ChainLock, bool, error) {
	if s.dialect != Postgres {
		v, _ := localLocks.LoadOrStore(s.file+"\x00"+name, &sync.Mutex{})
		mu := v.(*sync.Mutex)
		if !mu.TryLock() {
			return nil, false, nil
		}
		return &ChainLock{release: mu.Unlock}, true, nil
	}
	conn, err := s.sql.Conn(ctx)
	if err != nil {
		return nil, false, err
	}
	var ok bool
	if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock(hashtext($1 || current_schema()))", "partnerd/"+name+"@").Scan(&ok); err != nil {
		_ = conn.Close()
		return nil, false, err
	}
	if !ok {
		_ = conn.Close()
		return nil, false, nil
	}
	l := &ChainLock{conn: conn}
	l.release = func() {
		// Closing the session would release the lock too; unlocking first returns a
		// clean connection to the pool.
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(hashtext($1 || current_schema()))", "partnerd/"+name+"@")
		_ = conn.Close()
	}
	return l, true, nil
}
