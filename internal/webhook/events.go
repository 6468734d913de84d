package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"partnerd/internal/audit"
	"partnerd/internal/audit/actor"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/cursor"
	"partnerd/internal/kit/uow"
)

// Filter selects events.
type Filter struct {
	Type          *string
	TransactionID *uuid.UUID
	PublishStatus *string
	From, To      *time.Time
}

// ListQuery is one page request.
type ListQuery struct {
	Filter
	After *cursor.Position
	Limit int
}

// Page is one page of events.
type Page struct {
	Events     []*Event
	HasMore    bool
	Limit      int
	NextCursor *string
}

// Log reads and replays events.
type Log struct {
	store Store
	queue Queue
	codec *cursor.Codec
	now   func() time.Time
}

// NewLog returns a Log.
func NewLog(store Store, queue Queue, codec *cursor.Codec, now func() time.Time) *Log {
	return &Log{store: store, queue: queue, codec: codec, now: now}
}

// List returns a page of the partner's events, newest first. Errors: InvalidCursor.
func (l *Log) List(ctx context.Context, partnerID uuid.UUID, f Filter, limit int, after string) (*Page, error) {
	limit = cursor.Limit(limit)
	scope := scopeOf(partnerID, f)
	q := ListQuery{Filter: f, Limit: limit + 1}
	var err error
	if q.After, err = l.codec.After(after, scope); err != nil {
		return nil, err
	}
	evs, err := l.store.ListEvents(ctx, partnerID, q)
	if err != nil {
		return nil, err
	}
	p := &Page{Limit: limit}
	p.Events, p.HasMore, p.NextCursor = cursor.Trim(l.codec, scope, evs, limit, func(e *Event) cursor.Position {
		return cursor.Position{Time: e.CreatedAt, ID: e.ID.String()}
	})
	return p, nil
}

// Get returns the partner's event with its attempts. Errors: NotFound.
func (l *Log) Get(ctx context.Context, partnerID, id uuid.UUID) (*Event, []Attempt, error) {
	ev, err := l.store.EventByID(ctx, &partnerID, id)
	if err != nil {
		return nil, nil, notFoundEvent(err)
	}
	attempts, err := l.store.AttemptsOf(ctx, id)
	return ev, attempts, err
}

// Replayed says when a replay's redelivery starts.
type Replayed struct {
	// ScheduledAt is now, or, while an attempt is in progress, the latest time
	// the redelivery starts.
	ScheduledAt time.Time
	// InProgressSince is the start of the attempt the redelivery waits for; nil
	// when none was running.
	InProgressSince *time.Time
}

// Replay queues the partner's event for delivery now, with the same id and
// payload; it starts a fresh retry cycle. When an attempt of the event is running
// (or was interrupted by a crash and awaits its rescue) the redelivery follows it,
// and the answer says so. An event of a type the partner's endpoint does not
// receive now (Receives) is not replayed. Errors: NotFound, InvalidStateTransition
// (a type not enabled).
//
// It runs in no unit of work of its own (uow.Runner.Apart): the delivery job
// is queued through the job queue's own connection (on SQLite it would wait for
// the write lock a unit of work holds), and replaying twice is harmless.
// run is how its caller has it run: uow.Plain, or under its request's key
// (idempotency.Keyed); by is who acts (a partner's user's change is audited).
func (l *Log) Replay(ctx context.Context, run uow.Runner[Requeued, Tx], by actor.Actor, partnerID, id uuid.UUID) (*Event, Replayed, error) {
	out, err := run.Apart(ctx, func(ctx context.Context) (Requeued, error) {
		ev, r, err := l.replay(ctx, partnerID, id)
		if err != nil {
			return Requeued{}, err
		}
		// A replay runs apart from a unit of work (its job goes through the
		// queue's own connection), so a user's replay is recorded once it is queued.
		return Requeued{Event: ev, Replayed: r}, audit.ByUser(ctx, l.store, by, l.now(), audit.Entry{Action: audit.WebhookEventReplayed, SubjectID: &id})
	})
	return out.Event, out.Replayed, err
}

// Requeued is a replayed event and when its redelivery is due.
type Requeued struct {
	Event    *Event
	Replayed Replayed
}

func (l *Log) replay(ctx context.Context, partnerID, id uuid.UUID) (*Event, Replayed, error) {
	if err := l.replayable(ctx, partnerID, id); err != nil {
		return nil, Replayed{}, err
	}
	now := l.now()
	ev, err := l.store.Requeue(ctx, &partnerID, id, now)
	if err != nil {
		return nil, Replayed{}, notFoundEvent(err)
	}
	since, by, err := l.queue.Redeliver(ctx, id)
	if err != nil {
		return nil, Replayed{}, err
	}
	if since.IsZero() {
		return ev, Replayed{ScheduledAt: now}, nil
	}
	if by.Before(now) {
		by = now
	}
	return ev, Replayed{ScheduledAt: by, InProgressSince: &since}, nil
}

// replayable refuses the replay of an event whose type the partner's endpoint
// does not receive now (with no endpoint every type is). Errors: NotFound,
// InvalidStateTransition.
func (l *Log) replayable(ctx context.Context, partnerID, id uuid.UUID) error {
	ev, err := l.store.EventByID(ctx, &partnerID, id)
	if err != nil {
		return notFoundEvent(err)
	}
	ep, err := l.store.EndpointOf(ctx, partnerID)
	switch {
	case apperr.CodeOf(err) == apperr.NotFound:
		ep = nil
	case err != nil:
		return err
	}
	if !Receives(ep, ev.Type) {
		return apperr.New(apperr.InvalidStateTransition, fmt.Sprintf(
			"The event is a %s, which the webhook endpoint does not receive now: add it to enabled_events (PUT /webhooks/endpoint) to replay it.", ev.Type))
	}
	return nil
}

// Purge deletes events older than Retention.
func (l *Log) Purge(ctx context.Context) (int64, error) {
	return l.store.PurgeEvents(ctx, l.now().Add(-Retention))
}

func notFoundEvent(err error) error {
	if apperr.CodeOf(err) == apperr.NotFound {
		return apperr.New(apperr.NotFound, "The webhook event was not found.")
	}
	return err
}

func scopeOf(partnerID uuid.UUID, f Filter) string {
	b, _ := json.Marshal(struct {
		List          string     `json:"list"`
		Partner       uuid.UUID  `json:"partner"`
		Type          *string    `json:"type"`
		TransactionID *uuid.UUID `json:"transaction_id"`
		PublishStatus *string    `json:"publish_status"`
		From          *time.Time `json:"from"`
		To            *time.Time `json:"to"`
	}{"webhook_events", partnerID, f.Type, f.TransactionID, f.PublishStatus, cursor.UTC(f.From), cursor.UTC(f.To)})
	return string(b)
}
