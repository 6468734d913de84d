package httpapi

import (
	"context"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"partnerd/internal/audit/actor"
	"partnerd/internal/httpkit"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/partners"
)

// Principal is a partner's signed-in dashboard user calling the partner API in
// process: the dashboard is a client of this API (same use cases, idempotency,
// limits and contract), but its people sign in with a password, not an API key.
// It travels as a context value of an unexported key, which only Go code in this
// process can set: no header, cookie or body of a network request can carry it.
type Principal struct {
	PartnerID uuid.UUID
	UserID    uuid.UUID
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p: requests served with it are
// authenticated as p's partner instead of by X-API-KEY.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// principalFrom returns the in-process principal of ctx, if any.
func principalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// authenticatePrincipal resolves an in-process principal to its partner (of this
// service's environment, else 401). The rate limits count per user: the partner
// as seen by the handlers carries a key hash naming the user, never a real key's.
func authenticatePrincipal(c echo.Context, svc *partners.Service, pr Principal) (*partners.Partner, error) {
	p, err := svc.Get(c.Request().Context(), pr.PartnerID)
	if apperr.CodeOf(err) == apperr.NotFound || (err == nil && p.Environment != svc.Environment()) {
		return nil, partners.ErrUnauthorized
	}
	if err != nil {
		return nil, err
	}
	cp := *p
	cp.KeyHash = "partner_user:" + pr.UserID.String()
	httpkit.SetLogIdentity(c, "partner_user_id", pr.UserID.String())
	return &cp, nil
}

// actorOf is who makes the call of partner p, as its use cases take it: the
// dashboard's user when the call is theirs (an in-process Principal), else the
// partner's server with its API key.
func actorOf(ctx context.Context, p *partners.Partner) actor.Actor {
	if pr, ok := principalFrom(ctx); ok {
		return actor.OfPartnerUser(pr.UserID, "")
	}
	return actor.OfPartnerKey(p.ID, p.Name)
}
