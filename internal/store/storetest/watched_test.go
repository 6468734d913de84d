package storetest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

// A catch-up asks about a whole eth_getLogs answer at once, more addresses than
// one statement takes, with recipients repeated: every deposit address among them
// is found, on its own network only, and nothing else.
func TestWatchedAddressesOfALargeBatch(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		p := newPartner(t, s)
		var addrs []string
		for i := range 12_001 {
			addrs = append(addrs, fmt.Sprintf("0x%040x", i))
		}
		// Deposit addresses in the first, second and third statement's share, one
		// of them repeated in the batch, and one on another network.
		for _, i := range []int{0, 7_500, 12_000} {
			newTransaction(t, s, p, txOpts{network: "bep20", address: addrs[i]})
		}
		newTransaction(t, s, p, txOpts{network: "trc20", address: addrs[3]})
		addrs = append(addrs, addrs[7_500], addrs[1])

		watched, err := s.WatchedAddresses(ctx, "bep20", addrs)
		require.NoError(t, err)
		require.Equal(t, map[string]bool{addrs[0]: true, addrs[7_500]: true, addrs[12_000]: true}, watched)
		watched, err = s.WatchedAddresses(ctx, "trc20", addrs)
		require.NoError(t, err)
		require.Equal(t, map[string]bool{addrs[3]: true}, watched)
	})
}

// A rescan credits the asking partner's deposit addresses only: another
// partner's, or one on another network, is not among them.
func TestPartnerDepositAddresses(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		p, q := newPartner(t, s), newPartner(t, s)
		mine, theirs, tron := "0x"+strings.Repeat("a", 40), "0x"+strings.Repeat("b", 40), "0x"+strings.Repeat("c", 40)
		newTransaction(t, s, p, txOpts{network: "bep20", address: mine})
		newTransaction(t, s, q, txOpts{network: "bep20", address: theirs})
		newTransaction(t, s, p, txOpts{network: "trc20", address: tron})
		got, err := s.PartnerDepositAddresses(ctx, p.ID, "bep20", []string{mine, theirs, tron, mine})
		require.NoError(t, err)
		require.Equal(t, map[string]bool{mine: true}, got)
		got, err = s.PartnerDepositAddresses(ctx, q.ID, "bep20", []string{mine, theirs})
		require.NoError(t, err)
		require.Equal(t, map[string]bool{theirs: true}, got)
	})
}
