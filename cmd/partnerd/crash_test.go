package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/internal/testdb"
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
