package webhook

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"partnerd/internal/apperr"
	"partnerd/internal/safeurl"
	"partnerd/internal/webhook/sign"
)

// Endpoints registers partners' webhook endpoints.
type Endpoints struct {
	store  Store
	policy safeurl.Policy
	queue  Queue
	now    func() time.Time
}

// NewEndpoints returns an Endpoints checking URLs against policy.
func NewEndpoints(store Store, policy safeurl.Policy, queue Queue, now func() time.Time) *Endpoints {
	return &Endpoints{store: store, policy: policy, queue: queue, now: now}
}

// Get returns the partner's endpoint, or apperr NotFound.
func (s *Endpoints) Get(ctx context.Context, partnerID uuid.UUID) (*Endpoint, error) {
	e, err := s.store.EndpointOf(ctx, partnerID)
	if apperr.CodeOf(err) == apperr.NotFound {
		return nil, apperr.New(apperr.NotFound, "No webhook endpoint is registered; register one with PUT /webhooks/endpoint.")
	}
	return e, err
}

// Put registers or updates the partner's endpoint. It returns the endpoint and, on
// first registration only, its new signing secret. Enabling releases the events
// that waited while no endpoint was enabled. Errors: WebhookURLNotAllowed.
func (s *Endpoints) Put(ctx context.Context, partnerID uuid.UUID, url string, enabled bool) (*Endpoint, string, error) {
	if err := s.policy.Check(ctx, url); err != nil {
		return nil, "", apperr.Field(apperr.WebhookURLNotAllowed, "This webhook URL is not accepted here.", "/url", err.Error())
	}
	now := s.now()
	e, err := s.store.EndpointOf(ctx, partnerID)
	created := ""
	wasEnabled := false
	switch {
	case apperr.CodeOf(err) == apperr.NotFound:
		secret, err := sign.NewSecret()
		if err != nil {
			return nil, "", err
		}
		e = &Endpoint{PartnerID: partnerID, Secret: secret, CreatedAt: now}
		created = secret
	case err != nil:
		return nil, "", err
	default:
		wasEnabled = e.Enabled
	}
	e.URL, e.Enabled, e.UpdatedAt = url, enabled, now
	if err := s.store.SaveEndpoint(ctx, e); err != nil {
		return nil, "", err
	}
	if enabled && !wasEnabled {
		if err := s.release(ctx, partnerID); err != nil {
			return nil, "", err
		}
	}
	return e, created, nil
}

// release queues every pending event of the partner: one statement marks them
// all requeued, then their jobs are inserted in batches.
func (s *Endpoints) release(ctx context.Context, partnerID uuid.UUID) error {
	ids, err := s.store.RequeuePending(ctx, partnerID, s.now())
	if err != nil {
		return err
	}
	if err := s.queue.RedeliverMany(ctx, ids); err != nil {
		return fmt.Errorf("queue %d pending events: %w", len(ids), err)
	}
	return nil
}

// Rotate replaces the signing secret and returns the endpoint and the new secret.
// The old secret keeps signing beside it for SecretOverlap. Errors: NotFound.
func (s *Endpoints) Rotate(ctx context.Context, partnerID uuid.UUID) (*Endpoint, string, error) {
	e, err := s.Get(ctx, partnerID)
	if err != nil {
		return nil, "", err
	}
	secret, err := sign.NewSecret()
	if err != nil {
		return nil, "", err
	}
	now := s.now()
	old, until := e.Secret, now.Add(SecretOverlap)
	e.PreviousSecret, e.PreviousSecretExpiresAt = &old, &until
	e.Secret, e.UpdatedAt = secret, now
	if err := s.store.SaveEndpoint(ctx, e); err != nil {
		return nil, "", err
	}
	return e, secret, nil
}
