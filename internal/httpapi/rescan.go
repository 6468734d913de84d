package httpapi

import (
	"context"

	"partnerd/gen/api"
	"partnerd/internal/kit/apperr"
)

// RescanDeposit looks at one chain transaction again for transfers to the
// partner's deposit addresses (POST /deposits/rescan).
func (s *Server) RescanDeposit(ctx context.Context, req api.RescanDepositRequestObject) (api.RescanDepositResponseObject, error) {
	return nil, apperr.New(apperr.ServiceUnavailable, "Not available yet.")
}
