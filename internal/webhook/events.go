package webhook

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"partnerd/internal/apperr"
	"partnerd/internal/cursor"
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

// Replay queues the partner's event for delivery now, with the same id and
// payload; it starts a fresh retry cycle. Errors: NotFound.
func (l *Log) Replay(ctx context.Context, partnerID, id uuid.UUID) (*Event, time.Time, error) {
	now := l.now()
	ev, err := l.store.Requeue(ctx, &partnerID, id, now)
	if err != nil {
		return nil, time.Time{}, notFoundEvent(err)
	}
	if err := l.queue.Redeliver(ctx, id); err != nil {
		return nil, time.Time{}, err
	}
	return ev, now, nil
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
