package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"

	"partnerd/internal/jobs"
)

// Trace gives every statement the store runs through GORM, on either database,
// a client span under the span of the context it runs with (a request's, a
// job's, a scan's), named by operation and table ("SELECT transactions") with
// OpenTelemetry's database attributes. Call it once, after Open, and only while
// traces are exported: a statement then pays for its span. Jobs enqueued
// through a unit of work then carry the trace of the code that enqueued them.
//
// The SQL text is recorded without its values (they are amounts, addresses and
// key hashes). This is GORM's callback API used the way gorm.io/plugin/opentelemetry
// uses it; that plugin itself is not used because it links the MySQL and
// ClickHouse drivers into the binary.
func (s *Store) Trace(tp trace.TracerProvider) error {
	st := statementTracer{tracer: tp.Tracer("partnerd/internal/store"), system: s.eng.dbSystem()}
	if err := st.register(s.db); err != nil {
		return err
	}
	if s.wdb != s.db { // SQLite's one-writer pool is a second *gorm.DB
		if err := st.register(s.wdb); err != nil {
			return err
		}
	}
	s.raw = &st
	// A job a unit of work enqueues carries its trace (jobs.TraceMiddleware).
	return s.newJobClient(jobs.TraceMiddleware(tp))
}

// rawSpan starts the span of a statement run on database/sql directly, outside
// GORM's callbacks (the webhook delivery's one-statement forms on PostgreSQL),
// named like the others ("UPDATE events") under ctx's span (the delivery job's);
// end ends it with the statement's error. Nothing is recorded while traces are
// not exported.
func (s *Store) rawSpan(ctx context.Context, name, query string) (_ context.Context, end func(error)) {
	if s.raw == nil {
		return ctx, func(error) {}
	}
	ctx, span := s.raw.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient))
	op, table, _ := strings.Cut(name, " ")
	span.SetAttributes(s.raw.system, semconv.DBQueryText(strings.TrimSpace(query)), semconv.DBOperationName(op),
		semconv.DBCollectionName(table), semconv.DBQuerySummary(name))
	return ctx, func(err error) {
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}

type statementTracer struct {
	tracer trace.Tracer
	system attribute.KeyValue
}

// spanContext carries a statement's span in its GORM context and remembers the
// context it replaced, restored when the statement ends.
type spanContext struct {
	context.Context
	parent context.Context
}

func (st statementTracer) register(db *gorm.DB) error {
	cb := db.Callback()
	for _, h := range []struct {
		name          string
		before, after interface {
			Register(string, func(*gorm.DB)) error
		}
	}{
		{"create", cb.Create().Before("gorm:create"), cb.Create().After("gorm:create")},
		{"query", cb.Query().Before("gorm:query"), cb.Query().After("gorm:query")},
		{"update", cb.Update().Before("gorm:update"), cb.Update().After("gorm:update")},
		{"delete", cb.Delete().Before("gorm:delete"), cb.Delete().After("gorm:delete")},
		{"row", cb.Row().Before("gorm:row"), cb.Row().After("gorm:row")},
		{"raw", cb.Raw().Before("gorm:raw"), cb.Raw().After("gorm:raw")},
	} {
		if err := h.before.Register("partnerd:trace_before_"+h.name, st.start); err != nil {
			return fmt.Errorf("statement spans: %w", err)
		}
		if err := h.after.Register("partnerd:trace_after_"+h.name, st.end); err != nil {
			return fmt.Errorf("statement spans: %w", err)
		}
	}
	return nil
}

func (st statementTracer) start(tx *gorm.DB) {
	parent := tx.Statement.Context
	if parent == nil {
		parent = context.Background()
	}
	ctx, _ := st.tracer.Start(parent, "db", trace.WithSpanKind(trace.SpanKindClient))
	tx.Statement.Context = spanContext{ctx, parent}
}

func (st statementTracer) end(tx *gorm.DB) {
	sc, ok := tx.Statement.Context.(spanContext)
	if !ok {
		return
	}
	tx.Statement.Context = sc.parent
	span := trace.SpanFromContext(sc.Context)
	defer span.End()
	if !span.IsRecording() {
		return
	}
	query := tx.Statement.SQL.String()
	op, _, _ := strings.Cut(strings.TrimSpace(query), " ")
	op = strings.ToUpper(op)
	name := op
	attrs := []attribute.KeyValue{st.system, semconv.DBQueryText(query), semconv.DBOperationName(op)}
	// The model's table rather than Statement.Table, which is an alias when a
	// query names one ("transactions t").
	table := tx.Statement.Table
	if te := tx.Statement.TableExpr; te != nil {
		if name, _, _ := strings.Cut(strings.TrimSpace(te.SQL), " "); name != "" {
			table = strings.Trim(name, `"`+"`")
		}
	}
	if table == "" { // raw SQL: the table it names first
		table = firstTable(query)
	}
	if table != "" {
		name = op + " " + table
		attrs = append(attrs, semconv.DBCollectionName(table), semconv.DBQuerySummary(name))
	}
	if name != "" {
		span.SetName(name)
	}
	span.SetAttributes(attrs...)
	if err := tx.Error; err != nil && !errors.Is(err, gorm.ErrRecordNotFound) && !errors.Is(err, sql.ErrNoRows) {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
}

// firstTable is the table a raw statement names after its first INTO, UPDATE or
// FROM ("" when none), for the span's name.
func firstTable(query string) string {
	fields := strings.Fields(query)
	for i, f := range fields[:max(len(fields)-1, 0)] {
		switch strings.ToUpper(f) {
		case "INTO", "UPDATE", "FROM":
			name := strings.Trim(fields[i+1], `"`+"`(")
			if name != "" && !strings.ContainsAny(name, "(),") {
				return name
			}
			return ""
		}
	}
	return ""
}
