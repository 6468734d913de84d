package transactions_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/internal/backoffice"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/cursor"
	"partnerd/internal/kit/uow"
	"partnerd/internal/lifecycle"
	"partnerd/internal/partners"
	"partnerd/internal/pricing"
	"partnerd/internal/pricing/quotes"
	"partnerd/internal/pricing/rates"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/transactions"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func ptr[T any](v T) *T { return &v }

func TestReferenceKey(t *testing.T) {
	t.Parallel()
	cases := []struct{ a, b string }{
		{"ORDER-1", "order-1"},
		{"Straße-7", "STRASSE-7"},   // full case folding: ß is ss
		{"caf\u00e9", "CAFE\u0301"}, // NFC: é and e + combining acute are one letter
		{"ΣΊΣΥΦΟΣ", "σίσυφος"},      // final and medial sigma fold alike
		{"ＡＢＣ-１", "ａｂｃ-１"},          // fullwidth letters fold in case only
		{"ref/with%25 symbols", "REF/WITH%25 SYMBOLS"},
	}
	for _, c := range cases {
		t.Run(c.a, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, transactions.ReferenceKey(c.a), transactions.ReferenceKey(c.b))
		})
	}
	require.NotEqual(t, transactions.ReferenceKey("order-1"), transactions.ReferenceKey("order-l"))
	require.NotEqual(t, transactions.ReferenceKey("ABC"), transactions.ReferenceKey("ＡＢＣ"), "width is not folded")
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// addresses derives a recognisable fake address per index.
type addresses struct{}

func (addresses) Address(network string, index uint32) (string, error) {
	return fmt.Sprintf("%s-address-%d", network, index), nil
}

type bed struct {
	st      *store.Store
	clock   *clock
	svc     *transactions.Service
	quotes  *quotes.Service
	lister  *transactions.Lister
	partner uuid.UUID
	other   uuid.UUID
	t0      time.Time
}

func newBed(t *testing.T, url string) *bed {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, err = st.Migrate(ctx)
	require.NoError(t, err)
	require.NoError(t, st.EnsureAddressSequences(ctx, []string{"bep20", "trc20"}))
	b := &bed{st: st, t0: store.Now().Add(-time.Hour)}
	b.clock = &clock{now: b.t0}
	for _, id := range []*uuid.UUID{&b.partner, &b.other} {
		p := &partners.Partner{ID: uuid.New(), Name: "P", Environment: partners.Sandbox, KeyHash: uuid.NewString(),
			FeeRate: decimal.RequireFromString("0.01"), ShareRate: decimal.RequireFromString("0.5"), CreatedAt: store.Now()}
		require.NoError(t, st.CreatePartner(ctx, p))
		*id = p.ID
	}
	src := rates.NewStatic(map[string]decimal.Decimal{"usdt": decimal.RequireFromString("1500")}, nil)
	pairs, err := pricing.ParsePairs("usdt:bep20:1000:50000000,usdt:trc20:1000:50000000")
	require.NoError(t, err)
	pricer := pricing.NewPricer(src, pairs, decimal.Zero)
	b.svc = transactions.NewService(store.For(st, func(tx *store.Tx) transactions.Tx { return tx }), pricer, addresses{}, 30*time.Minute, b.clock.Now, nil)
	b.quotes = quotes.NewService(pricer, store.For(st, func(tx *store.Tx) quotes.Tx { return tx }), b.clock.Now)
	b.lister = transactions.NewLister(store.For(st, func(tx *store.Tx) transactions.Tx { return tx }), cursor.NewCodec([]byte("test-secret")))
	return b
}

func requireCode(t *testing.T, err error, code apperr.Code, field string) {
	t.Helper()
	e, ok := apperr.As(err)
	require.True(t, ok, "want %s, got %v", code, err)
	require.Equal(t, code, e.Code, e.Message)
	if field != "" {
		require.NotEmpty(t, e.Details)
		require.Equal(t, field, e.Details[0].Field)
	}
}

// Creation's rules on the real store: one pricing mode, the reference's length and
// characters, the quote's owner, pair, single use and 120 s life, the 30-minute
// deposit window, case-insensitive uniqueness of the reference per partner, and a
// failed create handing its deposit address back.
func TestCreate(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := newBed(t, db.URL)
			direct := func(ref string) transactions.CreateRequest {
				return transactions.CreateRequest{MerchantReference: ref, Token: "usdt", Network: "bep20", FiatAmount: ptr("15000")}
			}

			// Direct mode: 15000 NGN at 1500 is 10 USDT; the first bep20 address.
			tr, err := b.svc.Create(ctx, uow.Plain[*lifecycle.Transaction, transactions.Tx](), b.partner, direct("Order-Ä1"))
			require.NoError(t, err)
			require.Equal(t, lifecycle.AwaitingDeposit, tr.Status)
			require.Equal(t, "10", tr.CryptoAmount.String())
			require.Equal(t, "15000", tr.FiatAmount.String())
			require.Equal(t, "1500", tr.Rate.String())
			require.Equal(t, b.t0.Add(30*time.Minute), tr.ExpiresAt)
			require.Equal(t, "bep20-address-0", tr.DepositAddress)
			require.Nil(t, tr.QuoteID)

			// The same reference in another case is taken for this partner (and the
			// index it allocated goes back), free for another.
			_, err = b.svc.Create(ctx, uow.Plain[*lifecycle.Transaction, transactions.Tx](), b.partner, direct("ORDER-ä1"))
			requireCode(t, err, apperr.DuplicateMerchantReference, "/merchant_reference")
			other, err := b.svc.Create(ctx, uow.Plain[*lifecycle.Transaction, transactions.Tx](), b.other, direct("ORDER-ä1"))
			require.NoError(t, err)
			require.Equal(t, "bep20-address-1", other.DepositAddress, "the failed create left no gap")

			got, err := b.svc.GetByReference(ctx, b.partner, "order-ä1")
			require.NoError(t, err)
			require.Equal(t, tr.ID, got.ID)
			_, err = b.svc.Get(ctx, b.other, tr.ID)
			requireCode(t, err, apperr.NotFound, "")
			got, err = b.svc.Get(ctx, b.partner, tr.ID)
			require.NoError(t, err)
			require.Equal(t, "Order-Ä1", got.MerchantReference, "the reference is kept as sent")

			bad := []struct {
				name  string
				req   transactions.CreateRequest
				code  apperr.Code
				field string
			}{
				{"both modes", transactions.CreateRequest{MerchantReference: "r", Token: "usdt", Network: "bep20", FiatAmount: ptr("15000"), QuoteID: ptr(uuid.New())}, apperr.InvalidRequest, ""},
				{"neither mode", transactions.CreateRequest{MerchantReference: "r", Token: "usdt", Network: "bep20"}, apperr.InvalidRequest, ""},
				{"empty reference", direct(""), apperr.InvalidRequest, "/merchant_reference"},
				{"256 characters", direct(strings.Repeat("é", 256)), apperr.InvalidRequest, "/merchant_reference"},
				{"a control character", direct("line\nbreak"), apperr.InvalidRequest, "/merchant_reference"},
				{"bad amount", transactions.CreateRequest{MerchantReference: "r", Token: "usdt", Network: "bep20", FiatAmount: ptr("15000.005")}, apperr.InvalidRequest, "/fiat_amount"},
				{"out of range", transactions.CreateRequest{MerchantReference: "r", Token: "usdt", Network: "bep20", FiatAmount: ptr("999")}, apperr.AmountOutOfRange, "/fiat_amount"},
				{"unsupported pair", transactions.CreateRequest{MerchantReference: "r", Token: "usdc", Network: "bep20", FiatAmount: ptr("15000")}, apperr.UnsupportedPair, ""},
				{"unsupported pair, quote mode", transactions.CreateRequest{MerchantReference: "r", Token: "usdt", Network: "erc20", QuoteID: ptr(uuid.New())}, apperr.UnsupportedPair, ""},
				{"unknown quote", transactions.CreateRequest{MerchantReference: "r", Token: "usdt", Network: "bep20", QuoteID: ptr(uuid.New())}, apperr.NotFound, "/quote_id"},
			}
			for _, c := range bad {
				_, err := b.svc.Create(ctx, uow.Plain[*lifecycle.Transaction, transactions.Tx](), b.partner, c.req)
				requireCode(t, err, c.code, c.field)
			}
			long, err := b.svc.Create(ctx, uow.Plain[*lifecycle.Transaction, transactions.Tx](), b.partner, direct(strings.Repeat("é", 255)))
			require.NoError(t, err, "255 characters (510 bytes) is allowed")
			require.Equal(t, "bep20-address-2", long.DepositAddress, "no refused create took an address")

			// Quote mode takes the quote's price and uses it up.
			q, err := b.quotes.Create(ctx, uow.Plain[*quotes.Quote, quotes.Tx](), b.partner, quotes.Request{Token: "usdt", Network: "bep20", CryptoAmount: ptr("7.5")})
			require.NoError(t, err)
			inQuote := func(ref, network string, id uuid.UUID) transactions.CreateRequest {
				return transactions.CreateRequest{MerchantReference: ref, Token: "usdt", Network: network, QuoteID: &id}
			}
			_, err = b.svc.Create(ctx, uow.Plain[*lifecycle.Transaction, transactions.Tx](), b.other, inQuote("q-other", "bep20", q.ID))
			requireCode(t, err, apperr.NotFound, "/quote_id")
			_, err = b.svc.Create(ctx, uow.Plain[*lifecycle.Transaction, transactions.Tx](), b.partner, inQuote("q-mismatch", "trc20", q.ID))
			requireCode(t, err, apperr.QuoteMismatch, "/quote_id")
			b.clock.Set(b.t0.Add(quotes.TTL - time.Microsecond))
			used, err := b.svc.Create(ctx, uow.Plain[*lifecycle.Transaction, transactions.Tx](), b.partner, inQuote("q-1", "bep20", q.ID))
			require.NoError(t, err, "usable until just before expires_at")
			require.Equal(t, q.ID, *used.QuoteID)
			require.Equal(t, "7.5", used.CryptoAmount.String())
			require.Equal(t, "11250", used.FiatAmount.String())
			_, err = b.svc.Create(ctx, uow.Plain[*lifecycle.Transaction, transactions.Tx](), b.partner, inQuote("q-2", "bep20", q.ID))
			requireCode(t, err, apperr.QuoteAlreadyUsed, "/quote_id")

			b.clock.Set(b.t0)
			q2, err := b.quotes.Create(ctx, uow.Plain[*quotes.Quote, quotes.Tx](), b.partner, quotes.Request{Token: "usdt", Network: "bep20", FiatAmount: ptr("3000")})
			require.NoError(t, err)
			b.clock.Set(b.t0.Add(quotes.TTL))
			_, err = b.svc.Create(ctx, uow.Plain[*lifecycle.Transaction, transactions.Tx](), b.partner, inQuote("q-3", "bep20", q2.ID))
			requireCode(t, err, apperr.QuoteExpired, "/quote_id")
		})
	}
}

// Listing pages newest first with cursors bound to the partner and filters.
func TestList(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := newBed(t, db.URL)
			var ids []uuid.UUID
			for i := range 5 {
				b.clock.Set(b.t0.Add(time.Duration(i) * time.Second))
				tr, err := b.svc.Create(ctx, uow.Plain[*lifecycle.Transaction, transactions.Tx](), b.partner, transactions.CreateRequest{MerchantReference: fmt.Sprintf("L-%d", i),
					Token: "usdt", Network: "bep20", FiatAmount: ptr("1500"), MerchantID: ptr(fmt.Sprintf("m%d", i%2))})
				require.NoError(t, err)
				ids = append(ids, tr.ID)
			}
			_, err := b.svc.Create(ctx, uow.Plain[*lifecycle.Transaction, transactions.Tx](), b.other, transactions.CreateRequest{MerchantReference: "L-x", Token: "usdt", Network: "bep20", FiatAmount: ptr("1500")})
			require.NoError(t, err)

			var seen []uuid.UUID
			after := ""
			for {
				p, err := b.lister.List(ctx, b.partner, transactions.Filter{}, 2, after)
				require.NoError(t, err)
				require.Equal(t, 2, p.Limit)
				for _, it := range p.Items {
					seen = append(seen, it.ID)
				}
				if !p.HasMore {
					require.Nil(t, p.NextCursor)
					break
				}
				after = *p.NextCursor
			}
			require.Equal(t, []uuid.UUID{ids[4], ids[3], ids[2], ids[1], ids[0]}, seen, "newest first, each once, only the partner's")

			p, err := b.lister.List(ctx, b.partner, transactions.Filter{MerchantID: ptr("m0")}, 0, "")
			require.NoError(t, err)
			require.Equal(t, 20, p.Limit, "the default page size")
			require.Len(t, p.Items, 3)
			p, err = b.lister.List(ctx, b.partner, transactions.Filter{Reference: ptr("l-3")}, 500, "")
			require.NoError(t, err)
			require.Equal(t, 100, p.Limit, "the page size is capped")
			require.Len(t, p.Items, 1)
			require.Equal(t, ids[3], p.Items[0].ID, "the reference filter ignores case")

			first, err := b.lister.List(ctx, b.partner, transactions.Filter{}, 1, "")
			require.NoError(t, err)
			require.NotNil(t, first.NextCursor)
			_, err = b.lister.List(ctx, b.partner, transactions.Filter{MerchantID: ptr("m0")}, 1, *first.NextCursor)
			requireCode(t, err, apperr.InvalidCursor, "")
			_, err = b.lister.List(ctx, b.other, transactions.Filter{}, 1, *first.NextCursor)
			requireCode(t, err, apperr.InvalidCursor, "")
			_, err = b.lister.List(ctx, b.partner, transactions.Filter{}, 1, *first.NextCursor+"x")
			requireCode(t, err, apperr.InvalidCursor, "")
			// Statuses in another order are the same filter.
			s1, err := b.lister.List(ctx, b.partner, transactions.Filter{Statuses: []lifecycle.Status{lifecycle.AwaitingDeposit, lifecycle.Expired}}, 1, "")
			require.NoError(t, err)
			_, err = b.lister.List(ctx, b.partner, transactions.Filter{Statuses: []lifecycle.Status{lifecycle.Expired, lifecycle.AwaitingDeposit}}, 1, *s1.NextCursor)
			require.NoError(t, err)
		})
	}
}

// A stage lists every partner's transactions waiting on one step, newest first or
// oldest first, and a support ticket's text finds a transaction by its reference
// (any case), deposit address (any case), deposit hash or id; cursors are bound to
// the stage and search.
func TestStages(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := newBed(t, db.URL)
			engine := lifecycle.NewEngine(store.For(b.st, func(tx *store.Tx) lifecycle.Tx { return tx }), lifecycle.Config{Required: map[string]int{"bep20": 1}, Now: store.Now,
				Settlement: lifecycle.Settlement{OperatorLiquidity: true, OperatorPayout: true}})
			stages := backoffice.NewStageLister(b.st, cursor.NewCodec([]byte("s")))
			create := func(partner uuid.UUID, ref string, at time.Duration) *lifecycle.Transaction {
				b.clock.Set(b.t0.Add(at))
				tr, err := b.svc.Create(ctx, uow.Plain[*lifecycle.Transaction, transactions.Tx](), partner, transactions.CreateRequest{MerchantReference: ref, Token: "usdt", Network: "bep20", FiatAmount: ptr("3000")})
				require.NoError(t, err)
				return tr
			}
			detect := func(id uuid.UUID, hash string) {
				_, err := engine.Run(ctx, func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
					return engine.DetectGenerated(ctx, unit, id, lifecycle.DepositInput{ID: "dep_" + uuid.NewString(), Hash: hash, From: "0xfrom", Confirmations: 1})
				})
				require.NoError(t, err)
			}
			a := create(b.partner, "Ticket-A", time.Second)
			bb := create(b.other, "Ticket-B", 2*time.Second)
			c := create(b.partner, "Ticket-C", 3*time.Second)
			detect(a.ID, "0xAAAA")
			detect(bb.ID, "0xBBBB")

			list := func(f backoffice.StageFilter) []uuid.UUID {
				t.Helper()
				p, err := stages.List(ctx, f, 0, "")
				require.NoError(t, err)
				var out []uuid.UUID
				for _, tr := range p.Items {
					out = append(out, tr.ID)
				}
				return out
			}
			fill := backoffice.AwaitingFill
			require.Equal(t, []uuid.UUID{bb.ID, a.ID}, list(backoffice.StageFilter{Stage: fill}), "every partner's, newest first")
			require.Equal(t, []uuid.UUID{a.ID, bb.ID}, list(backoffice.StageFilter{Stage: fill, Oldest: true}))
			require.Equal(t, []uuid.UUID{a.ID}, list(backoffice.StageFilter{Stage: fill, PartnerID: &b.partner}))
			require.Equal(t, []uuid.UUID{c.ID, bb.ID, a.ID}, list(backoffice.StageFilter{}), "no stage: every transaction")
			for q, want := range map[string]uuid.UUID{
				"ticket-a": a.ID, "TICKET-B": bb.ID, c.DepositAddress: c.ID, strings.ToUpper(c.DepositAddress): c.ID,
				"0xaaaa": a.ID, "0xBBBB": bb.ID, c.ID.String(): c.ID,
			} {
				require.Equal(t, []uuid.UUID{want}, list(backoffice.StageFilter{Search: ptr(q)}), q)
			}
			require.Empty(t, list(backoffice.StageFilter{Stage: fill, Search: ptr("ticket-c")}), "the search stays in the stage")

			first, err := stages.List(ctx, backoffice.StageFilter{Stage: fill}, 1, "")
			require.NoError(t, err)
			require.True(t, first.HasMore)
			next, err := stages.List(ctx, backoffice.StageFilter{Stage: fill}, 1, *first.NextCursor)
			require.NoError(t, err)
			require.Equal(t, a.ID, next.Items[0].ID)
			_, err = stages.List(ctx, backoffice.StageFilter{Stage: fill, Oldest: true}, 1, *first.NextCursor)
			requireCode(t, err, apperr.InvalidCursor, "")
			_, err = stages.List(ctx, backoffice.StageFilter{Stage: backoffice.AwaitingPayout}, 1, *first.NextCursor)
			requireCode(t, err, apperr.InvalidCursor, "")
		})
	}
}
