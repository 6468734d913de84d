package httpkit

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"partnerd/gen/api"
	"partnerd/internal/kit/apperr"
)

// TestAnswerIsWhatTheResponseObjectWrites: the answer stored for a retry is what
// the generated response object writes.
func TestAnswerIsWhatTheResponseObjectWrites(t *testing.T) {
	t.Parallel()
	resp := api.CreateQuote201JSONResponse{Success: true, Data: api.Quote{QuoteId: uuid.New(), Network: "bep20", Amount: "1500.00"}}
	out, err := Answer(resp.VisitCreateQuoteResponse)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, out.Status)
	rec := httptest.NewRecorder()
	require.NoError(t, resp.VisitCreateQuoteResponse(rec))
	require.Equal(t, rec.Body.Bytes(), out.Body)
	want, err := json.Marshal(resp)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(out.Body))
}

// TestStoredErrorIsWhatTheErrorHandlerWrites: a stored 4xx is byte for byte the
// body the error handler writes for the same failure and request id; answers that
// are never stored (400, 5xx) carry only their status.
func TestStoredErrorIsWhatTheErrorHandlerWrites(t *testing.T) {
	t.Parallel()
	e := echo.New()
	handler := ErrorHandler(slog.New(slog.DiscardHandler), nil)
	for _, err := range []error{
		apperr.New(apperr.InvalidStateTransition, "A transaction in completed cannot be cancelled."),
		apperr.Field(apperr.QuoteExpired, "The quote <expired> & is gone.", "/quote_id", "expired"),
		apperr.New(apperr.NotFound, "The transaction was not found."),
	} {
		rec := httptest.NewRecorder()
		c := e.NewContext(httptest.NewRequest(http.MethodPost, "/x", nil), rec)
		c.Response().Header().Set(echo.HeaderXRequestID, "req-1")
		handler(err, c)
		stored := ErrorAnswer("req-1", "", err)
		require.Equal(t, rec.Code, stored.Status)
		require.Equal(t, rec.Body.Bytes(), stored.Body, "%v", err)
	}
	require.Equal(t, http.StatusBadRequest, ErrorAnswer("r", "", apperr.New(apperr.InvalidRequest, "bad")).Status)
	require.Nil(t, ErrorAnswer("r", "", apperr.New(apperr.InvalidRequest, "bad")).Body)
	require.Equal(t, http.StatusInternalServerError, ErrorAnswer("r", "", http.ErrAbortHandler).Status)
}
