package httpapi

import (
	"context"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"partnerd/internal/httpkit"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/partners"
)

type partnerKey struct{}

// withPartner stores the authenticated partner in ctx for the handlers.
func withPartner(ctx context.Context, p *partners.Partner) context.Context {
	return context.WithValue(ctx, partnerKey{}, p)
}

// partnerFrom returns the authenticated partner. Every partner route passes the
// auth middleware first, so a missing partner is a wiring bug, reported as internal.
func partnerFrom(ctx context.Context) (*partners.Partner, error) {
	p, ok := ctx.Value(partnerKey{}).(*partners.Partner)
	if !ok {
		return nil, apperr.New(apperr.Internal, httpkit.InternalMessage)
	}
	return p, nil
}

// partnerIDOf returns the authenticated partner's id: partner keys are scoped to it.
func partnerIDOf(ctx context.Context) (uuid.UUID, error) {
	p, err := partnerFrom(ctx)
	if err != nil {
		return uuid.Nil, err
	}
	return p.ID, nil
}

// authenticate resolves X-API-KEY (or the dashboard's in-process Principal) to
// the partner and stores it in the request context; a missing, unknown or
// other-environment key is 401.
func authenticate(svc *partners.Service) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if pr, ok := principalFrom(c.Request().Context()); ok { // the dashboard, in process
				p, err := authenticatePrincipal(c, svc, pr)
				if err != nil {
					return err
				}
				// The user is who acts: the handlers name them to the use cases (actorOf).
				c.SetRequest(c.Request().WithContext(withPartner(c.Request().Context(), p)))
				return next(c)
			}
			key := c.Request().Header.Get("X-API-KEY")
			p, err := svc.Authenticate(c.Request().Context(), key)
			if err != nil {
				return err
			}
			c.SetRequest(c.Request().WithContext(withPartner(c.Request().Context(), p)))
			httpkit.SetLogIdentity(c, "partner_id", p.ID.String())
			return next(c)
		}
	}
}

// securityHeaders sets conservative headers on every response: the API serves JSON
// only, so nothing may be sniffed, framed, cached by intermediaries or leak a
// referrer. In production HSTS pins partners to HTTPS.
func securityHeaders(production bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			h := c.Response().Header()
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("X-Frame-Options", "DENY")
			h.Set("Referrer-Policy", "no-referrer")
			if strings.HasPrefix(c.Request().URL.Path, BasePath) {
				h.Set("Cache-Control", "no-store")
				h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
			}
			if production {
				h.Set("Strict-Transport-Security", "max-age=31536000; includeSubDomains")
			}
			return next(c)
		}
	}
}
