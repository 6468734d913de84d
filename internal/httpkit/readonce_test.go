package httpkit_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"partnerd/gen/api"
	"partnerd/internal/httpapi"
	"partnerd/internal/httpkit"
)

// createOnly is the partner API with only its create operation: what reaches the
// handler is what the request checks, the validator and the binder made of the body.
type createOnly struct {
	api.StrictServerInterface
	got *api.CreateTransactionJSONRequestBody
}

func (s *createOnly) CreateTransaction(_ context.Context, req api.CreateTransactionRequestObject) (api.CreateTransactionResponseObject, error) {
	s.got = req.Body
	return api.CreateTransaction201JSONResponse{}, nil
}

// createServer mounts the partner contract's route middleware (request checks,
// validation, the idempotency layer) and the generated strict handler over stub.
func createServer(tb testing.TB, stub *createOnly) *echo.Echo {
	tb.Helper()
	spec, err := httpapi.Spec()
	require.NoError(tb, err)
	e := echo.New()
	e.HTTPErrorHandler = httpkit.ErrorHandler(nil, nil)
	mw, err := httpkit.OperationMiddlewares(spec, []echo.MiddlewareFunc{httpkit.RequireJSON()},
		func(context.Context) (uuid.UUID, error) { return uuid.Nil, nil })
	require.NoError(tb, err)
	api.RegisterHandlersWithOptions(e, api.NewStrictHandler(stub, nil), api.RegisterHandlersOptions{
		BaseURL: httpapi.BasePath, OperationMiddlewares: mw,
	})
	return e
}

const createBody = `{"merchant_reference":"ORD-2026-0001","crypto_currency":"usdt","network":"bep20",` +
	`"fiat_amount":"150000.00","merchant_id":"M-17","terminal_id":"T-4","seller_phone":"+2348012345678"}`

func postCreate(e *echo.Echo, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, httpapi.BasePath+"/transactions", bytes.NewBufferString(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "bench-key-1")
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	return rec
}

// BenchmarkCreateBody is the CPU a create's body costs the transport: the request
// checks, validation against the contract, the idempotency fingerprint and the
// binding into the handler's input (README → Performance).
func BenchmarkCreateBody(b *testing.B) {
	stub := &createOnly{}
	e := createServer(b, stub)
	b.ReportAllocs()
	for b.Loop() {
		if rec := postCreate(e, createBody); rec.Code != http.StatusCreated {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}

// TestACreateBodyIsDecodedOnce: the request checks decode a create's body once;
// validation, the idempotency fingerprint and the handler's input come from that
// decode: kin-openapi's JSON body decoder is never called, nobody reads the body's
// text again, and the handler gets exactly what was sent.
func TestACreateBodyIsDecodedOnce(t *testing.T) {
	var decodes, kin atomic.Int64
	rereads, restore := httpkit.CountDecodes(&decodes)
	defer restore()
	openapi3filter.RegisterBodyDecoder("application/json", func(body io.Reader, h http.Header, s *openapi3.SchemaRef, enc openapi3filter.EncodingFn) (any, error) {
		kin.Add(1)
		return openapi3filter.JSONBodyDecoder(body, h, s, enc)
	})
	defer openapi3filter.RegisterBodyDecoder("application/json", openapi3filter.JSONBodyDecoder)

	stub := &createOnly{}
	e := createServer(t, stub)
	rec := postCreate(e, createBody)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	require.Equal(t, int64(1), decodes.Load(), "one decode of the body")
	require.Zero(t, kin.Load(), "the validator checks the decoded value, it does not decode again")
	require.Zero(t, rereads.Load(), "the binder binds the decoded value, it does not read the text again")
	fiat, merchant := "150000.00", "M-17"
	require.Equal(t, "ORD-2026-0001", stub.got.MerchantReference)
	require.Equal(t, &fiat, stub.got.FiatAmount)
	require.Equal(t, &merchant, stub.got.MerchantId)
	require.Equal(t, api.CryptoCurrency("usdt"), stub.got.CryptoCurrency)

	// Data after the value is refused, found by the same one decode.
	decodes.Store(0)
	rec = postCreate(e, `{"merchant_reference":"ORD-2","crypto_currency":"usdt","network":"bep20","fiat_amount":"1.00"} x`)
	require.Equal(t, http.StatusBadRequest, rec.Code, "trailing data is refused")
	require.Equal(t, int64(1), decodes.Load())

	// A body the contract refuses is refused as before, every finding named.
	rec = postCreate(e, `{"merchant_reference":"ORD-3","crypto_currency":"usdt","network":"bep20","fiat_amount":1,"extra":1}`)
	require.Equal(t, http.StatusBadRequest, rec.Code)
	require.Contains(t, rec.Body.String(), `"field":"/fiat_amount"`)
	require.Contains(t, rec.Body.String(), `"field":"/extra"`)
}
