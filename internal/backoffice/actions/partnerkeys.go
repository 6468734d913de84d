package actions

import (
	"context"
	"time"

	"github.com/google/uuid"

	"partnerd/internal/apikeys"
	"partnerd/internal/audit"
	"partnerd/internal/audit/actor"
	"partnerd/internal/kit/uow"
	"partnerd/internal/partners"
)

// A partner's admin manages the partner's own API keys on the dashboard with the
// rules an operator's key actions follow (IssueKey, RollKey, RevokeKey): the
// same minting, overlap bounds and cache eviction, in one unit of work with an
// audit row naming the user (actor partner_user). The partner API has no key
// operations on purpose: a leaked server key must not mint keys.

// IssuePartnerKey adds a key to partnerID, by its user (by).
func (s *Service) IssuePartnerKey(ctx context.Context, by actor.Actor, partnerID uuid.UUID) (*apikeys.Issued, error) {
	return uow.Run(ctx, s.begin, func(ctx context.Context, tx Tx) (*apikeys.Issued, error) {
		mint, err := mintIn(ctx, tx, apikeys.Partner, partnerID)
		if err != nil {
			return nil, err
		}
		k, err := s.keys.Issue(ctx, tx, apikeys.Partner, partnerID, mint, partners.HashKey)
		if err != nil {
			return nil, err
		}
		return k, s.audited(ctx, tx, by, audit.KeyCreated, k.Key.ID, k.Key.Prefix)
	})
}

// RollPartnerKey replaces partnerID's key keyID, by its user (by); the old key
// works for overlap more. Errors: NotFound (another partner's key included),
// InvalidRequest (overlap), InvalidStateTransition (a key that no longer works).
func (s *Service) RollPartnerKey(ctx context.Context, by actor.Actor, partnerID, keyID uuid.UUID, overlap time.Duration) (*apikeys.Issued, error) {
	return uow.Run(ctx, s.begin, func(ctx context.Context, tx Tx) (*apikeys.Issued, error) {
		mint, err := mintIn(ctx, tx, apikeys.Partner, partnerID)
		if err != nil {
			return nil, err
		}
		k, err := s.keys.Roll(ctx, tx, apikeys.Partner, partnerID, keyID, overlap, mint, partners.HashKey)
		if err != nil {
			return nil, err
		}
		s.forget(ctx, tx, apikeys.Partner, partnerID, keyID)
		return k, s.audited(ctx, tx, by, audit.KeyRolled, keyID, k.Key.Prefix)
	})
}

// RevokePartnerKey revokes partnerID's key keyID, by its user (by). Errors:
// NotFound (another partner's key included).
func (s *Service) RevokePartnerKey(ctx context.Context, by actor.Actor, partnerID, keyID uuid.UUID) (*apikeys.Key, error) {
	return uow.Run(ctx, s.begin, func(ctx context.Context, tx Tx) (*apikeys.Key, error) {
		k, err := s.keys.Revoke(ctx, tx, apikeys.Partner, partnerID, keyID)
		if err != nil {
			return nil, err
		}
		s.forget(ctx, tx, apikeys.Partner, partnerID, keyID)
		return k, s.audited(ctx, tx, by, audit.KeyRevoked, keyID, k.Prefix)
	})
}

// PartnerKeys lists partnerID's keys, newest first.
func (s *Service) PartnerKeys(ctx context.Context, partnerID uuid.UUID) ([]*apikeys.Key, error) {
	return s.keys.List(ctx, apikeys.Partner, partnerID)
}
