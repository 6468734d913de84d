package providers_test

import (
	"context"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/stretchr/testify/require"

	"partnerd/internal/chain"
	"partnerd/internal/chain/devnet"
	"partnerd/internal/chain/providers"
	"partnerd/internal/chain/rpc"
)

// decimalsCall is the call data of the test token's decimals().
var decimalsCall = []byte{0x31, 0x3c, 0xe5, 0x67}

// tokenChain runs a chain with the test token (18 decimals) deployed.
func tokenChain(t *testing.T) (*devnet.Chain, common.Address) {
	t.Helper()
	ch := startChain(t)
	token, err := ch.Deploy(context.Background(), 18)
	require.NoError(t, err)
	return ch, token
}

// TestCallFailsOver: eth_call goes to the first provider; with it down, the next
// one answers the same call.
func TestCallFailsOver(t *testing.T) {
	t.Parallel()
	ch, token := tokenChain(t)
	first, second := addProxy(t, ch), addProxy(t, ch)
	pool := newPool(providers.Options{},
		providers.Provider{URL: first.URL, Client: client(t, first.URL)},
		providers.Provider{URL: second.URL, Client: client(t, second.URL)})
	ctx := context.Background()
	head, err := pool.BlockNumber(ctx)
	require.NoError(t, err)
	out, err := pool.Call(ctx, token, decimalsCall, head)
	require.NoError(t, err)
	require.Equal(t, big.NewInt(18), new(big.Int).SetBytes(out))
	require.Equal(t, 1, first.Calls("eth_call"))
	require.Zero(t, second.Calls("eth_call"))

	require.NoError(t, first.Close())
	out, err = pool.Call(ctx, token, decimalsCall, head)
	require.NoError(t, err, "the second provider answers")
	require.Equal(t, big.NewInt(18), new(big.Int).SetBytes(out))
	require.Equal(t, 1, second.Calls("eth_call"))
	require.Equal(t, chain.ProviderFailing, stateOf(pool, providers.Name(first.URL)).State)
}

// TestCallRevertAsksNoOtherProvider: a reverting call is about the call: it is
// answered with the revert at once, and the provider stays healthy.
func TestCallRevertAsksNoOtherProvider(t *testing.T) {
	t.Parallel()
	ch, token := tokenChain(t)
	first, second := addProxy(t, ch), addProxy(t, ch)
	pool := newPool(providers.Options{},
		providers.Provider{URL: first.URL, Client: client(t, first.URL)},
		providers.Provider{URL: second.URL, Client: client(t, second.URL)})
	ctx := context.Background()
	head, err := pool.BlockNumber(ctx)
	require.NoError(t, err)
	_, err = pool.Call(ctx, token, []byte{0xde, 0xad, 0xbe, 0xef}, head) // no such function, no fallback
	require.Equal(t, rpc.KindReverted, rpc.KindOf(err), err)
	require.Equal(t, 1, first.Calls("eth_call"))
	require.Zero(t, second.Calls("eth_call"), "no other provider asked")
	require.Equal(t, chain.ProviderActive, stateOf(pool, providers.Name(first.URL)).State)
}

// TestCallNotAboveAProvidersHead: a provider whose head is below the call's block
// is not asked while another has reached it.
func TestCallNotAboveAProvidersHead(t *testing.T) {
	t.Parallel()
	ch, token := tokenChain(t)
	first, second := addProxy(t, ch), addProxy(t, ch)
	relay, err := devnet.NewRelay(first.URL)
	require.NoError(t, err)
	t.Cleanup(relay.Kill)
	ctx := context.Background()
	frozen, err := ch.Backend.Client().BlockNumber(ctx)
	require.NoError(t, err)
	relay.Freeze(frozen)
	pool := newPool(providers.Options{HeadEvery: time.Millisecond},
		providers.Provider{URL: relay.URL, Client: client(t, relay.URL)},
		providers.Provider{URL: second.URL, Client: client(t, second.URL)})
	for i := 0; i < 3; i++ {
		ch.Backend.Commit()
	}
	_, err = pool.BlockNumber(ctx)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return stateOf(pool, providers.Name(second.URL)).Head == frozen+3 }, 10*time.Second, 5*time.Millisecond)
	out, err := pool.Call(ctx, token, decimalsCall, frozen+3)
	require.NoError(t, err)
	require.Equal(t, big.NewInt(18), new(big.Int).SetBytes(out))
	require.Zero(t, first.Calls("eth_call"), "the provider behind the block is not asked")
	require.Equal(t, 1, second.Calls("eth_call"))
}

// TestCallUnsupportedClient: a provider's client without eth_call (a Reader that
// is not an rpc.Client) answers unsupported, without a request.
func TestCallUnsupportedClient(t *testing.T) {
	t.Parallel()
	ch, token := tokenChain(t)
	px := addProxy(t, ch)
	// The Reader view of a real client: its Call is not visible.
	reader := struct{ rpc.Reader }{client(t, px.URL)}
	pool := newPool(providers.Options{}, providers.Provider{URL: px.URL, Client: reader})
	_, err := pool.Call(context.Background(), token, decimalsCall, 1)
	require.Equal(t, rpc.KindUnsupported, rpc.KindOf(err), err)
	require.Zero(t, px.Calls("eth_call"))
}
