package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/address"
	"partnerd/internal/lifecycle"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// The export lists every issued deposit address of the network, by index, with its
// derivation path, transaction, status and the amount received; refused creates
// issue none, and the other network's addresses are not listed.
func TestAddressesExport(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			settings := map[string]string{"XPUB_BEP20": apitest.TestXPub}
			env := apitest.Start(t, db, settings)
			ctx := context.Background()
			c := env.Client(t, env.NewPartner(t))
			createTx := func(ref, network string) (client.Transaction, int) {
				fiat := "5000"
				res, err := c.CreateTransactionWithResponse(ctx, &client.CreateTransactionParams{},
					client.CreateTransactionRequest{MerchantReference: ref, CryptoCurrency: "usdt", Network: network, FiatAmount: &fiat},
					func(_ context.Context, r *http.Request) error {
						r.Header.Set("Idempotency-Key", uuid.NewString())
						return nil
					})
				require.NoError(t, err)
				if res.JSON201 == nil {
					return client.Transaction{}, res.StatusCode()
				}
				return res.JSON201.Data, res.StatusCode()
			}
			var issued []client.Transaction
			for i := range 5 {
				tx, status := createTx("EXPORT-"+uuid.NewString(), "bep20")
				require.Equal(t, http.StatusCreated, status)
				issued = append(issued, tx)
				_, status = createTx(tx.MerchantReference, "bep20") // refused: issues no address
				require.Equal(t, http.StatusConflict, status, "#%d", i)
			}
			_, status := createTx("EXPORT-TRON-"+uuid.NewString(), "trc20")
			require.Equal(t, http.StatusCreated, status)
			_, err := env.App.Lifecycle().Run(ctx, func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
				return env.App.Lifecycle().DetectDeposit(ctx, unit, issued[1].Id, lifecycle.DepositInput{ID: "dep_" + uuid.NewString(), Hash: "0x" + strings.Repeat("ab", 32), Confirmations: 1})
			})
			require.NoError(t, err)

			for k, v := range settings {
				t.Setenv(k, v)
			}
			t.Setenv("DATABASE_URL", db.URL)
			var out bytes.Buffer
			require.NoError(t, run([]string{"addresses", "export", "--network", "bep20", "--json"}, &out, &bytes.Buffer{}))
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			require.Len(t, lines, len(issued), out.String())
			d, err := address.NewDeriver("bep20", apitest.TestXPub)
			require.NoError(t, err)
			for i, line := range lines {
				var got addressLine
				require.NoError(t, json.Unmarshal([]byte(line), &got))
				want, err := d.Address(uint32(i))
				require.NoError(t, err)
				require.Equal(t, uint32(i), got.Index, "consecutive indexes from 0: no gap")
				require.Equal(t, want, got.Address)
				require.Equal(t, issued[i].DepositAddress, got.Address)
				require.Equal(t, issued[i].Id.String(), got.TransactionID)
				require.Equal(t, "m/44'/60'/0'/0/"+itoa(i), got.Path)
				require.False(t, got.KeyMismatch)
				if i == 1 {
					require.Equal(t, "deposit_confirming", got.Status)
					require.Equal(t, issued[1].CryptoAmount, got.Received, "the deposit received the expected amount")
				} else {
					require.Equal(t, "awaiting_deposit", got.Status)
					require.Empty(t, got.Received)
				}
			}

			// The table form: a header and one row per address.
			out.Reset()
			require.NoError(t, run([]string{"addresses", "export", "--network", "bep20", "--account-path", "m/44'/60'/7'"}, &out, &bytes.Buffer{}))
			rows := strings.Split(strings.TrimSpace(out.String()), "\n")
			require.Len(t, rows, len(issued)+1)
			require.Contains(t, rows[3], "m/44'/60'/7'/0/2")

			// Another key than the one the addresses were issued from: reported.
			t.Setenv("XPUB_BEP20", "")
			err = run([]string{"addresses", "export", "--network", "bep20"}, &bytes.Buffer{}, &bytes.Buffer{})
			require.ErrorContains(t, err, "not derived from the configured XPUB_BEP20")
			require.Error(t, run([]string{"addresses", "export"}, &bytes.Buffer{}, &bytes.Buffer{}), "--network is required")
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
