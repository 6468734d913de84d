// Package partners owns partner accounts and their API keys. A key is shown once at
// creation and stored only as its SHA-256 hash, so a leaked database does not leak
// usable keys; authentication looks the hash up, which compares no secret bytes in
// variable time.
package partners

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"partnerd/internal/apikeys"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/tracing"
)

// Environment is where a partner's key is valid. It follows APP_ENV: staging serves
// sandbox partners only, production serves production partners only.
type Environment string

// The environments.
const (
	Sandbox    Environment = "sandbox"
	Production Environment = "production"
)

// KeyPrefix returns the visible prefix of keys of env ("sk_sandbox_" or "sk_live_").
func (e Environment) KeyPrefix() string {
	if e == Production {
		return "sk_live_"
	}
	return "sk_sandbox_"
}

// Partner is one integrating platform.
type Partner struct {
	ID          uuid.UUID
	Name        string
	Environment Environment
	// KeyHash is the hex SHA-256 of the API key.
	KeyHash string
	// FeeRate is the platform fee as a fraction of a completed transaction's amount.
	FeeRate decimal.Decimal
	// ShareRate is the partner's share of the platform fee, as a fraction.
	ShareRate decimal.Decimal
	CreatedAt time.Time
	// KeyID and KeyPrefix are the first key's id (the partner's own) and visible
	// prefix, at creation.
	KeyID     uuid.UUID
	KeyPrefix string
	// KeyExpiresAt is when the key that authenticated stops working (a rolled
	// key), or nil; the key cache never trusts a key past it.
	KeyExpiresAt *time.Time
}

// Tx is the unit of work a partner is created in (store.Tx), with its audit row;
// it reads partners as that unit sees them.
type Tx interface {
	// CreatePartner inserts p.
	CreatePartner(ctx context.Context, p *Partner) error
	// PartnerByID returns partner id, or apperr NotFound.
	PartnerByID(ctx context.Context, id uuid.UUID) (*Partner, error)
}

// Store reads partners outside any unit of work, and opens one (WithTx) for a
// partner created alone (CreateAlone).
type Store interface {
	// WithTx runs fn in a unit of work.
	WithTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	// PartnerByKeyHash returns the partner whose key hashes to hash, or apperr NotFound.
	PartnerByKeyHash(ctx context.Context, hash string) (*Partner, error)
	// CountPartners returns how many partners exist.
	CountPartners(ctx context.Context) (int64, error)
	// Partners returns every partner, oldest first.
	Partners(ctx context.Context) ([]*Partner, error)
	// PartnerByID returns partner id, or apperr NotFound.
	PartnerByID(ctx context.Context, id uuid.UUID) (*Partner, error)
	// KeysVersion returns a value that changes whenever any API key is added,
	// rolled or revoked, on any instance (WatchKeys compares it).
	KeysVersion(ctx context.Context) (string, error)
}

// List returns every partner, oldest first.
func (s *Service) List(ctx context.Context) ([]*Partner, error) { return s.store.Partners(ctx) }

// Get returns partner id. Errors: NotFound.
func (s *Service) Get(ctx context.Context, id uuid.UUID) (*Partner, error) {
	return s.store.PartnerByID(ctx, id)
}

// Forget drops the key hashing to hash from this instance's key cache, so a key
// revoked or rolled here stops at once here (other instances at their next
// WatchKeys read).
func (s *Service) Forget(hash string) { s.keys.forget(hash) }

// KeysWatchInterval is how often WatchKeys reads the keys' version: a key revoked
// or rolled on one instance stops on every other within this (plus the read).
const KeysWatchInterval = 250 * time.Millisecond

// WatchKeys empties this instance's key cache whenever the keys' version in the
// database changes (a key added, rolled or revoked by any instance), reading it
// every interval until ctx is done: the cache saves a round trip per request
// without serving a revoked key for longer than one interval. A failed read
// empties the cache too (a version it cannot see may have changed).
//
// The reads are not traced (tracing.Untraced): at four a second per instance
// each would otherwise be a trace of its own, and a quiet service would export
// a steady stream of traces that say nothing.
func (s *Service) WatchKeys(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	s.watchKeys(ctx, t.C)
}

// watchKeys is WatchKeys reading the version at each tick (a test's ticks are
// its own).
func (s *Service) watchKeys(ctx context.Context, tick <-chan time.Time) {
	ctx = tracing.Untraced(ctx)
	last, err := s.store.KeysVersion(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
		v, verr := s.store.KeysVersion(ctx)
		if verr != nil || err != nil || v != last {
			s.keys.clear()
		}
		last, err = v, verr
	}
}

// Environment is where this service's keys work.
func (s *Service) Environment() Environment { return s.env }

// Defaults are the revenue rates given to new partners.
type Defaults struct {
	FeeRate   decimal.Decimal
	ShareRate decimal.Decimal
}

// Service creates and authenticates partners for one environment.
type Service struct {
	store    Store
	env      Environment
	defaults Defaults
	now      func() time.Time
	keys     *keyCache
}

// NewService returns a Service issuing and accepting keys of env only.
func NewService(store Store, env Environment, defaults Defaults, now func() time.Time) *Service {
	return &Service{store: store, env: env, defaults: defaults, now: now, keys: newKeyCache(KeyCacheSize, KeyCacheTTL)}
}

// Create makes a partner named name and returns it with its API key. The key is not
// stored and cannot be shown again. The partner is written in tx.
func (s *Service) Create(ctx context.Context, tx Tx, name string) (*Partner, string, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 200 {
		return nil, "", apperr.Field(apperr.InvalidRequest, "A partner name is required.", "name", "1 to 200 characters")
	}
	key, err := NewKey(s.env)
	if err != nil {
		return nil, "", err
	}
	id := uuid.New()
	p := &Partner{
		ID:          id,
		Name:        name,
		Environment: s.env,
		KeyHash:     HashKey(key),
		KeyID:       id, // the first key's id is the partner's
		KeyPrefix:   apikeys.Prefix(key),
		FeeRate:     s.defaults.FeeRate,
		ShareRate:   s.defaults.ShareRate,
		CreatedAt:   s.now(),
	}
	if err := tx.CreatePartner(ctx, p); err != nil {
		return nil, "", fmt.Errorf("create partner: %w", err)
	}
	return p, key, nil
}

// The 401 errors. Each says what is wrong with the key as it was sent (missing,
// not shaped like a key, of the other environment, or not recognised): all of it
// visible to the sender from the key alone, so none reveals whether a key exists.
var (
	// ErrUnauthorized is a well-formed key of this environment that is not
	// recognised (unknown, or revoked).
	ErrUnauthorized = apperr.New(apperr.Unauthorized, "The API key in X-API-KEY is not recognised.")
	// ErrKeyMissing is a request without the X-API-KEY header.
	ErrKeyMissing = apperr.New(apperr.Unauthorized, "The X-API-KEY header is missing; send your API key in it.")
	// ErrKeyMalformed is a header value that is not shaped like an API key.
	ErrKeyMalformed = apperr.New(apperr.Unauthorized, "The X-API-KEY header does not hold an API key; copy the whole key as it was issued.")
	// ErrOperatorKey is an operator's key sent to the partner API.
	ErrOperatorKey = apperr.New(apperr.Unauthorized, "This is an operator key: it works on the operator API (/api/v1/operator), not the partner API, which takes a partner's sandbox or live key.")
)

// OperatorKeyPrefix starts every operator key (package operators issues them;
// the prefix lives here so the partner API can tell such a key apart).
const OperatorKeyPrefix = "sk_op_"

// errOtherEnvironment is a key whose prefix belongs to the other environment.
func (s *Service) errOtherEnvironment() *apperr.Error {
	if s.env == Production {
		return apperr.New(apperr.Unauthorized, "This is a sandbox key, for the other environment; production takes live keys.")
	}
	return apperr.New(apperr.Unauthorized, "This is a live key, for the other environment; the sandbox takes sandbox keys.")
}

// Authenticate returns the partner owning key, or one of the 401 errors above. A
// key of the other environment is refused even if it exists (a sandbox key never
// works in production).
func (s *Service) Authenticate(ctx context.Context, key string) (*Partner, error) {
	other := Sandbox
	if s.env == Sandbox {
		other = Production
	}
	switch {
	case key == "":
		return nil, ErrKeyMissing
	case strings.HasPrefix(key, other.KeyPrefix()):
		return nil, s.errOtherEnvironment()
	case strings.HasPrefix(key, OperatorKeyPrefix):
		return nil, ErrOperatorKey
	case !strings.HasPrefix(key, s.env.KeyPrefix()) || len(key) > 200:
		return nil, ErrKeyMalformed
	}
	hash := HashKey(key)
	if p, ok := s.keys.get(hash); ok {
		return p, nil
	}
	p, err := s.store.PartnerByKeyHash(ctx, hash)
	if err != nil {
		if apperr.CodeOf(err) == apperr.NotFound {
			return nil, ErrUnauthorized
		}
		return nil, err
	}
	if p.Environment != s.env {
		return nil, ErrUnauthorized
	}
	s.keys.put(hash, p)
	return p, nil
}

// EnsureDemo creates a partner named "Demo partner" when none exists at all and
// returns it and its key; otherwise it returns nil and "" (the key of an existing
// partner cannot be recovered). Staging calls it at start so a newcomer can call
// the API at once.
func (s *Service) EnsureDemo(ctx context.Context) (*Partner, string, error) {
	n, err := s.store.CountPartners(ctx)
	if err != nil {
		return nil, "", err
	}
	if n > 0 {
		return nil, "", nil
	}
	return s.CreateAlone(ctx, "Demo partner")
}

// CreateAlone is Create in a unit of work of its own, for a caller outside any
// (staging's demo partner, tests, benchmarks): no audit row.
func (s *Service) CreateAlone(ctx context.Context, name string) (*Partner, string, error) {
	var (
		p   *Partner
		key string
	)
	err := s.store.WithTx(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		p, key, err = s.Create(ctx, tx, name)
		return err
	})
	return p, key, err
}

// keyBytes is the entropy of an API key: 32 bytes = 256 bits.
const keyBytes = 32

// NewKey returns a fresh random API key for env: the environment prefix followed by
// 32 random bytes in unpadded base64url.
func NewKey(env Environment) (string, error) {
	b := make([]byte, keyBytes)
	if _, err := rand.Read(b); err != nil {
		return "", errors.Join(errors.New("read random key"), err)
	}
	return env.KeyPrefix() + base64.RawURLEncoding.EncodeToString(b), nil
}

// HashKey returns the hex SHA-256 of key, the only form in which keys are stored.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}
