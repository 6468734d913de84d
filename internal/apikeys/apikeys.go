// Package apikeys manages the API keys of partners and operators: several per
// account, each listed by an id and a visible prefix, issued (shown once), rolled
// (a new key, the old one working on for an overlap so the owner can deploy the
// new one) and revoked. Only the SHA-256 hash of a key is stored; the partners and
// operators packages authenticate with it and mint the keys themselves (each
// kind has its own prefix).
package apikeys

import (
	"context"
	"time"

	"github.com/google/uuid"

	"partnerd/internal/kit/apperr"
)

// Owner is the kind of account a key belongs to.
type Owner string

// The owners.
const (
	Partner  Owner = "partner"
	Operator Owner = "operator"
)

// PrefixLen is how many characters of a key are kept to tell keys apart.
const PrefixLen = 14

// DefaultOverlap is how long a rolled key keeps working unless told otherwise.
const DefaultOverlap = 24 * time.Hour

// MaxOverlap bounds a roll's overlap.
const MaxOverlap = 720 * time.Hour

// Key is a stored key (never the secret).
type Key struct {
	ID         uuid.UUID
	Owner      Owner
	OwnerID    uuid.UUID
	Hash       string
	Prefix     string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	ExpiresAt  *time.Time
	RevokedAt  *time.Time
}

// Status of a key at now.
func (k *Key) Status(now time.Time) string {
	switch {
	case k.RevokedAt != nil:
		return "revoked"
	case k.ExpiresAt != nil && !k.ExpiresAt.After(now):
		return "expired"
	case k.ExpiresAt != nil:
		return "expiring"
	default:
		return "active"
	}
}

// Usable reports whether the key authenticates at now.
func (k *Key) Usable(now time.Time) bool {
	return k.RevokedAt == nil && (k.ExpiresAt == nil || k.ExpiresAt.After(now))
}

// Tx is the unit of work a key is issued, rolled or revoked in (store.Tx), with
// the change's audit row: it reads the keys as that unit sees them.
type Tx interface {
	// InsertAPIKey stores k.
	InsertAPIKey(ctx context.Context, k *Key) error
	// APIKey returns key id of the owner, or apperr NotFound.
	APIKey(ctx context.Context, owner Owner, ownerID, id uuid.UUID) (*Key, error)
	// UpdateAPIKey writes k's expires_at and revoked_at.
	UpdateAPIKey(ctx context.Context, k *Key) error
}

// Store reads keys outside any unit of work.
type Store interface {
	// APIKeys returns the keys of an owner, newest first.
	APIKeys(ctx context.Context, owner Owner, ownerID uuid.UUID) ([]*Key, error)
	// APIKey returns key id of the owner, or apperr NotFound.
	APIKey(ctx context.Context, owner Owner, ownerID, id uuid.UUID) (*Key, error)
}

// Service issues, rolls and revokes keys.
type Service struct {
	store Store
	now   func() time.Time
}

// New returns a Service.
func New(store Store, now func() time.Time) *Service { return &Service{store: store, now: now} }

// Issued is a new key with its secret, shown once.
type Issued struct {
	Key    *Key
	Secret string
}

// Hash returns the stored form of a secret (the partners package's SHA-256).
type Hash func(secret string) string

// Issue stores a new key for the owner in tx; mint makes the secret.
func (s *Service) Issue(ctx context.Context, tx Tx, owner Owner, ownerID uuid.UUID, mint func() (string, error), hash Hash) (*Issued, error) {
	secret, err := mint()
	if err != nil {
		return nil, err
	}
	k := &Key{ID: uuid.New(), Owner: owner, OwnerID: ownerID, Hash: hash(secret), Prefix: prefix(secret), CreatedAt: s.now()}
	if err := tx.InsertAPIKey(ctx, k); err != nil {
		return nil, err
	}
	return &Issued{Key: k, Secret: secret}, nil
}

func prefix(secret string) string {
	if len(secret) > PrefixLen {
		return secret[:PrefixLen]
	}
	return secret
}

// Prefix is the visible part of a secret, as stored.
func Prefix(secret string) string { return prefix(secret) }

// List returns the owner's keys, newest first.
func (s *Service) List(ctx context.Context, owner Owner, ownerID uuid.UUID) ([]*Key, error) {
	return s.store.APIKeys(ctx, owner, ownerID)
}

// Get returns the owner's key id. Errors: NotFound.
func (s *Service) Get(ctx context.Context, owner Owner, ownerID, id uuid.UUID) (*Key, error) {
	return s.store.APIKey(ctx, owner, ownerID, id)
}

// Roll issues a new key and makes key id expire overlap from now (keeping an
// earlier expiry), in tx. Errors: NotFound, InvalidRequest (overlap out of range),
// InvalidStateTransition (the key no longer works).
func (s *Service) Roll(ctx context.Context, tx Tx, owner Owner, ownerID, id uuid.UUID, overlap time.Duration, mint func() (string, error), hash Hash) (*Issued, error) {
	if overlap < 0 || overlap > MaxOverlap {
		return nil, apperr.Field(apperr.InvalidRequest, "The overlap must be between 0s and 720h.", "/overlap", "0s to 720h")
	}
	old, err := tx.APIKey(ctx, owner, ownerID, id)
	if err != nil {
		return nil, err
	}
	now := s.now()
	if !old.Usable(now) {
		return nil, apperr.New(apperr.InvalidStateTransition, "This key is "+old.Status(now)+"; only a working key can be rolled.")
	}
	until := now.Add(overlap)
	if old.ExpiresAt == nil || until.Before(*old.ExpiresAt) {
		old.ExpiresAt = &until
	}
	if err := tx.UpdateAPIKey(ctx, old); err != nil {
		return nil, err
	}
	return s.Issue(ctx, tx, owner, ownerID, mint, hash)
}

// Revoke stops key id now, in tx (a revoked key stays revoked). Errors: NotFound.
func (s *Service) Revoke(ctx context.Context, tx Tx, owner Owner, ownerID, id uuid.UUID) (*Key, error) {
	k, err := tx.APIKey(ctx, owner, ownerID, id)
	if err != nil {
		return nil, err
	}
	if k.RevokedAt == nil {
		now := s.now()
		k.RevokedAt = &now
		if err := tx.UpdateAPIKey(ctx, k); err != nil {
			return nil, err
		}
	}
	return k, nil
}
