package address

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBookDerivesAhead: the Book's answers are the Deriver's, in order, out of
// order and for an index far from the last, and after an address the next ones
// are derived before they are asked for.
func TestBookDerivesAhead(t *testing.T) {
	t.Parallel()
	b, err := NewBook(DemoXPubs)
	require.NoError(t, err)
	for network, xpub := range DemoXPubs {
		d, err := NewDeriver(network, xpub)
		require.NoError(t, err)
		for _, i := range []uint32{0, 1, 2, 3, 5, 4, 1000, 1001, 7, 7} {
			want, err := d.Address(i)
			require.NoError(t, err)
			got, err := b.Address(network, i)
			require.NoError(t, err)
			require.Equal(t, want, got, "%s index %d", network, i)
		}
		a := b.ahead[network]
		require.Eventually(t, func() bool {
			a.mu.Lock()
			defer a.mu.Unlock()
			_, ok := a.ready[8]
			return ok && !a.running
		}, 5*time.Second, time.Millisecond, "the index after the last one asked for is ready")
		want, err := d.Address(8)
		require.NoError(t, err)
		got, err := b.Address(network, 8)
		require.NoError(t, err)
		require.Equal(t, want, got)
		a.mu.Lock()
		_, ok := a.ready[8]
		a.mu.Unlock()
		require.False(t, ok, "an address is handed out once")
	}
	_, err = b.Address("erc20", 0)
	require.Error(t, err)
}
