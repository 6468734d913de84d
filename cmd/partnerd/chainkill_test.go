package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/internal/chain"
	"partnerd/internal/chain/devnet"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

// TestSIGKILLMidChainScan kills the binary (SIGKILL: no shutdown at all) at random
// moments while it scans a backlog of blocks holding deposits, restarts it, and
// checks every deposit was applied exactly once.
func TestSIGKILLMidChainScan(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			ch, err := devnet.Start(0)
			require.NoError(t, err)
			defer ch.Close()
			token, err := ch.Deploy(ctx, 18)
			require.NoError(t, err)
			env := []string{"DATABASE_URL=" + db.URL, "APP_ENV=staging", "CHAIN_RPC_BEP20=" + ch.URL,
				"TOKEN_CONTRACTS=usdt:bep20=" + token.Hex() + "/18", "CONFIRMATIONS=bep20=3,trc20=3",
				"CHAIN_POLL_INTERVAL=50ms", "CHAIN_START_BLOCK_BEP20=1", "CHAIN_ID_BEP20=1337"}
			st, err := store.Open(ctx, db.URL)
			require.NoError(t, err)
			defer st.Close()

			srv, key := startBinary(t, bin, env)
			require.NotEmpty(t, key)
			type tx struct{ ID, Address, Amount string }
			var txs []tx
			for i := 0; i < 8; i++ {
				var res struct {
					Data struct {
						ID             string `json:"id"`
						DepositAddress string `json:"deposit_address"`
						CryptoAmount   string `json:"crypto_amount"`
					} `json:"data"`
				}
				callJSON(t, srv.base, key, http.MethodPost, "/api/v1/partner/transactions",
					fmt.Sprintf(`{"merchant_reference":"KILL-%d","crypto_currency":"usdt","network":"bep20","fiat_amount":"15500"}`, i), &res)
				txs = append(txs, tx{res.Data.ID, res.Data.DepositAddress, res.Data.CryptoAmount})
			}
			require.NoError(t, srv.cmd.Process.Signal(syscall.SIGKILL))
			<-srv.done

			for i, x := range txs {
				raw, err := devnet.Units(x.Amount, 18)
				require.NoError(t, err)
				to, err := chain.ParseAddress(chain.BEP20, x.Address)
				require.NoError(t, err)
				_, err = ch.Transfer(ctx, token, to, raw)
				require.NoError(t, err)
				for j := 0; j < 400+i; j++ {
					ch.Backend.Commit()
				}
			}
			for round := 0; round < 4; round++ {
				srv, _ := startBinary(t, bin, env)
				time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond)
				require.NoError(t, srv.cmd.Process.Signal(syscall.SIGKILL))
				<-srv.done
				cur, err := st.ChainCursor(ctx, chain.BEP20)
				require.NoError(t, err)
				if cur != nil {
					t.Logf("killed with the cursor at block %d", cur.Block)
				}
			}
			srv, _ = startBinary(t, bin, env)
			for _, x := range txs {
				require.Eventually(t, func() bool {
					var res struct {
						Data struct {
							Status string `json:"status"`
						} `json:"data"`
					}
					callJSON(t, srv.base, key, http.MethodGet, "/api/v1/partner/transactions/"+x.ID, "", &res)
					return res.Data.Status == "order_filled"
				}, 60*time.Second, 50*time.Millisecond, "transaction %s confirmed", x.ID)
				var h struct {
					Data struct {
						History []struct {
							Reason string `json:"reason"`
						} `json:"history"`
					} `json:"data"`
				}
				callJSON(t, srv.base, key, http.MethodGet, "/api/v1/partner/transactions/"+x.ID+"/status-history", "", &h)
				var reasons []string
				for _, e := range h.Data.History {
					reasons = append(reasons, e.Reason)
				}
				require.Equal(t, []string{"transaction:created", "deposit:detected", "deposit:confirmed", "order:filled"}, reasons)
				id, err := uuid.Parse(x.ID)
				require.NoError(t, err)
				var events int
				require.NoError(t, st.SQL().QueryRowContext(ctx, "SELECT count(*) FROM events WHERE transaction_id = $1", id.String()).Scan(&events))
				require.Equal(t, 3, events, "transaction.created, deposit.detected, deposit.confirmed, once each")
			}
			all, err := st.ChainTransfers(ctx, false, 100)
			require.NoError(t, err)
			require.Len(t, all, len(txs), "each transfer stored once")
		})
	}
}

func callJSON(t *testing.T, base, key, method, path, body string, out any) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("X-API-KEY", key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", uuid.NewString())
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(res.Body)
	require.Less(t, res.StatusCode, 300, buf.String())
	require.NoError(t, json.Unmarshal(buf.Bytes(), out))
}
