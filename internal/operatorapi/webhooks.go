package operatorapi

import (
	"context"

	"partnerd/gen/operatorapi"
	"partnerd/internal/kit/apperr"
)

// ResendWebhookBacklog makes a partner's waiting webhook events due now (POST
// /partners/{id}/webhook-endpoint/resend).
func (s *Server) ResendWebhookBacklog(ctx context.Context, req operatorapi.ResendWebhookBacklogRequestObject) (operatorapi.ResendWebhookBacklogResponseObject, error) {
	return nil, apperr.New(apperr.ServiceUnavailable, "Not available yet.")
}
