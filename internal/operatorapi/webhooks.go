package operatorapi

import (
	"context"

	"partnerd/gen/operatorapi"
	"partnerd/internal/backoffice/actions"
	"partnerd/internal/httpkit"
)

// ResendWebhookBacklog makes a partner's waiting webhook events due now (POST
// /partners/{id}/webhook-endpoint/resend): the action resends and audits; this
// only translates.
func (s *Server) ResendWebhookBacklog(ctx context.Context, req operatorapi.ResendWebhookBacklogRequestObject) (operatorapi.ResendWebhookBacklogResponseObject, error) {
	o, err := operatorFrom(ctx)
	if err != nil {
		return nil, err
	}
	answer := func(r actions.Resent) operatorapi.ResendWebhookBacklogResponseObject {
		return operatorapi.ResendWebhookBacklog202JSONResponse{Body: operatorapi.WebhookResendResponse{Success: true,
			Data: operatorapi.WebhookResend{PartnerId: r.PartnerID, Queued: r.Queued}}}
	}
	key := httpkit.KeyedBy[actions.Tx](ctx, s.idem, answer, operatorapi.ResendWebhookBacklogResponseObject.VisitResendWebhookBacklogResponse)
	r, err := s.actions.ResendWebhookBacklog(ctx, key, actorOf(ctx, o), req.Id)
	if err != nil {
		return nil, err
	}
	return answer(r), nil
}
