package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/address"
	"partnerd/internal/testsupport/apitest"
)

// A create that fails consumes no deposit-address index: after 25 creates refused
// as 409 duplicate_merchant_reference the next transaction gets the address right
// after the last one issued, so no unused address lies between used ones (HD
// wallets stop scanning after 20 unused addresses in a row).
func TestFailedCreatesLeaveNoAddressGap(t *testing.T) {
	t.Parallel()
	onBoth(t, map[string]string{"XPUB_BEP20": apitest.TestXPub}, func(t *testing.T, env *apitest.Env) {
		c := env.Client(t, env.NewPartner(t))
		ctx := context.Background()
		d, err := address.NewDeriver("bep20", apitest.TestXPub)
		require.NoError(t, err)
		indexOf := func(addr string) uint32 {
			t.Helper()
			for i := range uint32(200) {
				if a, err := d.Address(i); err == nil && a == addr {
					return i
				}
			}
			t.Fatalf("%s is not among the first 200 addresses of the key", addr)
			return 0
		}

		first := create(t, c, direct("GAP-"+uuid.NewString(), "bep20", "5000"))
		last := indexOf(first.DepositAddress)
		for i := range 25 {
			res, err := c.CreateTransactionWithResponse(ctx, params(), direct(first.MerchantReference, "bep20", "6000"), idem())
			require.NoError(t, err)
			require.Equal(t, http.StatusConflict, res.StatusCode(), "#%d: %s", i, res.Body)
			require.Equal(t, client.ErrorCodeDuplicateMerchantReference, res.JSON409.Error.Code)
			if i%5 == 4 { // the ones between refusals take the next index each
				tx := create(t, c, direct("GAP-"+uuid.NewString(), "bep20", "5000"))
				require.Equal(t, last+1, indexOf(tx.DepositAddress), "after %d refusals", i+1)
				last++
			}
		}
		next := create(t, c, direct("GAP-"+uuid.NewString(), "bep20", "5000"))
		require.Equal(t, last+1, indexOf(next.DepositAddress), "the refused creates left no unused index")
	})
}
