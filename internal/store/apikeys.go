package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"partnerd/internal/apikeys"
)

var _ apikeys.Store = (*Store)(nil)

type apiKeyRow struct {
	ID         uuid.UUID `gorm:"primaryKey"`
	OwnerKind  string
	OwnerID    uuid.UUID
	KeyHash    string
	Prefix     string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	ExpiresAt  *time.Time
	RevokedAt  *time.Time
}

func (apiKeyRow) TableName() string { return "api_keys" }

func (r *apiKeyRow) domain() *apikeys.Key {
	return &apikeys.Key{ID: r.ID, Owner: apikeys.Owner(r.OwnerKind), OwnerID: r.OwnerID, Hash: r.KeyHash, Prefix: r.Prefix,
		CreatedAt: r.CreatedAt.UTC(), LastUsedAt: utcPtr(r.LastUsedAt), ExpiresAt: utcPtr(r.ExpiresAt), RevokedAt: utcPtr(r.RevokedAt)}
}

// InsertAPIKey stores k.
func (s *Store) InsertAPIKey(ctx context.Context, k *apikeys.Key) error {
	return s.write(ctx).Create(&apiKeyRow{ID: k.ID, OwnerKind: string(k.Owner), OwnerID: k.OwnerID, KeyHash: k.Hash,
		Prefix: k.Prefix, CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt}).Error
}

// APIKeys returns an owner's keys, newest first.
func (s *Store) APIKeys(ctx context.Context, owner apikeys.Owner, ownerID uuid.UUID) ([]*apikeys.Key, error) {
	var rows []apiKeyRow
	if err := s.read(ctx).Where("owner_kind = ? AND owner_id = ?", string(owner), ownerID).Order("created_at DESC, id DESC").Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]*apikeys.Key, len(rows))
	for i := range rows {
		out[i] = rows[i].domain()
	}
	return out, nil
}

// APIKey returns an owner's key id, or apperr NotFound.
func (s *Store) APIKey(ctx context.Context, owner apikeys.Owner, ownerID, id uuid.UUID) (*apikeys.Key, error) {
	var row apiKeyRow
	if err := s.read(ctx).Where("owner_kind = ? AND owner_id = ? AND id = ?", string(owner), ownerID, id).Take(&row).Error; err != nil {
		return nil, notFound(err, "API key")
	}
	return row.domain(), nil
}

// UpdateAPIKey writes k's expiry and revocation.
func (s *Store) UpdateAPIKey(ctx context.Context, k *apikeys.Key) error {
	return s.write(ctx).Model(&apiKeyRow{}).Where("id = ?", k.ID).
		Updates(map[string]any{"expires_at": k.ExpiresAt, "revoked_at": k.RevokedAt}).Error
}

// usableKeyOwner is the condition of a key hash that authenticates now, joined as k.
const usableKey = "k.key_hash = ? AND k.owner_kind = ? AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > ?)"

// touchKey records that the key hashing to hash authenticated at now, at most once
// a minute (a write per request would cost more than the request).
func (s *Store) touchKey(ctx context.Context, hash string, now time.Time) error {
	return s.write(ctx).Model(&apiKeyRow{}).Where("key_hash = ? AND (last_used_at IS NULL OR last_used_at < ?)", hash, now.Add(-time.Minute)).
		Update("last_used_at", now).Error
}

// KeysVersion returns a value that changes whenever an API key is added, rolled
// (a new key inserted, the old one's expiry set) or revoked: the keys' count, the
// revoked count and the latest revocation and expiry, read in one statement over
// the small api_keys table. Instances compare it to empty their key caches
// (partners.WatchKeys).
func (s *Store) KeysVersion(ctx context.Context) (string, error) {
	// The times are read as text: each database spells its own (SQLite keeps
	// text), and only a change matters.
	var row struct {
		N, Revoked              int64
		LastRevoked, LastExpiry *string
	}
	if err := s.read(ctx).Model(&apiKeyRow{}).
		Select("COUNT(*) AS n, COUNT(revoked_at) AS revoked, MAX(revoked_at) AS last_revoked, MAX(expires_at) AS last_expiry").
		Scan(&row).Error; err != nil {
		return "", err
	}
	text := func(p *string) string {
		if p == nil {
			return "-"
		}
		return *p
	}
	return fmt.Sprintf("%d/%d/%s/%s", row.N, row.Revoked, text(row.LastRevoked), text(row.LastExpiry)), nil
}
