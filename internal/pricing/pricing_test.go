package pricing

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParsePairs(t *testing.T) {
	t.Parallel()
	pairs, err := ParsePairs(" USDT:bep20:1000:50000000 , usdt:trc20:0:1 ")
	require.NoError(t, err)
	require.Len(t, pairs, 2)
	require.Equal(t, "usdt/bep20", pairs[0].Key())
	require.Equal(t, "50000000", pairs[0].MaxFiat.String())
	for _, bad := range []string{"", "usdt:bep20", "usdt:bep20:x:1", "usdt:bep20:5:1", "usdt:bep20:1:2,usdt:bep20:1:2", ":bep20:1:2", "usdt:bep20:-1:2"} {
		_, err := ParsePairs(bad)
		require.Error(t, err, bad)
	}
}
