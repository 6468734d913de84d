package operatorapi

import (
	"context"
	"time"

	"github.com/google/uuid"

	"partnerd/gen/operatorapi"
	"partnerd/internal/apikeys"
	"partnerd/internal/apperr"
	"partnerd/internal/audit"
	"partnerd/internal/operators"
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
	return command(ctx, s, func(ctx context.Context) (operatorapi.CreatePartnerResponseObject, error) {
		p, key, err := s.partners.Create(ctx, req.Body.Name)
		if err != nil {
			return nil, err
		}
		if err := s.audited(ctx, audit.PartnerCreated, p.ID, p.Name); err != nil {
			return nil, err
		}
		k := &apikeys.Key{ID: p.KeyID, Prefix: p.KeyPrefix, CreatedAt: p.CreatedAt}
		msg := "Partner created; its key is shown once."
		return operatorapi.CreatePartner200JSONResponse{Body: operatorapi.PartnerCreatedResponse{Success: true, Message: &msg,
			Data: operatorapi.PartnerCreated{Partner: partnerOut(p), Key: newKeyOut(k, key, s.now())}}}, nil
	})
}

// ListOperators lists every operator (GET /operators).
func (s *Server) ListOperators(ctx context.Context, _ operatorapi.ListOperatorsRequestObject) (operatorapi.ListOperatorsResponseObject, error) {
	os, err := s.operators.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]operatorapi.Operator, len(os))
	for i, o := range os {
		out[i] = operatorapi.Operator{Id: o.ID, Name: o.Name, CreatedAt: o.CreatedAt}
	}
	return operatorapi.ListOperators200JSONResponse{Success: true, Data: out}, nil
}

// CreateOperator creates an operator and their first key (POST /operators).
func (s *Server) CreateOperator(ctx context.Context, req operatorapi.CreateOperatorRequestObject) (operatorapi.CreateOperatorResponseObject, error) {
	return command(ctx, s, func(ctx context.Context) (operatorapi.CreateOperatorResponseObject, error) {
		o, key, err := s.operators.Create(ctx, req.Body.Name)
		if err != nil {
			return nil, err
		}
		if err := s.audited(ctx, audit.OperatorCreated, o.ID, o.Name); err != nil {
			return nil, err
		}
		k := &apikeys.Key{ID: o.KeyID, Prefix: o.KeyPrefix, CreatedAt: o.CreatedAt}
		msg := "Operator created; their key is shown once."
		return operatorapi.CreateOperator200JSONResponse{Body: operatorapi.OperatorCreatedResponse{Success: true, Message: &msg,
			Data: operatorapi.OperatorCreated{Operator: operatorapi.Operator{Id: o.ID, Name: o.Name, CreatedAt: o.CreatedAt}, Key: newKeyOut(k, key, s.now())}}}, nil
	})
}

// owner resolves an account of kind owner to the way its keys are minted.
func (s *Server) owner(ctx context.Context, owner apikeys.Owner, id uuid.UUID) (func() (string, error), error) {
	if owner == apikeys.Partner {
		p, err := s.partners.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		return func() (string, error) { return partners.NewKey(p.Environment) }, nil
	}
	if _, err := s.operators.Get(ctx, id); err != nil {
		return nil, err
	}
	return operators.NewKey, nil
}

func (s *Server) listKeys(ctx context.Context, owner apikeys.Owner, id uuid.UUID) (operatorapi.ApiKeyListResponse, error) {
	if _, err := s.owner(ctx, owner, id); err != nil {
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

func (s *Server) issueKey(ctx context.Context, owner apikeys.Owner, id uuid.UUID) (operatorapi.NewApiKeyResponse, error) {
	mint, err := s.owner(ctx, owner, id)
	if err != nil {
		return operatorapi.NewApiKeyResponse{}, err
	}
	k, err := s.keys.Issue(ctx, owner, id, mint, partners.HashKey)
	if err != nil {
		return operatorapi.NewApiKeyResponse{}, err
	}
	if err := s.audited(ctx, audit.KeyCreated, k.Key.ID, k.Key.Prefix); err != nil {
		return operatorapi.NewApiKeyResponse{}, err
	}
	msg := "Key created; it is shown once."
	return operatorapi.NewApiKeyResponse{Success: true, Message: &msg, Data: newKeyOut(k.Key, k.Secret, s.now())}, nil
}

func (s *Server) rollKey(ctx context.Context, owner apikeys.Owner, id, keyID uuid.UUID, body *operatorapi.RollRequest) (operatorapi.NewApiKeyResponse, error) {
	overlap := apikeys.DefaultOverlap
	if body != nil && body.Overlap != nil {
		d, err := time.ParseDuration(*body.Overlap)
		if err != nil {
			return operatorapi.NewApiKeyResponse{}, apperr.Field(apperr.InvalidRequest, "The overlap is not a duration.", "/overlap", "a duration such as 24h or 0s")
		}
		overlap = d
	}
	mint, err := s.owner(ctx, owner, id)
	if err != nil {
		return operatorapi.NewApiKeyResponse{}, err
	}
	k, err := s.keys.Roll(ctx, owner, id, keyID, overlap, mint, partners.HashKey)
	if err != nil {
		return operatorapi.NewApiKeyResponse{}, err
	}
	s.forget(ctx, owner, id, keyID)
	if err := s.audited(ctx, audit.KeyRolled, keyID, k.Key.Prefix); err != nil {
		return operatorapi.NewApiKeyResponse{}, err
	}
	msg := "Key rolled; the old key works until its expires_at. The new key is shown once."
	return operatorapi.NewApiKeyResponse{Success: true, Message: &msg, Data: newKeyOut(k.Key, k.Secret, s.now())}, nil
}

func (s *Server) revokeKey(ctx context.Context, owner apikeys.Owner, id, keyID uuid.UUID) (operatorapi.ApiKeyResponse, error) {
	if _, err := s.owner(ctx, owner, id); err != nil {
		return operatorapi.ApiKeyResponse{}, err
	}
	k, err := s.keys.Revoke(ctx, owner, id, keyID)
	if err != nil {
		return operatorapi.ApiKeyResponse{}, err
	}
	s.forget(ctx, owner, id, keyID)
	if err := s.audited(ctx, audit.KeyRevoked, keyID, k.Prefix); err != nil {
		return operatorapi.ApiKeyResponse{}, err
	}
	msg := "Key revoked."
	return operatorapi.ApiKeyResponse{Success: true, Message: &msg, Data: keyOut(k, s.now())}, nil
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
	return command(ctx, s, func(ctx context.Context) (operatorapi.CreatePartnerKeyResponseObject, error) {
		out, err := s.issueKey(ctx, apikeys.Partner, req.Id)
		if err != nil {
			return nil, err
		}
		return operatorapi.CreatePartnerKey200JSONResponse{Body: out}, nil
	})
}

// RollPartnerKey rolls a partner key (POST /partners/{id}/keys/{key_id}/roll).
func (s *Server) RollPartnerKey(ctx context.Context, req operatorapi.RollPartnerKeyRequestObject) (operatorapi.RollPartnerKeyResponseObject, error) {
	return command(ctx, s, func(ctx context.Context) (operatorapi.RollPartnerKeyResponseObject, error) {
		out, err := s.rollKey(ctx, apikeys.Partner, req.Id, req.KeyId, req.Body)
		if err != nil {
			return nil, err
		}
		return operatorapi.RollPartnerKey200JSONResponse{Body: out}, nil
	})
}

// RevokePartnerKey revokes a partner key (DELETE /partners/{id}/keys/{key_id}).
func (s *Server) RevokePartnerKey(ctx context.Context, req operatorapi.RevokePartnerKeyRequestObject) (operatorapi.RevokePartnerKeyResponseObject, error) {
	return command(ctx, s, func(ctx context.Context) (operatorapi.RevokePartnerKeyResponseObject, error) {
		out, err := s.revokeKey(ctx, apikeys.Partner, req.Id, req.KeyId)
		if err != nil {
			return nil, err
		}
		return operatorapi.RevokePartnerKey200JSONResponse(out), nil
	})
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
	return command(ctx, s, func(ctx context.Context) (operatorapi.CreateOperatorKeyResponseObject, error) {
		out, err := s.issueKey(ctx, apikeys.Operator, req.Id)
		if err != nil {
			return nil, err
		}
		return operatorapi.CreateOperatorKey200JSONResponse{Body: out}, nil
	})
}

// RollOperatorKey rolls an operator key (POST /operators/{id}/keys/{key_id}/roll).
func (s *Server) RollOperatorKey(ctx context.Context, req operatorapi.RollOperatorKeyRequestObject) (operatorapi.RollOperatorKeyResponseObject, error) {
	return command(ctx, s, func(ctx context.Context) (operatorapi.RollOperatorKeyResponseObject, error) {
		out, err := s.rollKey(ctx, apikeys.Operator, req.Id, req.KeyId, req.Body)
		if err != nil {
			return nil, err
		}
		return operatorapi.RollOperatorKey200JSONResponse{Body: out}, nil
	})
}

// RevokeOperatorKey revokes an operator key (DELETE /operators/{id}/keys/{key_id}).
func (s *Server) RevokeOperatorKey(ctx context.Context, req operatorapi.RevokeOperatorKeyRequestObject) (operatorapi.RevokeOperatorKeyResponseObject, error) {
	return command(ctx, s, func(ctx context.Context) (operatorapi.RevokeOperatorKeyResponseObject, error) {
		out, err := s.revokeKey(ctx, apikeys.Operator, req.Id, req.KeyId)
		if err != nil {
			return nil, err
		}
		return operatorapi.RevokeOperatorKey200JSONResponse(out), nil
	})
}

// forget drops a partner key from this instance's cache once the change committed,
// so its new expiry or revocation holds here at once.
func (s *Server) forget(ctx context.Context, owner apikeys.Owner, id, keyID uuid.UUID) {
	if owner != apikeys.Partner {
		return // operator keys are not cached
	}
	if k, err := s.keys.Get(ctx, owner, id, keyID); err == nil {
		s.committed(ctx, func() { s.partners.Forget(k.Hash) })
	}
}

// audited records an account or key action on subject by the authenticated operator.
func (s *Server) audited(ctx context.Context, a audit.Action, subject uuid.UUID, reference string) error {
	o, err := operatorFrom(ctx)
	if err != nil {
		return err
	}
	if err := s.audit.Record(ctx, audit.Entry{OperatorID: o.ID, Action: a, SubjectID: &subject, Reference: &reference}); err != nil {
		return err
	}
	s.committed(ctx, func() {
		s.log.Info("operator action", "operator_id", o.ID.String(), "action", string(a), "subject_id", subject.String(), "reference", reference)
	})
	return nil
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
