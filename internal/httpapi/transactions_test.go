package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/address"
	"partnerd/internal/pricing/quotes"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/webhook"
)

func idem() func(context.Context, *http.Request) error {
	return idemKey(uuid.NewString())
}

func idemKey(k string) func(context.Context, *http.Request) error {
	return func(_ context.Context, r *http.Request) error {
		r.Header.Set("Idempotency-Key", k)
		return nil
	}
}

func params() *client.CreateTransactionParams { return &client.CreateTransactionParams{} }

func direct(ref, network, fiat string) client.CreateTransactionRequest {
	return client.CreateTransactionRequest{MerchantReference: ref, CryptoCurrency: "usdt", Network: network, FiatAmount: &fiat}
}

// create makes a direct-mode transaction and returns it, failing unless it is 201.
func create(t *testing.T, c *client.ClientWithResponses, req client.CreateTransactionRequest) client.Transaction {
	t.Helper()
	res, err := c.CreateTransactionWithResponse(context.Background(), params(), req, idem())
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))
	return res.JSON201.Data
}

func TestCreateTransactionDirectMode(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		c := env.Client(t, env.NewPartner(t))
		ctx := context.Background()
		seen := map[string]bool{}
		for _, network := range []string{"bep20", "trc20", "bep20"} {
			req := direct("ORDER-"+uuid.NewString(), network, "150000.5")
			req.MerchantId, req.TerminalId, req.SellerPhone = ptr("M-1"), ptr("T-9"), ptr("+2348012345678")
			tx := create(t, c, req)
			require.Equal(t, client.TransactionStatusAwaitingDeposit, tx.Status)
			require.Equal(t, "150000.50", tx.Amount)
			require.Equal(t, "97.260821", tx.CryptoAmount, "tokens from fiat round up")
			require.Equal(t, "1542.25", tx.Rate)
			require.Equal(t, network, tx.Network)
			require.Equal(t, "M-1", *tx.MerchantId)
			require.True(t, address.Valid(network, tx.DepositAddress), tx.DepositAddress)
			require.False(t, seen[tx.DepositAddress], "a fresh address per transaction")
			seen[tx.DepositAddress] = true

			got, err := c.GetTransactionWithResponse(ctx, tx.Id)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, got.StatusCode())
			d := got.JSON200.Data
			require.Equal(t, 30*time.Minute, d.ExpiresAt.Sub(d.CreatedAt))
			require.Equal(t, d.CreatedAt, d.UpdatedAt)
			require.Equal(t, tx.DepositAddress, d.DepositAddress)
			// The deposit fields are present and null while no deposit exists.
			var raw map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(got.Body, &raw))
			var data map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(raw["data"], &data))
			for _, f := range []string{"deposit_id", "deposit_status", "confirmations", "required_confirmations", "received_at", "confirmed_at", "deposit_amount", "deposit_tx_hash"} {
				require.Equal(t, "null", string(data[f]), f)
			}
		}
	})
}

func TestDepositAddressesFollowTheDerivationPath(t *testing.T) {
	t.Parallel()
	// On a fresh database the first addresses are indexes 0, 1 of each network's
	// account key: the published vectors of the demo keys.
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		if env.Store.Dialect() == store.Postgres {
			// The PostgreSQL database is shared by the package's tests, so its
			// counters have moved on; check the derivation against the book instead.
			c := env.Client(t, env.NewPartner(t))
			tx := create(t, c, direct("D-"+uuid.NewString(), "trc20", "2000"))
			require.True(t, address.Valid("trc20", tx.DepositAddress))
			return
		}
		c := env.Client(t, env.NewPartner(t))
		require.Equal(t, "0x9858EfFD232B4033E47d90003D41EC34EcaEda94", create(t, c, direct("a", "bep20", "2000")).DepositAddress)
		require.Equal(t, "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH", create(t, c, direct("b", "trc20", "2000")).DepositAddress)
		require.Equal(t, "0x6Fac4D18c912343BF86fa7049364Dd4E424Ab9C0", create(t, c, direct("c", "bep20", "2000")).DepositAddress)
		require.Equal(t, "TSeJkUh4Qv67VNFwY8LaAxERygNdy6NQZK", create(t, c, direct("d", "trc20", "2000")).DepositAddress)
	})
}

func TestCreateTransactionQuoteMode(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		key := env.NewPartner(t)
		c := env.Client(t, key)
		ctx := context.Background()
		newQuote := func(network string) client.Quote {
			res, err := c.CreateQuoteWithResponse(ctx, nil, client.QuoteRequest{CryptoCurrency: "usdt", Network: network, CryptoAmount: ptr("100")})
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, res.StatusCode())
			return res.JSON201.Data
		}
		withQuote := func(ref, network string, id uuid.UUID) client.CreateTransactionRequest {
			return client.CreateTransactionRequest{MerchantReference: ref, CryptoCurrency: "usdt", Network: network, QuoteId: &id}
		}

		q := newQuote("trc20")
		tx := create(t, c, withQuote("Q-1", "trc20", q.QuoteId))
		require.Equal(t, q.CryptoAmount, tx.CryptoAmount)
		require.Equal(t, q.FiatAmount, tx.Amount)
		require.Equal(t, q.AdjustedRate, tx.Rate)

		expired := uuid.New()
		past := store.Now().Add(-time.Hour)
		require.NoError(t, env.Store.CreateQuote(ctx, &quotes.Quote{
			ID: expired, PartnerID: env.PartnerID(t, key), Token: "usdt", Network: "bep20",
			BaseRate: decimal.RequireFromString("1550"), AdjustedRate: decimal.RequireFromString("1542.25"),
			CryptoAmount: decimal.RequireFromString("10"), FiatAmount: decimal.RequireFromString("15422.50"),
			CreatedAt: past, ExpiresAt: past.Add(quotes.TTL),
		}))
		other := env.Client(t, env.NewPartner(t))
		othersQuote, err := other.CreateQuoteWithResponse(ctx, nil, client.QuoteRequest{CryptoCurrency: "usdt", Network: "bep20", CryptoAmount: ptr("10")})
		require.NoError(t, err)

		mismatch := newQuote("bep20")
		for _, tc := range []struct {
			name   string
			req    client.CreateTransactionRequest
			status int
			code   client.ErrorCode
		}{
			{"quote already used", withQuote("Q-2", "trc20", q.QuoteId), 409, client.ErrorCodeQuoteAlreadyUsed},
			{"network differs from the quote's", withQuote("Q-3", "trc20", mismatch.QuoteId), 422, client.ErrorCodeQuoteMismatch},
			{"expired quote", withQuote("Q-4", "bep20", expired), 422, client.ErrorCodeQuoteExpired},
			{"unknown quote", withQuote("Q-5", "bep20", uuid.New()), 404, client.ErrorCodeNotFound},
			{"another partner's quote", withQuote("Q-6", "bep20", othersQuote.JSON201.Data.QuoteId), 404, client.ErrorCodeNotFound},
			{"unsupported pair", withQuote("Q-7", "erc20", mismatch.QuoteId), 422, client.ErrorCodeUnsupportedPair},
		} {
			res, err := c.CreateTransactionWithResponse(ctx, params(), tc.req, idem())
			require.NoError(t, err)
			require.Equal(t, tc.status, res.StatusCode(), "%s: %s", tc.name, res.Body)
			e := errorOf(t, res.StatusCode(), res.JSON404, res.JSON409, res.JSON422)
			require.Equal(t, tc.code, e.Error.Code, tc.name)
		}
		// The mismatched quote was not consumed by the failed attempt.
		create(t, c, withQuote("Q-8", "bep20", mismatch.QuoteId))
	})
}

func TestCreateTransactionRejectsBadInput(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		c := env.Client(t, env.NewPartner(t))
		hc := env.HTTPClient(t)
		key := env.NewPartner(t)
		post := func(body string) (int, client.Error) {
			req, err := http.NewRequest(http.MethodPost, env.BaseURL+"/transactions", strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-API-KEY", key)
			req.Header.Set("Idempotency-Key", uuid.NewString())
			res, err := hc.Do(req)
			require.NoError(t, err)
			return res.StatusCode, rawError(t, res)
		}
		for name, body := range map[string]string{
			"both modes":         `{"merchant_reference":"r1","crypto_currency":"usdt","network":"bep20","fiat_amount":"2000","quote_id":"` + uuid.NewString() + `"}`,
			"neither mode":       `{"merchant_reference":"r2","crypto_currency":"usdt","network":"bep20"}`,
			"rate sent":          `{"merchant_reference":"r3","crypto_currency":"usdt","network":"bep20","fiat_amount":"2000","rate":"1600"}`,
			"crypto_amount sent": `{"merchant_reference":"r4","crypto_currency":"usdt","network":"bep20","fiat_amount":"2000","crypto_amount":"1"}`,
			"empty reference":    `{"merchant_reference":"","crypto_currency":"usdt","network":"bep20","fiat_amount":"2000"}`,
			"reference too long": `{"merchant_reference":"` + strings.Repeat("x", 256) + `","crypto_currency":"usdt","network":"bep20","fiat_amount":"2000"}`,
			"control character":  `{"merchant_reference":"a\u0007b","crypto_currency":"usdt","network":"bep20","fiat_amount":"2000"}`,
			"no reference":       `{"crypto_currency":"usdt","network":"bep20","fiat_amount":"2000"}`,
			"bad fiat":           `{"merchant_reference":"r5","crypto_currency":"usdt","network":"bep20","fiat_amount":"2,000"}`,
			"malformed quote id": `{"merchant_reference":"r6","crypto_currency":"usdt","network":"bep20","quote_id":"q-1"}`,
			"amount as a number": `{"merchant_reference":"r7","crypto_currency":"usdt","network":"bep20","fiat_amount":2000}`,
			"null reference":     `{"merchant_reference":null,"crypto_currency":"usdt","network":"bep20","fiat_amount":"2000"}`,
		} {
			status, e := post(body)
			require.Equal(t, http.StatusBadRequest, status, name)
			require.Equal(t, client.ErrorCodeInvalidRequest, e.Error.Code, name)
		}
		// 255 characters of multi-byte text are fine.
		create(t, c, direct(strings.Repeat("é", 255), "bep20", "2000"))
		// Out-of-range and unsupported in direct mode.
		for _, tc := range []struct {
			req  client.CreateTransactionRequest
			code client.ErrorCode
		}{
			{direct("r8", "bep20", "999.99"), client.ErrorCodeAmountOutOfRange},
			{direct("r9", "erc20", "2000"), client.ErrorCodeUnsupportedPair},
		} {
			res, err := c.CreateTransactionWithResponse(context.Background(), params(), tc.req, idem())
			require.NoError(t, err)
			require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode())
			require.Equal(t, tc.code, res.JSON422.Error.Code)
		}
	})
}

func TestMerchantReferenceIsUniqueCaseInsensitively(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		c := env.Client(t, env.NewPartner(t))
		ctx := context.Background()
		for _, pair := range [][2]string{
			{"Order-1", "ORDER-1"},
			{"straße/7", "STRASSE/7"}, // full Unicode folding: ß is ss
			{"École 42", "éCOLE 42"},
			{"ΣΊΣΥΦΟΣ", "σίσυφος"},
		} {
			create(t, c, direct(pair[0], "bep20", "2000"))
			for _, again := range []string{pair[0], pair[1]} {
				res, err := c.CreateTransactionWithResponse(ctx, params(), direct(again, "trc20", "3000"), idem())
				require.NoError(t, err)
				require.Equal(t, http.StatusConflict, res.StatusCode(), again)
				require.Equal(t, client.ErrorCodeDuplicateMerchantReference, res.JSON409.Error.Code)
			}
		}
		// Another partner may use the same reference.
		create(t, env.Client(t, env.NewPartner(t)), direct("Order-1", "bep20", "2000"))
	})
}

func TestGetTransaction(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		key := env.NewPartner(t)
		c := env.Client(t, key)
		ctx := context.Background()
		refs := []string{"INV 2026/11 #7", "Ünïcødé-Ref", "plain-ref", "a%2Fb", "100%"}
		ids := map[string]uuid.UUID{}
		for _, r := range refs {
			ids[r] = create(t, c, direct(r, "bep20", "2000")).Id
		}
		for _, r := range refs {
			for _, variant := range []string{r, strings.ToUpper(r), strings.ToLower(r)} {
				res, err := c.GetTransactionByReferenceWithResponse(ctx, variant)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, res.StatusCode(), "%q: %s", variant, res.Body)
				require.Equal(t, ids[r], res.JSON200.Data.Id, variant)
				require.Equal(t, r, res.JSON200.Data.MerchantReference, "the reference is kept as sent")
			}
		}
		// A raw request with the slash and the space percent-encoded.
		req, err := http.NewRequest(http.MethodGet, env.BaseURL+"/transactions/reference/"+url.PathEscape("inv 2026/11 #7"), nil)
		require.NoError(t, err)
		req.Header.Set("X-API-KEY", key)
		raw, err := env.HTTPClient(t).Do(req)
		require.NoError(t, err)
		var body client.TransactionDetailResponse
		require.NoError(t, json.NewDecoder(raw.Body).Decode(&body))
		_ = raw.Body.Close()
		require.Equal(t, http.StatusOK, raw.StatusCode)
		require.Equal(t, ids["INV 2026/11 #7"], body.Data.Id)

		other := env.Client(t, env.NewPartner(t))
		for name, call := range map[string]func() (int, *client.Error){
			"another partner's id": func() (int, *client.Error) {
				r, err := other.GetTransactionWithResponse(ctx, ids["plain-ref"])
				require.NoError(t, err)
				return r.StatusCode(), r.JSON404
			},
			"another partner's reference": func() (int, *client.Error) {
				r, err := other.GetTransactionByReferenceWithResponse(ctx, "plain-ref")
				require.NoError(t, err)
				return r.StatusCode(), r.JSON404
			},
			"unknown id": func() (int, *client.Error) {
				r, err := c.GetTransactionWithResponse(ctx, uuid.New())
				require.NoError(t, err)
				return r.StatusCode(), r.JSON404
			},
		} {
			status, e := call()
			require.Equal(t, http.StatusNotFound, status, name)
			require.Equal(t, client.ErrorCodeNotFound, e.Error.Code, name)
		}
	})
}

func TestIdempotentCreate(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		key := env.NewPartner(t)
		c := env.Client(t, key)
		ctx := context.Background()
		k := uuid.NewString()

		first, err := c.CreateTransactionWithResponse(ctx, params(), direct("IDEM-1", "bep20", "5000"), idemKey(k))
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, first.StatusCode())
		require.Empty(t, first.HTTPResponse.Header.Get("Idempotent-Replayed"))

		again, err := c.CreateTransactionWithResponse(ctx, params(), direct("IDEM-1", "bep20", "5000"), idemKey(k))
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, again.StatusCode())
		require.Equal(t, "true", again.HTTPResponse.Header.Get("Idempotent-Replayed"))
		require.Equal(t, string(first.Body), string(again.Body), "replayed byte for byte")

		// The same request with its keys in another order and other spacing is the
		// same request.
		hc := env.HTTPClient(t)
		raw := func(idemKey, body string) *http.Response {
			req, err := http.NewRequest(http.MethodPost, env.BaseURL+"/transactions", strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-API-KEY", key)
			req.Header.Set("Idempotency-Key", idemKey)
			res, err := hc.Do(req)
			require.NoError(t, err)
			return res
		}
		res := raw(k, `{ "fiat_amount" : "5000", "network":"bep20", "crypto_currency":"usdt", "merchant_reference":"IDEM-1" }`)
		require.Equal(t, http.StatusCreated, res.StatusCode)
		require.Equal(t, "true", res.Header.Get("Idempotent-Replayed"))
		_ = res.Body.Close()

		// The same key with another request.
		reused, err := c.CreateTransactionWithResponse(ctx, params(), direct("IDEM-1", "bep20", "5001"), idemKey(k))
		require.NoError(t, err)
		require.Equal(t, http.StatusUnprocessableEntity, reused.StatusCode())
		require.Equal(t, client.ErrorCodeIdempotencyKeyReused, reused.JSON422.Error.Code)

		// An executed error is stored and replayed too: a duplicate reference is 409
		// under a new key, and replays as 409 under that key.
		k2 := uuid.NewString()
		dup, err := c.CreateTransactionWithResponse(ctx, params(), direct("idem-1", "trc20", "5000"), idemKey(k2))
		require.NoError(t, err)
		require.Equal(t, http.StatusConflict, dup.StatusCode())
		dupAgain, err := c.CreateTransactionWithResponse(ctx, params(), direct("idem-1", "trc20", "5000"), idemKey(k2))
		require.NoError(t, err)
		require.Equal(t, http.StatusConflict, dupAgain.StatusCode())
		require.Equal(t, "true", dupAgain.HTTPResponse.Header.Get("Idempotent-Replayed"))
		require.Equal(t, string(dup.Body), string(dupAgain.Body))

		// Requests rejected before execution are not stored: after a validation
		// failure the same key still works for a valid request.
		k3 := uuid.NewString()
		bad := raw(k3, `{"merchant_reference":"IDEM-3","crypto_currency":"usdt","network":"bep20"}`)
		require.Equal(t, http.StatusBadRequest, bad.StatusCode)
		_ = bad.Body.Close()
		ok, err := c.CreateTransactionWithResponse(ctx, params(), direct("IDEM-3", "bep20", "5000"), idemKey(k3))
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, ok.StatusCode())

		// Keys are per partner: another partner's same key is independent.
		otherRes, err := env.Client(t, env.NewPartner(t)).CreateTransactionWithResponse(ctx, params(), direct("IDEM-1", "bep20", "5001"), idemKey(k))
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, otherRes.StatusCode())

		// Exactly one transaction exists for IDEM-1.
		list, err := c.ListTransactionsWithResponse(ctx, &client.ListTransactionsParams{MerchantReference: ptr("IDEM-1")})
		require.NoError(t, err)
		require.Len(t, list.JSON200.Data.Data, 1)
	})
}

func TestConcurrentIdenticalCreatesMakeOneTransaction(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		c := env.Client(t, env.NewPartner(t))
		ctx := context.Background()
		k := uuid.NewString()
		const n = 20
		var wg sync.WaitGroup
		statuses := make([]int, n)
		bodies := make([]string, n)
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				res, err := c.CreateTransactionWithResponse(ctx, params(), direct("RACE-1", "bep20", "7000"), idemKey(k))
				if err != nil {
					t.Error(err)
					return
				}
				statuses[i], bodies[i] = res.StatusCode(), string(res.Body)
			}()
		}
		close(start)
		wg.Wait()
		var created []string
		for i, s := range statuses {
			switch s {
			case http.StatusCreated:
				created = append(created, bodies[i])
			case http.StatusConflict:
				require.Contains(t, bodies[i], "idempotency_request_in_progress")
			default:
				t.Fatalf("unexpected status %d: %s", s, bodies[i])
			}
		}
		require.NotEmpty(t, created)
		for _, b := range created {
			require.Equal(t, created[0], b, "every 201 is the same transaction")
		}
		list, err := c.ListTransactionsWithResponse(ctx, &client.ListTransactionsParams{MerchantReference: ptr("RACE-1")})
		require.NoError(t, err)
		require.Len(t, list.JSON200.Data.Data, 1, "exactly one transaction")
	})
}

func TestListTransactions(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		c := env.Client(t, env.NewPartner(t))
		ctx := context.Background()
		const total = 23
		var made []client.Transaction
		for i := range total {
			req := direct(fmt.Sprintf("LIST-%02d", i), []string{"bep20", "trc20"}[i%2], "2000")
			req.MerchantId = ptr([]string{"M-A", "M-B", "M-C"}[i%3])
			if i%4 == 0 {
				req.TerminalId = ptr("T-1")
			}
			made = append(made, create(t, c, req))
		}
		// Another partner's transactions never appear.
		create(t, env.Client(t, env.NewPartner(t)), direct("LIST-XX", "bep20", "2000"))

		walk := func(p client.ListTransactionsParams) []client.TransactionListItem {
			var out []client.TransactionListItem
			for page := 0; ; page++ {
				require.Less(t, page, 100)
				res, err := c.ListTransactionsWithResponse(ctx, &p)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
				d := res.JSON200.Data
				out = append(out, d.Data...)
				require.Equal(t, d.HasMore, d.NextCursor != nil)
				if !d.HasMore {
					return out
				}
				require.NotEmpty(t, d.Data)
				p.Cursor = d.NextCursor
			}
		}
		all := walk(client.ListTransactionsParams{Limit: ptr(5)})
		require.Len(t, all, total)
		seen := map[uuid.UUID]bool{}
		for i, it := range all {
			require.False(t, seen[it.Id], "no duplicates")
			seen[it.Id] = true
			if i > 0 {
				prev := all[i-1]
				require.True(t, prev.CreatedAt.After(it.CreatedAt) || (prev.CreatedAt.Equal(it.CreatedAt) && prev.Id.String() > it.Id.String()),
					"ordered by (created_at, id) descending")
			}
		}
		require.Equal(t, made[total-1].Id, all[0].Id, "newest first")

		// Default page size 20; has_more exact on a full last page.
		first, err := c.ListTransactionsWithResponse(ctx, nil)
		require.NoError(t, err)
		require.Equal(t, 20, first.JSON200.Data.Limit)
		require.Len(t, first.JSON200.Data.Data, 20)
		exact, err := c.ListTransactionsWithResponse(ctx, &client.ListTransactionsParams{Limit: ptr(total)})
		require.NoError(t, err)
		require.False(t, exact.JSON200.Data.HasMore)
		require.Nil(t, exact.JSON200.Data.NextCursor)

		count := func(p client.ListTransactionsParams) int { p.Limit = ptr(4); return len(walk(p)) }
		require.Equal(t, 8, count(client.ListTransactionsParams{MerchantId: ptr("M-A")}))
		require.Equal(t, 6, count(client.ListTransactionsParams{TerminalId: ptr("T-1")}))
		require.Equal(t, 2, count(client.ListTransactionsParams{MerchantId: ptr("M-A"), TerminalId: ptr("T-1")}))
		require.Equal(t, 1, count(client.ListTransactionsParams{MerchantReference: ptr("list-07")}))
		require.Equal(t, total, count(client.ListTransactionsParams{Status: &[]client.TransactionStatus{client.TransactionStatusAwaitingDeposit, client.TransactionStatusCancelled}}))
		require.Equal(t, 0, count(client.ListTransactionsParams{Status: &[]client.TransactionStatus{client.TransactionStatusCompleted}}))
		// from/to are inclusive bounds on created_at.
		from, to := all[15].CreatedAt, all[5].CreatedAt
		window := walk(client.ListTransactionsParams{From: &from, To: &to, Limit: ptr(3)})
		require.Len(t, window, 11)
		require.Equal(t, all[5].Id, window[0].Id)
		require.Equal(t, all[15].Id, window[10].Id)

		// A cursor is bound to its filters and cannot be altered.
		p1, err := c.ListTransactionsWithResponse(ctx, &client.ListTransactionsParams{Limit: ptr(2), MerchantId: ptr("M-A")})
		require.NoError(t, err)
		cur := *p1.JSON200.Data.NextCursor
		tampered := []byte(cur)
		tampered[5] ^= 1
		for name, p := range map[string]client.ListTransactionsParams{
			"other filters":   {Limit: ptr(2), MerchantId: ptr("M-B"), Cursor: &cur},
			"dropped filters": {Limit: ptr(2), Cursor: &cur},
			"altered":         {Limit: ptr(2), MerchantId: ptr("M-A"), Cursor: ptr(string(tampered))},
			"garbage":         {Cursor: ptr("not-a-cursor")},
		} {
			res, err := c.ListTransactionsWithResponse(ctx, &p)
			require.NoError(t, err)
			require.Equal(t, http.StatusBadRequest, res.StatusCode(), name)
			require.Equal(t, client.ErrorCodeInvalidCursor, res.JSON400.Error.Code, name)
		}
		// The cursor is also bound to the partner.
		res, err := env.Client(t, env.NewPartner(t)).ListTransactionsWithResponse(ctx, &client.ListTransactionsParams{Limit: ptr(2), MerchantId: ptr("M-A"), Cursor: &cur})
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, res.StatusCode())
	})
}

func TestListWalkIsStableWhileCreating(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		c := env.Client(t, env.NewPartner(t))
		ctx := context.Background()
		existing := map[uuid.UUID]bool{}
		for i := range 12 {
			existing[create(t, c, direct(fmt.Sprintf("W-%d", i), "bep20", "2000")).Id] = true
		}
		got := map[uuid.UUID]int{}
		p := client.ListTransactionsParams{Limit: ptr(3)}
		for i := 0; ; i++ {
			res, err := c.ListTransactionsWithResponse(ctx, &p)
			require.NoError(t, err)
			for _, it := range res.JSON200.Data.Data {
				got[it.Id]++
			}
			// New transactions arrive between pages.
			create(t, c, direct(fmt.Sprintf("NEW-%d", i), "trc20", "2000"))
			if !res.JSON200.Data.HasMore {
				break
			}
			p.Cursor = res.JSON200.Data.NextCursor
		}
		for id := range existing {
			require.Equal(t, 1, got[id], "every transaction of the first call exactly once")
		}
		require.Len(t, got, len(existing), "none created during the walk")
	})
}

func TestCreateWritesHistoryAndEventTogether(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		key := env.NewPartner(t)
		c := env.Client(t, key)
		ctx := context.Background()
		tx := create(t, c, direct("EV-1", "trc20", "2500"))

		hist, err := env.Store.History(ctx, tx.Id)
		require.NoError(t, err)
		require.Len(t, hist, 1)
		require.Equal(t, "", string(hist[0].From))
		require.Equal(t, "awaiting_deposit", string(hist[0].To))
		require.Equal(t, "transaction:created", hist[0].Reason)

		events, err := env.Store.ListEvents(ctx, env.PartnerID(t, key), webhook.ListQuery{
			Filter: webhook.Filter{TransactionID: &tx.Id}, Limit: 10,
		})
		require.NoError(t, err)
		require.Len(t, events, 1)
		require.Equal(t, "transaction.created", string(events[0].Type))
		require.NoError(t, env.ValidateSchema("WebhookPayload", events[0].Payload), "the stored payload is what the contract promises")

		// The payload's data is the snapshot the API serves.
		var payload struct {
			ID   uuid.UUID       `json:"id"`
			Data json.RawMessage `json:"data"`
		}
		require.NoError(t, json.Unmarshal(events[0].Payload, &payload))
		require.Equal(t, events[0].ID, payload.ID)
		got, err := c.GetTransactionWithResponse(ctx, tx.Id)
		require.NoError(t, err)
		var served struct {
			Data json.RawMessage `json:"data"`
		}
		require.NoError(t, json.Unmarshal(got.Body, &served))
		require.JSONEq(t, string(served.Data), string(payload.Data))

		// A failed create writes nothing: no transaction, history or event.
		dup, err := c.CreateTransactionWithResponse(ctx, params(), direct("ev-1", "trc20", "2500"), idem())
		require.NoError(t, err)
		require.Equal(t, http.StatusConflict, dup.StatusCode())
		list, err := c.ListTransactionsWithResponse(ctx, &client.ListTransactionsParams{MerchantReference: ptr("EV-1")})
		require.NoError(t, err)
		require.Len(t, list.JSON200.Data.Data, 1)
	})
}

func TestListTransactionsByDepositAddressAndTxHash(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		c := env.Client(t, env.NewPartner(t))
		other := env.Client(t, env.NewPartner(t))
		ctx := context.Background()
		bep := create(t, c, direct("SEARCH-1", "bep20", "2000"))
		trc := create(t, c, direct("SEARCH-2", "trc20", "2000"))
		create(t, c, direct("SEARCH-3", "bep20", "2000"))
		theirs := create(t, other, direct("SEARCH-1", "bep20", "2000"))
		require.NotEqual(t, strings.ToLower(bep.DepositAddress), bep.DepositAddress, "the address carries a checksum")

		const hash = "0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060"
		res, err := c.SimulateSandboxEventWithResponse(ctx, nil, client.SimulateRequest{
			Event: client.SimulateRequestEventDepositDetected, TransactionId: bep.Id, BlockchainHash: ptr(hash),
		})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		tronHash := strings.Repeat("ab", 32)
		res, err = c.SimulateSandboxEventWithResponse(ctx, nil, client.SimulateRequest{
			Event: client.SimulateRequestEventDepositDetected, TransactionId: trc.Id, BlockchainHash: ptr(tronHash),
		})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))

		ids := func(c *client.ClientWithResponses, p client.ListTransactionsParams) []uuid.UUID {
			t.Helper()
			res, err := c.ListTransactionsWithResponse(ctx, &p)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
			var out []uuid.UUID
			for _, it := range res.JSON200.Data.Data {
				out = append(out, it.Id)
			}
			return out
		}
		one := []uuid.UUID{bep.Id}
		for _, a := range []string{bep.DepositAddress, strings.ToLower(bep.DepositAddress), "0X" + strings.ToUpper(bep.DepositAddress[2:])} {
			require.Equal(t, one, ids(c, client.ListTransactionsParams{DepositAddress: ptr(a)}), a)
		}
		require.Equal(t, []uuid.UUID{trc.Id}, ids(c, client.ListTransactionsParams{DepositAddress: ptr(trc.DepositAddress)}))
		// base58 is case-sensitive: another case is another address.
		require.Empty(t, ids(c, client.ListTransactionsParams{DepositAddress: ptr(strings.ToLower(trc.DepositAddress))}))
		require.Empty(t, ids(c, client.ListTransactionsParams{DepositAddress: ptr(bep.DepositAddress[:41])}))

		require.Equal(t, one, ids(c, client.ListTransactionsParams{TxHash: ptr(hash)}))
		require.Equal(t, one, ids(c, client.ListTransactionsParams{TxHash: ptr("0x" + strings.ToUpper(hash[2:]))}))
		require.Equal(t, []uuid.UUID{trc.Id}, ids(c, client.ListTransactionsParams{TxHash: ptr(strings.ToUpper(tronHash))}))
		require.Empty(t, ids(c, client.ListTransactionsParams{TxHash: ptr(hash[:64])}))
		// The filters combine with the others (AND).
		require.Equal(t, one, ids(c, client.ListTransactionsParams{TxHash: ptr(hash), DepositAddress: ptr(bep.DepositAddress)}))
		require.Empty(t, ids(c, client.ListTransactionsParams{TxHash: ptr(hash), DepositAddress: ptr(trc.DepositAddress)}))
		require.Empty(t, ids(c, client.ListTransactionsParams{TxHash: ptr(hash), MerchantReference: ptr("SEARCH-3")}))

		// The network filter: each network's own, with the others by AND; a
		// malformed network is 400.
		require.ElementsMatch(t, []uuid.UUID{trc.Id}, ids(c, client.ListTransactionsParams{Network: ptr("trc20")}))
		require.Len(t, ids(c, client.ListTransactionsParams{Network: ptr("bep20")}), 2)
		require.Empty(t, ids(c, client.ListTransactionsParams{Network: ptr("trc20"), TxHash: ptr(hash)}))
		require.Empty(t, ids(other, client.ListTransactionsParams{Network: ptr("trc20")}))
		badNet, err := c.ListTransactionsWithResponse(ctx, &client.ListTransactionsParams{Network: ptr("BEP20")})
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, badNet.StatusCode(), string(badNet.Body))

		// Another partner's transaction is never found, by its address or by ours.
		require.Empty(t, ids(other, client.ListTransactionsParams{DepositAddress: ptr(bep.DepositAddress)}))
		require.Empty(t, ids(other, client.ListTransactionsParams{TxHash: ptr(hash)}))
		require.Empty(t, ids(c, client.ListTransactionsParams{DepositAddress: ptr(theirs.DepositAddress)}))

		// A cursor is bound to the search: another address is 400 invalid_cursor.
		page, err := c.ListTransactionsWithResponse(ctx, &client.ListTransactionsParams{Limit: ptr(1)})
		require.NoError(t, err)
		require.NotNil(t, page.JSON200.Data.NextCursor)
		bad, err := c.ListTransactionsWithResponse(ctx, &client.ListTransactionsParams{Cursor: page.JSON200.Data.NextCursor, DepositAddress: ptr(bep.DepositAddress)})
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, bad.StatusCode())
		require.Equal(t, client.ErrorCodeInvalidCursor, bad.JSON400.Error.Code)
		// Out-of-bounds values are 400 with the field named.
		long, err := c.ListTransactionsWithResponse(ctx, &client.ListTransactionsParams{TxHash: ptr(strings.Repeat("a", 129))})
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, long.StatusCode(), string(long.Body))
	})
}
