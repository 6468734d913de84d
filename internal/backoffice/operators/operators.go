// Package operators owns the back office's accounts and their API keys. Keys are
// "sk_op_" followed by 256 random bits, shown once at creation and stored only as
// their SHA-256 hash, exactly like partner keys; the distinct prefix keeps the two
// kinds apart: a partner key is never an operator key and the reverse.
package operators

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"partnerd/internal/apikeys"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/partners"
)

// KeyPrefix starts every operator key.
const KeyPrefix = partners.OperatorKeyPrefix

// Operator is one back-office account.
type Operator struct {
	ID   uuid.UUID
	Name string
	// Roles are what the operator may do (at least one, in the order of Roles).
	Roles []Role
	// KeyHash is the hex SHA-256 of the API key.
	KeyHash   string
	CreatedAt time.Time
	// KeyID and KeyPrefix are the first key's id and visible prefix (at creation).
	KeyID     uuid.UUID
	KeyPrefix string
}

// Tx is the unit of work an operator is created in (store.Tx), with its audit
// row; it reads operators as that unit sees them.
type Tx interface {
	// CreateOperator inserts o and its first key.
	CreateOperator(ctx context.Context, o *Operator) error
	// OperatorByID returns operator id, or apperr NotFound.
	OperatorByID(ctx context.Context, id uuid.UUID) (*Operator, error)
	// SetOperatorRoles replaces operator id's roles.
	SetOperatorRoles(ctx context.Context, id uuid.UUID, roles []Role) error
}

// Store reads operators outside any unit of work.
type Store interface {
	// OperatorByKeyHash returns the operator whose key hashes to hash, or apperr NotFound.
	OperatorByKeyHash(ctx context.Context, hash string) (*Operator, error)
	// Operators returns every operator, oldest first.
	Operators(ctx context.Context) ([]*Operator, error)
	// OperatorByID returns operator id, or apperr NotFound.
	OperatorByID(ctx context.Context, id uuid.UUID) (*Operator, error)
}

// List returns every operator, oldest first.
func (s *Service) List(ctx context.Context) ([]*Operator, error) { return s.store.Operators(ctx) }

// Get returns operator id. Errors: NotFound.
func (s *Service) Get(ctx context.Context, id uuid.UUID) (*Operator, error) {
	return s.store.OperatorByID(ctx, id)
}

// Service creates and authenticates operators.
type Service struct {
	store Store
	now   func() time.Time
}

// NewService returns a Service.
func NewService(store Store, now func() time.Time) *Service { return &Service{store: store, now: now} }

// Create makes an operator named name holding roles and returns it with its API
// key, which is not stored and cannot be shown again. Errors: InvalidRequest for an
// empty name or no roles.
func (s *Service) Create(ctx context.Context, tx Tx, name string, roles []Role) (*Operator, string, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 200 {
		return nil, "", apperr.Field(apperr.InvalidRequest, "An operator name is required.", "name", "1 to 200 characters")
	}
	if len(roles) == 0 {
		return nil, "", apperr.Field(apperr.InvalidRequest, "At least one role is required.", "roles", "one or more of viewer, support, treasury, compliance, admin")
	}
	key, err := NewKey()
	if err != nil {
		return nil, "", err
	}
	id := uuid.New() // also the first key's id
	o := &Operator{ID: id, Name: name, Roles: roles, KeyHash: partners.HashKey(key), CreatedAt: s.now(), KeyID: id, KeyPrefix: apikeys.Prefix(key)}
	if err := tx.CreateOperator(ctx, o); err != nil {
		return nil, "", fmt.Errorf("create operator: %w", err)
	}
	return o, key, nil
}

// ErrUnauthorized answers a missing or unknown operator key (a partner key included).
var ErrUnauthorized = partners.ErrUnauthorized

// Authenticate returns the operator owning key, or ErrUnauthorized.
func (s *Service) Authenticate(ctx context.Context, key string) (*Operator, error) {
	if !strings.HasPrefix(key, KeyPrefix) || len(key) > 200 {
		return nil, ErrUnauthorized
	}
	o, err := s.store.OperatorByKeyHash(ctx, partners.HashKey(key))
	if err != nil {
		if apperr.CodeOf(err) == apperr.NotFound {
			return nil, ErrUnauthorized
		}
		return nil, err
	}
	return o, nil
}

// AuthenticateKeyHash returns the operator owning the key whose hash
// (partners.HashKey) is hash, or ErrUnauthorized: the console's in-process calls,
// whose session keeps the hash of the key signed in with, never the key, so a
// revoked key ends the console's session too.
func (s *Service) AuthenticateKeyHash(ctx context.Context, hash string) (*Operator, error) {
	if hash == "" {
		return nil, ErrUnauthorized
	}
	o, err := s.store.OperatorByKeyHash(ctx, hash)
	if err != nil {
		if apperr.CodeOf(err) == apperr.NotFound {
			return nil, ErrUnauthorized
		}
		return nil, err
	}
	return o, nil
}

// NewKey returns a fresh operator key: KeyPrefix and 32 random bytes in unpadded base64url.
func NewKey() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", errors.Join(errors.New("read random key"), err)
	}
	return KeyPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}
