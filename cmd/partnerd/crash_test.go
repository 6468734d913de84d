package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/internal/testsupport/testdb"
)

// A server killed (kill -9) in the middle of a create leaves nothing behind: the
// key's claim was part of the create's uncommitted unit of work, so the retry after
// a restart executes at once instead of waiting out a stale claim.
//
// The create is held mid-way deterministically: the test locks the quote's row, so
// the server blocks marking the quote used, after it claimed the key and allocated
// the address. (PostgreSQL: SQLite has no row locks to hold a request there, and
// a killed SQLite writer's transaction is discarded by the file itself.)
func TestKilledMidCreateLeavesNoKeyStuck(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dbURL := testdb.PostgresSchema(t)
	env := []string{"DATABASE_URL=" + dbURL, "APP_ENV=staging"}
	srv, key := startBinary(t, bin, env)
	require.NotEmpty(t, key)
	client := &http.Client{Timeout: 30 * time.Second}
	post := func(base, path, body, idemKey string) (*http.Response, map[string]any) {
		req, err := http.NewRequest(http.MethodPost, base+"/api/v1/partner"+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("X-API-KEY", key)
		req.Header.Set("Content-Type", "application/json")
		if idemKey != "" {
			req.Header.Set("Idempotency-Key", idemKey)
		}
		res, err := client.Do(req)
		if err != nil {
			return nil, nil
		}
		defer res.Body.Close()
		var out map[string]any
		require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
		return res, out
	}

	res, quote := post(srv.base, "/quotes", `{"crypto_currency":"usdt","network":"bep20","crypto_amount":"10"}`, "")
	require.Equal(t, http.StatusCreated, res.StatusCode)
	quoteID := quote["data"].(map[string]any)["quote_id"].(string)

	db, err := sql.Open("pgx", dbURL)
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	lock, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = lock.Rollback() }()
	_, err = lock.ExecContext(ctx, "SELECT 1 FROM quotes WHERE id = $1 FOR UPDATE", quoteID)
	require.NoError(t, err)

	body := `{"merchant_reference":"CRASH-1","crypto_currency":"usdt","network":"bep20","quote_id":"` + quoteID + `"}`
	go post(srv.base, "/transactions", body, "crash-key")
	require.Eventually(t, func() bool {
		var waiting int
		require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE NOT l.granted AND a.datname = current_database() AND a.query LIKE '%quotes%'`).Scan(&waiting))
		return waiting > 0
	}, 10*time.Second, 20*time.Millisecond, "the create blocks on the quote")
	require.NoError(t, srv.cmd.Process.Kill())
	<-srv.done
	require.NoError(t, lock.Rollback())

	srv2, _ := startBinary(t, bin, env)
	start := time.Now()
	res, first := post(srv2.base, "/transactions", body, "crash-key")
	require.Equal(t, http.StatusCreated, res.StatusCode, "the retry executes: %v", first)
	require.Empty(t, res.Header.Get("Idempotent-Replayed"), "nothing was stored by the killed request")
	require.Less(t, time.Since(start), 5*time.Second, "no stale claim to wait out")
	res, again := post(srv2.base, "/transactions", body, "crash-key")
	require.Equal(t, http.StatusCreated, res.StatusCode)
	require.Equal(t, "true", res.Header.Get("Idempotent-Replayed"))
	require.Equal(t, first["data"].(map[string]any)["id"], again["data"].(map[string]any)["id"])
}

// Killed (kill -9) in the middle of a burst of creates, on both databases: after a
// restart every request retried with its key and body is answered 201 at once,
// executed afresh or replayed, never "still in progress", and each merchant
// reference exists exactly once.
func TestKilledDuringCreatesLeavesNoKeyStuck(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			url := db.URL
			if db.Name == "postgres" {
				url = testdb.PostgresSchema(t)
			}
			bin := buildBinary(t)
			env := []string{"DATABASE_URL=" + url, "APP_ENV=staging"}
			srv, key := startBinary(t, bin, env)
			require.NotEmpty(t, key)
			client := &http.Client{Timeout: 30 * time.Second}
			create := func(base string, i int) (*http.Response, error) {
				body := fmt.Sprintf(`{"merchant_reference":"BURST-%d","crypto_currency":"usdt","network":"bep20","fiat_amount":"2000"}`, i)
				req, err := http.NewRequest(http.MethodPost, base+"/api/v1/partner/transactions", strings.NewReader(body))
				require.NoError(t, err)
				req.Header.Set("X-API-KEY", key)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", fmt.Sprintf("burst-%d", i))
				return client.Do(req)
			}

			var sent atomic.Int64
			var wg sync.WaitGroup
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := int(sent.Add(1))
						res, err := create(srv.base, i)
						if err != nil {
							return // the server is gone
						}
						_ = res.Body.Close()
					}
				}()
			}
			require.Eventually(t, func() bool { return sent.Load() > 150 }, 30*time.Second, time.Millisecond)
			require.NoError(t, srv.cmd.Process.Kill())
			<-srv.done
			wg.Wait()

			srv2, _ := startBinary(t, bin, env)
			for i := 1; i <= int(sent.Load()); i++ {
				start := time.Now()
				res, err := create(srv2.base, i)
				require.NoError(t, err)
				_ = res.Body.Close()
				require.Equal(t, http.StatusCreated, res.StatusCode, "retry of request %d", i)
				require.Less(t, time.Since(start), 5*time.Second)
				require.Equal(t, http.StatusOK, referenceStatus(t, client, srv2.base, key, fmt.Sprintf("BURST-%d", i)))
			}
		})
	}
}
