// Package idempotency makes retried requests safe, after the IETF Idempotency-Key
// draft and Stripe's practice ("Implementing Stripe-like Idempotency Keys in
// Postgres"): the key's claim, the request's effects and its stored response are
// one database transaction (Service.Do), so a crash leaves either all or nothing
// and no key is ever left claimed by a dead request. A retry with the same key and
// request gets the stored response; the same key with another request is refused.
package idempotency

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"partnerd/internal/apperr"
)

// Retention is how long a key is remembered (the spec promises at least 24 hours).
const Retention = 24 * time.Hour

// LockTimeout is how long a committed in-progress claim may stand before a retry
// takes it over. Claims commit only with their answer now, so such a claim can
// only be one an earlier version of the service left behind.
const LockTimeout = time.Minute

// State of a key.
const (
	InProgress = "in_progress"
	Done       = "done"
)

// Key names a key: the partner, the operation and the partner's key string.
type Key struct {
	PartnerID uuid.UUID
	Operation string
	Key       string
}

// Record is a stored key.
type Record struct {
	Key
	Fingerprint    string
	State          string
	ResponseStatus int
	ResponseBody   []byte
	LockedAt       time.Time
	CreatedAt      time.Time
	ExpiresAt      time.Time
}

// Tx is the unit of work a request executes in, as this package sees it.
type Tx interface {
	// InsertKey inserts r unless the key exists, and reports whether it inserted.
	// On PostgreSQL an insert that meets another unit of work's uncommitted claim
	// of the same key waits for that unit to end (then inserts, if it rolled
	// back, or reports the committed key).
	InsertKey(ctx context.Context, r *Record) (bool, error)
	// GetKey returns the key's record as this unit of work sees it, or apperr NotFound.
	GetKey(ctx context.Context, k Key) (*Record, error)
	// ReplaceKey overwrites the key's record with r when the record is expired or
	// an abandoned claim (state in progress, locked before staleBefore: left by an
	// earlier version of the service), reporting whether it did.
	ReplaceKey(ctx context.Context, r *Record, now, staleBefore time.Time) (bool, error)
	// CompleteKey stores the response and marks the key done.
	CompleteKey(ctx context.Context, k Key, status int, body []byte) error
	// LimitLockWait bounds how long the unit of work waits for another's lock
	// (PostgreSQL; a no-op on SQLite, whose writers are serialized).
	LimitLockWait(ctx context.Context, d time.Duration) error
}

// Store opens units of work and keeps keys.
type Store interface {
	// WithTx runs fn in a unit of work (see store.Transact): fn's ctx carries it,
	// so the request's domain services join it.
	WithTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	// PurgeKeys deletes keys that expired before t and returns how many.
	PurgeKeys(ctx context.Context, t time.Time) (int64, error)
}

// Service runs requests under their keys.
type Service struct {
	store Store
	now   func() time.Time
}

// NewService returns a Service.
func NewService(store Store, now func() time.Time) *Service {
	return &Service{store: store, now: now}
}

// Fingerprint identifies a request: method, path and the body in canonical JSON
// (keys sorted, insignificant white space dropped), so the same request sent with
// other formatting still matches. A body that is not JSON is hashed as sent.
func Fingerprint(method, path string, body []byte) string {
	canon := body
	if len(bytes.TrimSpace(body)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err == nil {
			if b, err := json.Marshal(v); err == nil {
				canon = b
			}
		}
	}
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write([]byte(path))
	h.Write([]byte{0})
	h.Write(canon)
	return hex.EncodeToString(h.Sum(nil))
}

// Response is an executed request's answer, as stored and replayed.
type Response struct {
	Status int
	Body   []byte
	// Replayed is set when the answer is the stored one of an earlier request.
	Replayed bool
}

// Stored reports whether an answer with status is kept for retries: answers of
// executed requests are (2xx, and 4xx such as 404 or 409 that report the state
// of things); a 400 (the request was malformed and did not execute) and a 5xx
// (it failed) are not, so a corrected or later retry executes afresh.
func Stored(status int) bool { return status < 500 && status != 400 }

// WaitLimit is how long a request waits for another request holding the same key
// before it gets IdempotencyRequestInProgress.
const WaitLimit = 5 * time.Second

// Do runs the request fn under key k (fingerprint fp) in one unit of work:
//
//  1. claim the key: a new key is claimed; a key done with the same fingerprint
//     returns its stored answer (Replayed) without running fn; another
//     fingerprint is IdempotencyKeyReused; a key another request is executing
//     right now makes this one wait for it (then replay), for at most WaitLimit
//     (then IdempotencyRequestInProgress);
//  2. run fn with a ctx that carries the unit of work, so its effects join it;
//  3. if fn's answer is a 2xx, store it beside the effects and commit both at once.
//     Any other answer rolls the effects back; a stored 4xx (see Stored) is then
//     recorded on its own, with nothing else to commit.
//
// Because the claim commits only with the answer, a request that crashes or whose
// server dies mid-way leaves nothing behind: a retry executes at once.
func (s *Service) Do(ctx context.Context, k Key, fp string, fn func(ctx context.Context) (Response, error)) (Response, error) {
	var out Response
	err := s.store.WithTx(ctx, func(ctx context.Context, tx Tx) error {
		replay, err := s.claim(ctx, tx, k, fp)
		if err != nil || replay != nil {
			if replay != nil {
				out = *replay
			}
			return err
		}
		if out, err = fn(ctx); err != nil {
			return err
		}
		if out.Status < 200 || out.Status > 299 {
			return errDiscard
		}
		return tx.CompleteKey(ctx, k, out.Status, out.Body)
	})
	if errors.Is(err, errDiscard) {
		err = nil
		if Stored(out.Status) {
			// Best effort: unstored, a retry executes again and, nothing having
			// changed, gets the same answer.
			_ = s.record(ctx, k, fp, out)
		}
	}
	return out, err
}

// errDiscard rolls back a request's effects whose answer is not a success.
var errDiscard = errors.New("idempotency: discard effects")

// record stores the answer of an executed request that changed nothing (a 4xx).
// When the key was claimed meanwhile (a concurrent retry), that request's answer
// stands.
func (s *Service) record(ctx context.Context, k Key, fp string, r Response) error {
	return s.store.WithTx(ctx, func(ctx context.Context, tx Tx) error {
		if err := tx.LimitLockWait(ctx, WaitLimit); err != nil {
			return err
		}
		now := s.now()
		_, err := tx.InsertKey(ctx, &Record{Key: k, Fingerprint: fp, State: Done, ResponseStatus: r.Status, ResponseBody: r.Body,
			LockedAt: now, CreatedAt: now, ExpiresAt: now.Add(Retention)})
		return err
	})
}

// claim claims k in tx, or returns the stored answer to replay, or an error.
func (s *Service) claim(ctx context.Context, tx Tx, k Key, fp string) (*Response, error) {
	if err := tx.LimitLockWait(ctx, WaitLimit); err != nil {
		return nil, err
	}
	now := s.now()
	rec := &Record{Key: k, Fingerprint: fp, State: InProgress, LockedAt: now, CreatedAt: now, ExpiresAt: now.Add(Retention)}
	inserted, err := tx.InsertKey(ctx, rec)
	if err != nil {
		return nil, err
	}
	if inserted {
		return nil, nil
	}
	old, err := tx.GetKey(ctx, k)
	if err != nil {
		return nil, err
	}
	if !now.Before(old.ExpiresAt) || (old.State == InProgress && now.Sub(old.LockedAt) >= LockTimeout) {
		ok, err := tx.ReplaceKey(ctx, rec, now, now.Add(-LockTimeout))
		if err != nil {
			return nil, err
		}
		if ok {
			return nil, nil
		}
		return nil, errInProgress()
	}
	if old.Fingerprint != fp {
		return nil, apperr.Field(apperr.IdempotencyKeyReused,
			"This Idempotency-Key was already used with a different request.",
			"Idempotency-Key", "use a new key for a new request")
	}
	if old.State == Done {
		return &Response{Status: old.ResponseStatus, Body: old.ResponseBody, Replayed: true}, nil
	}
	return nil, errInProgress()
}

func errInProgress() error {
	return apperr.New(apperr.IdempotencyRequestInProgress,
		"A request with this Idempotency-Key is still being processed; retry shortly.")
}

// Purge deletes expired keys and returns how many.
func (s *Service) Purge(ctx context.Context) (int64, error) {
	return s.store.PurgeKeys(ctx, s.now())
}
