package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"partnerd/internal/dburl"
)

// lockSQLite refuses a second `serve` on one SQLite file: two serving processes
// would each run the chain watchers, the job workers and the expiry sweeps on one
// writer, which SQLite serialises into timeouts. It holds an exclusive lock on a
// file beside the database (PATH.serve.lock) until the process ends; the
// commands that only read or add a row (partners create, addresses export, …)
// do not take it. PostgreSQL needs no such lock (instances share work through it).
func lockSQLite(databaseURL string) (release func(), err error) {
	dialect, _, err := dburl.Parse(databaseURL)
	if err != nil || dialect != dburl.SQLite {
		return func() {}, err
	}
	path := dburl.SQLitePath(databaseURL)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("DATABASE_URL %s: %w", databaseURL, err)
	}
	f, err := os.OpenFile(path+".serve.lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL %s: %w", databaseURL, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("DATABASE_URL %s: another partnerd serve is using this SQLite file (one serving process per file: stop the other, or set DATABASE_URL to another file, or use PostgreSQL for several instances)", databaseURL)
	}
	return func() { _ = f.Close() }, nil
}
