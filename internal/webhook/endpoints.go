package webhook

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"partnerd/internal/audit"
	"partnerd/internal/audit/actor"
	"partnerd/internal/idempotency"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/safeurl"
	"partnerd/internal/kit/uow"
	"partnerd/internal/webhook/sign"
)

// Tx is the unit of work an endpoint change runs in: the change reads and writes
// the endpoint through it.
type Tx interface {
	// A keyed request's answer is stored in it (idempotency.Run).
	idempotency.Keeper
	// AfterCommit runs f once the unit of work has committed.
	AfterCommit(f func())
	// EndpointOf returns the partner's endpoint, or apperr NotFound.
	EndpointOf(ctx context.Context, partnerID uuid.UUID) (*Endpoint, error)
	// InsertEndpoint inserts e unless the partner has an endpoint; it reports whether it did.
	InsertEndpoint(ctx context.Context, e *Endpoint) (bool, error)
	// UpdateEndpoint sets the URL and enabled flag, and the enabled event types
	// unless events is nil; it reports whether this write turned deliveries on.
	// Errors: NotFound.
	UpdateEndpoint(ctx context.Context, partnerID uuid.UUID, url string, enabled bool, events []string, at time.Time) (bool, error)
	// RotateSecret makes secret the signing secret and the current one the
	// previous until oldUntil. Errors: NotFound.
	RotateSecret(ctx context.Context, partnerID uuid.UUID, secret string, oldUntil, at time.Time) error
	// A partner user's change is audited in the unit of work that makes it.
	audit.Writer
	// AppendTestEvent writes e, an event of no transaction, and queues its
	// delivery when the partner's endpoint is enabled.
	AppendTestEvent(ctx context.Context, e *Event) error
}

// EndpointStore is the store of endpoint changes: the event store, and the unit
// of work they begin.
type EndpointStore interface {
	Store
	// WithTx runs fn in a unit of work of its own.
	WithTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
}

// Endpoints registers partners' webhook endpoints.
type Endpoints struct {
	store  EndpointStore
	policy safeurl.Policy
	queue  Queue
	now    func() time.Time
}

// NewEndpoints returns an Endpoints checking URLs against policy.
func NewEndpoints(store EndpointStore, policy safeurl.Policy, queue Queue, now func() time.Time) *Endpoints {
	return &Endpoints{store: store, policy: policy, queue: queue, now: now}
}

// errNoEndpoint answers for a partner without an endpoint, and says how to get one.
var errNoEndpoint = apperr.New(apperr.NotFound, "No webhook endpoint is registered; register one with PUT /webhooks/endpoint.")

// Get returns the partner's endpoint, or apperr NotFound.
func (s *Endpoints) Get(ctx context.Context, partnerID uuid.UUID) (*Endpoint, error) {
	e, err := s.store.EndpointOf(ctx, partnerID)
	if apperr.CodeOf(err) == apperr.NotFound {
		return nil, errNoEndpoint
	}
	return e, err
}

// Put registers or updates the partner's endpoint. It returns the endpoint and, on
// first registration only, its new signing secret. Enabling releases the events
// that waited while no endpoint was enabled. Each step is one conditional write, so
// of two concurrent first registrations exactly one creates the secret and the
// other updates the endpoint it created. events are the event types it receives
// (ParseEvents): nil when the request has none, which leaves them unchanged, or on
// a first registration makes it receive every type. Only the types it receives
// are recorded from then on; events recorded before are delivered as they were.
// Errors: InvalidRequest (not a URL, a bad list of events), WebhookURLNotAllowed.
//
// run is how its caller has it run: uow.Plain, or under its request's key
// (idempotency.Keyed); by is who acts (a partner's user's change is audited).
func (s *Endpoints) Put(ctx context.Context, run uow.Runner[Registered, Tx], by actor.Actor, partnerID uuid.UUID, url string, enabled bool, events *[]string) (*Endpoint, string, error) {
	var enabledEvents []string
	if events != nil {
		var err error
		if enabledEvents, err = ParseEvents(*events); err != nil {
			return nil, "", run.Before(ctx, err)
		}
	}
	if err := s.policy.Check(ctx, url); err != nil {
		if errors.Is(err, safeurl.ErrMalformed) {
			return nil, "", run.Before(ctx,
				apperr.Field(apperr.InvalidRequest, "The webhook URL is not an absolute http(s) URL.", "/url", err.Error()))
		}
		return nil, "", run.Before(ctx,
			apperr.Field(apperr.WebhookURLNotAllowed, "This webhook URL is not accepted here.", "/url", err.Error()))
	}
	// The unit of work begins once the URL passed (its check may resolve DNS). The
	// waiting events are released after it: their jobs are queued through the
	// job queue's own connection (on SQLite that waits for the write lock a unit
	// of work holds), and a release is safe to repeat.
	var switchedOn bool
	out, err := run.Run(ctx, s.store.WithTx, func(ctx context.Context, tx Tx) (Registered, error) {
		e, secret, on, err := s.put(ctx, tx, partnerID, url, enabled, enabledEvents)
		if err != nil {
			return Registered{}, err
		}
		switchedOn = on
		return Registered{Endpoint: e, Secret: secret}, audit.ByUser(ctx, tx, by, s.now(), audit.Entry{Action: audit.WebhookEndpointUpdated, Reference: &url})
	})
	if err != nil {
		return nil, "", err
	}
	if switchedOn {
		if err := s.release(ctx, partnerID); err != nil {
			return nil, "", err
		}
	}
	return out.Endpoint, out.Secret, nil
}

// Registered is an endpoint as a change left it, with its new signing secret
// when the change made one (shown once).
type Registered struct {
	Endpoint *Endpoint
	Secret   string
}

// put registers the endpoint, or updates it; events nil leaves its event types
// as they are (every type on a first registration).
func (s *Endpoints) put(ctx context.Context, tx Tx, partnerID uuid.UUID, url string, enabled bool, events []string) (*Endpoint, string, bool, error) {
	now := s.now()
	secret, err := sign.NewSecret()
	if err != nil {
		return nil, "", false, err
	}
	created, err := tx.InsertEndpoint(ctx, &Endpoint{
		PartnerID: partnerID, URL: url, Enabled: enabled, Secret: secret, EnabledEvents: events, CreatedAt: now, UpdatedAt: now,
	})
	if err != nil {
		return nil, "", false, err
	}
	switchedOn := created && enabled
	if !created {
		secret = ""
		if switchedOn, err = tx.UpdateEndpoint(ctx, partnerID, url, enabled, events, now); err != nil {
			return nil, "", false, err
		}
	}
	e, err := tx.EndpointOf(ctx, partnerID)
	if err != nil {
		return nil, "", false, err
	}
	return e, secret, switchedOn, nil
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
// The old secret keeps signing beside it for SecretOverlap. The replacement is one
// write that reads the secret it replaces, so concurrent rotations each take
// effect in turn. Errors: NotFound.
// run is how its caller has it run: uow.Plain, or under its request's key
// (idempotency.Keyed); by is who acts (a partner's user's change is audited).
func (s *Endpoints) Rotate(ctx context.Context, run uow.Runner[Registered, Tx], by actor.Actor, partnerID uuid.UUID) (*Endpoint, string, error) {
	out, err := run.Run(ctx, s.store.WithTx, func(ctx context.Context, tx Tx) (Registered, error) {
		e, secret, err := s.rotate(ctx, tx, partnerID)
		if err != nil {
			return Registered{}, err
		}
		return Registered{Endpoint: e, Secret: secret}, audit.ByUser(ctx, tx, by, s.now(), audit.Entry{Action: audit.WebhookSecretRotated})
	})
	return out.Endpoint, out.Secret, err
}

func (s *Endpoints) rotate(ctx context.Context, tx Tx, partnerID uuid.UUID) (*Endpoint, string, error) {
	secret, err := sign.NewSecret()
	if err != nil {
		return nil, "", err
	}
	now := s.now()
	if err := tx.RotateSecret(ctx, partnerID, secret, now.Add(SecretOverlap), now); err != nil {
		if apperr.CodeOf(err) == apperr.NotFound {
			err = errNoEndpoint
		}
		return nil, "", err
	}
	e, err := tx.EndpointOf(ctx, partnerID)
	if err != nil {
		return nil, "", err
	}
	return e, secret, nil
}
