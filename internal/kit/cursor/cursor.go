// Package cursor makes the opaque, tamper-evident page cursors of every keyset-paged
// list. A cursor carries the position of the last item served and an HMAC over that
// position and the list's scope (the partner and the filters), so a cursor that was
// altered, or is replayed against other filters or another partner, is refused.
package cursor

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"partnerd/internal/kit/apperr"
)

// Position is a keyset position: the sort time and the tie-breaking id of the last
// item of a page.
type Position struct {
	Time time.Time `json:"t"`
	ID   string    `json:"i"`
}

// Codec encodes and verifies cursors with one secret.
type Codec struct {
	secret []byte
}

// NewCodec returns a Codec keyed by secret. Every instance serving the same API must
// share the secret, or a cursor from one is refused by another.
func NewCodec(secret []byte) *Codec { return &Codec{secret: secret} }

// ErrInvalid is the answer to any cursor that does not verify.
var ErrInvalid = apperr.Field(apperr.InvalidCursor, "The cursor is invalid for this list and filters.",
	"cursor", "pass next_cursor back unchanged, with the same filters")

// Encode returns the cursor for pos within scope.
func (c *Codec) Encode(pos Position, scope string) string {
	pos.Time = pos.Time.UTC()
	body, _ := json.Marshal(pos)
	payload := base64.RawURLEncoding.EncodeToString(body)
	return payload + "." + base64.RawURLEncoding.EncodeToString(c.sign(payload, scope))
}

// Decode verifies cursor against scope and returns its position, or ErrInvalid.
func (c *Codec) Decode(cursor, scope string) (Position, error) {
	payload, sig, ok := strings.Cut(cursor, ".")
	if !ok {
		return Position{}, ErrInvalid
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, c.sign(payload, scope)) {
		return Position{}, ErrInvalid
	}
	body, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return Position{}, ErrInvalid
	}
	var pos Position
	if err := json.Unmarshal(body, &pos); err != nil || pos.ID == "" || pos.Time.IsZero() {
		return Position{}, ErrInvalid
	}
	return pos, nil
}

func (c *Codec) sign(payload, scope string) []byte {
	m := hmac.New(sha256.New, c.secret)
	m.Write([]byte(payload))
	m.Write([]byte{0})
	m.Write([]byte(scope))
	return m.Sum(nil)
}

// Page sizes shared by every keyset-paged list.
const (
	DefaultLimit = 20
	MaxLimit     = 100
)

// Limit returns the page size to apply for a requested one: DefaultLimit when unset
// (0), MaxLimit at most.
func Limit(requested int) int {
	if requested <= 0 {
		return DefaultLimit
	}
	return min(requested, MaxLimit)
}

// After decodes the cursor a list was called with ("" for the first page, nil
// position) against scope. Errors: ErrInvalid.
func (c *Codec) After(cursor, scope string) (*Position, error) {
	if cursor == "" {
		return nil, nil
	}
	pos, err := c.Decode(cursor, scope)
	if err != nil {
		return nil, err
	}
	return &pos, nil
}

// Scope is the text a list's cursors are bound to: v, the list's name and its
// filters, in JSON, which keeps it unambiguous whatever the filter values contain
// (a cursor of one list or filter set is refused by another). v must marshal
// (plain fields, maps of them).
func Scope(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic("cursor: a scope that cannot be marshalled: " + err.Error())
	}
	return string(b)
}

// Page is one page of a keyset-paged list: up to Limit items, and when HasMore the
// cursor of the next page (signed to the list's scope).
type Page[T any] struct {
	Items      []T
	HasMore    bool
	Limit      int
	NextCursor *string
}

// Read reads one page of a list signed to scope, the ritual every keyset-paged
// list shares: the page size (Limit), the previous page's cursor decoded against
// scope ("" for the first page), limit+1 rows fetched after that position, and the
// page trimmed to limit with the next cursor at the last row kept (at names a
// row's position). Errors: ErrInvalid, and fetch's.
func Read[T any](c *Codec, scope, after string, limit int, fetch func(after *Position, n int) ([]T, error), at func(T) Position) (*Page[T], error) {
	limit = Limit(limit)
	pos, err := c.After(after, scope)
	if err != nil {
		return nil, err
	}
	rows, err := fetch(pos, limit+1)
	if err != nil {
		return nil, err
	}
	p := &Page[T]{Limit: limit}
	p.Items, p.HasMore, p.NextCursor = Trim(c, scope, rows, limit, at)
	return p, nil
}

// Trim finishes a page read with limit+1 rows: it keeps limit rows and, when there
// was one more, reports has-more and the cursor of the last kept row.
func Trim[T any](c *Codec, scope string, rows []T, limit int, pos func(T) Position) ([]T, bool, *string) {
	if len(rows) <= limit {
		return rows, false, nil
	}
	rows = rows[:limit]
	next := c.Encode(pos(rows[limit-1]), scope)
	return rows, true, &next
}

// UTC returns t in UTC (nil for nil), so that a filter's times sign into a cursor
// scope the same whatever zone the request gave them in.
func UTC(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
