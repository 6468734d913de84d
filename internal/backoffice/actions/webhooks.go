package actions

import (
	"context"
	"strconv"

	"github.com/google/uuid"

	"partnerd/internal/audit"
	"partnerd/internal/audit/actor"
	"partnerd/internal/kit/uow"
)

// Resent is what a backlog resend queued.
type Resent struct {
	PartnerID uuid.UUID
	Queued    int
}

// ResendWebhookBacklog sends the partner's waiting webhook events now (its
// pending events due at once, those given up on queued again from their first
// attempt: webhook.Log.Resend), and audits it (webhook_backlog_resent, the
// partner as subject, the number queued as reference). The events are queued
// through the job queue's own connection, apart from any unit of work (on
// SQLite a unit of work holds the write lock the queue needs), as a replay is
// (run.Apart: under a key, a second call answers as the first); its audit row
// is then written in a unit of work of its own. Resending twice is harmless.
// Errors: NotFound (no endpoint), InvalidStateTransition (endpoint disabled).
func (s *Service) ResendWebhookBacklog(ctx context.Context, run uow.Runner[Resent, Tx], by actor.Actor, partnerID uuid.UUID) (Resent, error) {
	return run.Apart(ctx, func(ctx context.Context) (Resent, error) {
		n, err := s.webhooks.Resend(ctx, by, partnerID)
		if err != nil {
			s.refused(ctx, by, string(audit.WebhookBacklogResent), partnerID.String(), err)
			return Resent{}, err
		}
		out := Resent{PartnerID: partnerID, Queued: n}
		_, err = uow.Run(ctx, s.begin, func(ctx context.Context, tx Tx) (Resent, error) {
			return out, s.audited(ctx, tx, by, audit.WebhookBacklogResent, partnerID, strconv.Itoa(n))
		})
		return out, err
	})
}
