// Package dburl is the grammar of DATABASE_URL: which database a URL names, the
// driver DSN it becomes and the pool size it asks for. Configuration validates a
// URL with it and the store opens one with it, so the two never disagree, and
// configuration needs nothing else of the store.
package dburl

import (
	"errors"
	"fmt"
	neturl "net/url"
	"strconv"
	"strings"
)

// Dialect names a database.
type Dialect string

// The supported dialects.
const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)

// Default is used when DATABASE_URL is unset: the embedded database.
const Default = "sqlite:data/partnerd.db"

// DefaultPoolSize is how many PostgreSQL connections one store opens at most when
// the URL does not say (pool_max_conns). Test helpers lower it once, before any
// store opens, so every suite stays small on a shared server.
var DefaultPoolSize = 20

// Parse returns the dialect and driver DSN for a DATABASE_URL: "postgres://…" or
// "postgresql://…" for PostgreSQL (an optional pool_max_conns=N caps the pool),
// "sqlite:PATH" for the embedded database.
func Parse(url string) (Dialect, string, error) {
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		dsn, _, err := PoolSize(url)
		if err != nil {
			return "", "", err
		}
		return Postgres, dsn, nil
	case strings.HasPrefix(url, "sqlite:"):
		path := SQLitePath(url)
		if path == "" {
			return "", "", errors.New("DATABASE_URL sqlite: needs a file path, e.g. sqlite:data/partnerd.db")
		}
		// Foreign keys are off by default in SQLite; WAL lets readers run beside the
		// writer, and with it synchronous=NORMAL is durable against a process crash
		// (a power loss may drop the last commits) at a fraction of FULL's fsyncs;
		// immediate transactions take the write lock up front so a writer never
		// fails on a lock upgrade; busy_timeout covers another process's writes.
		return SQLite, "file:" + path + "?_foreign_keys=on&_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=10000&_txlock=immediate", nil
	default:
		return "", "", fmt.Errorf("DATABASE_URL %q: want postgres://… or sqlite:PATH", Redact(url))
	}
}

// SQLitePath returns the file path of a "sqlite:PATH" URL.
func SQLitePath(url string) string { return strings.TrimPrefix(url, "sqlite:") }

// PoolSize takes the pool_max_conns parameter (pgxpool's name for it) out of a
// PostgreSQL URL, since the server would reject it as an unknown setting, and returns
// the URL without it and the size (DefaultPoolSize when absent). Tests pass a small
// one so several suites fit under the server's max_connections.
func PoolSize(raw string) (string, int, error) {
	u, err := neturl.Parse(raw)
	if err != nil {
		return "", 0, fmt.Errorf("DATABASE_URL %q: %w", Redact(raw), err)
	}
	q := u.Query()
	v := q.Get("pool_max_conns")
	if !q.Has("pool_max_conns") {
		return raw, DefaultPoolSize, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return "", 0, fmt.Errorf("DATABASE_URL pool_max_conns=%q: want a positive integer", v)
	}
	q.Del("pool_max_conns")
	u.RawQuery = q.Encode()
	return u.String(), n, nil
}

// Redact hides a password in a database URL before it reaches a message.
func Redact(url string) string {
	at := strings.LastIndex(url, "@")
	scheme := strings.Index(url, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return url
	}
	creds := url[scheme+3 : at]
	if i := strings.Index(creds, ":"); i >= 0 {
		return url[:scheme+3] + creds[:i] + ":***" + url[at:]
	}
	return url
}
