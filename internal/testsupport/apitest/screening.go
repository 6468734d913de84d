package apitest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/lifecycle"
	"partnerd/internal/screening"
)

// ListAddress imports a screening list of source naming addr, as `partnerd
// screening import` does (published 2026-11-01), and returns how many waiting
// transactions it queued to be screened again.
func (e *Env) ListAddress(t *testing.T, source, addr string) int {
	t.Helper()
	entries, err := screening.ParseList(strings.NewReader(addr + "\n"))
	require.NoError(t, err)
	_, queued, err := e.Store.ImportScreeningList(context.Background(), source, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), entries, time.Now())
	require.NoError(t, err)
	return queued
}

// Deposit counts a confirmed transfer of tx's whole crypto amount from sender to
// its deposit address, as the chain watcher would (the list screener asks in the
// same unit of work), and returns the outcome.
func (e *Env) Deposit(t *testing.T, tx client.Transaction, sender string) lifecycle.Outcome {
	t.Helper()
	var out lifecycle.Outcome
	_, err := e.App.Lifecycle().Run(context.Background(), func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
		got, o, err := e.App.Lifecycle().Receive(ctx, unit, tx.Id, lifecycle.Incoming{ID: "dep_" + uuid.NewString(),
			Hash: "0x" + strings.ReplaceAll(uuid.NewString()+uuid.NewString(), "-", ""), From: sender, To: tx.DepositAddress,
			Amount: decimal.RequireFromString(tx.CryptoAmount), Confirmations: 1})
		out = o
		return got, err
	})
	require.NoError(t, err)
	return out
}
