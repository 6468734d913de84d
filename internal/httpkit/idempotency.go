package httpkit

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"partnerd/internal/apperr"
	"partnerd/internal/idempotency"
)

// bodyKey holds, in the echo context, the request body as the request checks read
// it: the body is read from the connection once, and the idempotency layer
// fingerprints those bytes.
const bodyKey = "partnerd.body"

// idempotent names the request of one operation that declares an Idempotency-Key,
// for the use case the handler calls: the key (owned by the authenticated owner
// ownerOf returns: the partner on the partner API, the operator on the operator
// API), the fingerprint of the body as read once by the request checks, and how an
// outcome is rendered as the answer stored for retries (see AnswerWith). It opens
// no unit of work: the use case does, with idempotency.Run, and stores its answer
// there beside its effects. It runs after authentication and validation, so
// rejected requests never reach a key.
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
			body, ok := c.Get(bodyKey).([]byte)
			if !ok {
				if body, err = io.ReadAll(req.Body); err != nil {
					return apperr.New(apperr.InvalidRequest, "The request body could not be read.")
				}
				req.Body = io.NopCloser(bytes.NewReader(body))
			}
			r := &idempotency.Request{
				Service:     svc,
				Key:         idempotency.Key{PartnerID: owner, Operation: op.id, Key: keyValue},
				Fingerprint: idempotency.Fingerprint(req.Method, req.URL.Path, body),
				Answer: func(context.Context, any, error) (idempotency.Response, error) {
					return idempotency.Response{}, fmt.Errorf("operation %s renders no answer for its stored key (AnswerWith)", op.id)
				},
			}
			r.Answer = errorAnswer(c, r.Answer)
			c.SetRequest(req.WithContext(idempotency.WithRequest(req.Context(), r)))
			c.Set(requestKey, r)
			err = next(c)
			if err == nil || r.Ran() {
				return err
			}
			// The use case failed before its unit of work (while pricing, say): a
			// retry of a request that once succeeded still gets its stored answer.
			if stored, lerr := svc.Lookup(c.Request().Context(), r.Key, r.Fingerprint); lerr != nil || stored != nil {
				if stored != nil {
					return &idempotency.Replayed{Response: *stored}
				}
				if apperr.CodeOf(lerr) == apperr.IdempotencyKeyReused {
					return lerr
				}
			}
			return err
		}
	}
}

// requestKey holds, in the echo context, the operation's idempotency.Request.
const requestKey = "partnerd.idempotency_request"

// errorAnswer renders an error outcome the way the error handler answers it, so a
// stored 4xx replays byte for byte; success outcomes go to success. Errors that
// are never stored (400, 5xx: idempotency.Stored) are not rendered here (the
// error handler logs what it renders).
func errorAnswer(c echo.Context, success func(context.Context, any, error) (idempotency.Response, error)) func(context.Context, any, error) (idempotency.Response, error) {
	return func(ctx context.Context, result any, err error) (idempotency.Response, error) {
		if err == nil {
			return success(ctx, result, nil)
		}
		e, ok := apperr.As(err)
		if !ok {
			return idempotency.Response{Status: http.StatusInternalServerError}, nil
		}
		status := StatusOf(e.Code)
		if !idempotency.Stored(status) {
			return idempotency.Response{Status: status}, nil
		}
		resp := c.Response()
		orig, buf := resp.Writer, &bufferedWriter{header: resp.Header()}
		resp.Writer = buf
		defer func() {
			resp.Writer = orig
			resp.Committed = false // nothing has reached the client yet
		}()
		c.Echo().HTTPErrorHandler(err, c)
		return idempotency.Response{Status: buf.status, Body: bytes.Clone(buf.body.Bytes())}, nil
	}
}

// AnswerWith makes render the success answer of the request ctx carries, if any:
// the use case's unit of work stores it for retries (render runs there, before
// the commit). It returns what the handler answers with: the response rendered in
// the unit of work when there was one, so the client gets exactly what a retry
// will, else render's answer now. T is the use case's result, R the operation's
// generated response object.
func AnswerWith[T, R any](ctx context.Context, render func(ctx context.Context, t T) (R, error)) func(ctx context.Context, t T) (R, error) {
	var rendered R
	var done bool
	if r := idempotency.RequestOf(ctx); r != nil {
		base := r.Answer
		r.Answer = func(ctx context.Context, result any, err error) (idempotency.Response, error) {
			if err != nil {
				return base(ctx, nil, err)
			}
			t, ok := result.(T)
			if !ok {
				return idempotency.Response{}, fmt.Errorf("the use case answered %T, the handler renders %T", result, t)
			}
			out, err := render(ctx, t)
			if err != nil {
				return idempotency.Response{}, err
			}
			rendered, done = out, true
			return visit(out)
		}
	}
	return func(ctx context.Context, t T) (R, error) {
		if done {
			return rendered, nil
		}
		return render(ctx, t)
	}
}

// visit writes a generated response object (whose one method Visit…Response
// writes it) into a buffer and returns the status and body written.
func visit(obj any) (idempotency.Response, error) {
	v := reflect.ValueOf(obj)
	if !v.IsValid() {
		return idempotency.Response{}, fmt.Errorf("no response to store")
	}
	for i := 0; i < v.NumMethod(); i++ {
		name := v.Type().Method(i).Name
		if !strings.HasPrefix(name, "Visit") || !strings.HasSuffix(name, "Response") {
			continue
		}
		buf := &bufferedWriter{header: http.Header{}}
		out := v.Method(i).Call([]reflect.Value{reflect.ValueOf(http.ResponseWriter(buf))})
		if err, _ := out[0].Interface().(error); err != nil {
			return idempotency.Response{}, err
		}
		status := buf.status
		if status == 0 {
			status = http.StatusOK
		}
		return idempotency.Response{Status: status, Body: bytes.Clone(buf.body.Bytes())}, nil
	}
	return idempotency.Response{}, fmt.Errorf("%T is not a generated response object", obj)
}

// MustRun is the strict-handler middleware of both APIs that holds every
// state-changing operation to the rule of idempotency.Run: an operation called
// with an Idempotency-Key whose use case answered without running under it (its
// key unstored, its effects unprotected) is a defect, answered as an internal
// error rather than passed off as safe to retry.
func MustRun(f func(echo.Context, any) (any, error), operationID string) func(echo.Context, any) (any, error) {
	return func(c echo.Context, request any) (any, error) {
		out, err := f(c, request)
		if r, ok := c.Get(requestKey).(*idempotency.Request); ok && err == nil && !r.Ran() {
			return nil, fmt.Errorf("operation %s answered without running its use case under idempotency.Run", operationID)
		}
		return out, err
	}
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
