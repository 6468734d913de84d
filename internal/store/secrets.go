package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"partnerd/internal/idempotency"
	"partnerd/internal/kit/secrets"
)

// UseSecrets makes k the keys that seal and open the stored secrets (TOTP
// secrets, webhook signing secrets); call it before any other method. Until
// then the store uses the built-in development key (staging and tests).
func (s *Store) UseSecrets(k *secrets.Keyring) { s.keys = k }

// The sealed secrets are bound to their row: a ciphertext copied to another row
// does not open.
func totpContext(userID uuid.UUID) string       { return "partner_users.totp_secret:" + userID.String() }
func webhookContext(partnerID uuid.UUID) string { return "webhook_endpoints:" + partnerID.String() }

// answerContext binds a stored idempotent answer to its key's row.
func answerContext(t keyTable, k idempotency.Key) string {
	return t.name + ":" + k.PartnerID.String() + ":" + k.Operation + ":" + k.Key
}

// sealAnswer returns the key id and sealed bytes of a stored answer's body
// (nil, nil for none): an answer may hold a secret, such as a new API key.
func (s *Store) sealAnswer(t keyTable, k idempotency.Key, body []byte) (*string, []byte) {
	if body == nil {
		return nil, nil
	}
	id, sealed := s.keys.Seal(string(body), answerContext(t, k))
	return &id, []byte(sealed)
}

// openAnswer returns a stored answer's body, sealed by keyID (nil: stored in the
// clear before answers were sealed, returned as it is).
func (s *Store) openAnswer(t keyTable, k idempotency.Key, keyID *string, stored []byte) ([]byte, error) {
	if keyID == nil || stored == nil {
		return stored, nil
	}
	plain, err := s.keys.Open(*keyID, string(stored), answerContext(t, k))
	if err != nil {
		return nil, fmt.Errorf("stored answer of %s: %w", k.Operation, err)
	}
	return []byte(plain), nil
}

// seal returns the key id and sealed text of plain (nil, nil for nil).
func (s *Store) seal(plain *string, context string) (keyID, sealed *string) {
	if plain == nil {
		return nil, nil
	}
	id, text := s.keys.Seal(*plain, context)
	return &id, &text
}

// open returns the secret stored as stored, sealed by keyID (nil: stored in the
// clear before sealing began, returned as it is).
func (s *Store) open(keyID, stored *string, context string) (*string, error) {
	if stored == nil || keyID == nil {
		return stored, nil
	}
	plain, err := s.keys.Open(*keyID, *stored, context)
	if err != nil {
		return nil, err
	}
	return &plain, nil
}

// RotateSecrets seals again under the current key every stored secret sealed
// by another key or stored in the clear, and returns how many rows it rewrote.
// Each row is rewritten only if it still holds what was read (a conditional
// update), so a change made meanwhile is never overwritten; a secret that does
// not open (a key missing from the ring) is an error naming it, and nothing
// after it is rewritten.
func (s *Store) RotateSecrets(ctx context.Context) (int, error) {
	cur := s.keys.Current()
	n := 0
	var users []partnerUserRow
	if err := s.read(ctx).Where("totp_secret IS NOT NULL AND (totp_secret_key IS NULL OR totp_secret_key <> ?)", cur).Find(&users).Error; err != nil {
		return n, err
	}
	for _, u := range users {
		plain, err := s.open(u.TOTPSecretKey, u.TOTPSecret, totpContext(u.ID))
		if err != nil {
			return n, fmt.Errorf("user %s: %w", u.ID, err)
		}
		id, sealed := s.seal(plain, totpContext(u.ID))
		res := s.write(ctx).Model(&partnerUserRow{}).Where("id = ? AND totp_secret = ?", u.ID, *u.TOTPSecret).
			Updates(map[string]any{"totp_secret": sealed, "totp_secret_key": id})
		if res.Error != nil {
			return n, res.Error
		}
		n += int(res.RowsAffected)
	}
	var eps []endpointRow
	if err := s.read(ctx).Where("secret_key IS NULL OR secret_key <> ? OR (previous_secret IS NOT NULL AND (previous_secret_key IS NULL OR previous_secret_key <> ?))", cur, cur).
		Find(&eps).Error; err != nil {
		return n, err
	}
	for _, e := range eps {
		ep, err := s.endpointDomain(&e)
		if err != nil {
			return n, fmt.Errorf("webhook endpoint of partner %s: %w", e.PartnerID, err)
		}
		id, sealed := s.seal(&ep.Secret, webhookContext(e.PartnerID))
		pid, psealed := s.seal(ep.PreviousSecret, webhookContext(e.PartnerID))
		res := s.write(ctx).Model(&endpointRow{}).Where("partner_id = ? AND secret = ?", e.PartnerID, e.Secret).
			Updates(map[string]any{"secret": *sealed, "secret_key": id, "previous_secret": psealed, "previous_secret_key": pid})
		if res.Error != nil {
			return n, res.Error
		}
		n += int(res.RowsAffected)
	}
	for _, t := range []keyTable{partnerKeyTable, operatorKeyTable} {
		m, err := s.rotateAnswers(ctx, t, cur)
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// rotateAnswers seals again under key cur every stored answer of table t sealed
// by another key or stored in the clear, each only if unchanged since read.
func (s *Store) rotateAnswers(ctx context.Context, t keyTable, cur string) (int, error) {
	var rows []struct {
		Owner        uuid.UUID
		Operation    string
		Key          string
		ResponseBody []byte
		ResponseKey  *string
		CreatedAt    time.Time
	}
	err := s.read(ctx).Table(t.name).Select(t.owner+" AS owner, operation, key, response_body, response_key, created_at").
		Where("response_body IS NOT NULL AND (response_key IS NULL OR response_key <> ?)", cur).Scan(&rows).Error
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range rows {
		k := idempotency.Key{PartnerID: r.Owner, Operation: r.Operation, Key: r.Key}
		plain, err := s.openAnswer(t, k, r.ResponseKey, r.ResponseBody)
		if err != nil {
			return n, err
		}
		id, sealed := s.sealAnswer(t, k, plain)
		q, args := t.where(k)
		db := s.write(ctx).Table(t.name).Where(q, args...).Where("created_at = ?", r.CreatedAt)
		if r.ResponseKey == nil {
			db = db.Where("response_key IS NULL")
		} else {
			db = db.Where("response_key = ?", *r.ResponseKey)
		}
		res := db.Updates(map[string]any{"response_body": sealed, "response_key": *id})
		if res.Error != nil {
			return n, res.Error
		}
		n += int(res.RowsAffected)
	}
	return n, nil
}
