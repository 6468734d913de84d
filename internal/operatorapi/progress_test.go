package operatorapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	oc "partnerd/gen/operatorclient"
	"partnerd/internal/audit"
	"partnerd/internal/chain"
	"partnerd/internal/chain/devnet"
	"partnerd/internal/lifecycle"
	"partnerd/internal/operatorapi"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// watchedChain starts a chain answering as BNB Smart Chain (its finalized block 2
// behind the head) with a token deployed, and returns it with the settings of an
// instance watching it.
func watchedChain(t *testing.T) (*devnet.Chain, map[string]string) {
	t.Helper()
	ctx := context.Background()
	ch, err := devnet.StartDialect(0, devnet.BSC)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ch.Close() })
	ch.Proxy.SetFinalizedDepth(2, false)
	token, err := ch.Deploy(ctx, 18)
	require.NoError(t, err)
	id, err := ch.ChainID(ctx)
	require.NoError(t, err)
	return ch, map[string]string{
		"CHAIN_RPC_BEP20":     ch.URL,
		"CHAIN_ID_BEP20":      id,
		"TOKEN_CONTRACTS":     fmt.Sprintf("usdt:bep20=%s/18", chain.FormatAddress(chain.BEP20, token)),
		"CONFIRMATIONS":       "bep20=3,trc20=3",
		"CHAIN_POLL_INTERVAL": "50ms",
	}
}

// scansHere reports whether env's own watcher has read bep20's head (its metrics
// have the series only then): true on the instance holding the scanner lock.
func scansHere(t *testing.T, env *apitest.Env) bool {
	t.Helper()
	res, err := http.Get(env.Root + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	return strings.Contains(string(body), `partnerd_chain_head_block{network="bep20"}`)
}

// overview returns the overview's networks by name, and its raw body.
func overviewNetworks(t *testing.T, ops *oc.ClientWithResponses) (map[string]oc.NetworkProgress, []byte) {
	t.Helper()
	res, err := ops.GetOverviewWithResponse(context.Background())
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	out := map[string]oc.NetworkProgress{}
	for _, n := range res.JSON200.Data.Networks {
		out[n.Network] = n
	}
	return out, res.Body
}

func mine(t *testing.T, ch *devnet.Chain, n int) uint64 {
	t.Helper()
	for range n {
		ch.Backend.Commit()
	}
	head, err := ch.Backend.Client().BlockNumber(context.Background())
	require.NoError(t, err)
	return head
}

// A second instance, watching the same network but not holding its scanner lock,
// shows the chain progress in its overview as the scanning instance stored it:
// head, scanned and finalized block, lag, and their age, which moves on as the
// chain does. A network nobody watches shows nothing, with no age.
func TestOverviewShowsChainProgressOnEveryInstance(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		ch, settings := watchedChain(t)
		mine(t, ch, 5)
		started := time.Now().Add(-time.Second)
		scanning := apitest.Start(t, db, settings)
		require.Eventually(t, func() bool { return scansHere(t, scanning) }, 20*time.Second, 20*time.Millisecond, "the first instance takes the lock")
		other := apitest.Start(t, db, settings)
		ops := other.OperatorClient(t, other.NewOperator(t))

		head := mine(t, ch, 3)
		var bep oc.NetworkProgress
		require.Eventually(t, func() bool {
			nets, _ := overviewNetworks(t, ops)
			bep = nets["bep20"]
			return bep.HeadBlock != nil && uint64(*bep.HeadBlock) == head && bep.ScannedBlock != nil && bep.FinalizedBlock != nil
		}, 20*time.Second, 50*time.Millisecond, "the other instance shows the head %d", head)
		require.False(t, scansHere(t, other), "the other instance does not scan: what it shows was stored by the first")

		require.LessOrEqual(t, *bep.ScannedBlock, *bep.HeadBlock)
		require.Equal(t, *bep.HeadBlock-*bep.ScannedBlock, *bep.Lag)
		require.LessOrEqual(t, *bep.FinalizedBlock, *bep.HeadBlock)
		require.NotNil(t, bep.UpdatedAt, "the age of the reading")
		require.WithinRange(t, *bep.UpdatedAt, started, time.Now())
		require.NotNil(t, bep.HeadAt)
		require.False(t, bep.HeadAt.After(*bep.UpdatedAt), "read before it was stored")
		require.NotNil(t, bep.FinalizedAt)
		require.NotNil(t, bep.ScannedAt)
		require.WithinRange(t, *bep.ScannedAt, started, time.Now())
		if bep.Finality != nil {
			require.Equal(t, chain.FinalityTag, *bep.Finality, "a node serving the finalized tag")
			require.NotNil(t, bep.FinalitySince)
		}
		require.NotNil(t, bep.Providers)

		// The reading moves on with the chain, and so does its age.
		first := *bep.UpdatedAt
		head = mine(t, ch, 4)
		require.Eventually(t, func() bool {
			nets, _ := overviewNetworks(t, ops)
			bep = nets["bep20"]
			return uint64(*bep.HeadBlock) == head && bep.UpdatedAt.After(first)
		}, 20*time.Second, 50*time.Millisecond)
		require.False(t, scansHere(t, other))

		// The raw answer: every field present, unknown ones null; trc20 is not watched.
		nets, body := overviewNetworks(t, ops)
		trc := nets["trc20"]
		require.Nil(t, trc.HeadBlock)
		require.Nil(t, trc.ScannedBlock)
		require.Nil(t, trc.UpdatedAt)
		require.Nil(t, trc.Lag)
		require.Empty(t, trc.Providers)
		var raw struct {
			Data struct {
				Networks []map[string]json.RawMessage `json:"networks"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(body, &raw))
		for _, n := range raw.Data.Networks {
			for _, k := range []string{"network", "head_block", "head_at", "scanned_block", "scanned_at", "finalized_block", "finalized_at",
				"lag", "finality", "finality_since", "providers", "updated_at"} {
				require.Contains(t, n, k)
			}
			if string(n["network"]) == `"trc20"` {
				require.JSONEq(t, `null`, string(n["updated_at"]))
				require.JSONEq(t, `[]`, string(n["providers"]))
			}
		}
	})
}

// The contract's lists are the watcher's states: every chain.Provider* value is in
// the providers' open list (x-extensible-enum: it may grow), and the closed
// finality enum is exactly the chain.Finality* values.
func TestChainStatesInTheContract(t *testing.T) {
	t.Parallel()
	spec, err := operatorapi.Spec()
	require.NoError(t, err)
	strs := func(vs []any) []string {
		var out []string
		for _, v := range vs {
			if v != nil {
				out = append(out, v.(string))
			}
		}
		return out
	}
	provider := spec.Components.Schemas["ProviderState"].Value
	require.Empty(t, provider.Enum, "an open list, not a closed enum")
	open, ok := provider.Extensions["x-extensible-enum"].([]any)
	require.True(t, ok, "ProviderState lists its values in x-extensible-enum")
	require.ElementsMatch(t, []string{chain.ProviderActive, chain.ProviderStandby, chain.ProviderFailing,
		chain.ProviderRateLimited, chain.ProviderLagging, chain.ProviderBehind, chain.ProviderSyncing, chain.ProviderNoLogs, chain.ProviderActionNeeded}, strs(open))
	require.ElementsMatch(t, []string{chain.FinalityTag, chain.FinalityConfirmations, chain.FinalityUnknown},
		strs(spec.Components.Schemas["NetworkProgress"].Value.Properties["finality"].Value.Enum))
}

// TestActionsInTheContract: the audit log's actions and actors are the contract's
// open lists, and the operator actions its closed enum, value for value.
func TestActionsInTheContract(t *testing.T) {
	t.Parallel()
	spec, err := operatorapi.Spec()
	require.NoError(t, err)
	var got []string
	open, ok := spec.Components.Schemas["AuditAction"].Value.Extensions["x-extensible-enum"].([]any)
	require.True(t, ok, "AuditAction lists its values in x-extensible-enum")
	for _, v := range open {
		got = append(got, v.(string))
	}
	var want []string
	for _, a := range audit.Actions {
		want = append(want, string(a))
	}
	require.ElementsMatch(t, want, got)
	got, want = nil, nil
	for _, v := range spec.Components.Schemas["OperatorAction"].Value.Enum {
		got = append(got, v.(string))
	}
	for _, a := range lifecycle.OperatorActions {
		want = append(want, string(a))
	}
	require.Equal(t, want, got, "the same values in the same order")
	got, want = nil, nil
	actors, ok := spec.Components.Schemas["AuditActor"].Value.Extensions["x-extensible-enum"].([]any)
	require.True(t, ok, "AuditActor lists its values in x-extensible-enum")
	for _, v := range actors {
		got = append(got, v.(string))
	}
	for _, a := range audit.Actors {
		want = append(want, string(a))
	}
	require.ElementsMatch(t, want, got, "the audit log's actors")
}
