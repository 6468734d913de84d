package httpapi

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"partnerd/internal/apperr"
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
		return nil, apperr.New(apperr.Internal, internalMessage)
	}
	return p, nil
}

// requestID gives every request a fresh id, sent back as X-Request-Id and quoted in
// error bodies and logs. An id sent by the client is not trusted (it could collide
// or carry junk into our logs).
func requestID() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			b := make([]byte, 16)
			_, _ = rand.Read(b)
			id := hex.EncodeToString(b)
			c.Request().Header.Set(echo.HeaderXRequestID, id)
			c.Response().Header().Set(echo.HeaderXRequestID, id)
			return next(c)
		}
	}
}

// skipPartnerChecks reports whether a request is not for a partner operation:
// outside BasePath, an unknown route, or a known path with the wrong method. Those
// get Echo's 404/405 (in our error body) before any key or body check.
func skipPartnerChecks(c echo.Context) bool {
	if !strings.HasPrefix(c.Path(), BasePath+"/") {
		return true
	}
	return c.Get(echo.ContextKeyHeaderAllow) != nil
}

// requireJSON answers 415 for a request body that is not application/json. Bodiless
// requests (GET, or a POST with no content) pass; the validator decides whether a
// body was required.
func requireJSON(skip func(echo.Context) bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if skip(c) || bodyIgnored(c) {
				return next(c)
			}
			r := c.Request()
			hasBody := r.ContentLength > 0
			if r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody {
				// Length unknown (chunked): peek, so an empty body counts as none.
				br := bufio.NewReader(r.Body)
				_, err := br.Peek(1)
				hasBody = err != io.EOF
				r.Body = readCloser{Reader: br, Closer: r.Body}
			}
			ct := r.Header.Get(echo.HeaderContentType)
			if !hasBody && ct == "" {
				return next(c)
			}
			mt, _, err := mime.ParseMediaType(ct)
			if hasBody && (err != nil || mt != echo.MIMEApplicationJSON) {
				return apperr.New(apperr.UnsupportedMediaType, "Request bodies must be application/json.")
			}
			return next(c)
		}
	}
}

// authenticate resolves X-API-KEY to the partner and stores it in the request
// context; a missing, unknown or other-environment key is 401.
func authenticate(svc *partners.Service, skip func(echo.Context) bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if skip(c) {
				return next(c)
			}
			key := c.Request().Header.Get("X-API-KEY")
			p, err := svc.Authenticate(c.Request().Context(), key)
			if err != nil {
				return err
			}
			c.SetRequest(c.Request().WithContext(withPartner(c.Request().Context(), p)))
			return next(c)
		}
	}
}

// readCloser reads through a buffered reader and closes the original body.
type readCloser struct {
	io.Reader
	io.Closer
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

// RequestDeadline bounds the work of one partner request, database included: a
// stuck query is cancelled instead of holding a connection forever.
const RequestDeadline = 20 * time.Second

func deadline(d time.Duration) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			ctx, cancel := context.WithTimeout(c.Request().Context(), d)
			defer cancel()
			c.SetRequest(c.Request().WithContext(ctx))
			return next(c)
		}
	}
}
