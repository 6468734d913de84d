package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	pgxdecimal "github.com/jackc/pgx-shopspring-decimal"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/shopspring/decimal"
	pgxuuid "github.com/vgarvardt/pgx-google-uuid/v5"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"

	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/dburl"
	"partnerd/internal/webhook"
)

// postgresEngine is the store on PostgreSQL, the production database: one pgx pool
// under GORM and River's listener, advisory locks shared by every instance,
// address indexes from sequences, row locks, sums in SQL and single-statement
// delivery paths.
type postgresEngine struct {
	// listen is the pgx pool from which River takes its LISTEN connections (see
	// Store.JobDriver); GORM and River's inserts use it through database/sql.
	listen *pgxpool.Pool
	// addresses holds each network's block of address indexes.
	addresses indexBlocks
}

func init() { engines[Postgres] = func() engine { return &postgresEngine{} } }

func (*postgresEngine) dialect() Dialect { return Postgres }

func (*postgresEngine) dbSystem() attribute.KeyValue { return semconv.DBSystemNamePostgreSQL }

// connect opens one pgx pool under both GORM (through pgx's database/sql adapter)
// and River's listener, so the service holds one set of connections, of at most
// the URL's pool_max_conns (dburl.DefaultPoolSize when absent).
func (p *postgresEngine) connect(ctx context.Context, s *Store, url, dsn string) error {
	_, maxConns, _ := dburl.PoolSize(url) // validated by ParseURL
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	cfg.MaxConns = int32(maxConns)
	cfg.MaxConnIdleTime = 5 * time.Minute
	cfg.AfterConnect = registerTypes
	p.listen, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("open postgres database: %w", err)
	}
	s.sql = stdlib.OpenDBFromPool(p.listen)
	s.wsql = s.sql
	// pgx keeps prepared statements per connection itself.
	if s.db, err = gormOpen(postgres.New(postgres.Config{Conn: s.sql}), false); err != nil {
		p.listen.Close()
		return err
	}
	s.wdb = s.db
	return nil
}

// registerTypes teaches a connection the service's own parameter types: pgx then
// writes a decimal.Decimal as a binary numeric and a uuid.UUID as a binary uuid.
// Without them each went through its driver.Valuer as a string that pgx could
// not write in binary, and was reparsed after an error was formatted for it:
// about a twelfth of a create's CPU, for its thirty or so parameters.
func registerTypes(_ context.Context, c *pgx.Conn) error {
	pgxdecimal.Register(c.TypeMap())
	pgxuuid.Register(c.TypeMap())
	return nil
}

func (p *postgresEngine) close() {
	if p.listen != nil {
		p.listen.Close()
	}
}

// queueWriter does not queue: PostgreSQL runs units of work side by side.
func (*postgresEngine) queueWriter(context.Context) (func(), error) { return func() {}, nil }

func (p *postgresEngine) maxConns() int { return int(p.listen.Config().MaxConns) }

// jobDriver is River's database/sql driver over the pool GORM uses, with a pgx
// listener on the same pgx pool: jobs are inserted on the very *sql.Tx of a unit
// of work, and the insert's NOTIFY wakes every instance's workers at commit.
func (p *postgresEngine) jobDriver(s *Store) riverdriver.Driver[*sql.Tx] {
	return riverdatabasesql.NewWithPgxListener(s.sql, p.listen)
}

func (*postgresEngine) gooseDialect() goose.Dialect { return goose.DialectPostgres }

// migrationLockKey is the PostgreSQL advisory lock Migrate holds.
var migrationLockKey = func() int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("partnerd/store.Migrate"))
	return int64(h.Sum64())
}()

// withMigrationLock holds the advisory lock migrationLockKey on one session
// while fn runs: instances starting together migrate one after the other.
func (*postgresEngine) withMigrationLock(ctx context.Context, s *Store, fn func() error) (err error) {
	conn, err := s.sql.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", migrationLockKey); err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	defer func() {
		_, uerr := conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrationLockKey)
		if uerr != nil && err == nil {
			err = fmt.Errorf("release migration lock: %w", uerr)
		}
	}()
	return fn()
}

// tryLock is a session-level advisory lock on the name and the schema (so two
// deployments sharing a database do not exclude each other), held on a
// connection taken from the pool for as long as the lock is held: every instance
// on the database competes for it, and a holder that dies (or loses its
// connection) releases it with its session.
func (*postgresEngine) tryLock(ctx context.Context, s *Store, name string) (*ChainLock, bool, error) {
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

// ensureAddressSequences creates the sequence of each network's deposit address
// indexes, starting where the network's counter row left off (if any). It is
// idempotent. Under the migration lock: CREATE SEQUENCE IF NOT EXISTS is not safe
// against a concurrent create of the same name (a duplicate pg_class row), as
// when two instances start at once.
func (p *postgresEngine) ensureAddressSequences(ctx context.Context, s *Store, networks []string) error {
	return p.withMigrationLock(ctx, s, func() error { return p.createAddressSequences(ctx, s, networks) })
}

func (*postgresEngine) createAddressSequences(ctx context.Context, s *Store, networks []string) error {
	for _, n := range networks {
		if !validNetwork.MatchString(n) {
			return fmt.Errorf("network name %q cannot name a sequence", n)
		}
		seq := addressSequence(n)
		err := s.Transact(ctx, func(ctx context.Context, tx *Tx) error {
			var exists bool
			if err := tx.db.Raw("SELECT to_regclass(?) IS NOT NULL", seq).Scan(&exists).Error; err != nil {
				return err
			}
			if exists {
				return nil
			}
			if err := tx.db.Exec("CREATE SEQUENCE IF NOT EXISTS " + seq + " MINVALUE 0 START 0").Error; err != nil {
				return err
			}
			return tx.db.Exec("SELECT setval(?::regclass, next_index, false) FROM address_counters WHERE network = ?", seq, n).Error
		})
		if err != nil {
			return fmt.Errorf("address sequence of %s: %w", n, err)
		}
	}
	return nil
}

var validNetwork = regexp.MustCompile(`^[a-z0-9]{1,32}$`)

// addressBlock is how many address indexes an instance takes from a network's
// sequence at once (one round trip for that many creates). The indexes of a block
// not handed out before the process stops are never used: at most this many
// unused addresses in a row, under the gap limit of 20 that HD wallets scan by. A
// failed create hands its index back (ReleaseAddressIndex), so failures add none.
const addressBlock = 16

// indexBlocks hands out sequence values taken a block at a time, per network.
type indexBlocks struct {
	mu   sync.Mutex
	left map[string][]int64
}

// take returns the next index of network, refilling its block with fetch (which
// runs on the caller's connection, under the lock: a second connection per
// request could exhaust the pool).
func (b *indexBlocks) take(network string, fetch func() ([]int64, error)) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.left == nil {
		b.left = map[string][]int64{}
	}
	if len(b.left[network]) == 0 {
		block, err := fetch()
		if err != nil {
			return 0, err
		}
		if len(block) == 0 {
			return 0, fmt.Errorf("address sequence of %s returned nothing", network)
		}
		b.left[network] = block
	}
	next := b.left[network][0]
	b.left[network] = b.left[network][1:]
	return next, nil
}

// giveBack returns an index take handed out and nobody used. The block stays in
// ascending order, so the lowest free index is handed out first: indexes given
// back by many failed creates at once fill the hole they left before any later
// one is used.
func (b *indexBlocks) giveBack(network string, index int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.left == nil {
		b.left = map[string][]int64{}
	}
	left := b.left[network]
	at, _ := slices.BinarySearch(left, index)
	b.left[network] = slices.Insert(left, at, index)
}

func addressSequence(network string) string { return "address_index_" + network }

// nextAddressIndex takes the next value of network's sequence (index + 1):
// nextval never hands out a value twice, even when the transaction that took it
// rolls back (that index is simply never used), and it holds no lock, so
// concurrent creations do not queue behind one another. Values are taken a block
// at a time (indexBlocks).
func (p *postgresEngine) nextAddressIndex(ctx context.Context, tx *Tx, network string) (int64, error) {
	next, err := p.addresses.take(network, func() ([]int64, error) {
		var block []int64
		err := tx.db.WithContext(ctx).Raw("SELECT nextval(?::regclass) FROM generate_series(1, ?)",
			addressSequence(network), addressBlock).Scan(&block).Error
		return block, err
	})
	if err != nil {
		return 0, err
	}
	// A unit of work that rolls back (a key reused, a race on one key, a refusal
	// after the index was taken) hands the index back, unless it did already.
	h := &heldIndex{network: network, index: next}
	tx.heldIndexes = append(tx.heldIndexes, h)
	tx.onRollback(func() { p.giveBackOnce(h) })
	return next + 1, nil // the sequence starts at 0
}

// heldIndex is an address index a unit of work took from its instance's block.
type heldIndex struct {
	network string
	index   int64
	back    bool
}

// giveBackOnce puts h's index back at the front of its block, once.
func (p *postgresEngine) giveBackOnce(h *heldIndex) {
	if !h.back {
		h.back = true
		p.addresses.giveBack(h.network, h.index)
	}
}

// releaseAddressIndex puts index back at the front of the instance's block, so
// the next create of the network takes it.
func (p *postgresEngine) releaseAddressIndex(_ context.Context, tx *Tx, network string, index uint32) error {
	for _, h := range tx.heldIndexes {
		if h.network == network && h.index == int64(index) {
			p.giveBackOnce(h)
			return nil
		}
	}
	p.addresses.giveBack(network, int64(index))
	return nil
}

// unitPool is the unit of work's transaction itself: pgx keeps each
// connection's prepared statements.
func (*postgresEngine) unitPool(tx *sql.Tx) gorm.ConnPool { return tx }

func (*postgresEngine) committed(context.Context) {}

// batchesWrites: a unit of work's writes behind go as one statement.
func (*postgresEngine) batchesWrites() bool { return true }

// locksRows: SELECT … FOR UPDATE (of the transaction's row only: the deposit is
// on the nullable side of the join), so a concurrent change of the same
// transaction waits and then reads the committed state.
func (*postgresEngine) locksRows() bool { return true }

// timeParam casts: a bare parameter in a CASE branch would be typed text, which a
// timestamptz column refuses.
func (*postgresEngine) timeParam() string { return "?::timestamptz" }

// lockServing holds nothing: instances share the work through the database.
func (*postgresEngine) lockServing(string) (func(), error) { return func() {}, nil }

// countSums counts and sums in the database, in one statement (no rows are
// loaded).
func (*postgresEngine) countSums(q *gorm.DB, columns ...string) (int64, []decimal.Decimal, error) {
	sel := "COUNT(*)"
	for _, c := range columns {
		sel += fmt.Sprintf(", COALESCE(SUM(%s), 0)", c)
	}
	var n int64
	sums := make([]decimal.Decimal, len(columns))
	dest := []any{&n}
	for i := range sums {
		dest = append(dest, &sums[i])
	}
	if err := q.Select(sel).Row().Scan(dest...); err != nil {
		return 0, nil, err
	}
	return n, sums, nil
}

// saveEventStateSQL is SaveEventState on PostgreSQL: the event's update and its
// attempt in one statement (one round trip, its own transaction). A requeue mark
// set meanwhile wins: the event stays pending, due at $7.
const saveEventStateSQL = `
WITH u AS (
  UPDATE events SET
    publish_status  = CASE WHEN requeued THEN 'pending' ELSE $2 END,
    attempts        = $3,
    cycle_attempts  = $4,
    last_attempt_at = $5,
    next_attempt_at = CASE WHEN requeued THEN $7::timestamptz ELSE $6::timestamptz END
  WHERE id = $1
  RETURNING id, requeued
), a AS (
  INSERT INTO webhook_attempts (event_id, attempted_at, status_code, duration_ms, error, response_excerpt)
  SELECT id, $8::timestamptz, $9::integer, $10::integer, $11::text, $13::text FROM u WHERE $12::boolean
)
SELECT requeued FROM u`

// saveEventState is SaveEventState outside a unit of work, in one statement.
func (*postgresEngine) saveEventState(ctx context.Context, s *Store, e *webhook.Event, a *webhook.Attempt, requeueAt time.Time) (bool, bool, error) {
	var at *time.Time
	var status *int
	var dur int
	var msg, excerpt *string
	if a != nil {
		at, status, dur, msg, excerpt = &a.AttemptedAt, a.StatusCode, a.DurationMS, a.Error, a.ResponseExcerpt
	}
	var requeued bool
	ctx, end := s.rawSpan(ctx, "UPDATE events", saveEventStateSQL)
	err := s.wsql.QueryRowContext(ctx, saveEventStateSQL, e.ID, e.PublishStatus, e.Attempts, e.CycleAttempts,
		e.LastAttemptAt, e.NextAttemptAt, requeueAt, at, status, dur, msg, a != nil, excerpt).Scan(&requeued)
	end(err)
	if errors.Is(err, sql.ErrNoRows) {
		return false, true, apperr.New(apperr.NotFound, "The webhook event was not found.")
	}
	return requeued, true, err
}

// takeDeliverySQL is TakeDelivery on PostgreSQL, one statement: the event locked
// (so its columns are the latest committed, whatever this statement's snapshot),
// its requeued mark cleared when set, and the partner's endpoint if any.
const takeDeliverySQL = `
WITH ev AS (
  SELECT id, partner_id, transaction_id, type, payload, created_at, publish_status, attempts,
         cycle_attempts, last_attempt_at, next_attempt_at, requeued
    FROM events WHERE id = $1 FOR NO KEY UPDATE
), cleared AS (
  UPDATE events e SET requeued = false FROM ev WHERE e.id = ev.id AND ev.requeued
)
SELECT ev.id, ev.partner_id, ev.transaction_id, ev.type, ev.payload, ev.created_at, ev.publish_status,
       ev.attempts, ev.cycle_attempts, ev.last_attempt_at, ev.next_attempt_at, ev.requeued,
       w.partner_id IS NOT NULL, COALESCE(w.url, ''), COALESCE(w.enabled, false), COALESCE(w.secret, ''),
       w.secret_key, w.previous_secret, w.previous_secret_key, w.previous_secret_expires_at, w.created_at, w.updated_at
  FROM ev LEFT JOIN webhook_endpoints w ON w.partner_id = ev.partner_id`

// takeDelivery is TakeDelivery outside a unit of work, in one statement.
func (*postgresEngine) takeDelivery(ctx context.Context, s *Store, id uuid.UUID) (*webhook.Event, *webhook.Endpoint, bool, bool, error) {
	var r webhookEventRow
	var requeued, hasEndpoint bool
	var ep endpointRow
	var wCreated, wUpdated *time.Time
	ctx, end := s.rawSpan(ctx, "SELECT events", takeDeliverySQL)
	err := s.wsql.QueryRowContext(ctx, takeDeliverySQL, id).Scan(&r.ID, &r.PartnerID, &r.TransactionID, &r.Type, &r.Payload,
		&r.CreatedAt, &r.PublishStatus, &r.Attempts, &r.CycleAttempts, &r.LastAttemptAt, &r.NextAttemptAt, &requeued,
		&hasEndpoint, &ep.URL, &ep.Enabled, &ep.Secret, &ep.SecretKey, &ep.PreviousSecret, &ep.PreviousSecretKey, &ep.PreviousSecretExpiresAt, &wCreated, &wUpdated)
	end(err)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, false, true, apperr.New(apperr.NotFound, "The webhook event was not found.")
	}
	if err != nil {
		return nil, nil, false, true, fmt.Errorf("load webhook event: %w", err)
	}
	if !hasEndpoint {
		return r.domain(), nil, requeued, true, nil
	}
	ep.PartnerID = r.PartnerID
	if wCreated != nil {
		ep.CreatedAt = *wCreated
	}
	if wUpdated != nil {
		ep.UpdatedAt = *wUpdated
	}
	opened, err := s.endpointDomain(&ep)
	if err != nil {
		return nil, nil, false, true, fmt.Errorf("webhook endpoint of partner %s: %w", r.PartnerID, err)
	}
	return r.domain(), opened, requeued, true, nil
}
