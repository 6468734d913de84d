package httpkit

import (
	"bytes"
	"context"
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"partnerd/internal/idempotency"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/uow"
	"partnerd/internal/tracing"
)

// idempotent names the request of one operation that declares an Idempotency-Key,
// for the handler to hand its use case (Keyed): the key (owned by the
// authenticated owner ownerOf returns: the partner on the partner API, the
// operator on the operator API), the fingerprint of the body as read once by the
// request checks, and the request id the error body names. It opens no unit of
// work and stores nothing: the use case does, with idempotency.Run. It keeps no
// service in the request's context: the handler names the one keeping its keys
// (KeyedBy). It runs after authentication and validation, so rejected requests
// never reach a key.
//
// An operation whose contract makes the key optional runs unprotected without one
// (as it did before it took keys), and exactly like a required one with one.
func idempotent(op *operation, ownerOf func(context.Context) (uuid.UUID, error)) echo.MiddlewareFunc {
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
			// The fingerprint of the body as decoded once by the request checks (its
			// canonical JSON), or of the bytes as sent when they are no JSON value.
			var fp string
			switch d, _ := c.Get(decodedKey).(*decodedBody); {
			case d != nil && d.canon != nil:
				fp = idempotency.FingerprintCanonical(req.Method, req.URL.Path, d.canon)
			case d != nil:
				fp = idempotency.Fingerprint(req.Method, req.URL.Path, d.raw)
			default:
				fp = idempotency.Fingerprint(req.Method, req.URL.Path, nil)
			}
			k := &keyed{
				key:         idempotency.Key{PartnerID: owner, Operation: op.id, Key: keyValue},
				fingerprint: fp,
				requestID:   c.Response().Header().Get(echo.HeaderXRequestID),
				traceID:     tracing.TraceID(req.Context()),
			}
			c.SetRequest(req.WithContext(context.WithValue(req.Context(), keyedKey{}, k)))
			return next(c)
		}
	}
}

// keyed is what the transport knows of a keyed request: the handler turns it into
// the use case's idempotency.Request (Keyed).
type keyed struct {
	key         idempotency.Key
	fingerprint string
	requestID   string
	traceID     string
}

type keyedKey struct{}

// Keyed returns how the handler has its use case run, whose unit of work is an
// X: a request that came with an Idempotency-Key runs under it (idempotency.Keyed:
// the key and fingerprint it came with, kept by svc, render for the answer to a
// success, pure: the generated response object the handler answers with, written
// by Answer, and the error body the error handler writes for a failure,
// ErrorAnswer, so a stored answer replays byte for byte as the first request got
// it); one without runs plainly (uow.Plain).
func Keyed[X idempotency.Keeper, T any](ctx context.Context, svc *idempotency.Service, render func(T) (idempotency.Response, error)) uow.Runner[T, X] {
	k, _ := ctx.Value(keyedKey{}).(*keyed)
	if k == nil {
		return uow.Plain[T, X]()
	}
	return idempotency.Keyed[X](idempotency.Request[T]{Service: svc, Key: k.key, Fingerprint: k.fingerprint, Render: render,
		RenderError: func(err error) idempotency.Response { return ErrorAnswer(k.requestID, k.traceID, err) }})
}

// Answer writes a generated response object (visit is its Visit…Response method)
// into a buffer and returns the status and body written: the answer stored for
// retries is exactly what the handler's answer writes.
func Answer(visit func(http.ResponseWriter) error) (idempotency.Response, error) {
	buf := &bufferedWriter{header: http.Header{}}
	if err := visit(buf); err != nil {
		return idempotency.Response{}, err
	}
	status := buf.status
	if status == 0 {
		status = http.StatusOK
	}
	return idempotency.Response{Status: status, Body: buf.body.Bytes()}, nil
}

// ErrorAnswer is the answer to a use case's failure as the error handler writes
// it (the same status and errorBody), for storing with the key; answers that are
// never stored (400, 5xx: idempotency.Stored) carry only their status.
func ErrorAnswer(requestID, traceID string, err error) idempotency.Response {
	e, ok := apperr.As(err)
	if !ok {
		return idempotency.Response{Status: http.StatusInternalServerError}
	}
	status := StatusOf(e.Code)
	if !idempotency.Stored(status) {
		return idempotency.Response{Status: status}
	}
	return idempotency.Response{Status: status, Body: errorBody(e, requestID, traceID)}
}

// writeReplay sends a stored answer as it was stored, marked as a replay.
func writeReplay(c echo.Context, r idempotency.Response) error {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	h.Set("Idempotent-Replayed", "true")
	c.Response().WriteHeader(r.Status)
	_, err := c.Response().Write(r.Body)
	return err
}

// bufferedWriter holds a response being rendered for storage.
type bufferedWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedWriter) Header() http.Header { return b.header }

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

// KeyedBy is Keyed for a handler whose answer to the use case's result is
// answer(t), a generated response object written by its Visit…Response method
// (visit, as a method expression: api.XResponseObject.VisitXResponse). The
// handler answers with answer of the result the use case returns, so the client
// gets exactly what a retry will.
func KeyedBy[X idempotency.Keeper, T, R any](ctx context.Context, svc *idempotency.Service, answer func(T) R,
	visit func(R, http.ResponseWriter) error) uow.Runner[T, X] {
	return Keyed[X](ctx, svc, func(t T) (idempotency.Response, error) {
		return Answer(func(w http.ResponseWriter) error { return visit(answer(t), w) })
	})
}
