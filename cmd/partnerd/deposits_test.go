package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/internal/deposits"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

func TestDepositsListUnmatched(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Setenv("DATABASE_URL", db.URL)
			ctx := context.Background()
			st, err := store.Open(ctx, db.URL)
			require.NoError(t, err)
			defer st.Close()
			_, err = st.Migrate(ctx)
			require.NoError(t, err)
			for i, state := range []string{deposits.TransferUnmatched, deposits.TransferConfirmed} {
				require.NoError(t, st.SaveChainTransfer(ctx, &deposits.ChainTransfer{
					Network: "bep20", TxHash: "0x" + strings.Repeat("ab", 32), LogIndex: uint(i), Token: "usdt",
					Block: 7, BlockHash: "0x" + strings.Repeat("cd", 32), BlockTime: time.Unix(1_800_000_000, 0).UTC(),
					From: "0x00000000000000000000000000000000000000F1", To: "0x9858EfFD232B4033E47d90003D41EC34EcaEda94",
					Raw: decimal.RequireFromString("5000000000000000000"), Amount: decimal.RequireFromString("5"),
					DepositID: "dep_x", State: state, Note: "second transfer",
				}))
			}
			var out bytes.Buffer
			require.NoError(t, run([]string{"deposits", "list", "--unmatched", "--json"}, &out, &bytes.Buffer{}))
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			require.Len(t, lines, 1, "only the unmatched one")
			var got map[string]any
			require.NoError(t, json.Unmarshal([]byte(lines[0]), &got))
			require.Equal(t, "unmatched", got["state"])
			require.Equal(t, "5.000000", got["amount"])
			require.Equal(t, "5000000000000000000", got["raw_amount"])
			require.Equal(t, "second transfer", got["note"])

			out.Reset()
			require.NoError(t, run([]string{"deposits", "list"}, &out, &bytes.Buffer{}))
			require.Len(t, strings.Split(strings.TrimSpace(out.String()), "\n"), 3, "a header and both transfers")
			require.Error(t, run([]string{"deposits"}, &out, &bytes.Buffer{}))
		})
	}
}
