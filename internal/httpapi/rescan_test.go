package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/testsupport/apitest"
)

// A server without a deposit watcher for the network (staging with the
// simulator only) answers a rescan 503 and says why; a malformed hash is still a 400.
func TestRescanWithoutAWatcher(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		c := env.Client(t, env.NewPartner(t))
		res, err := c.RescanDepositWithResponse(context.Background(), &client.RescanDepositParams{},
			client.RescanRequest{Network: "trc20", TxHash: strings.Repeat("ab", 32)})
		require.NoError(t, err)
		require.Equal(t, http.StatusServiceUnavailable, res.StatusCode(), string(res.Body))
		require.Equal(t, "service_unavailable", string(res.JSON503.Error.Code))
		require.Contains(t, res.JSON503.Message, "no deposit watcher")

		res, err = c.RescanDepositWithResponse(context.Background(), &client.RescanDepositParams{},
			client.RescanRequest{Network: "trc20", TxHash: "0x" + strings.Repeat("ab", 32)})
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, res.StatusCode(), string(res.Body))
		require.Equal(t, "/tx_hash", res.JSON400.Error.Details[0].Field)
	})
}
