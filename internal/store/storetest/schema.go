package storetest

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"partnerd/internal/store"
)

// Schema is a database's application schema reduced to what both migration trees
// must agree on: tables, their columns (meaning of the type, nullability), primary
// keys, foreign keys and indexes (unique or not, columns and order, partial
// predicate). River's tables and goose's bookkeeping are left out: River migrates
// its own schema per driver.
type Schema struct {
	Tables map[string]*Table
}

// Table is one table of a Schema.
type Table struct {
	Name       string
	Columns    map[string]Column
	PrimaryKey []string
	// ForeignKeys are "col,… -> table(col,…) on delete ACTION", sorted.
	ForeignKeys []string
	// Indexes are the non-primary-key indexes (unique constraints included), each as
	// its Signature, sorted.
	Indexes []string
}

// Column is one column: its declared type as the database reports it, the Kind that
// type means to the store, and whether it may hold NULL.
type Column struct {
	Type     string
	Kind     Kind
	Nullable bool
}

// Kind is what a column's type means to the store, independent of the database.
type Kind string

// The kinds. Their spelling per database (kindOf) is the mapping the two trees must
// keep:
//
//	Kind      PostgreSQL                  SQLite     why SQLite's spelling means the same
//	uuid      uuid                        TEXT       canonical 36-character text
//	text      text                        TEXT
//	decimal   numeric(p, s)               TEXT       canonical decimal strings (never compared in SQL)
//	time      timestamptz                 DATETIME   one UTC text format, so text order is time order
//	integer   integer, bigint, bigserial  INTEGER    SQLite integers are 64-bit
//	bool      boolean                     INTEGER    0 / 1 (a predicate "NOT x" is "x = 0")
//	bytes     bytea                       BLOB
//	date      date                        TEXT       ISO 8601 yyyy-mm-dd, so text order is date order
//
// SQLite's TEXT alone cannot tell uuid, text and decimal apart, so a SQLite column
// matches a PostgreSQL one when its spelling is the one the table above gives for
// the PostgreSQL column's kind.
const (
	KindUUID    Kind = "uuid"
	KindText    Kind = "text"
	KindDecimal Kind = "decimal"
	KindTime    Kind = "time"
	KindInteger Kind = "integer"
	KindBool    Kind = "bool"
	KindBytes   Kind = "bytes"
	KindDate    Kind = "date"
)

// sqliteSpelling is the SQLite declared type each kind must have.
var sqliteSpelling = map[Kind]string{
	KindUUID: "TEXT", KindText: "TEXT", KindDecimal: "TEXT", KindTime: "DATETIME",
	KindInteger: "INTEGER", KindBool: "INTEGER", KindBytes: "BLOB", KindDate: "TEXT",
}

// postgresKind maps PostgreSQL's format_type spelling to a Kind ("" when unknown).
func postgresKind(typ string) Kind {
	switch {
	case typ == "uuid":
		return KindUUID
	case typ == "text":
		return KindText
	case strings.HasPrefix(typ, "numeric"):
		return KindDecimal
	case typ == "timestamp with time zone":
		return KindTime
	case typ == "integer", typ == "bigint", typ == "smallint":
		return KindInteger
	case typ == "boolean":
		return KindBool
	case typ == "bytea":
		return KindBytes
	case typ == "date":
		return KindDate
	}
	return ""
}

// skipTable reports tables that are not the application's own.
func skipTable(name string) bool {
	return strings.HasPrefix(name, "river_") || name == "goose_db_version" || strings.HasPrefix(name, "sqlite_")
}

// Introspect reads the application schema of a migrated store.
func Introspect(ctx context.Context, s *store.Store) (*Schema, error) {
	if s.Dialect() == store.Postgres {
		return introspectPostgres(ctx, s.SQL())
	}
	return introspectSQLite(ctx, s.SQL())
}

func (sc *Schema) table(name string) *Table {
	t := sc.Tables[name]
	if t == nil {
		t = &Table{Name: name, Columns: map[string]Column{}}
		sc.Tables[name] = t
	}
	return t
}

func introspectPostgres(ctx context.Context, db *sql.DB) (*Schema, error) {
	sc := &Schema{Tables: map[string]*Table{}}
	rows, err := db.QueryContext(ctx, `
		SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull
		FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
		WHERE c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace
		  AND a.attnum > 0 AND NOT a.attisdropped
		ORDER BY c.relname, a.attnum`)
	if err != nil {
		return nil, fmt.Errorf("columns: %w", err)
	}
	if err := scanRows(rows, func() error {
		var table, col, typ string
		var nullable bool
		if err := rows.Scan(&table, &col, &typ, &nullable); err != nil {
			return err
		}
		if !skipTable(table) {
			sc.table(table).Columns[col] = Column{Type: typ, Kind: postgresKind(typ), Nullable: nullable}
		}
		return nil
	}); err != nil {
		return nil, err
	}

	// Indexes: primary keys apart; every other index (unique constraints included)
	// by its signature.
	rows, err = db.QueryContext(ctx, `
		SELECT t.relname, ic.relname, i.indisprimary, i.indisunique,
		       EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid),
		       coalesce(pg_get_expr(i.indpred, i.indrelid), ''),
		       array_to_string(array(
		           SELECT a.attname || CASE WHEN i.indoption[k.n - 1] & 1 = 1 THEN ' DESC' ELSE '' END
		           FROM unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
		           JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
		           ORDER BY k.n), ',')
		FROM pg_index i
		JOIN pg_class t ON t.oid = i.indrelid
		JOIN pg_class ic ON ic.oid = i.indexrelid
		WHERE t.relnamespace = current_schema()::regnamespace`)
	if err != nil {
		return nil, fmt.Errorf("indexes: %w", err)
	}
	if err := scanRows(rows, func() error {
		var table, name, pred, cols string
		var primary, unique, constraint bool
		if err := rows.Scan(&table, &name, &primary, &unique, &constraint, &pred, &cols); err != nil {
			return err
		}
		if skipTable(table) {
			return nil
		}
		t := sc.table(table)
		if primary {
			t.PrimaryKey = strings.Split(cols, ",")
			return nil
		}
		if constraint {
			name = "" // named by the database, not by the migration
		}
		t.Indexes = append(t.Indexes, Signature(name, unique, strings.Split(cols, ","), pred))
		return nil
	}); err != nil {
		return nil, err
	}

	rows, err = db.QueryContext(ctx, `
		SELECT t.relname, c.conname, f.relname, c.confdeltype,
		       array_to_string(array(SELECT a.attname FROM unnest(c.conkey) WITH ORDINALITY k(n, o)
		           JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.o), ','),
		       array_to_string(array(SELECT a.attname FROM unnest(c.confkey) WITH ORDINALITY k(n, o)
		           JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n ORDER BY k.o), ',')
		FROM pg_constraint c
		JOIN pg_class t ON t.oid = c.conrelid
		JOIN pg_class f ON f.oid = c.confrelid
		WHERE c.contype = 'f' AND t.relnamespace = current_schema()::regnamespace`)
	if err != nil {
		return nil, fmt.Errorf("foreign keys: %w", err)
	}
	pgActions := map[string]string{"a": "NO ACTION", "r": "RESTRICT", "c": "CASCADE", "n": "SET NULL", "d": "SET DEFAULT"}
	if err := scanRows(rows, func() error {
		var table, name, ref, action, cols, refCols string
		if err := rows.Scan(&table, &name, &ref, &action, &cols, &refCols); err != nil {
			return err
		}
		if !skipTable(table) {
			t := sc.table(table)
			t.ForeignKeys = append(t.ForeignKeys, foreignKey(cols, ref, refCols, pgActions[action]))
		}
		return nil
	}); err != nil {
		return nil, err
	}
	sc.sort()
	return sc, nil
}

func introspectSQLite(ctx context.Context, db *sql.DB) (*Schema, error) {
	sc := &Schema{Tables: map[string]*Table{}}
	var tables []string
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	if err != nil {
		return nil, err
	}
	if err := scanRows(rows, func() error {
		var name string
		if err := rows.Scan(&name); err != nil {
			return err
		}
		if !skipTable(name) {
			tables = append(tables, name)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	for _, name := range tables {
		t := sc.table(name)
		var pk []struct {
			n   int
			col string
		}
		// table_xinfo, not table_info: a generated column (hidden 2 or 3) is a
		// column of the schema like any other.
		rows, err := db.QueryContext(ctx, `SELECT name, type, "notnull", pk FROM pragma_table_xinfo(?) WHERE hidden IN (0, 2, 3)`, name)
		if err != nil {
			return nil, err
		}
		if err := scanRows(rows, func() error {
			var col, typ string
			var notNull bool
			var pkn int
			if err := rows.Scan(&col, &typ, &notNull, &pkn); err != nil {
				return err
			}
			// SQLite lets a non-INTEGER primary key column hold NULL (a historical
			// quirk); the store never writes one, and PostgreSQL's primary keys are
			// NOT NULL, so a primary key column counts as NOT NULL here.
			t.Columns[col] = Column{Type: strings.ToUpper(typ), Nullable: !notNull && pkn == 0}
			if pkn > 0 {
				pk = append(pk, struct {
					n   int
					col string
				}{pkn, col})
			}
			return nil
		}); err != nil {
			return nil, err
		}
		sort.Slice(pk, func(i, j int) bool { return pk[i].n < pk[j].n })
		for _, p := range pk {
			t.PrimaryKey = append(t.PrimaryKey, p.col)
		}

		type index struct {
			name, origin string
			unique       bool
		}
		var indexes []index
		rows, err = db.QueryContext(ctx, `SELECT name, "unique", origin FROM pragma_index_list(?)`, name)
		if err != nil {
			return nil, err
		}
		if err := scanRows(rows, func() error {
			var ix index
			if err := rows.Scan(&ix.name, &ix.unique, &ix.origin); err != nil {
				return err
			}
			indexes = append(indexes, ix)
			return nil
		}); err != nil {
			return nil, err
		}
		for _, ix := range indexes {
			if ix.origin == "pk" {
				continue
			}
			var cols []string
			rows, err := db.QueryContext(ctx, `SELECT name, "desc" FROM pragma_index_xinfo(?) WHERE key ORDER BY seqno`, ix.name)
			if err != nil {
				return nil, err
			}
			if err := scanRows(rows, func() error {
				var col string
				var desc bool
				if err := rows.Scan(&col, &desc); err != nil {
					return err
				}
				if desc {
					col += " DESC"
				}
				cols = append(cols, col)
				return nil
			}); err != nil {
				return nil, err
			}
			var pred, label string
			if ix.origin == "c" { // CREATE INDEX: named by the migration
				label = ix.name
				var ddl sql.NullString
				if err := db.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?`, ix.name).Scan(&ddl); err != nil {
					return nil, err
				}
				if m := wherePattern.FindStringSubmatch(ddl.String); m != nil {
					pred = m[1]
				}
			}
			t.Indexes = append(t.Indexes, Signature(label, ix.unique, cols, pred))
		}

		rows, err = db.QueryContext(ctx, `SELECT id, "table", "from", "to", on_delete FROM pragma_foreign_key_list(?) ORDER BY id, seq`, name)
		if err != nil {
			return nil, err
		}
		type fk struct {
			ref, action string
			from, to    []string
		}
		fks := map[int]*fk{}
		var order []int
		if err := scanRows(rows, func() error {
			var id int
			var ref, from, action string
			var to sql.NullString
			if err := rows.Scan(&id, &ref, &from, &to, &action); err != nil {
				return err
			}
			f := fks[id]
			if f == nil {
				f = &fk{ref: ref, action: action}
				fks[id] = f
				order = append(order, id)
			}
			f.from = append(f.from, from)
			f.to = append(f.to, to.String)
			return nil
		}); err != nil {
			return nil, err
		}
		for _, id := range order {
			f := fks[id]
			to := f.to
			if slices.Contains(to, "") { // REFERENCES t without columns: t's primary key
				to = nil
			}
			t.ForeignKeys = append(t.ForeignKeys, foreignKey(strings.Join(f.from, ","), f.ref, strings.Join(to, ","), f.action))
		}
	}
	sc.sort()
	return sc, nil
}

var wherePattern = regexp.MustCompile(`(?is)\bWHERE\b(.*)$`)

func foreignKey(cols, ref, refCols, action string) string {
	return fmt.Sprintf("%s -> %s(%s) on delete %s", cols, ref, refCols, strings.ToUpper(action))
}

// Signature renders an index for comparison: its name when a migration chose it
// ("" for one a constraint created, named by each database its own way), UNIQUE,
// its columns in order with DESC, and its partial predicate in normal form.
func Signature(name string, unique bool, cols []string, predicate string) string {
	var b strings.Builder
	if unique {
		b.WriteString("UNIQUE ")
	}
	if name != "" {
		b.WriteString(name + " ")
	}
	b.WriteString("(" + strings.Join(cols, ", ") + ")")
	if p := NormalPredicate(predicate); p != "" {
		b.WriteString(" WHERE " + p)
	}
	return b.String()
}

var (
	castPattern   = regexp.MustCompile(`::[a-z ]+`)
	notPattern    = regexp.MustCompile(`\bnot ([a-z_][a-z0-9_]*)\b`)
	anyPattern    = regexp.MustCompile(`= any array\[([^\]]*)\]`)
	spacesPattern = regexp.MustCompile(`\s+`)
)

// NormalPredicate puts a partial index's predicate in one form for both databases:
// lower case, PostgreSQL's casts ('x'::text) and parentheses dropped, spaces
// collapsed, a boolean negation "not x" written as SQLite stores booleans,
// "x = 0", and PostgreSQL's "x = ANY (ARRAY[…])" written as it was, "x IN (…)".
func NormalPredicate(p string) string {
	p = strings.ToLower(p)
	p = castPattern.ReplaceAllString(p, "")
	p = strings.NewReplacer("(", "", ")", "").Replace(p)
	p = notPattern.ReplaceAllString(p, "$1 = 0")
	p = anyPattern.ReplaceAllString(p, "in $1")
	return strings.TrimSpace(spacesPattern.ReplaceAllString(p, " "))
}

func (sc *Schema) sort() {
	for _, t := range sc.Tables {
		sort.Strings(t.ForeignKeys)
		sort.Strings(t.Indexes)
	}
}

// Clone returns a deep copy, for tests that alter a schema.
func (sc *Schema) Clone() *Schema {
	out := &Schema{Tables: map[string]*Table{}}
	for name, t := range sc.Tables {
		c := &Table{Name: name, Columns: map[string]Column{}, PrimaryKey: slices.Clone(t.PrimaryKey),
			ForeignKeys: slices.Clone(t.ForeignKeys), Indexes: slices.Clone(t.Indexes)}
		for col, v := range t.Columns {
			c.Columns[col] = v
		}
		out.Tables[name] = c
	}
	return out
}

// Diff compares a PostgreSQL schema with a SQLite one and returns every difference,
// one line each, sorted (none when the two trees describe the same schema).
func Diff(pg, lite *Schema) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	for name, p := range pg.Tables {
		l, ok := lite.Tables[name]
		if !ok {
			add("table %s: only in PostgreSQL", name)
			continue
		}
		for col, pc := range p.Columns {
			lc, ok := l.Columns[col]
			switch {
			case !ok:
				add("column %s.%s: only in PostgreSQL", name, col)
			case pc.Kind == "":
				add("column %s.%s: PostgreSQL type %q has no kind in the mapping (storetest.Kind)", name, col, pc.Type)
			case sqliteSpelling[pc.Kind] != lc.Type:
				add("column %s.%s: PostgreSQL %s means %s, spelled %s on SQLite, but SQLite declares %s",
					name, col, pc.Type, pc.Kind, sqliteSpelling[pc.Kind], lc.Type)
			}
			if ok && pc.Nullable != lc.Nullable {
				add("column %s.%s: nullable %v on PostgreSQL, %v on SQLite", name, col, pc.Nullable, lc.Nullable)
			}
		}
		for col := range l.Columns {
			if _, ok := p.Columns[col]; !ok {
				add("column %s.%s: only in SQLite", name, col)
			}
		}
		if !slices.Equal(p.PrimaryKey, l.PrimaryKey) {
			add("table %s: primary key (%s) on PostgreSQL, (%s) on SQLite", name, strings.Join(p.PrimaryKey, ", "), strings.Join(l.PrimaryKey, ", "))
		}
		diffSets(name, "index", p.Indexes, l.Indexes, add)
		diffSets(name, "foreign key", p.ForeignKeys, l.ForeignKeys, add)
	}
	for name := range lite.Tables {
		if _, ok := pg.Tables[name]; !ok {
			add("table %s: only in SQLite", name)
		}
	}
	sort.Strings(out)
	return out
}

func diffSets(table, what string, pg, lite []string, add func(string, ...any)) {
	for _, v := range pg {
		if !slices.Contains(lite, v) {
			add("%s %s: %s only in PostgreSQL", table, what, v)
		}
	}
	for _, v := range lite {
		if !slices.Contains(pg, v) {
			add("%s %s: %s only in SQLite", table, what, v)
		}
	}
}

func scanRows(rows *sql.Rows, each func() error) error {
	defer rows.Close()
	for rows.Next() {
		if err := each(); err != nil {
			return err
		}
	}
	return rows.Err()
}
