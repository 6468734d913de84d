package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unavailable reports whether err means the database could not be reached or is
// not accepting work (refused or dropped connections, a server shutting down or
// starting up, a locked SQLite file), as opposed to a bug or a bad request: the
// HTTP layer answers those 503 service_unavailable with Retry-After, so a client
// knows to retry, instead of 500.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exceptions; 57P01-57P03: admin shutdown, crash
		// shutdown, cannot connect now; 53300: too many connections.
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" ||
			pgErr.Code == "57P03" || pgErr.Code == "53300"
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &connectErr), errors.As(err, &netErr),
		errors.Is(err, driver.ErrBadConn), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF) && pgconn.SafeToRetry(err):
		return true
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return false // the request's own deadline: not the database's state
	}
	msg := err.Error()
	// The messages of failures that carry no typed error: a pool whose connection
	// was closed under it, and SQLite's busy file.
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "database is locked") ||
		strings.Contains(msg, "failed to connect to")
}
