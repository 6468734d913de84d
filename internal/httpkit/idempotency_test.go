package httpkit

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"partnerd/gen/api"
	"partnerd/internal/apperr"
	"partnerd/internal/idempotency"
)

// TestMustRunRefusesAChangeOutsideItsUseCase: an operation called with an
// Idempotency-Key whose handler answered without its use case running under
// idempotency.Run is an error, not a success; one that ran passes its answer on.
func TestMustRunRefusesAChangeOutsideItsUseCase(t *testing.T) {
	t.Parallel()
	e := echo.New()
	call := func(useCase bool) (any, error) {
		c := e.NewContext(httptest.NewRequest(http.MethodPost, "/x", nil), httptest.NewRecorder())
		r := &idempotency.Request{Service: idempotency.NewService(memKeys{}, time.Now), Key: idempotency.Key{Key: "k"},
			Answer: func(context.Context, any, error) (idempotency.Response, error) {
				return idempotency.Response{Status: http.StatusCreated}, nil
			}}
		c.Set(requestKey, r)
		handler := func(c echo.Context, _ any) (any, error) {
			if useCase { // the use case runs under the request it is handed
				_, err := idempotency.Run(idempotency.WithRequest(context.Background(), r), memKeys{}.WithTx,
					func(context.Context, idempotency.Tx) (int, error) { return 0, nil })
				require.NoError(t, err)
			}
			return api.CreateQuote201JSONResponse{Success: true}, nil
		}
		return MustRun(handler, "createQuote")(c, nil)
	}
	_, err := call(false)
	require.ErrorContains(t, err, "without running its use case under idempotency.Run")
	out, err := call(true)
	require.NoError(t, err)
	require.Equal(t, api.CreateQuote201JSONResponse{Success: true}, out)
}

// memKeys is a key store that remembers nothing: every key is free.
type memKeys struct{}

func (memKeys) WithTx(ctx context.Context, fn func(ctx context.Context, tx idempotency.Tx) error) error {
	return fn(ctx, memKeys{})
}
func (memKeys) PurgeKeys(context.Context, time.Time) (int64, error) { return 0, nil }
func (memKeys) GetKey(context.Context, idempotency.Key) (*idempotency.Record, error) {
	return nil, apperr.New(apperr.NotFound, "no key")
}
func (memKeys) SaveKey(context.Context, *idempotency.Record, time.Time, time.Time) (bool, error) {
	return true, nil
}
func (memKeys) AfterCommit(f func()) { f() }

// TestVisitRendersTheGeneratedResponse: the answer stored for a retry is what the
// generated response object writes.
func TestVisitRendersTheGeneratedResponse(t *testing.T) {
	t.Parallel()
	resp := api.CreateQuote201JSONResponse{Success: true, Data: api.Quote{QuoteId: uuid.New(), Network: "bep20", Amount: "1500.00"}}
	out, err := visit(resp)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, out.Status)
	want, err := json.Marshal(resp)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(out.Body))
	_, err = visit(42)
	require.Error(t, err)
}
