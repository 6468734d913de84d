package tracing_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"partnerd/gen/client"
	"partnerd/internal/chain"
	"partnerd/internal/chain/devnet"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// attrs is a span's attributes by key, as strings (ints in decimal).
func attrs(sp *tracepb.Span) map[string]string {
	out := map[string]string{}
	for _, a := range sp.GetAttributes() {
		out[a.GetKey()] = value(a.GetValue())
	}
	return out
}

func value(v *commonpb.AnyValue) string {
	if s, ok := v.GetValue().(*commonpb.AnyValue_IntValue); ok {
		return fmt.Sprint(s.IntValue)
	}
	return v.GetStringValue()
}

// The whole service watching a simulated chain, with traces exported to a real
// OTLP receiver, on both databases: a deposit sent on chain is found by a scan
// step whose span names the network, the blocks read and the transfer found,
// and whose eth_getLogs (and the step's other calls) are client spans under it
// naming the provider by scheme and host: the API key in the provider's URL,
// path and query, is in no span.
func TestScanSpansWithProviderCalls(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			otlp := newReceiver(t)
			ch, err := devnet.Start(0)
			require.NoError(t, err)
			t.Cleanup(func() { _ = ch.Close() })
			const decimals = 18
			token, err := ch.Deploy(context.Background(), decimals)
			require.NoError(t, err)
			const pathKey, queryKey = "0123456789abcdefPATHKEY", "fedcba9876543210QUERYKEY"
			provider := ch.URL // http://127.0.0.1:PORT, the name the spans show
			env := apitest.Start(t, db, map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT": otlp.URL, "OTEL_SERVICE_NAME": "partnerd-chain",
				"CHAIN_RPC_BEP20":     provider + "/v3/" + pathKey + "?apikey=" + queryKey,
				"CHAIN_ID_BEP20":      "1337", // the simulated node's
				"TOKEN_CONTRACTS":     fmt.Sprintf("usdt:%s=%s/%d", chain.BEP20, chain.FormatAddress(chain.BEP20, token), decimals),
				"CONFIRMATIONS":       "bep20=3,trc20=3",
				"CHAIN_POLL_INTERVAL": "50ms", "JOB_POLL_INTERVAL": "100ms",
			})
			c := env.Client(t, env.NewPartner(t))
			ctx := context.Background()
			fiat := "150000"
			created, err := c.CreateTransactionWithResponse(ctx, &client.CreateTransactionParams{IdempotencyKey: uuid.NewString()},
				client.CreateTransactionRequest{MerchantReference: "SCAN-1", CryptoCurrency: "usdt", Network: chain.BEP20, FiatAmount: &fiat})
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, created.StatusCode(), string(created.Body))
			tx := created.JSON201.Data

			to, err := chain.ParseAddress(chain.BEP20, tx.DepositAddress)
			require.NoError(t, err)
			raw, err := devnet.Units(tx.CryptoAmount, decimals)
			require.NoError(t, err)
			_, err = ch.Transfer(ctx, token, to, raw)
			require.NoError(t, err)
			ch.Backend.Commit()
			require.Eventually(t, func() bool {
				res, err := c.GetTransactionWithResponse(ctx, tx.Id)
				require.NoError(t, err)
				return res.JSON200 != nil && res.JSON200.Data.Status != client.TransactionStatusAwaitingDeposit
			}, 30*time.Second, 20*time.Millisecond, "the deposit is seen")
			env.Stop() // flushes the spans still buffered

			otlp.mu.Lock()
			defer otlp.mu.Unlock()
			require.Contains(t, otlp.service, "partnerd-chain")
			// No span, attribute or event holds the provider's keys.
			for _, sp := range otlp.spans {
				text, err := protojson.Marshal(sp)
				require.NoError(t, err)
				require.NotContains(t, string(text), pathKey, "span %q", sp.GetName())
				require.NotContains(t, string(text), queryKey, "span %q", sp.GetName())
			}
			// The scan step that found the deposit.
			var found *tracepb.Span
			for _, sp := range otlp.spans {
				if a := attrs(sp); sp.GetName() == "scan bep20" && a["chain.transfers"] == "1" {
					found = sp
					require.Equal(t, chain.BEP20, a["chain.network"])
					require.NotEmpty(t, a["chain.from_block"])
					require.NotEmpty(t, a["chain.to_block"])
				}
			}
			require.NotNil(t, found, "a scan span with the transfer found, among %d spans", len(otlp.spans))
			// Its calls, through the provider pool, are its children.
			calls := map[string]int{}
			for _, sp := range otlp.spans {
				if string(sp.GetParentSpanId()) != string(found.GetSpanId()) || sp.GetKind() != tracepb.Span_SPAN_KIND_CLIENT ||
					!strings.HasPrefix(sp.GetName(), "eth_") {
					continue
				}
				calls[sp.GetName()]++
				a := attrs(sp)
				require.Equal(t, provider, a["chain.provider"], "span %q: %v", sp.GetName(), a)
				require.Equal(t, chain.BEP20, a["chain.network"])
				require.Equal(t, "ok", a["chain.outcome"])
				require.Equal(t, sp.GetName(), a["rpc.method"])
				if sp.GetName() == "eth_getLogs" {
					require.Equal(t, found.GetTraceId(), sp.GetTraceId())
					require.NotEmpty(t, a["chain.from_block"])
					require.Equal(t, attrs(found)["chain.to_block"], a["chain.to_block"])
				}
			}
			require.Equal(t, 1, calls["eth_getLogs"], "the step's calls: %v", calls)
		})
	}
}
