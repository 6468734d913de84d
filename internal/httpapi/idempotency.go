package httpapi

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"github.com/google/uuid"

	"github.com/labstack/echo/v4"

	"partnerd/internal/apperr"
	"partnerd/internal/idempotency"
)

// partnerIDOf returns the authenticated partner's id: partner keys are scoped to it.
func partnerIDOf(ctx context.Context) (uuid.UUID, error) {
	p, err := partnerFrom(ctx)
	if err != nil {
		return uuid.Nil, err
	}
	return p.ID, nil
}

// effectsApart are the operations whose effects cannot join the idempotency key's
// unit of work and run under idempotency.Service.DoApart instead of Do: a replay
// queues the event's delivery job through the job queue's own connection (on
// SQLite it would wait for the write lock the request's unit of work holds), and
// running a replay twice is harmless.
var effectsApart = map[string]bool{"replayWebhookEvent": true}

// idempotent is the idempotency layer of one operation whose keys belong to the
// authenticated owner ownerOf returns (the partner on the partner API, the
// operator on the operator API): both APIs follow the same rules. It runs after
// authentication and validation, so rejected requests are never stored, and wraps
// the handler in idempotency.Service.Do: the key's claim, the handler's effects and
// its stored answer are one unit of work (the handler's domain services join it
// through the request's context). The handler's answer is buffered until that
// unit of work has committed (or rolled back), then sent; a retry gets the stored
// answer with Idempotent-Replayed: true.
//
// An operation whose contract makes the key optional runs unprotected without one
// (as it did before it took keys), and exactly like a required one with one.
func idempotent(op *operation, svc *idempotency.Service, ownerOf func(context.Context) (uuid.UUID, error)) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			keyValue := req.Header.Get("Idempotency-Key")
			if keyValue == "" {
				if !op.idempotency.Required {
					return next(c)
				}
				// The validator already requires it; never run unprotected.
				return apperr.Field(apperr.IdempotencyKeyMissing, "The Idempotency-Key header is required for this operation.", "Idempotency-Key", "is required")
			}
			owner, err := ownerOf(req.Context())
			if err != nil {
				return err
			}
			body, err := io.ReadAll(req.Body)
			if err != nil {
				return apperr.New(apperr.InvalidRequest, "The request body could not be read.")
			}
			req.Body = io.NopCloser(bytes.NewReader(body))
			key := idempotency.Key{PartnerID: owner, Operation: op.id, Key: keyValue}

			resp := c.Response()
			orig := resp.Writer
			buf := &bufferedWriter{header: orig.Header()}
			defer func() { // also when the handler panics: the recoverer's answer must reach the client
				resp.Writer = orig
				c.SetRequest(req)
			}()
			do := svc.Do
			if effectsApart[op.id] {
				do = svc.DoApart
			}
			out, err := do(req.Context(), key, idempotency.Fingerprint(req.Method, req.URL.Path, body),
				func(ctx context.Context) (idempotency.Response, error) {
					buf.reset()
					resp.Writer = buf
					c.SetRequest(req.WithContext(ctx))
					if herr := next(c); herr != nil {
						c.Error(herr) // renders the error body into buf
					}
					status := buf.status
					if status == 0 {
						status = http.StatusOK
					}
					return idempotency.Response{Status: status, Body: buf.body.Bytes()}, nil
				})
			resp.Writer = orig
			c.SetRequest(req)
			resp.Committed = false // nothing has reached the client yet
			if err != nil {
				return err
			}
			h := resp.Header()
			if out.Replayed {
				h.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
				h.Set("Idempotent-Replayed", "true")
			}
			resp.WriteHeader(out.Status)
			_, err = resp.Write(out.Body)
			return err
		}
	}
}

// bufferedWriter holds a response until the idempotency record is committed. It
// shares the real writer's header map, so headers set by the handler go out as set.
type bufferedWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedWriter) Header() http.Header { return b.header }

func (b *bufferedWriter) reset() {
	b.status = 0
	b.body.Reset()
}

func (b *bufferedWriter) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *bufferedWriter) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}
