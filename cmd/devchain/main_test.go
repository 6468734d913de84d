package main

import (
	"bytes"
	"context"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/stretchr/testify/require"

	"partnerd/internal/chain"
	"partnerd/internal/chain/devnet"
)

func TestSendTransfersTestUSDT(t *testing.T) {
	ch, err := devnet.StartDialect(0, devnet.JavaTron)
	require.NoError(t, err)
	defer ch.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	token, err := ch.Deploy(ctx, 6)
	require.NoError(t, err)
	key, err := crypto.HexToECDSA(devnet.DevKey)
	require.NoError(t, err)
	require.Equal(t, crypto.CreateAddress(crypto.PubkeyToAddress(key.PublicKey), 0), token, "send finds the token by the deployer's first nonce")
	mined := make(chan struct{})
	go func() { defer close(mined); ch.Mine(ctx, 50*time.Millisecond) }()
	// The miner stops before the chain closes (deferred calls run last first).
	defer func() { cancel(); <-mined }()

	to := common.HexToAddress("0x00000000000000000000000000000000000000b0")
	var out bytes.Buffer
	require.NoError(t, run([]string{"send", "--rpc", ch.URL, "--network", "trc20", "--to", chain.TronFromAddress(to), "--amount", "25"}, &out, &bytes.Buffer{}))
	require.Contains(t, out.String(), "sent 25 test USDT to T")

	// balanceOf(to) is 25 tokens of 6 decimals.
	data := append(crypto.Keccak256([]byte("balanceOf(address)"))[:4], common.LeftPadBytes(to.Bytes(), 32)...)
	res, err := ch.Backend.Client().CallContract(ctx, ethereum.CallMsg{To: &token, Data: data}, nil)
	require.NoError(t, err)
	require.Equal(t, big.NewInt(25_000_000), new(big.Int).SetBytes(res))

	require.Error(t, run([]string{"send", "--to", "0x00"}, &out, &bytes.Buffer{}))
}

// The settings printed for make run and the ones written for make devchain are one
// list: the printout is a shell prefix of exactly the file's lines.
func TestSettingsPrintedAndWrittenAgree(t *testing.T) {
	t.Parallel()
	set := settings(chain.TRC20, "http://127.0.0.1:9", "0x2b6653dc", "TXYZ", 6)
	path := filepath.Join(t.TempDir(), "chain.env")
	require.NoError(t, writeEnv(path, set))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Fields(string(b))
	require.Equal(t, []string{"CHAIN_RPC_TRC20=http://127.0.0.1:9", "CHAIN_ID_TRC20=0x2b6653dc",
		"TOKEN_CONTRACTS=usdt:trc20=TXYZ/6", "CONFIRMATIONS=trc20=3", "CHAIN_POLL_INTERVAL=1s"}, lines)
	var printed []string
	for _, f := range strings.Fields(shell(set)) {
		if f != `\` {
			printed = append(printed, f)
		}
	}
	require.Equal(t, lines, printed)
}
