package operatorapi

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"

	"partnerd/gen/operatorapi"
	"partnerd/internal/apikeys"
	"partnerd/internal/backoffice/actions"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/httpkit"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/partners"
)

// ListPartners lists every partner (GET /partners).
func (s *Server) ListPartners(ctx context.Context, _ operatorapi.ListPartnersRequestObject) (operatorapi.ListPartnersResponseObject, error) {
	ps, err := s.partners.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]operatorapi.Partner, len(ps))
	for i, p := range ps {
		out[i] = partnerOut(p)
	}
	return operatorapi.ListPartners200JSONResponse{Success: true, Data: out}, nil
}

// CreatePartner creates a partner and its first key (POST /partners).
func (s *Server) CreatePartner(ctx context.Context, req operatorapi.CreatePartnerRequestObject) (operatorapi.CreatePartnerResponseObject, error) {
	o, err := operatorFrom(ctx)
	if err != nil {
		return nil, err
	}
	answer := func(n actions.NewPartner) operatorapi.CreatePartnerResponseObject {
		p := n.Partner
		k := &apikeys.Key{ID: p.KeyID, Prefix: p.KeyPrefix, CreatedAt: p.CreatedAt}
		msg := "Partner created; its key is shown once."
		return operatorapi.CreatePartner200JSONResponse{Body: operatorapi.PartnerCreatedResponse{Success: true, Message: &msg,
			Data: operatorapi.PartnerCreated{Partner: partnerOut(p), Key: newKeyOut(k, n.Secret, s.now())}}}
	}
	key := httpkit.KeyedBy[actions.Tx](ctx, s.idem, answer, operatorapi.CreatePartnerResponseObject.VisitCreatePartnerResponse)
	n, err := s.actions.CreatePartner(ctx, key, actorOf(ctx, o), req.Body.Name)
	if err != nil {
		return nil, err
	}
	return answer(n), nil
}

// ListOperators lists every operator (GET /operators).
func (s *Server) ListOperators(ctx context.Context, _ operatorapi.ListOperatorsRequestObject) (operatorapi.ListOperatorsResponseObject, error) {
	os, err := s.operators.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]operatorapi.Operator, len(os))
	for i, o := range os {
		out[i] = accountOut(o)
	}
	return operatorapi.ListOperators200JSONResponse{Success: true, Data: out}, nil
}

// CreateOperator creates an operator and their first key (POST /operators).
func (s *Server) CreateOperator(ctx context.Context, req operatorapi.CreateOperatorRequestObject) (operatorapi.CreateOperatorResponseObject, error) {
	by, err := operatorFrom(ctx)
	if err != nil {
		return nil, err
	}
	answer := func(n actions.NewOperator) operatorapi.CreateOperatorResponseObject {
		o := n.Operator
		k := &apikeys.Key{ID: o.KeyID, Prefix: o.KeyPrefix, CreatedAt: o.CreatedAt}
		msg := "Operator created; their key is shown once."
		return operatorapi.CreateOperator200JSONResponse{Body: operatorapi.OperatorCreatedResponse{Success: true, Message: &msg,
			Data: operatorapi.OperatorCreated{Operator: accountOut(o), Key: newKeyOut(k, n.Secret, s.now())}}}
	}
	key := httpkit.KeyedBy[actions.Tx](ctx, s.idem, answer, operatorapi.CreateOperatorResponseObject.VisitCreateOperatorResponse)
	// Without roles, an operator may only read: more is given on purpose.
	names := []string{string(operators.Viewer)}
	if req.Body.Roles != nil {
		names = names[:0]
		for _, r := range *req.Body.Roles {
			names = append(names, string(r))
		}
	}
	roles, err := operators.CheckRoles(names)
	if err != nil {
		return nil, err
	}
	n, err := s.actions.CreateOperator(ctx, key, actorOf(ctx, by), req.Body.Name, roles)
	if err != nil {
		return nil, err
	}
	return answer(n), nil
}

func (s *Server) listKeys(ctx context.Context, owner apikeys.Owner, id uuid.UUID) (operatorapi.ApiKeyListResponse, error) {
	if _, err := s.actions.MintFor(ctx, owner, id); err != nil { // the account must exist
		return operatorapi.ApiKeyListResponse{}, err
	}
	ks, err := s.keys.List(ctx, owner, id)
	if err != nil {
		return operatorapi.ApiKeyListResponse{}, err
	}
	now := s.now()
	out := make([]operatorapi.ApiKey, len(ks))
	for i, k := range ks {
		out[i] = keyOut(k, now)
	}
	return operatorapi.ApiKeyListResponse{Success: true, Data: out}, nil
}

// ListPartnerKeys lists a partner's keys (GET /partners/{id}/keys).
func (s *Server) ListPartnerKeys(ctx context.Context, req operatorapi.ListPartnerKeysRequestObject) (operatorapi.ListPartnerKeysResponseObject, error) {
	out, err := s.listKeys(ctx, apikeys.Partner, req.Id)
	if err != nil {
		return nil, err
	}
	return operatorapi.ListPartnerKeys200JSONResponse(out), nil
}

// CreatePartnerKey adds a partner key (POST /partners/{id}/keys).
func (s *Server) CreatePartnerKey(ctx context.Context, req operatorapi.CreatePartnerKeyRequestObject) (operatorapi.CreatePartnerKeyResponseObject, error) {
	return issueKey(ctx, s, apikeys.Partner, req.Id, func(r operatorapi.NewApiKeyResponse) operatorapi.CreatePartnerKeyResponseObject {
		return operatorapi.CreatePartnerKey200JSONResponse{Body: r}
	}, operatorapi.CreatePartnerKeyResponseObject.VisitCreatePartnerKeyResponse)
}

// RollPartnerKey rolls a partner key (POST /partners/{id}/keys/{key_id}/roll).
func (s *Server) RollPartnerKey(ctx context.Context, req operatorapi.RollPartnerKeyRequestObject) (operatorapi.RollPartnerKeyResponseObject, error) {
	return rollKey(ctx, s, apikeys.Partner, req.Id, req.KeyId, req.Body, func(r operatorapi.NewApiKeyResponse) operatorapi.RollPartnerKeyResponseObject {
		return operatorapi.RollPartnerKey200JSONResponse{Body: r}
	}, operatorapi.RollPartnerKeyResponseObject.VisitRollPartnerKeyResponse)
}

// RevokePartnerKey revokes a partner key (DELETE /partners/{id}/keys/{key_id}).
func (s *Server) RevokePartnerKey(ctx context.Context, req operatorapi.RevokePartnerKeyRequestObject) (operatorapi.RevokePartnerKeyResponseObject, error) {
	return revokeKey(ctx, s, apikeys.Partner, req.Id, req.KeyId, func(r operatorapi.ApiKeyResponse) operatorapi.RevokePartnerKeyResponseObject {
		return operatorapi.RevokePartnerKey200JSONResponse(r)
	}, operatorapi.RevokePartnerKeyResponseObject.VisitRevokePartnerKeyResponse)
}

// ListOperatorKeys lists an operator's keys (GET /operators/{id}/keys).
func (s *Server) ListOperatorKeys(ctx context.Context, req operatorapi.ListOperatorKeysRequestObject) (operatorapi.ListOperatorKeysResponseObject, error) {
	out, err := s.listKeys(ctx, apikeys.Operator, req.Id)
	if err != nil {
		return nil, err
	}
	return operatorapi.ListOperatorKeys200JSONResponse(out), nil
}

// CreateOperatorKey adds an operator key (POST /operators/{id}/keys).
func (s *Server) CreateOperatorKey(ctx context.Context, req operatorapi.CreateOperatorKeyRequestObject) (operatorapi.CreateOperatorKeyResponseObject, error) {
	return issueKey(ctx, s, apikeys.Operator, req.Id, func(r operatorapi.NewApiKeyResponse) operatorapi.CreateOperatorKeyResponseObject {
		return operatorapi.CreateOperatorKey200JSONResponse{Body: r}
	}, operatorapi.CreateOperatorKeyResponseObject.VisitCreateOperatorKeyResponse)
}

// RollOperatorKey rolls an operator key (POST /operators/{id}/keys/{key_id}/roll).
func (s *Server) RollOperatorKey(ctx context.Context, req operatorapi.RollOperatorKeyRequestObject) (operatorapi.RollOperatorKeyResponseObject, error) {
	return rollKey(ctx, s, apikeys.Operator, req.Id, req.KeyId, req.Body, func(r operatorapi.NewApiKeyResponse) operatorapi.RollOperatorKeyResponseObject {
		return operatorapi.RollOperatorKey200JSONResponse{Body: r}
	}, operatorapi.RollOperatorKeyResponseObject.VisitRollOperatorKeyResponse)
}

// RevokeOperatorKey revokes an operator key (DELETE /operators/{id}/keys/{key_id}).
func (s *Server) RevokeOperatorKey(ctx context.Context, req operatorapi.RevokeOperatorKeyRequestObject) (operatorapi.RevokeOperatorKeyResponseObject, error) {
	return revokeKey(ctx, s, apikeys.Operator, req.Id, req.KeyId, func(r operatorapi.ApiKeyResponse) operatorapi.RevokeOperatorKeyResponseObject {
		return operatorapi.RevokeOperatorKey200JSONResponse(r)
	}, operatorapi.RevokeOperatorKeyResponseObject.VisitRevokeOperatorKeyResponse)
}

func partnerOut(p *partners.Partner) operatorapi.Partner {
	return operatorapi.Partner{Id: p.ID, Name: p.Name, Environment: operatorapi.PartnerEnvironment(p.Environment),
		FeeRate: p.FeeRate.StringFixed(6), ShareRate: p.ShareRate.StringFixed(6), CreatedAt: p.CreatedAt}
}

func keyOut(k *apikeys.Key, now time.Time) operatorapi.ApiKey {
	return operatorapi.ApiKey{Id: k.ID, Prefix: k.Prefix, Status: operatorapi.ApiKeyStatus(k.Status(now)), CreatedAt: k.CreatedAt,
		LastUsedAt: k.LastUsedAt, ExpiresAt: k.ExpiresAt, RevokedAt: k.RevokedAt}
}

func newKeyOut(k *apikeys.Key, secret string, now time.Time) operatorapi.NewApiKey {
	o := keyOut(k, now)
	return operatorapi.NewApiKey{Id: o.Id, Prefix: o.Prefix, Status: o.Status, CreatedAt: o.CreatedAt, LastUsedAt: o.LastUsedAt,
		ExpiresAt: o.ExpiresAt, RevokedAt: o.RevokedAt, Key: secret}
}

// issueKey adds a key to account id of kind owner; as wraps the answer.
func issueKey[R any](ctx context.Context, s *Server, owner apikeys.Owner, id uuid.UUID, as func(operatorapi.NewApiKeyResponse) R, visit func(R, http.ResponseWriter) error) (R, error) {
	var zero R
	o, err := operatorFrom(ctx)
	if err != nil {
		return zero, err
	}
	now := s.now() // one clock reading: the stored answer and this one say the same
	answer := func(k *apikeys.Issued) R {
		msg := "Key created; it is shown once."
		return as(operatorapi.NewApiKeyResponse{Success: true, Message: &msg, Data: newKeyOut(k.Key, k.Secret, now)})
	}
	key := httpkit.KeyedBy[actions.Tx](ctx, s.idem, answer, visit)
	k, err := s.actions.IssueKey(ctx, key, actorOf(ctx, o), owner, id)
	if err != nil {
		return zero, err
	}
	return answer(k), nil
}

// rollKey replaces key keyID of account id; as wraps the answer.
func rollKey[R any](ctx context.Context, s *Server, owner apikeys.Owner, id, keyID uuid.UUID, body *operatorapi.RollRequest, as func(operatorapi.NewApiKeyResponse) R, visit func(R, http.ResponseWriter) error) (R, error) {
	var zero R
	o, err := operatorFrom(ctx)
	if err != nil {
		return zero, err
	}
	overlap := apikeys.DefaultOverlap
	if body != nil && body.Overlap != nil {
		d, err := time.ParseDuration(*body.Overlap)
		if err != nil {
			return zero, apperr.Field(apperr.InvalidRequest, "The overlap is not a duration.", "/overlap", "a duration such as 24h or 0s")
		}
		overlap = d
	}
	now := s.now() // one clock reading: the stored answer and this one say the same
	answer := func(k *apikeys.Issued) R {
		msg := "Key rolled; the old key works until its expires_at. The new key is shown once."
		return as(operatorapi.NewApiKeyResponse{Success: true, Message: &msg, Data: newKeyOut(k.Key, k.Secret, now)})
	}
	key := httpkit.KeyedBy[actions.Tx](ctx, s.idem, answer, visit)
	k, err := s.actions.RollKey(ctx, key, actorOf(ctx, o), owner, id, keyID, overlap)
	if err != nil {
		return zero, err
	}
	return answer(k), nil
}

// revokeKey revokes key keyID of account id; as wraps the answer.
func revokeKey[R any](ctx context.Context, s *Server, owner apikeys.Owner, id, keyID uuid.UUID, as func(operatorapi.ApiKeyResponse) R, visit func(R, http.ResponseWriter) error) (R, error) {
	var zero R
	o, err := operatorFrom(ctx)
	if err != nil {
		return zero, err
	}
	now := s.now() // one clock reading: the stored answer and this one say the same
	answer := func(k *apikeys.Key) R {
		msg := "Key revoked."
		return as(operatorapi.ApiKeyResponse{Success: true, Message: &msg, Data: keyOut(k, now)})
	}
	key := httpkit.KeyedBy[actions.Tx](ctx, s.idem, answer, visit)
	k, err := s.actions.RevokeKey(ctx, key, actorOf(ctx, o), owner, id, keyID)
	if err != nil {
		return zero, err
	}
	return answer(k), nil
}
