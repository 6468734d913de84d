package operatorapi

import (
	"bytes"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"partnerd/internal/apperr"
	"partnerd/internal/idempotency"
	"partnerd/internal/store"
)

// idempotent is the partner API's idempotency layer (httpapi/idempotency.go) for
// operator requests: keys are scoped to the operator and the operation and live in
// their own table; the claim, the effects and the stored answer follow the same
// rules (replay 2xx and executed 4xx, release on 400 and 5xx).
func idempotent(operation string, svc *idempotency.Service, st *store.Store) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			o, err := operatorFrom(req.Context())
			if err != nil {
				return err
			}
			body, err := io.ReadAll(req.Body)
			if err != nil {
				return apperr.New(apperr.InvalidRequest, "The request body could not be read.")
			}
			req.Body = io.NopCloser(bytes.NewReader(body))
			key := idempotency.Key{PartnerID: o.ID, Operation: operation, Key: req.Header.Get("Idempotency-Key")}
			if key.Key == "" {
				return apperr.Field(apperr.IdempotencyKeyMissing, "The Idempotency-Key header is required for this operation.", "Idempotency-Key", "is required")
			}
			stored, err := svc.Claim(req.Context(), key, idempotency.Fingerprint(req.Method, req.URL.Path, body))
			if err != nil {
				return err
			}
			if stored != nil {
				h := c.Response().Header()
				h.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
				h.Set("Idempotent-Replayed", "true")
				c.Response().WriteHeader(stored.ResponseStatus)
				_, err := c.Response().Write(stored.ResponseBody)
				return err
			}

			txCtx, tx, err := st.Begin(req.Context())
			if err != nil {
				_ = svc.Release(req.Context(), key)
				return err
			}
			defer tx.Rollback()
			c.SetRequest(req.WithContext(txCtx))
			resp := c.Response()
			orig := resp.Writer
			buf := &bufferedWriter{header: orig.Header()}
			resp.Writer = buf
			if herr := next(c); herr != nil {
				c.Error(herr)
			}
			resp.Writer = orig
			c.SetRequest(req)
			status := buf.status
			if status == 0 {
				status = http.StatusOK
			}
			if status >= 500 || status == http.StatusBadRequest {
				tx.Rollback()
				_ = svc.Release(req.Context(), key)
			} else if err := svc.Complete(txCtx, key, status, buf.body.Bytes()); err != nil {
				tx.Rollback()
				_ = svc.Release(req.Context(), key)
				resp.Committed = false
				return err
			} else if err := tx.Commit(); err != nil {
				_ = svc.Release(req.Context(), key)
				resp.Committed = false
				return err
			}
			orig.WriteHeader(status)
			_, err = orig.Write(buf.body.Bytes())
			return err
		}
	}
}

// bufferedWriter holds a response until the idempotency record is committed.
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
