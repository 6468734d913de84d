package paymentcases_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/gen/operatorclient"
	"partnerd/internal/chain/devnet"
	"partnerd/internal/screening/screeningtest"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// sanctionsDir holds the test sanctions oracle compiled by scripts/compile-token.sh.
const sanctionsDir = "../../../testdata/sanctions"

// An on-chain sanctions oracle (compiled with solc, deployed on the simulated
// node) names the sender: the deposit is held by the screening job, confirms but
// is not filled even with the automatic liquidity adapter; the queue's evidence
// is the oracle's network, contract and block.
func TestOracleNamesSenderDepositHeld(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			key, err := crypto.HexToECDSA(devnet.DevKey)
			require.NoError(t, err)
			var oracle *screeningtest.Oracle
			e := startWith(t, db, func(ch *devnet.Chain, settings map[string]string) {
				oracle = screeningtest.Deploy(t, ch, sanctionsDir, crypto.PubkeyToAddress(key.PublicKey))
				settings["SCREENING"], settings["SCREENING_ORACLE_BEP20"] = "oracle", oracle.Address.Hex()
			})
			tx := e.create("31000")
			onChain{e}.pay(tx, tx.CryptoAmount)
			require.Eventually(t, func() bool { return *e.get(tx.Id).UnderReview }, 30*time.Second, 20*time.Millisecond,
				"the screening job holds it")
			for range required + 2 {
				e.chain.Backend.Commit()
			}
			require.Eventually(t, func() bool { return *e.get(tx.Id).DepositStatus == "confirmed" }, 30*time.Second, 20*time.Millisecond)
			time.Sleep(300 * time.Millisecond) // a fill would follow at once: none does
			d := e.get(tx.Id)
			require.Equal(t, client.TransactionStatusDepositConfirming, d.Status, "held: not filled")

			q := e.queued(tx.Id)
			require.NotNil(t, q)
			require.Equal(t, operatorclient.ScreeningReviewScreeningHeld, q.Screening)
			f := q.Results[len(q.Results)-1].Findings[0]
			require.Equal(t, "oracle", f.Screener)
			require.True(t, f.Hit)
			require.Equal(t, "bep20 oracle "+oracle.Address.Hex(), f.Source)
			require.True(t, strings.HasPrefix(*f.Version, "block "), *f.Version)
			e.silent(tx.Id)

			require.Equal(t, http.StatusOK, e.review(tx.Id, operatorclient.Release).StatusCode())
			e.waitFor(tx.Id, client.TransactionStatusOrderFilled)
		})
	}
}

// screeningService answers as Chainalysis' sanctions API (over TLS, which
// production requires): 503 while down,
// then an empty identification list (clear) for every address.
type screeningService struct {
	*httptest.Server
	up    atomic.Bool
	calls atomic.Int64
}

func newScreeningService(t *testing.T) *screeningService {
	s := &screeningService{}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.calls.Add(1)
		if r.Header.Get("X-API-Key") != "test-screening-key" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		if !s.up.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "maintenance")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"identifications":[]}`)
	}))
	t.Cleanup(s.Close)
	return s
}

// A screening service that cannot answer fails closed (production on
// PostgreSQL; SQLite, which production refuses, runs staging, whose default is
// the same): the transaction is under review with the result unknown, nothing is
// filled, the overview counts it and /readyz says degraded; once the service
// answers, the job asks again, the sender is clear and the transaction proceeds.
func TestUnreachableScreenerHoldsThenClears(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			svc := newScreeningService(t)
			e := startWith(t, db, func(_ *devnet.Chain, settings map[string]string) {
				for k, v := range map[string]string{"SCREENING": "api", "SCREENING_API_URL": svc.URL, "SCREENING_API_KEY": "test-screening-key",
					"SCREENING_RETRY_INTERVAL": "100ms", "LIQUIDITY": "operator", "PAYOUT": "operator"} {
					settings[k] = v
				}
				if db.Name == "postgres" {
					asProduction(t, settings)
				}
			})
			tx := e.create("31000")
			onChain{e}.pay(tx, tx.CryptoAmount)
			require.Eventually(t, func() bool { return *e.get(tx.Id).UnderReview }, 30*time.Second, 20*time.Millisecond)
			for range required + 2 {
				e.chain.Backend.Commit()
			}
			require.Eventually(t, func() bool { return *e.get(tx.Id).DepositStatus == "confirmed" }, 30*time.Second, 20*time.Millisecond)
			q := e.queued(tx.Id)
			require.NotNil(t, q)
			require.Equal(t, operatorclient.ScreeningReviewScreeningUnknown, q.Screening)
			require.Equal(t, operatorclient.ScreeningResultVerdictUnknown, q.Results[len(q.Results)-1].Verdict)
			require.NotEmpty(t, *q.Results[len(q.Results)-1].Findings[0].Error)

			fill, err := e.ops.FillOrderWithResponse(ctx, tx.Id, &operatorclient.FillOrderParams{IdempotencyKey: uuid.NewString()},
				operatorclient.FillRequest{Rate: "1500.00", FiatAmount: "1000.00", Reference: "fill-1"})
			require.NoError(t, err)
			require.Equal(t, http.StatusConflict, fill.StatusCode(), "funds nobody could screen are not sold: %s", fill.Body)
			over, err := e.ops.GetOverviewWithResponse(ctx)
			require.NoError(t, err)
			require.Equal(t, 1, over.JSON200.Data.Screening.Unknown)
			ready := readyz(t, e.api)
			require.Equal(t, "degraded", ready.Status)
			require.Contains(t, strings.Join(ready.Reasons, "\n"), "screening: 1 transaction(s) wait on a screener that cannot answer")
			e.silent(tx.Id)

			asked := svc.calls.Load()
			svc.up.Store(true)
			require.Eventually(t, func() bool { return !*e.get(tx.Id).UnderReview }, 30*time.Second, 20*time.Millisecond,
				"asked again once it answers")
			require.Greater(t, svc.calls.Load(), asked)
			require.Nil(t, e.queued(tx.Id))
			require.NotContains(t, strings.Join(readyz(t, e.api).Reasons, "\n"), "screening")
			fill, err = e.ops.FillOrderWithResponse(ctx, tx.Id, &operatorclient.FillOrderParams{IdempotencyKey: uuid.NewString()},
				operatorclient.FillRequest{Rate: "1500.00", FiatAmount: tx.Amount, Reference: "fill-2"})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, fill.StatusCode(), string(fill.Body))
			require.Equal(t, client.TransactionStatusOrderFilled, e.get(tx.Id).Status)
		})
	}
}

// readiness is /readyz's body.
type readiness struct {
	Status  string   `json:"status"`
	Reasons []string `json:"reasons"`
}

func readyz(t *testing.T, api *apitest.Env) readiness {
	t.Helper()
	res, err := http.Get(api.Root + "/readyz")
	require.NoError(t, err)
	defer func() { _ = res.Body.Close() }()
	require.Equal(t, http.StatusOK, res.StatusCode)
	var r readiness
	require.NoError(t, json.NewDecoder(res.Body).Decode(&r))
	return r
}

// asProduction makes settings run the service as production beside the
// simulated chain: live keys, a rate feed, Tron's token named and its watcher
// pointed nowhere.
func asProduction(t *testing.T, settings map[string]string) {
	feed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"usdt":"1550.00"}`))
	}))
	t.Cleanup(feed.Close)
	for k, v := range map[string]string{"APP_ENV": "production", "RATE_SOURCE": "http", "RATE_FEED_URL": feed.URL, "RATE_FEED_FIELDS": "usdt=usdt",
		"XPUB_BEP20": apitest.TestXPub, "XPUB_TRC20": apitest.TestXPub, "CURSOR_SECRET": strings.Repeat("s", 32), "SECRETS_KEYS": "k1:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"CHAIN_RPC_TRC20": "http://127.0.0.1:9", "APPROVALS": "none"} {
		settings[k] = v
	}
	settings["TOKEN_CONTRACTS"] += ",usdt:trc20=TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t/6"
}
