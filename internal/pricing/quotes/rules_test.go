package quotes_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/uow"
	"partnerd/internal/partners"
	"partnerd/internal/pricing"
	"partnerd/internal/pricing/quotes"
	"partnerd/internal/pricing/rates"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/transactions"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func ptr(s string) *string { return &s }

// The source says 1550.005 NGN per USDT: the base rate rounds half-up to 1550.01,
// the 0.5 % spread and a floor give 1542.25 (1550.01 × 0.995 = 1542.25995). The
// expected amounts below are worked out by hand from those rules: a fiat amount buys
// its tokens rounded up to 6 decimals (the deposit always covers it), tokens are
// worth their NGN rounded down to kobo.
func TestCreate(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st, err := store.Open(ctx, db.URL)
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			_, err = st.Migrate(ctx)
			require.NoError(t, err)
			p := &partners.Partner{ID: uuid.New(), Name: "P", Environment: partners.Sandbox, KeyHash: uuid.NewString(),
				FeeRate: decimal.RequireFromString("0.01"), ShareRate: decimal.RequireFromString("0.5"), CreatedAt: store.Now()}
			require.NoError(t, st.CreatePartner(ctx, p))

			now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
			src := rates.NewStatic(map[string]decimal.Decimal{"usdt": decimal.RequireFromString("1550.005")}, nil)
			pairs, err := pricing.ParsePairs("usdt:bep20:1000:50000000,usdc:bep20:1000:50000000")
			require.NoError(t, err)
			svc := quotes.NewService(pricing.NewPricer(src, pairs, decimal.RequireFromString("0.005")), store.For(st, func(tx *store.Tx) quotes.Tx { return tx }), func() time.Time { return now })

			cases := []struct {
				name         string
				req          quotes.Request
				crypto, fiat string
				code         apperr.Code
				field        string
			}{
				{"fiat mode", quotes.Request{Token: "usdt", Network: "bep20", FiatAmount: ptr("100000")}, "64.840331", "100000", "", ""},
				{"fiat at the minimum", quotes.Request{Token: "usdt", Network: "bep20", FiatAmount: ptr("1000.00")}, "0.648404", "1000", "", ""},
				{"crypto mode", quotes.Request{Token: "usdt", Network: "bep20", CryptoAmount: ptr("10")}, "10", "15422.5", "", ""},
				{"crypto below the minimum", quotes.Request{Token: "usdt", Network: "bep20", CryptoAmount: ptr("0.333333")}, "", "", apperr.AmountOutOfRange, "/crypto_amount"},
				{"fiat below the minimum", quotes.Request{Token: "usdt", Network: "bep20", FiatAmount: ptr("999.99")}, "", "", apperr.AmountOutOfRange, "/fiat_amount"},
				{"fiat above the maximum", quotes.Request{Token: "usdt", Network: "bep20", FiatAmount: ptr("50000000.01")}, "", "", apperr.AmountOutOfRange, "/fiat_amount"},
				{"both amounts", quotes.Request{Token: "usdt", Network: "bep20", FiatAmount: ptr("5000"), CryptoAmount: ptr("3")}, "", "", apperr.InvalidRequest, ""},
				{"neither amount", quotes.Request{Token: "usdt", Network: "bep20"}, "", "", apperr.InvalidRequest, ""},
				{"kobo beyond 2 decimals", quotes.Request{Token: "usdt", Network: "bep20", FiatAmount: ptr("5000.001")}, "", "", apperr.InvalidRequest, "/fiat_amount"},
				{"tokens beyond 6 decimals", quotes.Request{Token: "usdt", Network: "bep20", CryptoAmount: ptr("3.0000001")}, "", "", apperr.InvalidRequest, "/crypto_amount"},
				{"not a number", quotes.Request{Token: "usdt", Network: "bep20", FiatAmount: ptr("five thousand")}, "", "", apperr.InvalidRequest, "/fiat_amount"},
				{"negative", quotes.Request{Token: "usdt", Network: "bep20", CryptoAmount: ptr("-3")}, "", "", apperr.InvalidRequest, "/crypto_amount"},
				{"unsupported pair", quotes.Request{Token: "usdt", Network: "trc20", FiatAmount: ptr("5000")}, "", "", apperr.UnsupportedPair, "/network"},
				{"no rate for the token", quotes.Request{Token: "usdc", Network: "bep20", FiatAmount: ptr("5000")}, "", "", apperr.RatesUnavailable, ""},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					q, err := svc.Create(ctx, uow.Plain[*quotes.Quote, quotes.Tx](), p.ID, c.req)
					if c.code != "" {
						e, ok := apperr.As(err)
						require.True(t, ok, "%v", err)
						require.Equal(t, c.code, e.Code)
						if c.field != "" {
							require.Equal(t, c.field, e.Details[0].Field)
						}
						return
					}
					require.NoError(t, err)
					require.Equal(t, "1550.01", q.BaseRate.String())
					require.Equal(t, "1542.25", q.AdjustedRate.String())
					require.Equal(t, c.crypto, q.CryptoAmount.String())
					require.Equal(t, c.fiat, q.FiatAmount.String())
					require.Equal(t, now, q.CreatedAt)
					require.Equal(t, now.Add(120*time.Second), q.ExpiresAt, "a quote lives 120 s")
					require.Nil(t, q.UsedAt)

					// What was stored is what was answered.
					var got *quotes.Quote
					require.NoError(t, store.For(st, func(tx *store.Tx) transactions.Tx { return tx }).WithTx(ctx, func(ctx context.Context, tx transactions.Tx) error {
						got, err = tx.QuoteByID(ctx, p.ID, q.ID)
						return err
					}))
					require.Equal(t, q.PartnerID, got.PartnerID)
					require.True(t, q.CryptoAmount.Equal(got.CryptoAmount), got.CryptoAmount)
					require.True(t, q.FiatAmount.Equal(got.FiatAmount), got.FiatAmount)
					require.True(t, q.AdjustedRate.Equal(got.AdjustedRate), got.AdjustedRate)
					require.True(t, q.ExpiresAt.Equal(got.ExpiresAt), got.ExpiresAt)
					require.Nil(t, got.UsedAt)
					// Another partner does not see it.
					require.Error(t, store.For(st, func(tx *store.Tx) transactions.Tx { return tx }).WithTx(ctx, func(ctx context.Context, tx transactions.Tx) error {
						_, err := tx.QuoteByID(ctx, uuid.New(), q.ID)
						require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
						return err
					}))
				})
			}
		})
	}
}
