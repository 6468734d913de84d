// Package testdb gives tests real databases: a fresh PostgreSQL database per test
// package (created on the server named by TEST_DATABASE_URL and dropped afterwards)
// and a fresh SQLite file per call. A PostgreSQL server that does not answer fails
// the tests: they never skip because a database is missing.
package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx" for admin statements

	"partnerd/internal/kit/dburl"
)

// DefaultAdminURL is used when TEST_DATABASE_URL is unset; it answers on the project's
// machines, and `make test` starts a throwaway server where it does not.
const DefaultAdminURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// PoolSize caps each PostgreSQL connection pool a test process opens through
// store.Open. A test package holds a few pools at once (a running service, the
// test's own store, a second instance); with go test running two packages in
// parallel and another suite possibly beside it on the same server, small pools keep
// the total well under PostgreSQL's max_connections (100 by default) instead of
// failing with "too many clients already".
const PoolSize = 4

func init() { dburl.DefaultPoolSize = PoolSize }

// WithPoolSize returns a PostgreSQL url whose store.Open pool is capped at n
// connections (pool_max_conns). Other URLs are returned as they are. Only
// store.Open understands the parameter; do not pass the result to sql.Open.
func WithPoolSize(raw string, n int) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return raw
	}
	q := u.Query()
	q.Set("pool_max_conns", fmt.Sprint(n))
	u.RawQuery = q.Encode()
	return u.String()
}

// Database is one database to run a suite against.
type Database struct {
	// Name is "postgres" or "sqlite", for subtest names.
	Name string
	// URL is a DATABASE_URL for store.Open.
	URL string
}

var (
	mu      sync.Mutex
	created []string
	pgOnce  sync.Once
	pgURL   string
	pgErr   error
)

// DefaultRedisURL is used when TEST_REDIS_URL is unset; `make test` starts a
// throwaway Redis (scripts/test-redis.sh) and sets TEST_REDIS_URL where none answers.
const DefaultRedisURL = "redis://127.0.0.1:6379/0"

// RedisURL returns the Redis the tests share (TEST_REDIS_URL, else DefaultRedisURL).
// Tests keep their keys apart by prefix; a Redis that does not answer fails them.
func RedisURL() string {
	if u := os.Getenv("TEST_REDIS_URL"); u != "" {
		return u
	}
	return DefaultRedisURL
}

// AdminURL returns the server URL tests create their databases on.
func AdminURL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultAdminURL
}

// Postgres returns the URL of this test package's own PostgreSQL database, creating
// it on first use. It fails t when the server does not answer.
func Postgres(t testing.TB) string {
	t.Helper()
	pgOnce.Do(func() { pgURL, pgErr = createDatabase() })
	if pgErr != nil {
		t.Fatalf("PostgreSQL is required for this suite and did not answer at %s: %v\n"+
			"run `make test` (it starts a throwaway server when none answers) or set TEST_DATABASE_URL", redacted(AdminURL()), pgErr)
	}
	return pgURL
}

// SQLite returns the URL of a fresh SQLite database file in t's temporary directory.
func SQLite(t testing.TB) string {
	t.Helper()
	return "sqlite:" + filepath.Join(t.TempDir(), "partnerd.db")
}

// PostgresSchema returns the URL of a fresh schema in this test package's
// PostgreSQL database (its connections use it through search_path), so a test can
// run background workers that never see another test's rows.
func PostgresSchema(t testing.TB) string {
	t.Helper()
	base := Postgres(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "s_" + hex.EncodeToString(b)
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Both returns a PostgreSQL database (a fresh schema of the package's database) and
// a fresh SQLite database: the two a conformance suite runs on.
func Both(t testing.TB) []Database {
	t.Helper()
	return []Database{{Name: "postgres", URL: PostgresSchema(t)}, {Name: "sqlite", URL: SQLite(t)}}
}

// Main runs the package's tests and drops the databases they created. Call it from
// TestMain: os.Exit(testdb.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	mu.Lock()
	defer mu.Unlock()
	for _, name := range created {
		if err := dropDatabase(name); err != nil {
			fmt.Fprintf(os.Stderr, "testdb: drop %s: %v\n", name, err)
		}
	}
	return code
}

// MainParallel is Main for a package whose tests mostly wait (on a chain, a server,
// a timer) rather than compute: up to n of its tests marked t.Parallel run at once.
// go test's default is GOMAXPROCS (2 on a small machine), which leaves such a
// package idle most of its run; a -parallel given on the command line still wins.
// n also bounds the package's PostgreSQL connections (each test holds a few pools
// of PoolSize), so keep it well under max_connections / (3 × PoolSize).
//
// Under the race detector the default stays: instrumented, the same tests compute
// several times as much and no longer mostly wait, and six at once on two cores
// starved the scanner's timing-bound tests (a 1,500-block catch-up not done in time,
// a healthy provider taken for a hung one).
func MainParallel(m *testing.M, n int) int {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := raceDetector
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
			fmt.Fprintf(os.Stderr, "testdb: -test.parallel: %v\n", err)
		}
	}
	return Main(m)
}

func createDatabase() (string, error) {
	admin := AdminURL()
	db, err := sql.Open("pgx", admin)
	if err != nil {
		return "", err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		return "", err
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "partnerd_test_" + hex.EncodeToString(b)
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	mu.Lock()
	created = append(created, name)
	mu.Unlock()
	u, err := url.Parse(admin)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

func dropDatabase(name string) error {
	db, err := sql.Open("pgx", AdminURL())
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	return err
}

func redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}
