package jobs_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"partnerd/internal/jobs"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

func TestMain(m *testing.M) {
	// Keep Migrate's "Applied migration" lines out of the test output.
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	os.Exit(testdb.Main(m))
}

// fastPoll makes due jobs start promptly in tests.
const fastPoll = 50 * time.Millisecond

// env is one migrated database of a test.
type env struct {
	st      *store.Store
	dialect store.Dialect
	db      *sql.DB
}

// eachDatabase runs fn as a parallel subtest on PostgreSQL and on SQLite, each with
// River's tables migrated. Every call gets its own database: a fresh SQLite file, or
// a fresh schema of the package's PostgreSQL database (through search_path), so
// Runners of parallel tests never see each other's jobs.
func eachDatabase(t *testing.T, fn func(t *testing.T, e env)) {
	t.Helper()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, openEnv(t, db))
		})
	}
}

func openEnv(t *testing.T, db testdb.Database) env {
	t.Helper()
	ctx := context.Background()
	u := db.URL
	if db.Name == string(store.Postgres) {
		u = freshSchema(t, u)
	}
	s, err := store.Open(ctx, u) // pools capped by testdb
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	_, err = s.Migrate(ctx)
	require.NoError(t, err)
	return env{st: s, dialect: s.Dialect(), db: s.SQL()}
}

// freshSchema creates a schema in the database at dbURL and returns a URL whose
// connections use it.
func freshSchema(t *testing.T, dbURL string) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "jobs_" + hex.EncodeToString(b)
	admin, err := sql.Open("pgx", dbURL)
	require.NoError(t, err)
	defer admin.Close()
	_, err = admin.ExecContext(context.Background(), "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// fakeExpirer records the calls a Runner makes.
type fakeExpirer struct {
	delay time.Duration // how long Expire takes

	mu       sync.Mutex
	expired  map[uuid.UUID]int
	at       map[uuid.UUID]time.Time
	started  int
	finished int
	sweeps   []sweepCall
}

type sweepCall struct {
	now   time.Time
	limit int
}

func newFake() *fakeExpirer {
	return &fakeExpirer{expired: map[uuid.UUID]int{}, at: map[uuid.UUID]time.Time{}}
}

func (f *fakeExpirer) Expire(ctx context.Context, id uuid.UUID) error {
	f.mu.Lock()
	f.started++
	f.mu.Unlock()
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expired[id]++
	f.at[id] = time.Now()
	f.finished++
	return nil
}

func (f *fakeExpirer) ExpireDue(_ context.Context, now time.Time, limit int) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sweeps = append(f.sweeps, sweepCall{now: now, limit: limit})
	return 0, nil
}

func (f *fakeExpirer) count(id uuid.UUID) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.expired[id]
}

func (f *fakeExpirer) ranAt(id uuid.UUID) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.at[id]
}

func (f *fakeExpirer) progress() (started, finished int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.started, f.finished
}

func (f *fakeExpirer) sweepCalls() []sweepCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sweepCall(nil), f.sweeps...)
}

// logRecorder keeps the warnings and errors River logs, so a test can require that
// the database gave it no trouble (on SQLite: no "database is locked"). It ignores
// the errors River's maintenance services log when a Runner stops while they are
// starting or mid-transaction ("context canceled", "transaction has already been
// committed or rolled back"): shutdown noise, not database trouble.
type logRecorder struct {
	mu      sync.Mutex
	records []string
}

func (l *logRecorder) Enabled(_ context.Context, level slog.Level) bool {
	return level >= slog.LevelWarn
}

func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	if strings.Contains(b.String(), context.Canceled.Error()) || strings.Contains(b.String(), sql.ErrTxDone.Error()) {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, b.String())
	return nil
}

func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

func (l *logRecorder) logged() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.records...)
}

// newRunner returns a Runner on e that polls often, starts River's maintenance
// services without delay and records what River logs.
func newRunner(t *testing.T, e env, exp jobs.Expirer, opts jobs.Options) (*jobs.Runner, *logRecorder) {
	t.Helper()
	logs := &logRecorder{}
	opts.Logger = slog.New(logs)
	if opts.FetchPollInterval == 0 {
		opts.FetchPollInterval = fastPoll
	}
	r, err := jobs.NewRunner(e.st.JobDriver(), exp, jobs.WithoutStagger(opts))
	require.NoError(t, err)
	return r, logs
}

// startRunner starts a Runner on e. At cleanup it stops it and requires that River
// logged no warning or error.
func startRunner(t *testing.T, e env, exp jobs.Expirer, opts jobs.Options) *jobs.Runner {
	t.Helper()
	r, logs := newRunner(t, e, exp, opts)
	require.NoError(t, r.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, r.Stop(ctx))
		require.Empty(t, logs.logged(), "River logged warnings or errors")
	})
	return r
}

// insertExpiry inserts an expiry job the way the application inserts jobs: on a
// unit of work. It commits unless rollback is set.
func insertExpiry(t *testing.T, e env, id uuid.UUID, at time.Time, rollback bool) {
	t.Helper()
	err := insertExpiryTx(e.st, id, at, rollback)
	if rollback {
		require.ErrorIs(t, err, errRollback)
		return
	}
	require.NoError(t, err)
}

var errRollback = errors.New("roll back")

func insertExpiryTx(st *store.Store, id uuid.UUID, at time.Time, rollback bool) error {
	return st.Transact(context.Background(), func(ctx context.Context, tx *store.Tx) error {
		if err := tx.Enqueue(ctx, jobs.ExpireTransactionArgs{TransactionID: id}, &river.InsertOpts{ScheduledAt: at}); err != nil {
			return err
		}
		if rollback {
			return errRollback
		}
		return nil
	})
}

func jobCount(t *testing.T, e env, id uuid.UUID) int {
	t.Helper()
	var n int
	q := "SELECT count(*) FROM river_job WHERE kind = 'expire_transaction' AND args->>'transaction_id' = "
	if e.dialect == store.Postgres {
		q += "$1"
	} else {
		q += "?"
	}
	require.NoError(t, e.db.QueryRowContext(context.Background(), q, id.String()).Scan(&n))
	return n
}

// jobWait bounds how long a test waits for a job. River's leader makes scheduled
// jobs available every 5 s (looking 5 s ahead), so a job due sooner than that after
// its insert may start up to 5 s late. Tests insert their jobs before starting the
// Runner where they can: the new leader's first scheduling pass then makes them
// available and they start at their time.
const jobWait = 10 * time.Second

// soon returns a time d from now, at the millisecond precision SQLite keeps.
func soon(d time.Duration) time.Time { return time.Now().Add(d).Truncate(time.Millisecond) }

func TestNilDriver(t *testing.T) {
	t.Parallel()
	_, err := jobs.NewRunner(nil, newFake(), jobs.Options{})
	require.ErrorContains(t, err, "nil driver")
}

func TestCommittedExpiryRunsOnceAtItsTime(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, e env) {
		fake := newFake()
		early, earlyAt := uuid.New(), soon(300*time.Millisecond)
		insertExpiry(t, e, early, earlyAt, false)
		// Inserting it again, as a retried request would, adds no second job.
		insertExpiry(t, e, early, earlyAt, false)
		require.Equal(t, 1, jobCount(t, e, early))

		startRunner(t, e, fake, jobs.Options{})
		// Jobs inserted while the Runner runs, by concurrent transactions (on SQLite
		// they contend for the write lock with River's own queries).
		late, lateAt := uuid.New(), soon(200*time.Millisecond)
		insertExpiry(t, e, late, lateAt, false)
		more := make([]uuid.UUID, 40)
		errs := make(chan error, len(more))
		for i := range more {
			more[i] = uuid.New()
			go func() { errs <- insertExpiryTx(e.st, more[i], soon(100*time.Millisecond), false) }()
		}
		for range more {
			require.NoError(t, <-errs)
		}

		require.Eventually(t, func() bool { return fake.count(early) > 0 }, jobWait, 10*time.Millisecond)
		ran := fake.ranAt(early)
		require.False(t, ran.Before(earlyAt), "ran %s before its time", earlyAt.Sub(ran))
		require.WithinDuration(t, earlyAt, ran, 2*time.Second)

		require.Eventually(t, func() bool { return fake.count(late) > 0 }, jobWait, 10*time.Millisecond)
		require.False(t, fake.ranAt(late).Before(lateAt), "ran before its time")

		require.Eventually(t, func() bool { _, done := fake.progress(); return done >= 2+len(more) }, jobWait, 10*time.Millisecond)

		time.Sleep(300 * time.Millisecond)
		require.Equal(t, 1, fake.count(early))
		require.Equal(t, 1, fake.count(late))
		for _, id := range more {
			require.Equal(t, 1, fake.count(id))
		}
	})
}

func TestRolledBackExpiryNeverRuns(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, e env) {
		at := soon(200 * time.Millisecond)
		rolledBack, committed := uuid.New(), uuid.New()
		insertExpiry(t, e, rolledBack, at, true)
		insertExpiry(t, e, committed, at, false)
		require.Zero(t, jobCount(t, e, rolledBack))

		fake := newFake()
		startRunner(t, e, fake, jobs.Options{})
		require.Eventually(t, func() bool { return fake.count(committed) == 1 }, jobWait, 10*time.Millisecond)
		time.Sleep(300 * time.Millisecond)
		require.Zero(t, fake.count(rolledBack))
	})
}

func TestTwoRunnersRunEachJobOnce(t *testing.T) {
	t.Parallel()
	e := openEnv(t, testdb.Database{Name: string(store.Postgres), URL: testdb.Postgres(t)})
	at := soon(200 * time.Millisecond)
	ids := make([]uuid.UUID, 40)
	for i := range ids {
		ids[i] = uuid.New()
		insertExpiry(t, e, ids[i], at, false)
	}

	a, b := newFake(), newFake()
	startRunner(t, e, a, jobs.Options{})
	startRunner(t, e, b, jobs.Options{})
	total := func() int {
		n := 0
		for _, id := range ids {
			n += a.count(id) + b.count(id)
		}
		return n
	}
	require.Eventually(t, func() bool { return total() >= len(ids) }, jobWait, 10*time.Millisecond)
	time.Sleep(300 * time.Millisecond)
	for _, id := range ids {
		require.Equal(t, 1, a.count(id)+b.count(id), "transaction %s", id)
	}
	_, byA := a.progress()
	_, byB := b.progress()
	t.Logf("runner A ran %d jobs, runner B %d", byA, byB)
}

func TestSweepCallsExpireDue(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, e env) {
		fake := newFake()
		startRunner(t, e, fake, jobs.Options{SweepInterval: 300 * time.Millisecond})

		// One sweep when the Runner becomes leader, then one per interval.
		require.Eventually(t, func() bool { return len(fake.sweepCalls()) >= 3 }, jobWait, 10*time.Millisecond)
		for _, c := range fake.sweepCalls() {
			require.Equal(t, jobs.SweepLimit, c.limit)
			require.WithinDuration(t, time.Now(), c.now, 5*time.Second)
		}
	})
}

func TestStopLetsRunningJobsFinishAndReturnsPromptly(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, e env) {
		fake := newFake()
		fake.delay = 500 * time.Millisecond
		id := uuid.New()
		insertExpiry(t, e, id, soon(100*time.Millisecond), false)
		r, logs := newRunner(t, e, fake, jobs.Options{})
		require.NoError(t, r.Start(context.Background()))
		require.Eventually(t, func() bool { s, _ := fake.progress(); return s == 1 }, jobWait, 5*time.Millisecond)

		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		require.NoError(t, r.Stop(ctx))
		require.Less(t, time.Since(start), 2*time.Second)
		require.Equal(t, 1, fake.count(id), "the running job finished instead of being cancelled")
		require.Empty(t, logs.logged())
	})
}

func TestStopIdleRunnerIsPrompt(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, e env) {
		r, logs := newRunner(t, e, newFake(), jobs.Options{})
		require.NoError(t, r.Start(context.Background()))
		time.Sleep(200 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		require.NoError(t, r.Stop(ctx))
		require.Less(t, time.Since(start), time.Second)
		require.Empty(t, logs.logged())
	})
}
