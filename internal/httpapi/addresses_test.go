package httpapi_test

import (
	"context"
	"net/http"
	"sync"
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
		last++

		// 25 creates refused 422 idempotency_key_reused: their units of work roll
		// back, and hand their indexes back.
		reused := uuid.NewString()
		kept := create(t, c, direct("GAP-"+uuid.NewString(), "bep20", "5000"))
		_, err = c.CreateTransactionWithResponse(ctx, params(), direct(kept.MerchantReference+"-K", "bep20", "5000"), idemKey(reused))
		require.NoError(t, err)
		last += 2
		for i := range 25 {
			res, err := c.CreateTransactionWithResponse(ctx, params(), direct("GAP-"+uuid.NewString(), "bep20", "7000"), idemKey(reused))
			require.NoError(t, err)
			require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode(), "#%d: %s", i, res.Body)
			require.Equal(t, client.ErrorCode("idempotency_key_reused"), res.JSON422.Error.Code)
		}
		next = create(t, c, direct("GAP-"+uuid.NewString(), "bep20", "5000"))
		require.Equal(t, last+1, indexOf(next.DepositAddress), "key-reuse refusals left no unused index")
		last++

		// 30 creates racing with one key: one transaction, and the others' indexes
		// handed back.
		racing, req := uuid.NewString(), direct("GAP-RACE-"+uuid.NewString(), "bep20", "5000")
		var wg sync.WaitGroup
		for range 30 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = c.CreateTransactionWithResponse(ctx, params(), req, idemKey(racing))
			}()
		}
		wg.Wait()
		won, err := c.CreateTransactionWithResponse(ctx, params(), req, idemKey(racing))
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, won.StatusCode(), string(won.Body))
		// A loser's index goes back into the instance's block in order, so the
		// creates that follow fill any hole the race left (the winner may have
		// taken an index above a loser's) before taking a new index: once they
		// have, the used indexes have no hole.
		used := func() []int64 {
			t.Helper()
			rows, err := env.Store.SQL().QueryContext(ctx, "SELECT address_index FROM transactions WHERE network = 'bep20' ORDER BY address_index")
			require.NoError(t, err)
			defer rows.Close()
			var out []int64
			for rows.Next() {
				var i int64
				require.NoError(t, rows.Scan(&i))
				out = append(out, i)
			}
			require.NoError(t, rows.Err())
			return out
		}
		got := used()
		require.Len(t, got, int(last)+2, "every create so far and the race's one")
		holes := int(got[len(got)-1]-got[0]) + 1 - len(got)
		require.LessOrEqual(t, holes, 30, "at most one per racer")
		for range holes + 1 {
			create(t, c, direct("GAP-"+uuid.NewString(), "bep20", "5000"))
		}
		got = used()
		for i, idx := range got {
			require.Equal(t, got[0]+int64(i), idx, "no unused index between used ones: %v", got)
		}
	})
}
