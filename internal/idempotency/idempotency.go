// Package idempotency makes retried requests safe, after the IETF Idempotency-Key
// draft and Stripe's practice. A key is claimed before the request executes; the
// executed response is stored in the same database transaction as the request's
// effects, so a crash leaves either both or neither. A retry with the same key and
// request gets the stored response; the same key with another request is refused.
package idempotency

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"partnerd/internal/apperr"
)

// Retention is how long a key is remembered (the spec promises at least 24 hours).
const Retention = 24 * time.Hour

// LockTimeout is how long a claimed key may stay in progress before a retry may take
// it over: a claim that old belongs to a request that died before committing.
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

// Store persists keys.
type Store interface {
	// InsertKey inserts r unless the key exists, and reports whether it inserted.
	InsertKey(ctx context.Context, r *Record) (bool, error)
	// GetKey returns the key's record, or apperr NotFound.
	GetKey(ctx context.Context, k Key) (*Record, error)
	// RelockKey moves an in-progress key's lock from old to now, reporting success
	// (false when another request got there first).
	RelockKey(ctx context.Context, k Key, old, now time.Time) (bool, error)
	// ReplaceExpiredKey replaces an expired record of k with r, reporting success.
	ReplaceExpiredKey(ctx context.Context, r *Record, now time.Time) (bool, error)
	// CompleteKey stores the response and marks the key done (in ctx's transaction).
	CompleteKey(ctx context.Context, k Key, status int, body []byte) error
	// DeleteKey removes an in-progress claim so the request can be retried.
	DeleteKey(ctx context.Context, k Key) error
	// PurgeKeys deletes keys that expired before t and returns how many.
	PurgeKeys(ctx context.Context, t time.Time) (int64, error)
}

// Service claims, completes and releases keys.
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

// Claim claims k for a request with fingerprint fp. It returns (nil, nil) when the
// caller now owns the key and must execute and then Complete or Release it; a
// stored response (done record) to replay; or an error: IdempotencyKeyReused when
// the key was used for another request, IdempotencyRequestInProgress while another
// request holds it.
func (s *Service) Claim(ctx context.Context, k Key, fp string) (*Record, error) {
	for attempt := 0; attempt < 3; attempt++ {
		now := s.now()
		rec := &Record{Key: k, Fingerprint: fp, State: InProgress, LockedAt: now, CreatedAt: now, ExpiresAt: now.Add(Retention)}
		inserted, err := s.store.InsertKey(ctx, rec)
		if err != nil {
			return nil, err
		}
		if inserted {
			return nil, nil
		}
		old, err := s.store.GetKey(ctx, k)
		if apperr.CodeOf(err) == apperr.NotFound {
			continue // released or purged in between: try again
		}
		if err != nil {
			return nil, err
		}
		if !now.Before(old.ExpiresAt) {
			ok, err := s.store.ReplaceExpiredKey(ctx, rec, now)
			if err != nil {
				return nil, err
			}
			if ok {
				return nil, nil
			}
			continue
		}
		if old.Fingerprint != fp {
			return nil, apperr.Field(apperr.IdempotencyKeyReused,
				"This Idempotency-Key was already used with a different request.",
				"Idempotency-Key", "use a new key for a new request")
		}
		if old.State == Done {
			return old, nil
		}
		if now.Sub(old.LockedAt) >= LockTimeout {
			ok, err := s.store.RelockKey(ctx, k, old.LockedAt, now)
			if err != nil {
				return nil, err
			}
			if ok {
				return nil, nil
			}
		}
		return nil, apperr.New(apperr.IdempotencyRequestInProgress,
			"A request with this Idempotency-Key is still being processed; retry shortly.")
	}
	return nil, apperr.New(apperr.IdempotencyRequestInProgress,
		"A request with this Idempotency-Key is still being processed; retry shortly.")
}

// Complete stores the executed response of k. Call it in the database transaction
// that holds the request's effects.
func (s *Service) Complete(ctx context.Context, k Key, status int, body []byte) error {
	return s.store.CompleteKey(ctx, k, status, body)
}

// Release gives up a claim whose request did not execute to a storable result (a
// server error), so a retry with the same key executes afresh.
func (s *Service) Release(ctx context.Context, k Key) error {
	return s.store.DeleteKey(ctx, k)
}

// Purge deletes expired keys and returns how many.
func (s *Service) Purge(ctx context.Context) (int64, error) {
	return s.store.PurgeKeys(ctx, s.now())
}
