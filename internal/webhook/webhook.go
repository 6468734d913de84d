// Package webhook delivers the outbox's events to partners: endpoint registration
// with signing secrets and their rotation, signed at-least-once delivery with a
// retry schedule, and the event log with replay. Events are written by the
// transaction lifecycle in the same database transaction as the change they report
// (package transactions); a River job per event (package jobs) calls Deliver.
package webhook

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"partnerd/internal/audit"
)

// Publish statuses of an event.
const (
	Pending   = "pending"
	Delivered = "delivered"
	Failed    = "failed"
)

// SecretOverlap is how long a rotated-out secret keeps signing beside the new one.
const SecretOverlap = 24 * time.Hour

// Retention is how long events are kept.
const Retention = 30 * 24 * time.Hour

// DefaultSchedule is the wait before each retry after a failed attempt: production's,
// spread over about a day for a partner's outage.
var DefaultSchedule = []time.Duration{
	5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour,
}

// StagingSchedule is the sandbox's: its first retries come within seconds, so events
// sent before a developer started their receiver (an endpoint registered before
// `partnerd listen`) arrive about when it starts, not five minutes later. It then
// rejoins DefaultSchedule from 5 minutes on.
var StagingSchedule = []time.Duration{
	5 * time.Second, 10 * time.Second, 20 * time.Second, 30 * time.Second, 1 * time.Minute,
	5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour,
}

// ScheduleFor is the retry schedule of an environment when none is configured:
// DefaultSchedule in production, StagingSchedule elsewhere.
func ScheduleFor(production bool) []time.Duration {
	if production {
		return DefaultSchedule
	}
	return StagingSchedule
}

// ScheduleString spells a retry schedule as WEBHOOK_RETRY_SCHEDULE does: "5s,5m,30m,2h,…".
func ScheduleString(schedule []time.Duration) string {
	parts := make([]string, len(schedule))
	for i, d := range schedule {
		switch {
		case d%time.Hour == 0:
			parts[i] = fmt.Sprintf("%dh", d/time.Hour)
		case d%time.Minute == 0:
			parts[i] = fmt.Sprintf("%dm", d/time.Minute)
		case d%time.Second == 0:
			parts[i] = fmt.Sprintf("%ds", d/time.Second)
		default:
			parts[i] = d.String()
		}
	}
	return strings.Join(parts, ",")
}

// Endpoint is a partner's webhook endpoint.
type Endpoint struct {
	PartnerID               uuid.UUID
	URL                     string
	Enabled                 bool
	Secret                  string
	PreviousSecret          *string
	PreviousSecretExpiresAt *time.Time
	// EnabledEvents are the event types it receives, in the order of
	// EventTypes; nil when it receives every type (see Receives).
	EnabledEvents []string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// Secrets returns the secrets that sign at now: the current one, and the previous
// one while its overlap lasts.
func (e *Endpoint) Secrets(now time.Time) []string {
	out := []string{e.Secret}
	if e.PreviousSecret != nil && e.PreviousSecretExpiresAt != nil && now.Before(*e.PreviousSecretExpiresAt) {
		out = append(out, *e.PreviousSecret)
	}
	return out
}

// Event is an outbox event with its delivery state.
type Event struct {
	ID            uuid.UUID
	PartnerID     uuid.UUID
	TransactionID uuid.UUID
	Type          string
	Payload       []byte
	CreatedAt     time.Time
	PublishStatus string
	Attempts      int
	CycleAttempts int
	LastAttemptAt *time.Time
	NextAttemptAt *time.Time
}

// Test reports whether e is a test event (SendTest), which belongs to no
// transaction: its TransactionID is uuid.Nil.
func (e *Event) Test() bool { return e.TransactionID == uuid.Nil }

// Attempt is one delivery attempt.
type Attempt struct {
	AttemptedAt time.Time
	StatusCode  *int
	DurationMS  int
	Error       *string
	// ResponseExcerpt is the start of the receiver's response body (Excerpt);
	// nil when no response arrived.
	ResponseExcerpt *string
}

// Store persists endpoints, event delivery state and attempts.
type Store interface {
	// A partner user's replay is audited through it.
	audit.Writer
	// EndpointOf returns the partner's endpoint, or apperr NotFound.
	EndpointOf(ctx context.Context, partnerID uuid.UUID) (*Endpoint, error)
	// InsertEndpoint inserts e unless the partner has an endpoint; it reports
	// whether it did.
	InsertEndpoint(ctx context.Context, e *Endpoint) (bool, error)
	// UpdateEndpoint sets the URL and enabled flag, and the enabled event types
	// unless events is nil, and reports whether this write turned deliveries on.
	// Errors: NotFound.
	UpdateEndpoint(ctx context.Context, partnerID uuid.UUID, url string, enabled bool, events []string, at time.Time) (bool, error)
	// DisableEndpoint turns deliveries off.
	DisableEndpoint(ctx context.Context, partnerID uuid.UUID, at time.Time) error
	// RotateSecret makes secret the signing secret and the current one the
	// previous secret (signing until oldUntil) in one write. Errors: NotFound.
	RotateSecret(ctx context.Context, partnerID uuid.UUID, secret string, oldUntil, at time.Time) error
	// EventByID returns an event; a non-nil partnerID scopes the lookup (apperr
	// NotFound for another partner's event).
	EventByID(ctx context.Context, partnerID *uuid.UUID, id uuid.UUID) (*Event, error)
	// SaveEventState writes the event's delivery fields and, when a is not nil,
	// appends the attempt, in one transaction. It reports whether the event is
	// marked requeued; when it is, the mark stays set and the event stays pending,
	// due at requeueAt.
	SaveEventState(ctx context.Context, e *Event, a *Attempt, requeueAt time.Time) (requeued bool, err error)
	// TakeDelivery clears the event's requeued mark, reporting whether it was set,
	// and returns the event with its partner's endpoint (nil when none), as one
	// step; apperr NotFound when the event is gone.
	TakeDelivery(ctx context.Context, id uuid.UUID) (*Event, *Endpoint, bool, error)
	// RequeuePending marks every pending event of the partner requeued, due at,
	// and returns their ids, oldest first.
	RequeuePending(ctx context.Context, partnerID uuid.UUID, at time.Time) ([]uuid.UUID, error)
	// RequeueWaiting marks the oldest limit of the partner's events waiting for
	// a retry (pending, next attempt after at, not marked) requeued, due at, and
	// returns their ids, oldest first.
	RequeueWaiting(ctx context.Context, partnerID uuid.UUID, at time.Time, limit int) ([]uuid.UUID, error)
	// Requeue marks the event requeued and pending with next_attempt_at at; a
	// non-nil partnerID scopes it (apperr NotFound otherwise). It returns the event.
	Requeue(ctx context.Context, partnerID *uuid.UUID, id uuid.UUID, at time.Time) (*Event, error)
	// TakeRequeue clears the event's requeued mark and reports whether it was set.
	TakeRequeue(ctx context.Context, id uuid.UUID) (bool, error)
	// ListEvents returns a page of the partner's events.
	ListEvents(ctx context.Context, partnerID uuid.UUID, q ListQuery) ([]*Event, error)
	// AttemptsOf returns an event's attempts, oldest first.
	AttemptsOf(ctx context.Context, eventID uuid.UUID) ([]Attempt, error)
	// PurgeEvents deletes events created before t (and their attempts).
	PurgeEvents(ctx context.Context, before time.Time) (int64, error)
}

// Queue (re)queues events for delivery now.
type Queue interface {
	// Redeliver queues the event now; when an attempt of it is running it returns
	// when that attempt started and the latest time the redelivery starts (zero
	// times otherwise).
	Redeliver(ctx context.Context, eventID uuid.UUID) (runningSince, by time.Time, err error)
	// RedeliverMany is Redeliver of many events, in batches.
	RedeliverMany(ctx context.Context, eventIDs []uuid.UUID) error
}
