package webhook

import (
	"context"
	"slices"

	"github.com/google/uuid"

	"partnerd/internal/audit/actor"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/cursor"
	"partnerd/internal/kit/uow"
)

// resendPage is how many events given up on Resend reads per statement.
const resendPage = 1000

// Resend sends the partner's backlog now (an operator's resend): every pending
// event is due at once, and every event given up on (failed) is replayed
// (Replay: queued again from its first attempt, with its id and payload), each
// queued oldest first. It returns how many events it queued. An event given up
// on whose type the endpoint no longer receives stays as it is. Errors: NotFound
// (no endpoint), InvalidStateTransition (the endpoint is disabled: its events
// wait until the partner enables it).
//
// Like Replay it runs in no unit of work (the jobs go through the queue's own
// connection), and running it twice is harmless. The pending events are
// queued first, so a replayed event is not queued twice.
func (l *Log) Resend(ctx context.Context, by actor.Actor, partnerID uuid.UUID) (int, error) {
	ep, err := l.store.EndpointOf(ctx, partnerID)
	if apperr.CodeOf(err) == apperr.NotFound {
		return 0, apperr.New(apperr.NotFound, "The partner has no webhook endpoint.")
	}
	if err != nil {
		return 0, err
	}
	if !ep.Enabled {
		return 0, apperr.New(apperr.InvalidStateTransition,
			"The partner's webhook endpoint is disabled: its events wait until the partner enables it.")
	}
	failed, err := l.givenUp(ctx, partnerID)
	if err != nil {
		return 0, err
	}
	pending, err := l.store.RequeuePending(ctx, partnerID, l.now())
	if err != nil {
		return 0, err
	}
	if err := l.queue.RedeliverMany(ctx, pending); err != nil {
		return 0, err
	}
	n := len(pending)
	for _, id := range failed {
		_, _, err := l.Replay(ctx, uow.Plain[Requeued, Tx](), by, partnerID, id)
		switch apperr.CodeOf(err) {
		case apperr.InvalidStateTransition, apperr.NotFound:
			continue // a type no longer received, or purged meanwhile
		}
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// givenUp returns the partner's failed events, oldest first.
func (l *Log) givenUp(ctx context.Context, partnerID uuid.UUID) ([]uuid.UUID, error) {
	status := Failed
	q := ListQuery{Filter: Filter{PublishStatus: &status}, Limit: resendPage}
	var ids []uuid.UUID
	for {
		evs, err := l.store.ListEvents(ctx, partnerID, q)
		if err != nil {
			return nil, err
		}
		for _, e := range evs {
			ids = append(ids, e.ID)
		}
		if len(evs) < resendPage {
			break
		}
		last := evs[len(evs)-1]
		q.After = &cursor.Position{Time: last.CreatedAt, ID: last.ID.String()}
	}
	slices.Reverse(ids)
	return ids, nil
}
