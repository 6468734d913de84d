package store

import (
	"context"
	"database/sql"
	"go.opentelemetry.io/otel/attribute"
	"time"

	"github.com/google/uuid"
	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver"
	"github.com/shopspring/decimal"
	"gorm.io/gorm"

	"partnerd/internal/webhook"
)

// engine is everything the two databases do their own way. postgres.go and
// sqlite.go implement it, Open picks one by the URL (engines), and no other file
// of the package asks which database it is (TestNoDialectBranchOutsideTheEngines
// reads the package's source to hold it so). Adding a behaviour that differs means
// adding a method here and writing it twice.
type engine interface {
	dialect() Dialect
	// dbSystem names the database in statement spans (OpenTelemetry's db.system.name).
	dbSystem() attribute.KeyValue
	// connect opens s's pools (db/sql for reads, wdb/wsql for writes) for dsn.
	connect(ctx context.Context, s *Store, url, dsn string) error
	// close releases what connect opened beyond s's pools.
	close()
	// queueWriter waits, in arrival order, for the turn of a unit of work to
	// write where the database takes one writer at a time; release ends it.
	queueWriter(ctx context.Context) (release func(), err error)
	// maxConns is how many connections the pool opens at most (0: not pooled so).
	maxConns() int
	// jobDriver is River's driver over s (see Store.JobDriver).
	jobDriver(s *Store) riverdriver.Driver[*sql.Tx]
	// gooseDialect names the migration dialect of the database's tree.
	gooseDialect() goose.Dialect
	// withMigrationLock runs fn while s holds the database's migration lock.
	withMigrationLock(ctx context.Context, s *Store, fn func() error) error
	// tryLock takes lock name if no one holds it (see Store.TryLock).
	tryLock(ctx context.Context, s *Store, name string) (*ChainLock, bool, error)
	// ensureAddressSequences prepares each network's address index allocation.
	ensureAddressSequences(ctx context.Context, s *Store, networks []string) error
	// nextAddressIndex allocates network's next derivation index + 1.
	nextAddressIndex(ctx context.Context, tx *Tx, network string) (int64, error)
	// releaseAddressIndex hands back an index no transaction took.
	releaseAddressIndex(ctx context.Context, tx *Tx, network string, index uint32) error
	// unitPool is where a unit of work's statements go: tx, or tx with the
	// writer's prepared statements; committed runs after a unit of work has
	// committed, before it gives up its turn as the writer.
	unitPool(tx *sql.Tx) gorm.ConnPool
	committed(ctx context.Context)
	// batchesWrites reports whether a unit of work sends its writes behind
	// together, as one statement (see later): where the database is across a
	// network and runs data-modifying WITH clauses.
	batchesWrites() bool
	// locksRows reports whether TransactionForUpdate must lock the row it reads
	// (where the database does not serialize units of work already).
	locksRows() bool
	// lockServing refuses a second serving process on the database where one
	// process must serve alone (see LockServing); release ends the hold.
	lockServing(url string) (release func(), err error)
	// timeParam is the placeholder of a time parameter whose type the statement
	// does not give (a CASE branch): PostgreSQL types a bare one as text.
	timeParam() string
	// countSums counts the rows q selects and sums each of columns exactly.
	countSums(q *gorm.DB, columns ...string) (int64, []decimal.Decimal, error)
	// saveEventState and takeDelivery are SaveEventState and TakeDelivery outside a
	// unit of work in one statement where the database can (done); otherwise the
	// caller runs the step-by-step form.
	saveEventState(ctx context.Context, s *Store, e *webhook.Event, a *webhook.Attempt, requeueAt time.Time) (requeued, done bool, err error)
	takeDelivery(ctx context.Context, s *Store, id uuid.UUID) (ev *webhook.Event, ep *webhook.Endpoint, requeued, done bool, err error)
}

// engines builds the engine of each database (registered by postgres.go and
// sqlite.go).
var engines = map[Dialect]func() engine{}
